"""The spider of the kit's end-to-end tests, run with `runspider` in a
subprocess. It enables the kit the one-line way (ADDONS) and publishes its
snapshot through every integration the README shows, each to its own file
in `snapshot_dir`: the spider's `closed()` (closed.jsonl), an item
pipeline's `close_spider()` (pipeline.jsonl) and the feed step
(COMPLETENESS_SNAPSHOT_FILES, passed by the test: feed.jsonl).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import scrapy
from scrapy.exceptions import DropItem


def write_rows(path: Path, rows: list[dict]) -> int:
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    os.replace(partial, path)
    return len(rows)


class DropPipeline:
    """Drops the products named in the spider's `drop` argument, as a
    validating pipeline would."""

    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_item(self, item):
        if item["sku"] in self.crawler.spider.drop:
            raise DropItem(f"invalid product {item['sku']}")
        return item


class SnapshotPipeline:
    def __init__(self, crawler):
        self.crawler = crawler
        self.rows: list[dict] = []

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_item(self, item):
        self.rows.append(dict(item))
        return item

    def close_spider(self):
        spider = self.crawler.spider
        spider.rows = self.rows
        spider.completeness.guard_snapshot(lambda: write_rows(spider.snapshot_dir / "pipeline.jsonl", self.rows))


class ShopSpider(scrapy.Spider):
    name = "shop"
    custom_settings = {
        "ADDONS": {"completeness_client.scrapy_kit.Addon": 0},
        "ITEM_PIPELINES": {DropPipeline: 100, SnapshotPipeline: 900},
        "ROBOTSTXT_OBEY": True,
    }
    # What every real page has: a 200 without it is a stub, whatever its size.
    completeness_markers = {"listing": "li.product", "record": "article[data-sku] [itemprop=price]"}

    def __init__(
        self, site_url: str = "", snapshot_dir: str = ".", drop: str = "", tag: str = "1", *args, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        # tag "0": the pager's requests go untagged, as a spider that never heard of the kit sends them.
        self.listing_meta = {"completeness_kind": "listing"} if tag == "1" else {}
        self.site_url = site_url.rstrip("/")
        self.snapshot_dir = Path(snapshot_dir)
        self.drop = {int(sku) for sku in drop.split(",") if sku}
        self.rows: list[dict] = []

    async def start(self):
        yield scrapy.Request(
            f"{self.site_url}/catalogue?page=1", callback=self.parse_first, meta={"completeness_kind": "listing"}
        )

    def parse_first(self, response):
        self.declared_total = int(response.css("div.results::attr(data-total)").get())
        pages = response.css("nav a[rel=page]::attr(href)").getall()
        self.pages_expected = len(pages) + 1
        for href in pages:
            yield response.follow(href, self.parse_listing, meta=self.listing_meta)
        yield from self.parse_listing(response)

    def parse_listing(self, response):
        for href in response.css("li.product a::attr(href)").getall():
            yield response.follow(href, self.parse_product)

    def parse_product(self, response):
        yield {
            "sku": int(response.css("article::attr(data-sku)").get()),
            "name": response.css("[itemprop=name]::text").get(),
            "price": response.css("[itemprop=price]::text").get(),
            "brand": response.css("[itemprop=brand]::text").get(),  # None when the shop leaves it empty
        }

    def closed(self, reason):
        self.completeness.guard_snapshot(lambda: write_rows(self.snapshot_dir / "closed.jsonl", self.rows))
