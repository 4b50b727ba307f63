"""A crawler that stopped reporting, on a source with no overdue clock: nothing alerts on it (a guessed
schedule would fire on every irregular crawler), so the overview names it (completeness/cadence.py,
docs/dashboard.md "No overdue clock")."""

from datetime import timedelta
from importlib import import_module
from types import SimpleNamespace

from django.apps import apps
from django.db import connection
from django.utils import timezone

from completeness import cadence
from sources.models import PauseOrigin, Source
from sources.pages.selectors.overview import quiet_without_clock
from sources.services import pausing
from tests.conftest import run_report, unwrapped


def _daily(api, slug: str = "shop", runs: int = 10) -> Source:
    for n in range(runs, 0, -1):
        api.post_run(run_report(slug, n))
    return Source.objects.get(slug=slug)


def _last_reported(slug: str, ago: timedelta) -> None:
    """As if the source's last report had arrived `ago`, and none since (ingest keeps both columns)."""
    source = Source.objects.get(slug=slug)
    at = timezone.now() - ago
    Source.objects.filter(pk=source.pk).update(last_report_at=at, quiet_after=cadence.quiet_after(at, source.usual_gap))


def _warning(client) -> str:
    page = unwrapped(client.get("/").content.decode())
    if 'id="quiet"' not in page:
        return ""
    start = page.index('id="quiet"')
    return page[start : page.index("</p>", start)]


def test_ingest_keeps_how_often_a_source_reports_and_from_when_it_is_quiet(api, db):
    source = _daily(api)
    assert source.usual_gap == timedelta(days=1)
    assert source.quiet_after == source.last_report_at + timedelta(days=3)


def test_a_source_with_too_few_runs_has_no_cadence(api, db):
    source = _daily(api, runs=4)  # 3 gaps
    assert source.usual_gap is None and source.quiet_after is None


def test_the_overview_names_a_daily_source_silent_for_four_days_and_no_clock(api, staff_client):
    _daily(api)
    _last_reported("shop", timedelta(days=4, hours=1))
    warning = _warning(staff_client)
    assert "1 source with no expected interval has not reported for three of its usual gaps" in warning
    assert '<a href="/sources/shop/">shop</a>: every 1 day, none for 4 days 1 h' in warning
    assert "An expected interval in a source's settings" in warning
    # Said on its own page too, by the same reading.
    assert "<strong>it reports about every 1 day, and has not for 4 days 1 h</strong>" in unwrapped(
        staff_client.get("/sources/shop/").content.decode()
    )


def test_two_days_without_a_report_is_not_quiet_yet(api, staff_client):
    _daily(api)
    _last_reported("shop", timedelta(days=2, hours=23))
    assert _warning(staff_client) == ""
    assert quiet_without_clock(timezone.now() + timedelta(hours=2)).total == 1


def test_a_source_with_a_clock_is_not_named_its_clock_alerts_instead(api, staff_client):
    _daily(api)
    _last_reported("shop", timedelta(days=4))
    Source.objects.filter(slug="shop").update(expected_interval=timedelta(days=1))
    assert _warning(staff_client) == ""


def test_a_paused_source_is_not_named(api, staff_client):
    source = _daily(api)
    _last_reported("shop", timedelta(days=4))
    pausing.pause_source(source, origin=PauseOrigin.UI, actor="user:ops", reason="site migration")
    assert _warning(staff_client) == ""


def test_a_report_ends_the_quiet(api, staff_client):
    _daily(api)
    _last_reported("shop", timedelta(days=4))
    assert _warning(staff_client) != ""
    api.post_run(run_report("shop", 0))
    assert _warning(staff_client) == ""


def test_many_are_counted_and_the_longest_quiet_named_first(api, viewer_client):
    for slug, days in (("a-shop", 5), ("b-shop", 9), ("c-shop", 4)):
        _daily(api, slug)
        _last_reported(slug, timedelta(days=days))
    found = quiet_without_clock(limit=2)
    assert [s.slug for s in found.items] == ["b-shop", "a-shop"] and found.more == 1
    warning = _warning(viewer_client)
    assert "3 sources with no expected interval have not reported for three of their usual gaps" in warning
    # An operator who may not change settings is not pointed at them.
    assert "An expected interval" not in warning


def test_the_upgrade_reads_the_cadence_of_sources_that_stopped_before_it(api, db):
    _daily(api)
    _last_reported("shop", timedelta(days=40))
    Source.objects.update(usual_gap=None, quiet_after=None)
    migration = import_module("sources.migrations.0028_source_cadence")
    migration.read_cadence(apps, SimpleNamespace(connection=connection))  # as migrate's schema editor
    source = Source.objects.get(slug="shop")
    assert source.usual_gap == timedelta(days=1)
    assert source.quiet_after == source.last_report_at + timedelta(days=3)
    assert quiet_without_clock().total == 1


def test_the_api_says_how_often_a_source_reports_and_whether_it_went_quiet(api, db):
    _daily(api)
    source = api.get("/sources/shop").json()
    assert source["reports_every_seconds"] == 86400 and source["quiet"] is False
    _last_reported("shop", timedelta(days=4))
    assert api.get("/sources/shop").json()["quiet"] is True
    # With a clock, the clock speaks (overdue) and it is not "quiet".
    Source.objects.filter(slug="shop").update(expected_interval=timedelta(days=1))
    assert api.get("/sources/shop").json()["quiet"] is False
