"""The Scrapy kit's pieces without a crawl."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("scrapy")

from scrapy import Request, Spider
from scrapy.http.request import NO_CALLBACK
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from completeness_client.scrapy_kit import (
    Addon,
    BreakerMiddleware,
    CompletenessExtension,
    CrawlState,
    KindLearningMiddleware,
    PageOutcomeMiddleware,
    request_kind,
)
from completeness_client.scrapy_kit.final_numbers import NOT_FINAL, Finalizer
from completeness_client.scrapy_kit.stats_mapping import report_fields_from_stats, request_classes_from_stats


class ShopSpider(Spider):
    name = "shop"

    def parse_item(self, response):
        pass


def test_robots_sitemaps_media_and_assets_are_never_records():
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
    by_class = request_classes_from_stats(
        {
            "downloader/exception_type_count/completeness_client.scrapy_kit.middleware.BreakerStopped": 9,
            "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest": 2,
            "downloader/exception_type_count/twisted.internet.error.TimeoutError": 3,
            "downloader/exception_type_count/some.unknown.Error": 1,
        }
    )
    assert by_class["other"] == 1 and by_class["timeout"] == 3 and sum(by_class.values()) == 4


def test_addon_enables_the_kit_and_keeps_what_the_project_set():
    settings = Settings()
    Addon().update_settings(settings)
    assert settings.getdict("EXTENSIONS") == {CompletenessExtension: 500}
    assert settings.getdict("DOWNLOADER_MIDDLEWARES") == {BreakerMiddleware: 560, PageOutcomeMiddleware: 540}
    assert settings.getdict("SPIDER_MIDDLEWARES") == {KindLearningMiddleware: 1000}
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {"completeness_client.scrapy_kit.BreakerMiddleware": 570}})
    Addon().update_settings(settings)
    assert settings.getdict("DOWNLOADER_MIDDLEWARES") == {
        "completeness_client.scrapy_kit.BreakerMiddleware": 570,
        PageOutcomeMiddleware: 540,
    }


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
    pages = [Request(f"https://shop.example/l?p={n}", meta={"completeness_kind": "listing"}) for n in (1, 2)]
    for page in pages:
        state.kinds.scheduled(page)
    state.kinds.settled(pages[0], "ok")
    state.close_reason = "finished"
    assert state.report.build()["pages"]["lost_urls"] == ["https://shop.example/l?p=2"]
    state.kinds.settled(pages[1], "ok")
    built = state.report.build()
    assert built["pages"]["lost_urls"] == [] and built["pages"]["fetched"] == 2


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


class _Slot:
    delay = 0.0


def test_pacing_factors_move_the_slot_delay_and_are_reported_only_when_enabled():
    from completeness_client.scrapy_kit.pacing import Pacing

    pacing = Pacing(enabled=True, backoff=2.0, recovery=0.5, start_delay=0.25, max_delay=1.0)
    slot = _Slot()
    pacing.observe("shop", slot, "http_429")
    assert slot.delay == 0.5
    pacing.observe("shop", slot, "timeout")
    pacing.observe("shop", slot, "http_5xx")
    assert slot.delay == 1.0  # capped
    pacing.observe("shop", slot, "not_found")  # attrition moves nothing
    assert slot.delay == 1.0
    pacing.observe("shop", slot, "ok")
    assert slot.delay == 0.5
    assert pacing.to_report() == {"backoff": 2.0, "recovery": 0.5}
    off, untouched = Pacing(), _Slot()
    off.observe("shop", untouched, "http_429")
    assert untouched.delay == 0.0 and off.to_report() is None


def test_failures_of_requests_in_flight_before_a_raise_raise_the_delay_once():
    # Eight requests sent together, all refused: one overload, not eight. Raised for each, the delay
    # reached its 60 s cap, and at recovery 0.99 took about 99 minutes to fall under half a second.
    from completeness_client.scrapy_kit.pacing import Pacing

    now = [0.0]
    pacing = Pacing(enabled=True, backoff=2.0, recovery=0.99, start_delay=0.25, monotonic=lambda: now[0])
    slot = _Slot()
    burst = {f"https://shop.example/p/{n}": pacing.sent_at() for n in range(8)}
    now[0] = 1.0
    for url, sent in burst.items():
        pacing.observe("shop", slot, "http_429", url=url, sent_at=sent)
    assert slot.delay == 0.5
    # A request sent after that raise and refused too: the site still refuses at the new pace.
    later, early = pacing.sent_at(), 0.5
    now[0] = 2.0
    pacing.observe("shop", slot, "http_429", url="https://shop.example/p/9", sent_at=later)
    assert slot.delay == 1.0
    # Sent before that raise, but the site answered one since: its refusal is news, and raises.
    pacing.observe("shop", slot, "ok", url="https://shop.example/p/10", sent_at=early)
    pacing.observe("shop", slot, "http_429", url="https://shop.example/p/11", sent_at=early)
    assert slot.delay == 1.0 * 0.99 * 2
    # Sent one at a time, every failure raises, as the equilibrium the service judges assumes.
    alone = _Slot()
    for n in range(3):
        sent = pacing.sent_at()
        now[0] += 1
        pacing.observe("one-by-one", alone, "timeout", url=f"https://one.example/{n}", sent_at=sent)
    assert alone.delay == 2.0


def test_a_broken_urls_second_failure_takes_back_only_a_raise_its_first_one_made():
    from completeness_client.scrapy_kit.pacing import Pacing

    now = [0.0]
    pacing = Pacing(enabled=True, backoff=2.0, recovery=0.5, start_delay=0.25, monotonic=lambda: now[0])
    slot = _Slot()
    first, second = pacing.sent_at(), pacing.sent_at()
    now[0] = 1.0
    pacing.observe("shop", slot, "http_5xx", url="https://shop.example/a", sent_at=first)  # raises
    pacing.observe("shop", slot, "http_5xx", url="https://shop.example/b", sent_at=second)  # in flight: no raise
    assert slot.delay == 0.5
    # b's retry fails as well: b is broken, but its first failure raised nothing to take back.
    retry = pacing.sent_at()
    now[0] = 2.0
    pacing.observe("shop", slot, "http_5xx", url="https://shop.example/b", sent_at=retry)
    assert slot.delay == 0.5
    # a's retry fails: a is broken, and the raise its first failure made is taken back.
    pacing.observe("shop", slot, "http_5xx", url="https://shop.example/a", sent_at=pacing.sent_at())
    assert slot.delay == 0.25


def test_pacing_stays_off_beside_autothrottle_and_refuses_factors_without_an_equilibrium():
    from completeness_client.scrapy_kit.pacing import Pacing

    assert Pacing.from_settings(Settings({"COMPLETENESS_PACING_ENABLED": True})).enabled
    assert not Pacing.from_settings(
        Settings({"COMPLETENESS_PACING_ENABLED": True, "AUTOTHROTTLE_ENABLED": True})
    ).enabled
    with pytest.raises(ValueError):
        Pacing(backoff=1.0)
    with pytest.raises(ValueError):
        Pacing(recovery=1.0)


def test_retry_after_holds_the_slot_until_then_and_only_on_429_or_503():
    from completeness_client.scrapy_kit.pacing import Pacing, parse_retry_after

    now = [100.0]
    pacing = Pacing(monotonic=lambda: now[0], wall=lambda: 1_800_000_000.0, max_retry_after=30)
    pacing.observe("shop", None, "http_429", status=429, retry_after=b"5")
    assert pacing.wait_seconds("shop") == 5.0 and pacing.wait_seconds("other") == 0.0
    now[0] += 5
    assert pacing.wait_seconds("shop") == 0.0
    pacing.observe("shop", None, "http_4xx_other", status=403, retry_after=b"5")
    assert pacing.wait_seconds("shop") == 0.0
    pacing.observe("shop", None, "http_5xx", status=503, retry_after=b"3600")
    assert pacing.wait_seconds("shop") == 30.0  # capped
    assert parse_retry_after(b"Wed, 15 Jan 2027 08:00:10 GMT", 1_800_000_000.0 - 10**6) is not None
    assert parse_retry_after(b"soon", 0.0) is None and parse_retry_after(None, 0.0) is None
    ignoring = Pacing(honor_retry_after=False, monotonic=lambda: 0.0)
    ignoring.observe("shop", None, "http_429", status=429, retry_after=b"5")
    assert ignoring.wait_seconds("shop") == 0.0


def test_field_coverage_is_on_by_default_and_a_setting_turns_it_off():
    on = get_crawler(ShopSpider)
    CompletenessExtension.from_crawler(on)
    assert CrawlState.of(on).report.field_coverage is not None
    off = get_crawler(ShopSpider, {"COMPLETENESS_FIELD_COVERAGE": False})
    CompletenessExtension.from_crawler(off)
    report = CrawlState.of(off).report
    assert report.field_coverage is None
    report.declared_total, report.collected = None, 1
    assert "fields" not in report.build()


def test_where_reports_go_may_come_from_the_environment_and_a_setting_wins(monkeypatch, tmp_path):
    for name in ("URL", "TOKEN", "REPORT_FILE", "SPOOL_DIR"):
        monkeypatch.setenv(f"COMPLETENESS_{name}", f"from-env-{name}")
    from_env = CompletenessExtension(get_crawler(ShopSpider))
    assert (from_env.url, from_env.token, from_env.report_file, from_env.spool_dir) == (
        "from-env-URL",
        "from-env-TOKEN",
        "from-env-REPORT_FILE",
        "from-env-SPOOL_DIR",
    )
    report_file = str(tmp_path / "run.json")
    from_setting = CompletenessExtension(get_crawler(ShopSpider, {"COMPLETENESS_REPORT_FILE": report_file}))
    assert from_setting.report_file == report_file


def test_the_readme_sets_the_kit_up_in_at_most_three_lines_that_enable_it():
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    scrapy_section = readme[readme.index("## Scrapy") :]
    block = re.search(r"```python\n(.*?)```", scrapy_section, re.S).group(1)
    lines = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(lines) <= 3 and lines[0].startswith("ADDONS")
    settings: dict = {}
    exec(block, {}, settings)
    crawler = get_crawler(ShopSpider, {name: value for name, value in settings.items() if name.isupper()})
    crawler._apply_settings()
    assert any(isinstance(e, CompletenessExtension) for e in crawler.extensions.middlewares)


def test_dropped_items_are_a_failed_batch_unless_dropping_is_the_pipelines_job():
    from scrapy.exceptions import DropItem

    from completeness_client import RunReport
    from completeness_client.scrapy_kit.storage import StorageOutcomes

    invalid = [
        {
            "name": "item_pipeline:dropped",
            "rows": 2,
            "error": "dropped by an item pipeline, not as duplicates: DropItem x2 (first: invalid price)",
        }
    ]
    for fail, expected in ((True, invalid), (False, [])):
        storage = StorageOutcomes(get_crawler(ShopSpider), dropped_items_fail=fail)
        storage.item_dropped(item={}, exception=DropItem("invalid price"))
        storage.item_dropped(item={}, exception=DropItem("no sku"))
        storage.item_dropped(item={}, exception=DropItem("Duplicate item found: 17"))
        report = RunReport("s", "r")
        report.add_failed_batch("mine", 1, "disk full")
        storage.apply(report, scraped=10)
        storage.apply(report, scraped=10)  # judged again: nothing counted twice
        assert report.failed_batches == [{"name": "mine", "rows": 1, "error": "disk full"}, *expected]
        assert report.counters == {"items_dropped_duplicate": 1}
        assert report.written is None  # no feeds: nothing says what was stored


def test_a_failed_batch_says_why_the_pipeline_dropped_or_raised_and_keeps_it_across_parts():
    # "DropItem x810" told on-call nothing of why 810 crawled records were thrown away.
    from scrapy.exceptions import DropItem
    from twisted.python.failure import Failure

    from completeness_client import RunReport
    from completeness_client.scrapy_kit.storage import StorageOutcomes

    first = StorageOutcomes(get_crawler(ShopSpider))
    first.item_dropped(item={}, exception=DropItem("price outside the\nregion's cohort: item 1"))
    try:
        raise ValueError("no currency")
    except ValueError:
        first.item_error(item={}, failure=Failure())
    resumed = StorageOutcomes(get_crawler(ShopSpider))
    resumed.restore(first.to_saved(), kept=lambda uri: True)
    resumed.item_dropped(item={}, exception=DropItem("x" * 500))
    report = RunReport("s", "r")
    resumed.apply(report, scraped=10)
    errors = {batch["name"]: batch["error"] for batch in report.failed_batches}
    assert errors == {
        "item_pipeline:dropped": "dropped by an item pipeline, not as duplicates: "
        "DropItem x2 (first: price outside the region's cohort: item 1)",
        "item_pipeline:error": "an item pipeline raised: ValueError x1 (first: no currency)",
    }
    silent = StorageOutcomes(get_crawler(ShopSpider))
    silent.item_dropped(item={}, exception=DropItem(""))  # no message: nothing to quote
    silent.item_dropped(item={}, exception=DropItem("y" * 500))
    silent.apply(report := RunReport("s", "r"), scraped=10)
    assert report.failed_batches[0]["error"].endswith("DropItem x2 (first: " + "y" * 200 + ")")


def test_duplicates_dropped_on_purpose_are_no_loss_unless_the_project_says_so():
    from scrapy.exceptions import DropItem

    from completeness_client import RunReport
    from completeness_client.scrapy_kit.storage import StorageOutcomes

    report = RunReport("s", "r")
    report.declared_total, report.collected = None, 10
    storage = StorageOutcomes(get_crawler(ShopSpider))
    storage.item_dropped(item={}, exception=DropItem("Duplicate item found: 17"))
    storage.apply(report, scraped=10)
    assert report.crawler_verdict() == "complete" and report.completeness().replace
    strict = StorageOutcomes(get_crawler(ShopSpider), duplicate_drops_fail=True)
    strict.item_dropped(item={}, exception=DropItem("Duplicate item found: 17"))
    strict.apply(report, scraped=10)
    assert report.evidence_of_loss() == ["1 item(s) dropped by an item pipeline as duplicates: DropItem x1"]


def test_a_spider_that_never_sets_a_total_gets_a_complete_verdict_and_its_snapshot():
    crawler, state = _closing_crawl(item_scraped_count=40)
    state.close_reason = "finished"
    built = state.report.build()
    assert built["declared_total"] is None and built["crawler_verdict"] == "complete" and built["exit_code"] == 0
    assert built["end_reason"] == "finished" and built["records_lost"] == 0
    assert state.report.guard_snapshot(lambda: 40) == {"action": "replaced", "rows": 40}


def test_spider_exceptions_are_counted_by_callback_kind_and_record_ones_are_evidence():
    from scrapy.http import HtmlResponse

    crawler, state = _closing_crawl(item_scraped_count=40)
    extension = CompletenessExtension(crawler)
    spider = crawler.spider
    listing = Request("https://shop.example/list?page=2", meta={"completeness_kind": "listing"})
    record = Request("https://shop.example/p/1", callback=spider.parse_item)
    for request in (listing, record, record):
        extension.spider_error(failure=None, response=HtmlResponse(request.url, request=request, body=b""))
    state.close_reason = "finished"
    built = state.report.build()
    assert built["counters"]["spider_exceptions_listing"] == 1
    assert built["counters"]["spider_exceptions_record"] == 2
    assert built["crawler_verdict"] == "incomplete"
    assert "2 record callback(s) raised an exception" in state.report.evidence_of_loss()


class _RecordingEngine:
    def __init__(self):
        self.crawled = []

    def crawl(self, request):
        self.crawled.append(request)


def _breaker_crawl():
    crawler = get_crawler(
        ShopSpider,
        {"COMPLETENESS_BREAKER_SIZE": 4, "COMPLETENESS_BREAKER_MIN_SAMPLES": 4, "COMPLETENESS_BREAKER_THRESHOLD": 0.5},
    )
    crawler.spider = ShopSpider()
    crawler.stats.open_spider()
    crawler.engine = _RecordingEngine()
    state = CrawlState.of(crawler)
    state.report.finalizer = Finalizer(crawler, state)
    return crawler, state, BreakerMiddleware(crawler), PageOutcomeMiddleware(crawler)


def _record(n: int) -> Request:
    return Request(f"https://shop.example/p/{n}", meta={"completeness_kind": "record", "retry_times": 2})


def _give_up(breaker_mw, outcomes_mw, request):
    assert breaker_mw._record(request, "http_5xx") is None  # the breaker is running: retries decide
    outcomes_mw._failed(request, "failed", "HTTP 500")


def test_a_record_given_up_in_the_stretch_that_trips_the_breaker_is_redone_after_the_pause():
    crawler, state, breaker_mw, outcomes_mw = _breaker_crawl()
    first = _record(1)
    _give_up(breaker_mw, outcomes_mw, first)
    assert state.kinds.totals().records_lost == 1
    breaker_mw._record(_record(2), "ok")
    breaker_mw._record(_record(3), "http_5xx")  # 2 bad of 3: not yet
    assert crawler.engine.crawled == []
    breaker_mw._record(_record(4), "ok")  # 2 of 4 bad: tripped
    [redo] = crawler.engine.crawled
    assert redo.url == first.url and redo.dont_filter and "retry_times" not in redo.meta
    # It still counts until the redo settles: a crawl that never reaches it has lost it.
    assert state.kinds.totals().records_lost == 1
    state.kinds.settled(redo, "ok")
    assert state.kinds.totals().records_lost == 0


def test_old_give_ups_and_a_failed_redo_stay_lost():
    crawler, state, breaker_mw, outcomes_mw = _breaker_crawl()
    broken_for_good = _record(1)
    _give_up(breaker_mw, outcomes_mw, broken_for_good)
    for n in range(2, 7):  # a healthy stretch longer than the window
        breaker_mw._record(_record(n), "ok")
    breaker_mw._record(_record(7), "http_5xx")
    breaker_mw._record(_record(8), "http_5xx")  # tripped, the old give-up is out of its window
    assert crawler.engine.crawled == []
    assert state.kinds.totals().records_lost == 1

    crawler, state, breaker_mw, outcomes_mw = _breaker_crawl()
    _give_up(breaker_mw, outcomes_mw, _record(1))
    breaker_mw._record(_record(2), "http_5xx")
    breaker_mw._record(_record(3), "ok")
    breaker_mw._record(_record(4), "ok")  # tripped
    [redo] = crawler.engine.crawled
    state.breaker.state = type(state.breaker.state).RUNNING  # resumed, as after a good probe
    _give_up(breaker_mw, outcomes_mw, redo)  # the page is broken for good
    state.breaker._window.clear()
    for n in (5, 6, 7, 8):
        breaker_mw._record(_record(n), "http_5xx")  # a second outage trips the breaker again
    assert crawler.engine.crawled == [redo]  # taken back once only
    assert state.kinds.totals().records_lost == 1


def test_robots_txt_is_no_request_outcome_whatever_became_of_it():
    """Scrapy's counters (DownloaderStats, 850) count every attempt at robots.txt;
    none of them is an outcome of the run. A 404 of it was read as a removed record."""
    import asyncio

    from scrapy.http import Response
    from twisted.internet.error import TimeoutError as TwistedTimeout

    crawler, _, breaker_mw, _ = _breaker_crawl()
    stats = crawler.stats

    def answered(request, status):
        stats.inc_value(f"downloader/response_status_count/{status}")
        breaker_mw.process_response(request, Response(request.url, status=status))

    robots = Request("https://shop.example/robots.txt", meta={"dont_obey_robotstxt": True}, callback=NO_CALLBACK)
    asyncio.run(breaker_mw.process_request(robots))
    # RedirectMiddleware (600) turns the 301 into a new request before the kit (560) sees it.
    stats.inc_value("downloader/response_status_count/301")
    moved = robots.replace(
        url="https://cdn.shop.example/static/robots",
        meta={**robots.meta, "redirect_urls": [robots.url], "redirect_reasons": [301]},
    )
    asyncio.run(breaker_mw.process_request(moved))
    stats.inc_value("downloader/exception_type_count/twisted.internet.error.TimeoutError")
    breaker_mw.process_exception(moved, TwistedTimeout())
    retry = moved.copy()  # RetryMiddleware's: the redirect is not counted twice
    asyncio.run(breaker_mw.process_request(retry))
    answered(retry, 404)
    answered(Request("https://shop.example/p/1"), 200)
    answered(Request("https://shop.example/p/2"), 404)  # a delisted product: attrition, still counted

    fields = report_fields_from_stats(stats.get_stats())
    by_class = {name: count for name, count in fields["requests"]["by_class"].items() if count}
    assert by_class == {"ok": 1, "not_found": 1} and fields["requests"]["total"] == 2
    assert fields["counters"]["robots_txt_requests"] == 3


def test_a_listing_link_offsite_is_no_lost_page_and_one_on_site_still_is():
    # Scrapy's offsite filter refuses a request from the request_scheduled signal itself: it is never
    # scheduled, never settled, and was a lost page on every run (a pager linking to another host).
    from types import SimpleNamespace

    from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

    crawler, state = _closing_crawl(item_scraped_count=10)
    crawler.spider.allowed_domains = ["shop.example"]
    offsite = OffsiteMiddleware.from_crawler(crawler)
    crawler.engine = SimpleNamespace(downloader=SimpleNamespace(middleware=SimpleNamespace(middlewares=(offsite,))))
    outcomes = PageOutcomeMiddleware(crawler)
    listing = {"completeness_kind": "listing"}
    away = Request("https://mirror.example/l?p=1", meta=listing)
    on_site = Request("https://shop.example/l?p=2", meta=listing)
    allowed = Request("https://mirror.example/l?p=3", meta={**listing, "allow_offsite": True})
    for request in (away, on_site, allowed):
        outcomes.request_scheduled(request)
    state.close_reason = "finished"
    assert state.report.build()["pages"]["lost_urls"] == ["https://mirror.example/l?p=3", "https://shop.example/l?p=2"]


def runspider(spider: Path, source: str) -> subprocess.CompletedProcess[str]:
    """`completeness-scrapy runspider` on a spider file, as a crawler's scheduler runs it."""
    spider.write_text(source)
    runner = shutil.which("completeness-scrapy", path=os.path.dirname(sys.executable))
    assert runner is not None
    return subprocess.run(
        [runner, "runspider", str(spider), "-s", "LOG_LEVEL=ERROR"],
        cwd=spider.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SCRAPY_SETTINGS_MODULE": ""},
    )


