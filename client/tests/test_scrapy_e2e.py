"""A real Scrapy crawl (in a subprocess) of a flaky catalogue on 127.0.0.1,
posting to a recording service that answers like the spec."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from catalogue_site import STUB_SERVED, CatalogueConfig, CatalogueSite
from completeness_client import exit_codes, validate_report
from scrapy_e2e_support import run_catalogue_crawl
from service_stub import RecordingService

pytest.importorskip("scrapy")

TOKEN = "test-token"


@pytest.fixture
def service() -> Iterator[RecordingService]:
    with RecordingService(token=TOKEN) as running:
        yield running


def crawl(config: CatalogueConfig, service_url: str, tmp_path, **settings):
    with CatalogueSite(config) as site:
        run = run_catalogue_crawl(service_url, TOKEN, site.url, workdir=tmp_path, settings=settings)
    return run, site


def event_kinds(report) -> list[str]:
    return [event["kind"] for event in report["failure_window"]["events"]]


def test_outage_with_stubs_and_a_lost_page_is_reported_and_exits_3(service, tmp_path):
    config = CatalogueConfig(items=150, lost_pages=frozenset({3}), stub_pages=frozenset({7}),
                             removed_items=frozenset({17}), outage_start=40, outage_length=15)
    run, site = crawl(config, service.url, tmp_path)
    assert run.exit_code == exit_codes.INCOMPLETE, run.log[-3000:]

    [posted] = service.reports
    assert posted == run.report  # what was posted is what the crawler wrote down
    assert validate_report(posted) == []
    assert posted["source"] == "catalogue-e2e"
    assert posted["declared_total"] == 150
    assert posted["removed"] == 1
    # Every item except those of pages 3 and 7 and the sold one: the outage cost nothing.
    assert posted["collected"] == 150 - 10 - 10 - 1
    assert posted["pages"]["expected"] == 15
    assert posted["pages"]["fetched"] == 13
    assert posted["pages"]["lost"] == 2
    assert sorted(posted["pages"]["lost_urls"]) == [f"{site.url}/list?page=3", f"{site.url}/list?page=7"]
    # The request classes match what the site really served, stubs apart from ok.
    served = [status for _, _, status in config.log]
    by_class = posted["requests"]["by_class"]
    assert by_class["short_body"] == served.count(STUB_SERVED) >= 15 + 3  # the outage, and page 7 thrice
    assert by_class["not_found"] == served.count(404) == 1
    assert by_class["http_5xx"] == served.count(500) >= 3  # page 3: 1 + RETRY_TIMES=2 at least
    assert by_class["ok"] == served.count(200) + served.count(301)  # redirects are answers, not failures
    assert served.count(301) >= 20
    assert posted["requests"]["total"] == config.served
    kinds = event_kinds(posted)
    assert kinds[0] == "tripped" and kinds[-1] == "resumed" and "stopped" not in kinds
    assert posted["crawler_verdict"] == "incomplete" and posted["exit_code"] == 3
    assert posted["meta"]["finish_reason"] == "finished"


def test_healed_outage_collects_everything_and_exits_0(service, tmp_path):
    config = CatalogueConfig(items=150, outage_start=40, outage_length=15)
    run, _ = crawl(config, service.url, tmp_path)
    assert run.exit_code == 0, run.log[-3000:]
    [posted] = service.reports
    assert posted["collected"] == posted["declared_total"] == 150
    assert posted["pages"] == {"expected": 15, "fetched": 15, "lost": 0, "lost_urls": []}
    assert posted["requests"]["by_class"]["short_body"] == 15
    assert event_kinds(posted)[0] == "tripped" and event_kinds(posted)[-1] == "resumed"
    assert posted["crawler_verdict"] == "complete"


def test_healthy_site_leaves_the_breaker_silent(service, tmp_path):
    config = CatalogueConfig(items=60, removed_items=frozenset({5, 6, 7, 8, 9, 10, 11, 12}))
    run, _ = crawl(config, service.url, tmp_path)
    assert run.exit_code == 0, run.log[-3000:]
    [posted] = service.reports
    assert posted["failure_window"]["events"] == []  # eight 404s in a row are attrition, not an outage
    assert posted["removed"] == 8 and posted["collected"] == 52
    assert posted["requests"]["by_class"]["short_body"] == 0


def test_outage_that_never_heals_stops_the_crawl_and_exits_3(service, tmp_path):
    config = CatalogueConfig(items=150, outage_start=40, outage_length=None)
    run, _ = crawl(config, service.url, tmp_path)
    assert run.exit_code == exit_codes.INCOMPLETE, run.log[-3000:]
    [posted] = service.reports
    kinds = event_kinds(posted)
    assert kinds[0] == "tripped" and kinds[-1] == "stopped"
    assert kinds.count("probe") == 3
    probes = [e for e in posted["failure_window"]["events"] if e["kind"] == "probe"]
    assert all(e["sent"] == 5 for e in probes)  # bounded probes
    assert posted["meta"]["finish_reason"] == "completeness_breaker_stopped"
    assert posted["collected"] < 150
    # The crawl stopped instead of hammering: few requests after the trip.
    assert config.served < 40 + 10 + 3 * 5 + 10


def test_exit_code_follows_the_services_answer_not_the_crawlers_belief(tmp_path):
    def always_incomplete(report):
        return "incomplete"  # e.g. a drop against the source's history

    with RecordingService(token=TOKEN, verdict=always_incomplete) as service:
        run, _ = crawl(CatalogueConfig(items=20), service.url, tmp_path)
        [posted] = service.reports
    assert posted["crawler_verdict"] == "complete" and posted["exit_code"] == 0
    assert run.exit_code == exit_codes.INCOMPLETE


def test_unreachable_service_spools_the_report_and_exits_75(dead_url, tmp_path):
    run, _ = crawl(CatalogueConfig(items=20), dead_url, tmp_path, COMPLETENESS_POST_ATTEMPTS=1)
    assert run.exit_code == exit_codes.SPOOLED, run.log[-3000:]
    spooled = list((tmp_path / "spool").glob("*.json"))
    assert len(spooled) == 1 and run.report is not None


def test_without_a_service_the_exit_code_follows_the_crawlers_own_verdict(tmp_path):
    run, _ = crawl(CatalogueConfig(items=30, lost_pages=frozenset({2})), "", tmp_path / "lost")
    assert run.exit_code == exit_codes.INCOMPLETE, run.log[-3000:]
    assert run.report["pages"]["lost"] == 1 and run.report["crawler_verdict"] == "incomplete"
    run, _ = crawl(CatalogueConfig(items=30), "", tmp_path / "full")
    assert run.exit_code == 0, run.log[-3000:]
    assert run.report["collected"] == 30
