"""The README's plain-Python crawler, run for real against the flaky catalogue."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from catalogue_site import CatalogueConfig, CatalogueSite
from completeness_client import FailureWindowBreaker

EXAMPLE = Path(__file__).parents[1] / "examples" / "plain_crawler.py"
spec = importlib.util.spec_from_file_location("plain_crawler", EXAMPLE)
plain_crawler = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plain_crawler)


def fast_breaker() -> FailureWindowBreaker:
    return FailureWindowBreaker(size=20, min_samples=10, pause_seconds=0.05, probe_size=5)


def test_outage_is_ridden_out_and_a_lost_page_makes_it_exit_3(service, tmp_path):
    config = CatalogueConfig(items=60, lost_pages=frozenset({4}), outage_start=20, outage_length=12)
    with CatalogueSite(config) as site:
        code, report = plain_crawler.crawl(site.url, service.url, "test-token", breaker=fast_breaker(),
                                           spool_dir=str(tmp_path))
    assert code == 3
    assert report["collected"] == 50 and report["declared_total"] == 60
    assert report["pages"]["lost_urls"] == [f"{site.url}/list?page=4"]
    assert report["requests"]["by_class"]["short_body"] == 12
    kinds = [e["kind"] for e in report["failure_window"]["events"]]
    assert kinds[0] == "tripped" and kinds[-1] == "resumed"
    assert service.reports == [report]


def test_healthy_catalogue_exits_0(service, tmp_path):
    with CatalogueSite(CatalogueConfig(items=60, removed_items=frozenset({3}))) as site:
        code, report = plain_crawler.crawl(site.url, service.url, "test-token", breaker=fast_breaker(),
                                           spool_dir=str(tmp_path))
    assert code == 0
    assert (report["collected"], report["removed"], report["pages"]["lost"]) == (59, 1, 0)
    assert report["failure_window"]["events"] == []
