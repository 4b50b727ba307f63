"""Listing pages are counted once each, however often a crawl fetches them:
`pages` describes the source's pages, not the crawl's responses. Real Scrapy
crawls (subprocesses) of the catalogue site, whose page 1 links to itself."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("scrapy")

from catalogue_site import CatalogueConfig, CatalogueSite
from scrapy_e2e_support import run_catalogue_crawl
from service_stub import RecordingService

from completeness_client import exit_codes, validate_report

TOKEN = "test-token"
SPIDER_FILE = Path(__file__).with_name("self_linking_spider.py")


def crawl(config: CatalogueConfig, workdir: Path) -> tuple[dict, list[str], int]:
    with CatalogueSite(config) as site, RecordingService(token=TOKEN) as service:
        run = run_catalogue_crawl(service.url, TOKEN, site.url, workdir=workdir, spider_file=SPIDER_FILE)
        [report] = service.reports
    assert report == run.report and validate_report(report) == []
    page_1 = [status for _, path, status in config.log if path == "/list?page=1"]
    return report, page_1, run.exit_code


def test_a_page_fetched_twice_counts_once(tmp_path):
    report, page_1, exit_code = crawl(CatalogueConfig(items=50), tmp_path)
    assert page_1 == [200, 200]  # the start URL, then its own pager link
    assert report["pages"] == {"expected": 5, "fetched": 5, "lost": 0, "lost_urls": []}
    assert (report["collected"], report["crawler_verdict"], exit_code) == (50, "complete", 0)


def test_a_page_fetched_once_is_not_lost_when_another_fetch_of_it_fails(tmp_path):
    # The start URL answers; its second fetch (through its own link) fails on every attempt.
    config = CatalogueConfig(items=50, page_statuses={1: [200, 500, 500, 500]})
    report, page_1, exit_code = crawl(config, tmp_path)
    assert page_1 == [200, 500, 500, 500]
    assert report["pages"] == {"expected": 5, "fetched": 5, "lost": 0, "lost_urls": []}
    assert (report["collected"], report["crawler_verdict"], exit_code) == (50, "complete", exit_codes.COMPLETE)
