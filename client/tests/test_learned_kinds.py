"""Listing or record, learned from what callbacks yield,
without a crawl: the ledger and the spider middleware fed by hand."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("scrapy")

from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

from completeness_client.scrapy_kit import KindLearningMiddleware, KindLedger
from completeness_client.scrapy_kit.learning import FAILED, GONE, OK

SITE = "http://shop.example"


class BooksSpider(Spider):
    name = "books"

    def parse_first(self, response):
        pass

    def parse(self, response):
        pass

    def parse_book(self, response):
        pass


class CatalogueCrawler(CrawlSpider):
    name = "catalogue"
    rules = (
        Rule(LinkExtractor(allow="category/"), follow=True),
        Rule(LinkExtractor(allow="book/"), callback="parse_item"),
    )

    def parse_item(self, response):
        pass


def _yielded(ledger: KindLedger, request: Request, outputs: list) -> None:
    middleware = KindLearningMiddleware.__new__(KindLearningMiddleware)
    middleware.ledger = ledger
    response = HtmlResponse(request.url, request=request, body=b"<html></html>")
    list(middleware.process_spider_output(response, outputs))


def test_requests_only_is_a_listing_items_is_a_record_whatever_came_first():
    spider, ledger = BooksSpider(), KindLedger()
    page2 = Request(f"{SITE}/page-2", callback=spider.parse)
    book = Request(f"{SITE}/book/7", callback=spider.parse_book)
    missing_book = Request(f"{SITE}/book/8", callback=spider.parse_book)
    broken_page = Request(f"{SITE}/page-3", callback=spider.parse)
    for request in (page2, book, missing_book, broken_page):
        ledger.scheduled(request)
    # Failures arrive before either callback ever ran: kept, judged at the end.
    ledger.settled(broken_page, FAILED, "HTTP 500")
    ledger.settled(missing_book, GONE, "HTTP 404")
    ledger.settled(Request(f"{SITE}/book/9", callback=spider.parse_book), FAILED, "HTTP 500")
    ledger.settled(page2, OK)
    ledger.settled(book, OK)
    _yielded(ledger, page2, [Request(f"{SITE}/book/10", callback=spider.parse_book), Request(f"{SITE}/page-3")])
    _yielded(ledger, book, [{"title": "x"}])
    totals = ledger.totals()
    assert totals.lost_urls == [f"{SITE}/page-3"] and totals.pages_fetched == 1
    assert (totals.removed, totals.records_lost) == (1, 1)
    assert totals.unfetched_urls == []


def test_a_start_request_is_a_listing_unless_its_callback_yields_items():
    spider, ledger = BooksSpider(), KindLedger()
    start = Request(f"{SITE}/", callback=spider.parse)
    ledger.start_request(start)
    ledger.scheduled(start)
    ledger.settled(start, FAILED, "HTTP 500")  # its callback never ran
    assert ledger.totals().lost_urls == [f"{SITE}/"]
    _yielded(ledger, Request(f"{SITE}/other-start", callback=spider.parse), [{"quote": "x"}, Request(f"{SITE}/p2")])
    totals = ledger.totals()
    assert totals.lost_urls == [] and totals.records_lost == 1  # quotes on the page: a record callback


def test_crawlspider_rules_that_follow_are_listings_and_a_callback_rule_is_records():
    spider, ledger = CatalogueCrawler(), KindLedger()
    ledger.spider = spider
    category = Request(f"{SITE}/category/travel", callback=spider._callback, meta={"rule": 0})
    book = Request(f"{SITE}/book/1", callback=spider._callback, meta={"rule": 1})
    ledger.scheduled(category)
    ledger.settled(category, GONE, "HTTP 404")  # a listing page that answers 404 is lost, not removed
    ledger.settled(book, FAILED, "HTTP 500")
    totals = ledger.totals()
    assert totals.lost_urls == [f"{SITE}/category/travel"] and totals.removed == 0 and totals.records_lost == 1


def test_listing_pages_scheduled_and_never_fetched_are_lost_but_records_are_not():
    spider, ledger = BooksSpider(), KindLedger()
    _yielded(ledger, Request(f"{SITE}/", callback=spider.parse), [Request(f"{SITE}/page-2")])
    ledger.scheduled(Request(f"{SITE}/page-2", callback=spider.parse))
    ledger.scheduled(Request(f"{SITE}/book/3", callback=spider.parse_book))  # unknown yet: kept
    assert set(ledger.pending["parse_book"]) == {f"{SITE}/book/3"}
    assert ledger.totals().unfetched_urls == [f"{SITE}/page-2"]
    _yielded(ledger, Request(f"{SITE}/book/4", callback=spider.parse_book), [{"title": "y"}])
    assert ledger.totals().unfetched_urls == [f"{SITE}/page-2"]
    assert not ledger.pending.get("parse_book")  # forgotten once known to be records


def test_a_tag_wins_over_what_the_callback_yields():
    spider, ledger = BooksSpider(), KindLedger()
    tagged = Request(f"{SITE}/book/5", callback=spider.parse_book, meta={"completeness_kind": "listing"})
    _yielded(ledger, Request(f"{SITE}/book/6", callback=spider.parse_book), [{"title": "z"}])
    ledger.settled(tagged, FAILED, "HTTP 500")
    assert ledger.totals().lost_urls == [f"{SITE}/book/5"]
    assert ledger.kind(Request(f"{SITE}/robots.txt")) == "other"


def test_spider_exceptions_take_their_callbacks_kind():
    spider, ledger = BooksSpider(), KindLedger()
    ledger.callback_raised(Request(f"{SITE}/book/1", callback=spider.parse_book))
    _yielded(ledger, Request(f"{SITE}/", callback=spider.parse), [Request(f"{SITE}/book/1")])
    ledger.callback_raised(Request(f"{SITE}/page-2", callback=spider.parse))
    assert ledger.totals().errors == {"record": 1, "listing": 1}


def test_start_requests_from_start_are_noted():
    spider, ledger = BooksSpider(), KindLedger()
    middleware = KindLearningMiddleware.__new__(KindLearningMiddleware)
    middleware.ledger = ledger

    async def start():
        yield Request(f"{SITE}/", callback=spider.parse)

    async def drain():
        return [output async for output in middleware.process_start(start())]

    assert len(asyncio.run(drain())) == 1 and ledger.start_keys == {"parse"}


def test_a_duplicate_the_scheduler_refused_is_no_unfetched_page():
    spider, ledger = BooksSpider(), KindLedger()
    _yielded(ledger, Request(f"{SITE}/", callback=spider.parse), [Request(f"{SITE}/page-2")])
    page = Request(f"{SITE}/page-2", callback=spider.parse)
    ledger.scheduled(page)
    ledger.settled(page, OK)
    ledger.scheduled(page)  # offered again from another page: request_scheduled fires before the filter
    ledger.dropped(page)
    assert ledger.totals().unfetched_urls == []


def test_the_readmes_tags_for_what_the_kit_cannot_learn_work():
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme[readme.index("### Listing or record") :]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace = {"scrapy": __import__("scrapy"), "Rule": Rule, "LinkExtractor": LinkExtractor}
    exec(block, namespace)

    class Tagged(CrawlSpider):
        name = "tagged"
        start_urls = [f"{SITE}/"]
        rules = namespace["rules"]
        start = namespace["start"]

        def parse_item(self, response):
            pass

    spider, ledger = Tagged(), KindLedger()
    ledger.spider = spider
    response = HtmlResponse(
        f"{SITE}/", body=b'<div class="pager"><a href="/p2">2</a></div><h3><a href="/b1">b</a></h3>'
    )
    requests = [r for r in spider._requests_to_follow(response)]
    kinds = {r.url: ledger.kind(r) for r in requests}
    assert kinds == {f"{SITE}/p2": "listing", f"{SITE}/b1": "record"}

    async def drain():
        return [r async for r in spider.start()]

    [start] = asyncio.run(drain())
    assert ledger.kind(start) == "listing"


def test_a_listing_page_counts_once_however_often_it_is_fetched_and_by_whichever_callback():
    spider, ledger = BooksSpider(), KindLedger()
    start = Request(f"{SITE}/list?page=1&sort=new", callback=spider.parse_first, dont_filter=True)
    ledger.start_request(start)
    ledger.settled(start, OK)
    # Its own pager link: the same page (query order aside), through the pager's callback.
    again = Request(f"{SITE}/list?sort=new&page=1", callback=spider.parse)
    _yielded(ledger, again, [Request(f"{SITE}/list?page=2")])
    ledger.settled(again, OK)
    ledger.settled(Request(f"{SITE}/list?page=2", callback=spider.parse), OK)
    assert ledger.totals().pages_fetched == 2


def test_a_page_that_answered_once_is_fetched_not_lost_whichever_came_first():
    spider, ledger = BooksSpider(), KindLedger()
    _yielded(ledger, Request(f"{SITE}/", callback=spider.parse), [Request(f"{SITE}/page-2")])
    page2, page3 = (Request(f"{SITE}/page-{n}", callback=spider.parse, dont_filter=True) for n in (2, 3))
    ledger.settled(page2, FAILED, "HTTP 500")  # lost, then fetched on a later request
    ledger.settled(page2, OK)
    ledger.settled(page3, OK)  # fetched, then a later request of it failed
    ledger.settled(page3, FAILED, "TimeoutError")
    ledger.scheduled(page3)  # and it was asked for again when the crawl ended
    totals = ledger.totals()
    assert (totals.pages_fetched, totals.lost_urls, totals.unfetched_urls) == (2, [], [])


def test_a_page_that_never_answered_is_one_lost_page_however_often_it_failed():
    spider, ledger = BooksSpider(), KindLedger()
    _yielded(ledger, Request(f"{SITE}/", callback=spider.parse), [Request(f"{SITE}/page-2")])
    page2 = Request(f"{SITE}/page-2", callback=spider.parse, dont_filter=True)
    ledger.settled(page2, FAILED, "HTTP 500")
    ledger.settled(page2, GONE, "HTTP 404")
    totals = ledger.totals()
    assert (totals.pages_fetched, totals.lost_urls) == (0, [f"{SITE}/page-2"])


def test_a_record_is_lost_once_however_often_it_failed_and_not_at_all_if_it_answered_later():
    spider, ledger = BooksSpider(), KindLedger()
    _yielded(ledger, Request(f"{SITE}/book/0", callback=spider.parse_book), [{"title": "x"}])
    broken_twice = f"{SITE}/book/1"
    for _ in range(2):  # sent again with dont_filter from a second listing page, failed again
        ledger.settled(Request(broken_twice, callback=spider.parse_book, dont_filter=True), FAILED, "HTTP 500")
    healed = Request(f"{SITE}/book/2", callback=spider.parse_book)
    ledger.settled(healed, FAILED, "timeout")
    assert ledger.totals().records_lost == 2
    ledger.settled(Request(healed.url, callback=spider.parse_book, dont_filter=True), OK)  # another try answered
    ledger.settled(Request(f"{SITE}/book/3", callback=spider.parse_book), GONE, "HTTP 404")
    ledger.settled(Request(f"{SITE}/book/3", callback=spider.parse_book, dont_filter=True), GONE, "HTTP 404")
    totals = ledger.totals()
    assert (totals.records_lost, totals.removed) == (1, 1)
