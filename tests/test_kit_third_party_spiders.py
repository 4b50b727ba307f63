"""The kit on spiders nobody here wrote: spiders shaped as Scrapy's own
examples (booksbot, quotesbot) and a CrawlSpider in the usual public shape,
unchanged but for the one ADDONS line (given as settings.py would), crawl a
local copy of their site with faults injected and post to this service, live.
Every test checks the report's numbers against the site's truth, the
service's verdict and the runner's exit code."""

import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("scrapy")
CLIENT_TESTS = Path(__file__).resolve().parent.parent / "client" / "tests"
sys.path.insert(0, str(CLIENT_TESTS))

from scrapy_e2e_support import run_catalogue_crawl  # noqa: E402
from toscrape_site import ToScrapeConfig, ToScrapeSite, local_spider  # noqa: E402

from sources.models import Run  # noqa: E402
from tests.conftest import make_token  # noqa: E402

ADDONS = {"completeness_client.scrapy_kit.Addon": 0}
# The kit's defaults, not the fast breaker of the other end-to-end tests: a
# stall at the tail would cost 3 x 300 s here, and the crawl's timeout is far shorter.
KIT_DEFAULTS = {
    "COMPLETENESS_BREAKER_SIZE": 200,
    "COMPLETENESS_BREAKER_MIN_SAMPLES": 50,
    "COMPLETENESS_BREAKER_THRESHOLD": 0.35,
    "COMPLETENESS_BREAKER_PAUSE_SECONDS": 300,
    "COMPLETENESS_BREAKER_PROBE_SIZE": 20,
    "COMPLETENESS_BREAKER_MAX_FAILED_PROBES": 3,
    "COMPLETENESS_BREAKER_SERIES_EVERY": 200,
    "CONCURRENT_REQUESTS": 16,
}


def crawl(live_server, tmp_path, spider: str, source: str, config: ToScrapeConfig, **settings):
    token = make_token("scrapy", [source])
    with ToScrapeSite(config) as site:
        # The example's own code, its site's address pointed at the local copy.
        spider_file = local_spider(spider, site.url, tmp_path)
        started = time.monotonic()
        run = run_catalogue_crawl(
            live_server.url,
            token,
            site.url,
            workdir=tmp_path / source,
            source=source,
            spider_file=spider_file,
            timeout_seconds=120,
            settings={"ADDONS": ADDONS, **KIT_DEFAULTS, **settings},
        )
        run.seconds = time.monotonic() - started
    run.stored = Run.objects.get(source__slug=source)
    run.rules = {f["rule"] for f in run.stored.findings if f["mode"] == "enforce"}
    return run


@pytest.mark.django_db(transaction=True)
def test_quotesbot_on_a_healthy_site_without_a_total_is_complete_and_exits_0(live_server, tmp_path):
    run = crawl(live_server, tmp_path, "quotes", "quotes-healthy", ToScrapeConfig(quotes=100))
    assert run.exit_code == 0, run.log[-3000:]
    report = run.report
    assert (report["collected"], report["declared_total"], report["records_lost"]) == (100, None, 0)
    assert (report["crawler_verdict"], report["exit_code"], report["end_reason"]) == ("complete", 0, "finished")
    assert (run.stored.verdict, run.rules) == ("complete", set())
    assert "completeness-scrapy: exit 0: the service judged the run complete" in run.log


@pytest.mark.django_db(transaction=True)
def test_quotesbot_closed_early_by_an_item_count_is_incomplete_and_exits_3(live_server, tmp_path):
    run = crawl(
        live_server, tmp_path, "quotes", "quotes-itemcount", ToScrapeConfig(quotes=100), CLOSESPIDER_ITEMCOUNT=80
    )
    assert run.exit_code == 3, run.log[-3000:]
    assert run.report["end_reason"] == "closespider_itemcount" and run.report["crawler_verdict"] == "incomplete"
    assert 80 <= run.report["collected"] < 100
    assert run.stored.verdict == "incomplete" and "crawler_reported" in run.rules and not run.stored.silent


