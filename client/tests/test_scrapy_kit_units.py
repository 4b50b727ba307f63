"""The Scrapy kit's pieces without a crawl."""

from __future__ import annotations

import pytest

pytest.importorskip("scrapy")

from scrapy import Request, Spider  # noqa: E402
from scrapy.http.request import NO_CALLBACK  # noqa: E402
from scrapy.settings import Settings  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from completeness_client.scrapy_kit import (  # noqa: E402
    Addon,
    BreakerMiddleware,
    CompletenessExtension,
    CrawlState,
    PageOutcomeMiddleware,
    request_kind,
)
from completeness_client.scrapy_kit.final_numbers import NOT_FINAL, Finalizer  # noqa: E402
from completeness_client.scrapy_kit.stats_mapping import request_classes_from_stats  # noqa: E402


class ShopSpider(Spider):
    name = "shop"

    def parse_item(self, response):
        pass


def test_robots_sitemaps_media_and_assets_are_never_records():
    spider = ShopSpider()
    assert request_kind(Request("https://shop.example/robots.txt", callback=NO_CALLBACK)) == "other"
    assert request_kind(Request("https://shop.example/robots.txt")) == "other"
    assert request_kind(Request("https://shop.example/images/car.jpg", callback=NO_CALLBACK)) == "other"
    assert request_kind(Request("https://shop.example/static/site.css")) == "other"
    assert request_kind(Request("https://shop.example/sitemap_index.xml")) == "other"
    assert request_kind(Request("https://shop.example/sitemap-cars.xml.gz")) == "other"


def test_records_and_listing_pages_beside_them():
    spider = ShopSpider()
    assert request_kind(Request("https://shop.example/p/17", callback=spider.parse_item)) == "record"
    assert request_kind(Request("https://shop.example/cars.xml")) == "record"  # no sitemap by name
    assert request_kind(Request("https://shop.example/list?page=2", meta={"completeness_page": True})) == "listing"
    assert request_kind(Request("https://shop.example/x", meta={"completeness_kind": "listing"})) == "listing"
    assert request_kind(Request("https://shop.example/robots.txt", meta={"completeness_kind": "record"})) == "record"


def test_breaker_refusals_are_no_request_outcomes_but_timeouts_are():
    by_class = request_classes_from_stats({
        "downloader/exception_type_count/completeness_client.scrapy_kit.middleware.BreakerStopped": 9,
        "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest": 2,
        "downloader/exception_type_count/twisted.internet.error.TimeoutError": 3,
        "downloader/exception_type_count/some.unknown.Error": 1,
    })
    assert by_class["other"] == 1 and by_class["timeout"] == 3 and sum(by_class.values()) == 4


def test_addon_enables_the_kit_and_keeps_what_the_project_set():
    settings = Settings()
    Addon().update_settings(settings)
    assert settings.getdict("EXTENSIONS") == {CompletenessExtension: 500}
    assert settings.getdict("DOWNLOADER_MIDDLEWARES") == {BreakerMiddleware: 560, PageOutcomeMiddleware: 540}
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {"completeness_client.scrapy_kit.BreakerMiddleware": 570}})
    Addon().update_settings(settings)
    assert settings.getdict("DOWNLOADER_MIDDLEWARES") == {
        "completeness_client.scrapy_kit.BreakerMiddleware": 570, PageOutcomeMiddleware: 540}


def _closing_crawl(**stats):
    crawler = get_crawler(ShopSpider)
    crawler.spider = ShopSpider()
    crawler.stats.open_spider()
    for name, value in stats.items():
        crawler.stats.set_value(name.replace("__", "/"), value)
    state = CrawlState.of(crawler)
    state.report.finalizer = Finalizer(crawler, state)
    return crawler, state


def test_guard_refuses_while_the_crawl_runs_and_judges_the_final_numbers_once_it_closes():
    crawler, state = _closing_crawl(item_scraped_count=600)
    crawler.spider.declared_total = 600
    written = []
    assert state.report.guard_snapshot(lambda: written.append("early") or 0)["action"] == "kept_previous"
    assert NOT_FINAL in state.report.completeness().reasons
    state.close_reason = "finished"
    assert state.report.guard_snapshot(lambda: written.append("final") or 600) == {"action": "replaced", "rows": 600}
    assert written == ["final"] and state.report.collected == 600


def test_a_closed_early_crawl_keeps_the_previous_snapshot():
    crawler, state = _closing_crawl(item_scraped_count=170)
    crawler.spider.declared_total = 600
    state.close_reason = "closespider_itemcount"
    decision = state.report.completeness()
    assert not decision.replace
    assert "collected 170 of 600 declared" in decision.reasons
    assert "the run ended with reason 'closespider_itemcount', not 'finished'" in decision.reasons


def test_listing_pages_scheduled_but_never_settled_are_lost():
    crawler, state = _closing_crawl(item_scraped_count=10)
    crawler.spider.declared_total = 10
    state.pages_scheduled.update({"https://shop.example/l?p=1", "https://shop.example/l?p=2"})
    state.pages_settled.add("https://shop.example/l?p=1")
    state.close_reason = "finished"
    assert state.report.build()["pages"]["lost_urls"] == ["https://shop.example/l?p=2"]
    state.pages_settled.add("https://shop.example/l?p=2")
    assert state.report.build()["pages"]["lost_urls"] == []


def _page(body: bytes, url: str = "https://shop.example/p/1"):
    from scrapy.http import HtmlResponse

    return HtmlResponse(url, body=body, encoding="utf-8")


def test_stub_detection_is_off_until_declared():
    from completeness_client.scrapy_kit.stubs import StubRules

    rules = StubRules.from_settings(Settings())
    assert not rules.enabled
    assert rules.why_stub(_page(b"<h1>busy</h1>"), "record") is None


def test_a_page_without_its_marker_is_a_stub_whatever_its_size_and_a_small_real_page_is_not():
    from completeness_client.scrapy_kit.stubs import StubRules

    rules = StubRules({"record": "span.price", "listing": "//li[@class='product']"})
    real = _page(b"<article><span class='price'>10</span></article>")  # 50 bytes and real
    busy = _page(b"<h1>busy</h1>" + b"<p>come back later</p>" * 100)
    assert rules.why_stub(real, "record") is None
    assert rules.why_stub(busy, "record") == "no 'span.price' in the page"
    assert rules.why_stub(_page(b"<ul><li class='product'>x</li></ul>"), "listing") is None
    assert rules.why_stub(busy, "listing") is not None
    assert rules.why_stub(busy, "other") is None  # robots.txt, sitemaps, assets: never stubs
    assert StubRules({"record": b"price"}).why_stub(real, "record") is None
    assert StubRules({"record": b"price"}).why_stub(busy, "record") is not None


def test_minimum_sizes_per_kind_and_the_spiders_markers_over_the_settings():
    from completeness_client.scrapy_kit.stubs import StubRules

    rules = StubRules.from_settings(Settings({"COMPLETENESS_MIN_BODY_BYTES": {"listing": 100}}))
    assert rules.why_stub(_page(b"x" * 99), "listing") == "body under 100 bytes"
    assert rules.why_stub(_page(b"x" * 100), "listing") is None
    assert rules.why_stub(_page(b"x" * 10), "record") is None
    spider = ShopSpider()
    spider.completeness_markers = {"record": "article"}
    assert rules.with_spider(spider).why_stub(_page(b"<p>no</p>"), "record") is not None
    assert rules.with_spider(spider).why_stub(_page(b"<article>ok</article>"), "record") is None
    with pytest.raises(ValueError):
        StubRules({"item": "article"})
