"""The overview's fleet view: records short in incomplete runs over the last 7 days in
total and per source, the run that lost most on top, failures and late sources per hour, the owner and
team filters, and a query count that does not grow with the fleet."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sources.models import Channel, Flip, Health, Source
from sources.pages.selectors.fleet import FLEET_CACHE_SECONDS, LOSS_SOURCES, fleet
from sources.pages.selectors.headline import source_headline
from sources.pages.selectors.overview import OverviewFilters
from tests.conftest import run_report
from tests.test_bounded_pages import rows_fetched  # noqa: F401 (fixture)


def post(api, slug: str, n: int, **fields) -> None:
    assert api.post_run(run_report(slug, n, **fields)).status_code == 201


def steady(api, slug: str, collected: int = 9000, days=(12, 11, 10, 9)) -> None:
    for n in days:
        post(api, slug, n, collected=collected, declared_total=collected)


@pytest.fixture
def week(api):
    """cars-ae: a partial run replaced its 9,000-row snapshot (7,800 short); parts-de: two runs short of
    their declared total (500 and 300); old-loss: a loss eight days ago, outside the week."""
    steady(api, "cars-ae")
    post(api, "cars-ae", 1, collected=1200, declared_total=9000, snapshot={"action": "replaced", "rows": 1200})
    steady(api, "parts-de", 1000)
    post(api, "parts-de", 3, collected=500, declared_total=1000)
    post(api, "parts-de", 2, collected=700, declared_total=1000)
    steady(api, "old-loss", 1000, days=(14, 13, 12, 11))
    post(api, "old-loss", 8, collected=100, declared_total=1000)
    post(api, "old-loss", 7, collected=1000, declared_total=1000, suffix="back")
    Source.objects.filter(slug="cars-ae").update(owner="amira", team="gulf")
    Source.objects.filter(slug="parts-de").update(owner="jonas", team="europe")


def test_records_lost_in_total_and_per_source_the_overwrite_on_top(week):
    view = fleet(OverviewFilters(), timezone.now())
    assert (view.short, view.runs, view.sources, view.overwrites) == (7800 + 500 + 300, 3, 2, 1)
    assert view.expected == 9000 + 1000 + 1000
    assert [(loss.slug, loss.short, loss.runs, loss.overwrites) for loss in view.losses] == [
        ("cars-ae", 7800, 1, 1),
        ("parts-de", 800, 2, 0),
    ]
    worst = view.worst
    assert (worst.slug, worst.short, worst.collected, worst.overwritten, worst.replaced_rows) == (
        "cars-ae",
        7800,
        1200,
        True,
        9000,
    )


def test_a_source_loss_agrees_with_its_page_headline(week):
    now = timezone.now()
    source = Source.objects.select_related("last_run").get(slug="cars-ae")
    headline = source_headline(source, Health.FAILING.value, now)
    loss = next(loss for loss in fleet(OverviewFilters(), now).losses if loss.slug == "cars-ae")
    assert loss.short == headline.records_short == 7800


def test_a_new_source_s_drop_counts_against_the_snapshot_it_was_judged_by(api, staff_client):
    """Without a normal or a declared total, a drop from 305 to 110 read "none, other losses"."""
    for n, collected in ((4, 300), (3, 310), (2, 305), (1, 110)):
        post(api, "young-feed", n, collected=collected)
    post(api, "young-feed-fields", 2, collected=300, fields={"price": 300})
    post(api, "young-feed-fields", 1, collected=300, fields={"price": 30})  # every record, no prices
    now = timezone.now()
    losses = {loss.slug: loss.short for loss in fleet(OverviewFilters(), now).losses}
    assert losses == {"young-feed": 195, "young-feed-fields": 0}
    source = Source.objects.select_related("last_run").get(slug="young-feed")
    headline = source_headline(source, Health.FAILING.value, now)
    assert (headline.records_short, headline.records_expected) == (195, 305)
    page = staff_client.get("/").content.decode()
    rows = dict(re.findall(r'<tr data-loss="([\w-]+)">.*?data-label="records short">(.*?)</td>', page, re.S))
    assert rows["young-feed"] == "195" and "none, other losses" in rows["young-feed-fields"]


@pytest.mark.parametrize(
    "filters,slugs",
    [
        (OverviewFilters(team="gulf"), ["cars-ae"]),
        (OverviewFilters(owner="jonas"), ["parts-de"]),
        (OverviewFilters(team="gulf", owner="jonas"), []),
    ],
)
def test_the_owner_and_team_filters_narrow_the_week(week, filters, slugs):
    view = fleet(filters, timezone.now())
    assert [loss.slug for loss in view.losses] == slugs
    assert view.sources == len(slugs)


def test_failed_runs_and_late_sources_are_counted_per_hour(week):
    now = timezone.now()
    source = Source.objects.get(slug="old-loss")
    Flip.objects.create(source=source, old_health="ok", new_health="overdue", at=now - timedelta(hours=5))
    Flip.objects.create(source=source, old_health="ok", new_health="overdue", at=now - timedelta(days=9))
    view = fleet(OverviewFilters(), now)
    assert len(view.hours) in (24 * 7, 24 * 7 + 1)
    assert view.failed == 3 and view.late == 1 and view.peak == 1
    [late] = [hour for hour in view.hours if hour.late]
    assert late.start <= now - timedelta(hours=5) < late.start + timedelta(hours=1)
    failed = [hour.start for hour in view.hours if hour.failed]
    assert len(failed) == 3 and all(h.minute == 0 for h in failed)
    assert len(view.bars()) == 4
    # Every busy hour had one; the caption names the latest of them, the overdue flip's.
    assert view.peak_hour == late


def test_the_overview_shows_the_week_and_follows_its_filters(week, staff_client):
    page = staff_client.get("/").content.decode()
    section = page[page.index('id="fleet"') : page.index("</section>", page.index('id="fleet"'))]
    text = " ".join(re.sub(r"<[^>]+>", " ", section).split())
    assert "8,600 records short in 3 incomplete runs of 2 sources" in text
    assert "1 replaced the published snapshot" in text
    assert "Worst single run: cars-ae" in text, text
    assert (
        "a partial run replaced the published snapshot of 9,000 rows with 1,200, 7,800 records short of the 9,000 expected."
        in text
    )
    assert section.count("<rect") == 3
    assert re.search(r"the busiest hour, \d{4}-\d\d-\d\d \d\d:00 UTC, had 1\. Oldest on the left", text), text
    europe = staff_client.get("/", {"team": "europe"}).content.decode()
    europe = " ".join(re.sub(r"<[^>]+>", " ", europe[europe.index('id="fleet"') :]).split())[:400]
    assert "800 records short in 2 incomplete runs of 1 source" in europe and "Worst single run: parts-de" in europe, (
        europe
    )


def test_the_worst_run_names_its_source_as_the_table_does(week, staff_client):
    # The table of losses names sources by their display name; the line above it named the slug, and
    # "cars-ae" over "Cars UAE" read as two sources.
    Source.objects.filter(slug="cars-ae").update(name="Cars UAE")
    cache.clear()
    page = staff_client.get("/").content.decode()
    section = page[page.index('id="fleet"') : page.index("</section>", page.index('id="fleet"'))]
    text = " ".join(re.sub(r"<[^>]+>", " ", section).split())
    assert "Worst single run: Cars UAE" in text and 'href="/sources/cars-ae/">Cars UAE</a>' in section, text


def test_a_quiet_week_is_one_line(api, staff_client):
    steady(api, "calm", 100)
    page = staff_client.get("/").content.decode()
    assert "No incomplete run since" in page and "No source went overdue either." in page
    assert "<svg" not in page[page.index('id="fleet"') :]


def _queries(client, path: str = "/") -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured)


def test_the_week_costs_five_queries_whatever_the_fleet(api, staff_client, rows_fetched):  # noqa: F811
    # A channel for every source: the "nobody is told" warning counts its sources past ten, one query more.
    Channel.objects.create(kind="webhook", target="http://127.0.0.1:9/hook", all_sources=True)
    steady(api, "first", 1000)
    post(api, "first", 1, collected=10, declared_total=1000)
    few = _queries(staff_client)
    for n in range(LOSS_SOURCES + 5):
        steady(api, f"s-{n}", 1000)
        post(api, f"s-{n}", 2, collected=400 + n, declared_total=1000)
        post(api, f"s-{n}", 1, collected=500, declared_total=1000, snapshot={"action": "replaced", "rows": 500})
        Flip.objects.create(source=Source.objects.get(slug=f"s-{n}"), old_health="ok", new_health="overdue")
    cache.clear()  # the overview keeps its week for a minute
    assert _queries(staff_client) == few
    before = rows_fetched["rows"]
    with CaptureQueriesContext(connection) as captured:
        view = fleet(OverviewFilters(), timezone.now())
    # Aggregated in SQL: the totals, LOSS_SOURCES sources, one run, and at most two rows per hour.
    assert rows_fetched["rows"] - before <= 1 + LOSS_SOURCES + 1 + 2 * (24 * 7 + 1)
    # Totals, the sources that lost most, the worst run, failures per hour, late sources per hour.
    assert len(captured) == 5
    with CaptureQueriesContext(connection) as captured:
        fleet(OverviewFilters(team="t", owner="o", region="r", tag="x"), timezone.now())
    assert len(captured) == 5
    assert len(view.losses) == LOSS_SOURCES and view.more_sources == 6


def test_the_overview_keeps_its_week_for_a_minute_per_scope_and_then_reads_it_again(week, api, staff_client):
    def told(query: dict | None = None) -> str:
        page = staff_client.get("/", query or {}).content.decode()
        return " ".join(re.sub(r"<[^>]+>", " ", page[page.index('id="fleet"') :]).split())[:200]

    assert "8,600 records short in 3 incomplete runs" in told()
    full = _queries(staff_client)
    post(api, "parts-de", 1, collected=100, declared_total=1000, suffix="again")
    # Within the minute the week is what it was, for five queries less; the rest of the page is read anew.
    assert "8,600 records short in 3 incomplete runs" in told()
    assert _queries(staff_client) == full
    assert FLEET_CACHE_SECONDS == 60
    # Another scope is its own week, read now.
    assert "1,700 records short in 3 incomplete runs of 1 source" in told({"team": "europe"})
    cache.clear()  # as the minute running out does
    assert "9,500 records short in 4 incomplete runs" in told()