@pytest.mark.django_db(transaction=True)
def test_a_new_source_whose_start_page_answers_500_is_incomplete_and_exits_3(live_server, tmp_path):
    run = crawl(live_server, tmp_path, "quotes", "quotes-start-500", ToScrapeConfig(start_status=500))
    assert run.exit_code == 3, run.log[-3000:]
    report = run.report
    assert report["collected"] == 0 and report["removed"] == 0 and report["records_lost"] == 0
    assert report["pages"]["lost"] == 1 and report["pages"]["lost_urls"][0].endswith("/quotes/page/1/")
    assert run.stored.verdict == "incomplete" and "lost_pages" in run.rules


@pytest.mark.django_db(transaction=True)
def test_booksbot_with_a_tenth_of_its_books_always_500_finishes_in_seconds_with_100_lost(live_server, tmp_path):
    config = ToScrapeConfig(books=1000, broken_books=frozenset(range(10, 1001, 10)))
    run = crawl(live_server, tmp_path, "books", "books-broken-tenth", config)
    assert run.exit_code == 3, run.log[-3000:]
    report = run.report
    assert (report["collected"], report["records_lost"], report["removed"]) == (900, 100, 0)
    assert report["pages"] == {"expected": None, "fetched": 50, "lost": 0, "lost_urls": []}
    assert report["failure_window"]["events"] == []  # the broken tail is no outage
    assert report["requests"]["by_class"]["http_5xx"] == 300  # each broken book: once and two retries
    assert run.stored.verdict == "incomplete" and "records_lost" in run.rules
    assert run.seconds < 60, run.seconds
    print(f"booksbot, 1,000 books, 100 always 500: {run.seconds:.1f} s")


@pytest.mark.django_db(transaction=True)
def test_booksbot_names_a_lost_listing_page_and_counts_no_lost_record_for_it(live_server, tmp_path):
    run = crawl(live_server, tmp_path, "books", "books-lost-page", ToScrapeConfig(books=200, broken_pages={8}))
    assert run.exit_code == 3, run.log[-3000:]
    report = run.report
    assert report["collected"] == 140 and report["records_lost"] == 0 and report["removed"] == 0
    assert report["pages"]["lost"] == 1 and report["pages"]["lost_urls"][0].endswith("/catalogue/page-8.html")
    assert report["pages"]["fetched"] == 7
    assert run.stored.verdict == "incomplete" and "lost_pages" in run.rules


@pytest.mark.django_db(transaction=True)
def test_booksbot_delisted_books_are_removed_not_lost_and_the_run_is_complete(live_server, tmp_path):
    run = crawl(
        live_server, tmp_path, "books", "books-delisted", ToScrapeConfig(books=200, gone_books=frozenset({3, 77}))
    )
    assert run.exit_code == 0, run.log[-3000:]
    report = run.report
    assert (report["collected"], report["removed"], report["records_lost"]) == (198, 2, 0)
    assert report["pages"]["fetched"] == 10 and report["pages"]["lost"] == 0
    assert report["crawler_verdict"] == "complete" and run.stored.verdict == "complete"


@pytest.mark.django_db(transaction=True)
def test_a_crawlspider_category_page_that_answers_404_is_a_lost_page_not_a_removed_record(live_server, tmp_path):
    healthy = crawl(live_server, tmp_path, "books_crawl", "crawl-healthy", ToScrapeConfig(books=200))
    assert healthy.exit_code == 0, healthy.log[-3000:]
    assert healthy.report["collected"] == 200
    assert healthy.report["pages"] == {"expected": None, "fetched": 1 + 9 + 4, "lost": 0, "lost_urls": []}
    gone = crawl(
        live_server,
        tmp_path,
        "books_crawl",
        "crawl-gone-category",
        ToScrapeConfig(books=200, gone_categories=frozenset({2})),
    )
    assert gone.exit_code == 3, gone.log[-3000:]
    report = gone.report
    assert report["removed"] == 0 and report["records_lost"] == 0
    assert report["pages"]["lost"] == 1 and report["pages"]["lost_urls"][0].endswith("/cat_2/index.html")
    assert gone.stored.verdict == "incomplete" and "lost_pages" in gone.rules
