"""The crawler kit end to end: a real Scrapy crawl of a flaky catalogue on 127.0.0.1 posts its report
to this service, live, and exits with the service's verdict."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("scrapy")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "client" / "tests"))

from catalogue_site import CatalogueConfig, CatalogueSite
from scrapy_e2e_support import run_catalogue_crawl

from sources.models import FailureWindowEvent, Run, Source
from tests.conftest import make_token


def crawl(live_server, token, tmp_path, name: str, config: CatalogueConfig):
    with CatalogueSite(config) as site:
        return run_catalogue_crawl(live_server.url, token, site.url, workdir=tmp_path / name, source=name)


@pytest.mark.django_db(transaction=True)
def test_a_healthy_catalogue_is_complete_and_exits_0(live_server, tmp_path):
    token = make_token("scrapy", ["kit-healthy"])
    run = crawl(live_server, token, tmp_path, "kit-healthy", CatalogueConfig(items=60, removed_items=frozenset({5})))
    assert run.exit_code == 0, run.log[-3000:]
    stored = Run.objects.get(source__slug="kit-healthy")
    assert (stored.verdict, stored.silent, stored.findings) == ("complete", False, [])
    assert stored.declared_total == 60 and stored.collected + stored.removed == 60
    assert Source.objects.get(slug="kit-healthy").health == "ok"


@pytest.mark.django_db(transaction=True)
def test_a_flaky_catalogue_is_judged_incomplete_and_the_crawl_exits_3(live_server, tmp_path):
    token = make_token("scrapy", ["kit-flaky"])
    config = CatalogueConfig(items=100, lost_pages=frozenset({3}), outage_start=40, outage_length=15)
    run = crawl(live_server, token, tmp_path, "kit-flaky", config)
    assert run.exit_code == 3, run.log[-3000:]
    stored = Run.objects.get(source__slug="kit-flaky")
    assert stored.verdict == "incomplete"
    rules = {f["rule"] for f in stored.findings if f["mode"] == "enforce"}
    assert "lost_pages" in rules
    assert stored.pages_lost == 1 and stored.lost_urls and "page=3" in stored.lost_urls[0]
    # The outage answered 200 with a stub: the breaker saw it, tripped and recovered.
    assert stored.requests_by_class.get("short_body", 0) > 0
    kinds = list(FailureWindowEvent.objects.filter(run=stored).values_list("kind", flat=True))
    assert "tripped" in kinds and kinds[-1] == "resumed"
    assert Source.objects.get(slug="kit-flaky").health == "failing"


@pytest.mark.django_db(transaction=True)
def test_a_crawl_cut_short_with_thousands_of_listing_pages_waiting_is_judged_and_exits_3(live_server, tmp_path):
    # Page 1 links to all 12,000 pages; the crawl stops after 20 items with the rest still
    # scheduled. Naming every one of them was a report the service refused (422), so this run,
    # the one that lost the most, exited 65 and the service never heard of it.
    token = make_token("scrapy", ["kit-cut-short"])
    with CatalogueSite(CatalogueConfig(items=120_000)) as site:
        run = run_catalogue_crawl(
            live_server.url,
            token,
            site.url,
            workdir=tmp_path / "kit-cut-short",
            source="kit-cut-short",
            settings={"CLOSESPIDER_ITEMCOUNT": 20},
        )
    assert run.exit_code == 3, run.log[-3000:]
    stored = Run.objects.get(source__slug="kit-cut-short")
    assert stored.verdict == "incomplete" and stored.end_reason == "closespider_itemcount"
    assert stored.pages_lost > 10_000 and 0 < len(stored.lost_urls) <= 1_000


@pytest.mark.django_db(transaction=True)
def test_a_catalogue_whose_record_pages_answer_404_by_the_dozen_is_judged_incomplete_and_exits_3(live_server, tmp_path):
    # A deploy that broke the record URLs: 40 of 60 answer 404, the kit counts them as removed (as it
    # should one delisted record), and the 20 collected were all of what was "left". Complete, exit 0,
    # until mass_removal; its healthy neighbour, one record delisted, is the first test above.
    token = make_token("scrapy", ["kit-mass-404"])
    config = CatalogueConfig(items=60, removed_items=frozenset(range(1, 41)))
    run = crawl(live_server, token, tmp_path, "kit-mass-404", config)
    assert run.exit_code == 3, run.log[-3000:]
    stored = Run.objects.get(source__slug="kit-mass-404")
    assert (stored.declared_total, stored.removed, stored.collected) == (60, 40, 20)
    assert stored.verdict == "incomplete" and stored.silent
    assert [f["rule"] for f in stored.findings if f["mode"] == "enforce"][0] == "mass_removal"
