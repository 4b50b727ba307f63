"""A real Scrapy crawl (in a subprocess) of a flaky catalogue on 127.0.0.1,
posting to a recording service that answers like the spec.

The scenarios' crawls run concurrently once per module (each against its own
site and service); the tests then judge one scenario each.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("scrapy")

from catalogue_site import STUB_SERVED, CatalogueConfig, CatalogueSite
from scrapy_e2e_support import CrawlRun, run_catalogue_crawl
from service_stub import RecordingService, spec_like_verdict

from completeness_client import exit_codes, validate_report

TOKEN = "test-token"
DATABASE_DOWN = "the database is unavailable; retry later (nothing was stored)"  # the service's own 503


@dataclass
class Scenario:
    config: CatalogueConfig
    verdict: Callable[[dict[str, Any]], str] | None = spec_like_verdict  # None: no service at all
    service_down: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    service_answers: list[tuple[int, dict[str, Any] | None, dict[str, str]]] = field(default_factory=list)


def always_incomplete(report: dict[str, Any]) -> str:
    return "incomplete"  # e.g. a drop against the source's history, which the crawler cannot see


SCENARIOS: dict[str, Scenario] = {
    "flaky": Scenario(
        CatalogueConfig(
            items=100,
            lost_pages=frozenset({3}),
            stub_pages=frozenset({7}),
            removed_items=frozenset({17}),
            outage_start=40,
            outage_length=15,
        )
    ),
    "healed": Scenario(CatalogueConfig(items=100, outage_start=40, outage_length=15)),
    "healthy": Scenario(CatalogueConfig(items=60, removed_items=frozenset({5, 6, 7, 8, 9, 10, 11, 12}))),
    "endless_outage": Scenario(CatalogueConfig(items=100, outage_start=40, outage_length=None)),
    "service_says_incomplete": Scenario(CatalogueConfig(items=20), verdict=always_incomplete),
    "service_down": Scenario(CatalogueConfig(items=20), service_down=True, settings={"COMPLETENESS_POST_ATTEMPTS": 1}),
    "database_down": Scenario(
        CatalogueConfig(items=20),
        settings={"COMPLETENESS_POST_ATTEMPTS": 1},
        service_answers=[(503, {"detail": DATABASE_DOWN, "errors": []}, {"Retry-After": "1"})],
    ),
    "no_service_lost_page": Scenario(
        CatalogueConfig(items=30, lost_pages=frozenset({2})), verdict=None, settings={"COMPLETENESS_TOKEN": ""}
    ),
    "no_service_full": Scenario(CatalogueConfig(items=30), verdict=None, settings={"COMPLETENESS_TOKEN": ""}),
    # The service's URL in settings.py, its token missing from the scheduler's environment.
    "token_missing": Scenario(CatalogueConfig(items=30), settings={"COMPLETENESS_TOKEN": ""}),
}


@dataclass
class Outcome:
    run: CrawlRun
    site_url: str
    config: CatalogueConfig
    service: RecordingService | None


def _free_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> Iterator[dict[str, Outcome]]:
    with ExitStack() as stack, ThreadPoolExecutor(max_workers=4) as pool:
        futures = {}
        for name, scenario in SCENARIOS.items():
            site = stack.enter_context(CatalogueSite(scenario.config))
            service = None
            if scenario.service_down:
                url = _free_url()
            elif scenario.verdict is None:
                url = ""
            else:
                service = stack.enter_context(RecordingService(token=TOKEN, verdict=scenario.verdict))
                service.scripted = list(scenario.service_answers)
                url = service.url
            workdir = tmp_path_factory.mktemp(name)
            future = pool.submit(run_catalogue_crawl, url, TOKEN, site.url, workdir=workdir, settings=scenario.settings)
            futures[name] = (future, site.url, scenario.config, service)
        yield {
            name: Outcome(f.result(), site_url, config, service)
            for name, (f, site_url, config, service) in futures.items()
        }


def posted_report(outcome: Outcome) -> dict[str, Any]:
    assert outcome.service is not None
    [posted] = outcome.service.reports
    assert posted == outcome.run.report  # what was posted is what the crawler wrote down
    assert validate_report(posted) == []
    return posted


def event_kinds(report: dict[str, Any]) -> list[str]:
    return [event["kind"] for event in report["failure_window"]["events"]]


def test_outage_with_stubs_and_lost_pages_is_reported_and_exits_3(outcomes):
    outcome = outcomes["flaky"]
    assert outcome.run.exit_code == exit_codes.INCOMPLETE, outcome.run.log[-3000:]
    posted = posted_report(outcome)
    site = outcome.site_url
    assert posted["source"] == "catalogue-e2e"
    assert posted["declared_total"] == 100
    assert posted["removed"] == 1
    # Every item but those of pages 3 and 7 and the sold one, an item whose attempts all fell in the
    # outage's first stretch (before the breaker tripped) included: it is redone after the pause.
    served_whole = {path for _, path, status in outcome.config.log if path.startswith("/item/") and status == 200}
    assert posted["collected"] == len(served_whole) == 100 - 10 - 10 - 1
    assert posted["pages"]["expected"] == 10
    assert posted["pages"]["fetched"] == 8
    assert posted["pages"]["lost"] == 2
    assert sorted(posted["pages"]["lost_urls"]) == [f"{site}/list?page=3", f"{site}/list?page=7"]
    # The request classes match what the site really served, stubs apart from ok.
    served = [status for _, _, status in outcome.config.log]
    by_class = posted["requests"]["by_class"]
    # Stubs: the outage's 15 requests, whatever they asked for, and page 7 outside it (at least thrice
    # in all). A request for page 7 that fell in the outage is one of its 15: under CI's load one did,
    # and "15 + 3" found 17.
    page_7 = [(number, status) for number, path, status in outcome.config.log if path == "/list?page=7"]
    assert len(page_7) >= 3 and {status for _, status in page_7} == {STUB_SERVED}
    page_7_outside = sum(not outcome.config.in_outage(number) for number, _ in page_7)
    assert by_class["short_body"] == served.count(STUB_SERVED) == 15 + page_7_outside
    assert by_class["not_found"] == served.count(404) == 1
    assert by_class["http_5xx"] == served.count(500) >= 3  # page 3: 1 + RETRY_TIMES=2 at least
    assert by_class["ok"] == served.count(200) + served.count(301)  # redirects are answers, not failures
    assert served.count(301) >= 10
    assert posted["requests"]["total"] == outcome.config.served
    kinds = event_kinds(posted)
    assert kinds[0] == "tripped" and kinds[-1] == "resumed" and "stopped" not in kinds
    assert posted["crawler_verdict"] == "incomplete" and posted["exit_code"] == 3
    assert posted["meta"]["finish_reason"] == "finished"
    # No stub ever reached the parser as an empty listing.
    assert "empty_listings_parsed" not in posted["counters"]


def test_healed_outage_collects_everything_and_exits_0(outcomes):
    outcome = outcomes["healed"]
    assert outcome.run.exit_code == 0, outcome.run.log[-3000:]
    posted = posted_report(outcome)
    assert posted["collected"] == posted["declared_total"] == 100
    assert posted["pages"] == {"expected": 10, "fetched": 10, "lost": 0, "lost_urls": []}
    assert posted["requests"]["by_class"]["short_body"] == 15
    assert event_kinds(posted)[0] == "tripped" and event_kinds(posted)[-1] == "resumed"
    assert posted["crawler_verdict"] == "complete"


def test_healthy_site_leaves_the_breaker_silent(outcomes):
    outcome = outcomes["healthy"]
    assert outcome.run.exit_code == 0, outcome.run.log[-3000:]
    posted = posted_report(outcome)
    assert posted["failure_window"]["events"] == []  # eight 404s in a row are attrition, not an outage
    assert posted["removed"] == 8 and posted["collected"] == 52
    assert posted["requests"]["by_class"]["short_body"] == 0


def test_outage_that_never_heals_stops_the_crawl_and_exits_3(outcomes):
    outcome = outcomes["endless_outage"]
    assert outcome.run.exit_code == exit_codes.INCOMPLETE, outcome.run.log[-3000:]
    posted = posted_report(outcome)
    kinds = event_kinds(posted)
    assert kinds[0] == "tripped" and kinds[-1] == "stopped"
    probes = [e for e in posted["failure_window"]["events"] if e["kind"] == "probe"]
    assert len(probes) == 3 and all(e["sent"] == 5 for e in probes)  # bounded probes
    assert posted["meta"]["finish_reason"] == "completeness_breaker_stopped"
    assert posted["collected"] < 100
    # The crawl stopped instead of hammering: few requests after the trip.
    assert outcome.config.served < 40 + 10 + 3 * 5 + 10


def test_exit_code_follows_the_services_answer_not_the_crawlers_belief(outcomes):
    outcome = outcomes["service_says_incomplete"]
    posted = posted_report(outcome)
    assert posted["crawler_verdict"] == "complete" and posted["exit_code"] == 0
    assert outcome.run.exit_code == exit_codes.INCOMPLETE


def test_unreachable_service_spools_the_report_and_exits_75(outcomes):
    outcome = outcomes["service_down"]
    assert outcome.run.exit_code == exit_codes.SPOOLED, outcome.run.log[-3000:]
    spooled = list((outcome.run.report_path.parent / "spool").glob("*.json"))
    assert len(spooled) == 1 and outcome.run.report is not None
    assert "completeness-scrapy: exit 75: the service could not be reached at " in outcome.run.log
    assert f"(after 1 attempt); the report is spooled to {spooled[0]}; the next run sends it" in outcome.run.log


def test_a_service_answering_503_was_reached_and_the_runner_says_what_it_answered(outcomes):
    outcome = outcomes["database_down"]
    assert outcome.run.exit_code == exit_codes.SPOOLED, outcome.run.log[-3000:]
    [spooled] = (outcome.run.report_path.parent / "spool").glob("*.json")
    assert [post["status"] for post in outcome.service.posts] == [503]
    assert (
        f"completeness-scrapy: exit 75: the service answered 503: {DATABASE_DOWN} (after 1 attempt); "
        f"the report is spooled to {spooled}; the next run sends it"
    ) in outcome.run.log
    assert "could not be reached" not in outcome.run.log


def test_a_url_without_a_token_says_the_token_is_missing(outcomes):
    outcome = outcomes["token_missing"]
    assert outcome.run.exit_code == 0, outcome.run.log[-3000:]
    assert outcome.service is not None and outcome.service.reports == []
    assert (
        "completeness-scrapy: exit 0: the report was not posted: COMPLETENESS_TOKEN is not set, only "
        "COMPLETENESS_URL: complete (no evidence of loss)" in outcome.run.log
    )


def test_without_a_service_the_exit_code_follows_the_crawlers_own_verdict(outcomes):
    lost, full = outcomes["no_service_lost_page"], outcomes["no_service_full"]
    assert lost.run.exit_code == exit_codes.INCOMPLETE, lost.run.log[-3000:]
    assert lost.run.report["pages"]["lost"] == 1 and lost.run.report["crawler_verdict"] == "incomplete"
    assert full.run.exit_code == 0, full.run.log[-3000:]
    assert full.run.report["collected"] == 30
    # The runner says why it exits with what it exits.
    assert "completeness-scrapy: exit 3: no service configured" in lost.run.log
    assert "1 listing page(s) lost" in lost.run.log
    assert (
        "completeness-scrapy: exit 0: no service configured (COMPLETENESS_URL, COMPLETENESS_TOKEN): "
        "complete (no evidence of loss)" in full.run.log
    )