def test_runspider_without_the_kit_says_how_to_enable_it(tmp_path):
    # It said "is CompletenessExtension in EXTENSIONS?" where the ADDONS line was simply not loaded
    # (runspider reads no project settings).
    done = runspider(
        tmp_path / "bare.py", "import scrapy\n\nclass Bare(scrapy.Spider):\n    name = 'bare'\n    start_urls = []\n"
    )
    assert done.returncode == 65
    assert "the kit was not enabled" in done.stderr and "custom_settings" in done.stderr


def test_a_kit_switched_off_exits_as_scrapy_does_and_says_so(tmp_path):
    # COMPLETENESS_ENABLED = False is an operator's choice (a local run, a project between set-ups):
    # the runner exited 65 "the kit was not enabled", as if the ADDONS line had been forgotten.
    done = runspider(
        tmp_path / "off.py",
        "import scrapy\n\nclass Off(scrapy.Spider):\n    name = 'off'\n    start_urls = []\n"
        "    custom_settings = {'ADDONS': {'completeness_client.scrapy_kit.Addon': 0}, 'COMPLETENESS_ENABLED': False}\n",
    )
    assert done.returncode == 0, done.stderr
    assert "switched off (COMPLETENESS_ENABLED = False): no report was posted" in done.stdout


def test_a_spider_name_becomes_a_slug_the_service_takes_and_two_names_two_slugs():
    import re

    from completeness_client.scrapy_kit.state import slugify

    assert slugify("Dubizzle AE") == "dubizzle-ae"
    assert slugify("café_listings") == "cafe_listings"  # accents dropped, nothing else lost
    arabic, russian = slugify("عقارات"), slugify("недвижимость")
    # Each became "spider": two crawlers of one fleet posted into one source's history.
    assert arabic != russian and arabic.startswith("spider-") and russian.startswith("spider-")
    assert slugify("عقارات") == arabic  # the same name, the same source, run after run
    mixed = slugify("عقارات-ae")
    assert mixed.startswith("ae-") and mixed != slugify("ae")
    assert slugify("x" * 300) == "x" * 100 and len(slugify("x" * 300 + "é" + "ж")) <= 100
    for name in ("Dubizzle AE", "café", "عقارات", "عقارات-ae", "???", "x" * 300 + "ж"):
        assert re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,99}", slugify(name)), name


