"""A spider of the catalogue site, run with `runspider`, that walks page=1, 2, 3, ... until the site
answers 404, which it reads as the end of the listing (handle_httpstatus_list), as spiders of sites
that show no page count do. `-a reads_404=0` leaves the 404 to Scrapy: the walk ends too, unread."""

from __future__ import annotations

import scrapy


class PageWalkingSpider(scrapy.Spider):
    name = "page-walking"
    custom_settings = {"ADDONS": {"completeness_client.scrapy_kit.Addon": 0}}

    def __init__(self, site_url: str = "", reads_404: str = "1", *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.site_url = site_url.rstrip("/")
        if reads_404 == "1":
            self.handle_httpstatus_list = [404]

    async def start(self):
        yield scrapy.Request(f"{self.site_url}/list?page=1", cb_kwargs={"page": 1})

    def parse(self, response, page):
        if response.status == 404:
            return  # no such page: the listing ended on the one before
        for href in response.css("a.item::attr(href)").getall():
            yield response.follow(href, callback=self.parse_item)
        yield scrapy.Request(f"{self.site_url}/list?page={page + 1}", cb_kwargs={"page": page + 1})

    def parse_item(self, response):
        if response.status == 200:
            yield {"url": response.url, "title": response.css("h1.title::text").get()}
