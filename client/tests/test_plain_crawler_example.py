"""The README's plain-Python crawler, run for real against the flaky
catalogue and, with other patterns, against the shop of the Scrapy tests."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from catalogue_site import CatalogueConfig, CatalogueSite
from shop_site import ShopConfig, ShopSite

from completeness_client import FailureWindowBreaker

EXAMPLE = Path(__file__).parents[1] / "examples" / "plain_crawler.py"
spec = importlib.util.spec_from_file_location("plain_crawler", EXAMPLE)
plain_crawler = importlib.util.module_from_spec(spec)
sys.modules["plain_crawler"] = plain_crawler  # dataclasses look their module up while defining a class
spec.loader.exec_module(plain_crawler)


CATALOGUE = plain_crawler.Layout(
    total=r'id="total">(\d+)<',
    page_links=r'class="page" href="([^"]+)"',
    item_links=r'class="item" href="([^"]+)"',
    min_body_bytes=200,
)
SHOP = plain_crawler.Layout(
    total=r'data-total="(\d+)"',
    page_links=r'rel="page" href="([^"]+)"',
    item_links=r'class="product"><a href="([^"]+)"',
)


def fast_breaker() -> FailureWindowBreaker:
    return FailureWindowBreaker(size=20, min_samples=10, pause_seconds=0.05, probe_size=5)


def crawl(listing_url: str, layout, service, tmp_path):
    """The example's crawl, posting to the test service, with a breaker that trips within a small site."""
    return plain_crawler.crawl(
        listing_url, service.url, "test-token", layout, breaker=fast_breaker(), spool_dir=str(tmp_path)
    )


def test_outage_is_ridden_out_and_a_lost_page_makes_it_exit_3(service, tmp_path):
    # 24 stubs served: eight URLs of three tries each (a URL counts once in the breaker's window).
    config = CatalogueConfig(items=60, lost_pages=frozenset({4}), outage_start=20, outage_length=24)
    with CatalogueSite(config) as site:
        code, report = crawl(f"{site.url}/list?page=1", CATALOGUE, service, tmp_path)
    assert code == 3
    assert report["collected"] == 50 and report["declared_total"] == 60
    assert report["pages"]["lost_urls"] == [f"{site.url}/list?page=4"]
    assert report["requests"]["by_class"]["short_body"] == 24
    kinds = [e["kind"] for e in report["failure_window"]["events"]]
    assert kinds[0] == "tripped" and kinds[-1] == "resumed"
    assert service.reports == [report]


def test_a_record_stub_past_the_size_floor_is_a_failure_with_an_item_marker(service, tmp_path):
    # A site down behind a 200 and a stub page of about 200 bytes: the size floor (0 here, as the
    # README's command line leaves it) passes it, and every stub was a record collected: complete, exit 0.
    layout = plain_crawler.Layout(
        CATALOGUE.total, CATALOGUE.page_links, CATALOGUE.item_links, item_marker='class="price"'
    )
    config = CatalogueConfig(items=60, outage_start=20, outage_length=24)
    with CatalogueSite(config) as site:
        code, report = crawl(f"{site.url}/list?page=1", layout, service, tmp_path)
    assert report["requests"]["by_class"]["short_body"] == 24
    kinds = [e["kind"] for e in report["failure_window"]["events"]]
    assert kinds[0] == "tripped" and kinds[-1] == "resumed"
    assert (code, report["collected"], report["records_lost"]) == (0, 60, 0)
    # The healthy neighbour: every record page has its marker, nothing is a stub.
    with CatalogueSite(CatalogueConfig(items=60)) as site:
        code, report = crawl(f"{site.url}/list?page=1", layout, service, tmp_path)
    assert (code, report["collected"], report["requests"]["by_class"]["short_body"]) == (0, 60, 0)
    assert report["failure_window"]["events"] == []


def test_healthy_catalogue_exits_0(service, tmp_path):
    handler = signal.getsignal(signal.SIGTERM)
    with CatalogueSite(CatalogueConfig(items=60, removed_items=frozenset({3}))) as site:
        code, report = crawl(f"{site.url}/list?page=1", CATALOGUE, service, tmp_path)
    assert code == 0
    assert signal.getsignal(signal.SIGTERM) is handler  # a caller that goes on still stops on SIGTERM
    assert (report["collected"], report["removed"], report["pages"]["lost"]) == (59, 1, 0)
    assert report["failure_window"]["events"] == []


