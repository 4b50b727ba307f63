"""A naive spider of the catalogue site, run with `runspider`: one callback
for every listing page, which follows every pager link it finds, the link of
page 1 back to itself included. Scrapy does not record start requests in its
duplicate filter, so page 1 is fetched twice: once as the start URL, once
through its own link."""

from __future__ import annotations

import scrapy


class SelfLinkingSpider(scrapy.Spider):
    name = "self-linking"
    custom_settings = {"ADDONS": {"completeness_client.scrapy_kit.Addon": 0}}

    def __init__(self, site_url: str = "", *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = [f"{site_url.rstrip('/')}/list?page=1"]

    def parse(self, response):
        pages = response.css("a.page::attr(href)").getall()
        if pages:
            self.declared_total = int(response.css("#total::text").get())
            self.pages_expected = len(pages)
        for href in pages:
            yield response.follow(href)
        for href in response.css("a.item::attr(href)").getall():
            yield response.follow(href, callback=self.parse_item)

    def parse_item(self, response):
        yield {"url": response.url, "title": response.css("h1.title::text").get()}
