"""A spider that walks page=1, 2, ... until the site answers 404 and reads that 404 itself
(handle_httpstatus_list) ends its listing there: the 404 is the source's own "no such page", not a
lost page. Real Scrapy crawls (subprocesses) of the catalogue site, which has no page past its last."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("scrapy")

from catalogue_site import CatalogueConfig, CatalogueSite
from scrapy_e2e_support import run_catalogue_crawl
from service_stub import RecordingService

from completeness_client import exit_codes, validate_report

TOKEN = "test-token"
SPIDER_FILE = Path(__file__).with_name("page_walking_spider.py")


def crawl(config: CatalogueConfig, workdir: Path, reads_404: str = "1") -> tuple[dict, int]:
    with CatalogueSite(config) as site, RecordingService(token=TOKEN) as service:
        run = run_catalogue_crawl(
            service.url, TOKEN, site.url, workdir=workdir, spider_file=SPIDER_FILE, spider_args={"reads_404": reads_404}
        )
        [report] = service.reports
    assert report == run.report and validate_report(report) == [], run.log[-3000:]
    return report, run.exit_code


def test_a_404_the_spider_reads_as_the_end_of_its_listing_is_no_lost_page(tmp_path):
    # Page 6 answers 404 on every run: every healthy run exited 3 with it as a lost page.
    report, exit_code = crawl(CatalogueConfig(items=50, removed_items=frozenset({7})), tmp_path)
    assert report["pages"] == {"expected": None, "fetched": 5, "lost": 0, "lost_urls": []}
    # The same spider reads an item's 404 too: that record is removed at the source, as before.
    assert (report["collected"], report["removed"], report["records_lost"]) == (49, 1, 0)
    assert (report["crawler_verdict"], exit_code) == ("complete", exit_codes.COMPLETE)


def test_beside_it_a_page_that_fails_is_lost_and_a_404_the_spider_never_read_too(tmp_path):
    report, exit_code = crawl(CatalogueConfig(items=50, lost_pages=frozenset({3})), tmp_path / "500")
    assert report["pages"]["lost_urls"][0].endswith("/list?page=3") and report["pages"]["lost"] == 1
    assert (report["crawler_verdict"], exit_code) == ("incomplete", exit_codes.INCOMPLETE)
    report, exit_code = crawl(CatalogueConfig(items=50), tmp_path / "unread", reads_404="0")
    assert report["pages"]["lost_urls"][0].endswith("/list?page=6") and report["pages"]["lost"] == 1
    assert (report["crawler_verdict"], exit_code) == ("incomplete", exit_codes.INCOMPLETE)