def test_another_site_by_its_own_patterns(service, tmp_path):
    with ShopSite(ShopConfig(products=30, per_page=5, delisted=frozenset({9}))) as site:
        code, report = crawl(f"{site.url}/catalogue?page=1", SHOP, service, tmp_path)
    assert code == 0
    assert (report["declared_total"], report["collected"], report["removed"]) == (30, 29, 1)
    assert report["pages"]["fetched"] == 6 and report["crawler_verdict"] == "complete"


def test_a_listing_page_that_is_gone_is_lost_never_removed(service, tmp_path):
    with ShopSite(ShopConfig(products=30, per_page=5, gone_pages=frozenset({4, 5, 6}))) as site:
        code, report = crawl(f"{site.url}/catalogue?page=1", SHOP, service, tmp_path)
    assert code == 3 and report["removed"] == 0
    assert sorted(report["pages"]["lost_urls"]) == [f"{site.url}/catalogue?page={n}" for n in (4, 5, 6)]


def test_a_site_whose_first_page_has_no_total_is_never_complete(service, tmp_path):
    wrong = plain_crawler.Layout(total=r'id="total">(\d+)<', page_links=SHOP.page_links, item_links=SHOP.item_links)
    with ShopSite(ShopConfig(products=10)) as site:
        code, report = crawl(f"{site.url}/catalogue?page=1", wrong, service, tmp_path)
    assert code == 3 and report["collected"] == 0 and report["crawler_verdict"] == "incomplete"
    assert report["pages"]["lost_urls"] == [f"{site.url}/catalogue?page=1"]


def test_records_broken_for_good_are_lost_once_each_and_do_not_stop_the_crawl(service, tmp_path):
    # Each broken record counted three times in the breaker's window (its retries): five of thirty
    # tripped it, its probes were all broken records, and the run stopped with records_lost 0.
    broken = frozenset({3, 9, 15, 21, 27})
    with ShopSite(ShopConfig(products=30, per_page=5, broken_products=broken)) as site:
        code, report = crawl(f"{site.url}/catalogue?page=1", SHOP, service, tmp_path)
    assert code == 3
    assert (report["collected"], report["records_lost"], report["end_reason"]) == (25, 5, "finished")
    assert [e["kind"] for e in report["failure_window"]["events"]] == []


class SlowCatalogue(CatalogueSite):
    def answer(self, path: str) -> tuple[int, bytes]:
        time.sleep(0.02)
        return super().answer(path)


def test_a_run_stopped_by_sigterm_reports_what_it_has_and_exits_3(service, tmp_path):
    # `timeout 3600 plain_crawler.py ...`: killed partway, it posted nothing, and the service could
    # not tell the run that stopped at 1,200 of 9,000 from one that never ran.
    with SlowCatalogue(CatalogueConfig(items=600, per_page=20)) as site:
        command = [sys.executable, str(EXAMPLE), f"{site.url}/list?page=1", service.url, "test-token"]
        command += ["--total", CATALOGUE.total, "--page-links", CATALOGUE.page_links]
        command += ["--item-links", CATALOGUE.item_links, "--item-marker", 'class="price"']
        env = {**os.environ, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", "HOME": str(tmp_path)}
        crawler = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while site.config.served < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        crawler.send_signal(signal.SIGTERM)
        _, stderr = crawler.communicate(timeout=60)
    assert crawler.returncode == 3, stderr
    [report] = service.reports
    assert report["end_reason"] == "shutdown" and report["crawler_verdict"] == "incomplete"
    assert 0 < report["collected"] < 600 and report["declared_total"] == 600
    assert report["pages"]["fetched"] + report["pages"]["lost"] == 30
    # It says what was found, not only "incomplete": the verdict line, then each finding.
    assert ": incomplete" in stderr and "-> exit 3" in stderr and "[enforce] stub:" in stderr, stderr


def test_a_pattern_that_is_no_regex_is_refused_before_the_crawl_names_it(capsys):
    # Used as it was, --item-marker's error was raised in each record's fetch, retried as a failed
    # download, and every record counted lost: an incomplete run and no word of the typo.
    base = ["http://127.0.0.1:9/", "http://127.0.0.1:9/", "token", "--total", "(\\d+)"]
    links = ["--page-links", 'href="([^"]+)"', "--item-links", 'href="([^"]+)"']
    try:
        plain_crawler.main([*base, *links, "--item-marker", 'class="(price'])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("a marker with an open group was taken")
    assert "--item-marker" in capsys.readouterr().err
    try:
        plain_crawler.main([*base[:-1], "(\\d+", *links])
    except SystemExit as exc:
        assert exc.code == 2
    assert "--total" in capsys.readouterr().err
