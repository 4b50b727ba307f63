"""The crawl of the end-to-end test, run with `runspider` in a subprocess.

Its settings are what a Scrapy project adds to enable the kit; the test
passes the service URL, token and breaker tuning with -s.
"""

from __future__ import annotations

import scrapy

from completeness_client.scrapy_kit import DOWNLOADER_MIDDLEWARES, EXTENSIONS


class CatalogueSpider(scrapy.Spider):
    name = "catalogue"
    custom_settings = {
        "EXTENSIONS": EXTENSIONS,
        "DOWNLOADER_MIDDLEWARES": DOWNLOADER_MIDDLEWARES,
        "COMPLETENESS_MIN_BODY_BYTES": 200,
    }

    def __init__(self, site_url: str = "", *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.site_url = site_url.rstrip("/")

    async def start(self):
        yield scrapy.Request(
            f"{self.site_url}/list?page=1", callback=self.parse_first_page, meta={"completeness_page": True}
        )

    def parse_first_page(self, response):
        self.declared_total = int(response.css("#total::text").get())
        page_links = response.css("a.page::attr(href)").getall()
        self.pages_expected = len(page_links)
        for href in page_links:
            if not href.endswith("page=1"):
                yield response.follow(href, callback=self.parse_listing, meta={"completeness_page": True})
        yield from self.parse_listing(response)

    def parse_listing(self, response):
        links = response.css("a.item::attr(href)").getall()
        if not links:
            # What a stub page would look like to a parser: "the listing ended here".
            counters = self.completeness.counters
            counters["empty_listings_parsed"] = counters.get("empty_listings_parsed", 0) + 1
        for href in links:
            yield response.follow(href, callback=self.parse_item)

    def parse_item(self, response):
        yield {
            "url": response.url,
            "title": response.css("h1.title::text").get(),
            "price": int(response.css("span.price::text").get()),
        }