def test_pacing_dates_a_request_by_when_its_download_began_not_when_it_joined_the_slots_queue():
    # process_request stamps a request before Scrapy's downloader queues it in its slot, where it waits
    # behind up to CONCURRENT_REQUESTS others at the slot's delay. Dated by that stamp, a site refusing
    # every request one at a time raised the delay once per sixteen refusals, not once per round trip.
    import asyncio
    from types import SimpleNamespace

    from scrapy import signals
    from scrapy.core.downloader import Slot
    from scrapy.http import Response

    crawler = get_crawler(ShopSpider, {"COMPLETENESS_PACING_ENABLED": True, "COMPLETENESS_PACING_START_DELAY": 0.25})
    crawler.spider = ShopSpider()
    crawler.stats.open_spider()
    # Scrapy's slot; the downloader around it needs a running reactor, and the kit asks it two things.
    slot = Slot(concurrency=8, delay=0.0, jitter=0.0)
    downloader = SimpleNamespace(get_slot_key=lambda request: "shop.example", slots={"shop.example": slot})
    crawler.engine = SimpleNamespace(downloader=downloader)
    middleware = BreakerMiddleware.from_crawler(crawler)
    queued = [Request(f"https://shop.example/p/{n}") for n in range(4)]
    for request in queued:
        asyncio.run(middleware.process_request(request))

    def refused(request, latency=None):
        if latency is not None:
            request.meta["download_latency"] = latency  # as the download handler sets it, then signals
            crawler.signals.send_catch_log(signals.headers_received, request=request, headers={}, body_length=0)
        middleware.process_response(request, Response(request.url, status=429))

    refused(queued[0])
    assert slot.delay == 0.5
    # Queued before that raise, sent after it (its headers came just now, as soon as sent): news, it raises.
    refused(queued[1], latency=0.0)
    assert slot.delay == 1.0
    # Its download began before the last raise: in flight with the refusal that raised, no raise.
    refused(queued[2], latency=3600.0)
    assert slot.delay == 1.0
    # An exception came at most the download timeout after the send: that long, and it was in flight.
    queued[3].meta["download_timeout"] = 3600.0
    middleware.process_exception(queued[3], TimeoutError())
    assert slot.delay == 1.0
    # A retry carries its first attempt's latency in its meta; it is not taken for its own.
    retry = queued[2].replace(url=queued[2].url)
    asyncio.run(middleware.process_request(retry))
    assert "download_latency" not in retry.meta
