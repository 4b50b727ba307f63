"""A failing source paused, crawled while paused and resumed is failing again for the run that failed:
the overview's row speaks of that run, not of the paused one after it, which lost nothing."""

from importlib import import_module
from types import SimpleNamespace

from django.apps import apps
from django.db import connection

from sources.models import Run, Source
from sources.pages.selectors.overview import OverviewFilters, Severity, overview_page
from sources.services import retention
from tests.conftest import run_report


def _overwritten_then_paused_run(api) -> Run:
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=9000, snapshot={"action": "replaced", "rows": 9000}))
    api.post_run(run_report("shop", 2, collected=1200, snapshot={"action": "replaced", "rows": 1200}))
    assert api.post("/sources/shop/pause", {"reason": "fix deployed", "until": None}).status_code == 200
    api.post_run(run_report("shop", 1, collected=9000))
    return Run.objects.get(source__slug="shop", verdict="incomplete")


def _row():
    (row,) = overview_page(OverviewFilters(), 1).object_list
    return row


def test_a_source_resumed_into_failing_is_shown_for_the_run_that_failed(api, db):
    failed = _overwritten_then_paused_run(api)
    assert api.post("/sources/shop/resume").json()["health"] == "failing"
    row = _row()
    assert row.state == "failing" and row.severity == Severity.OVERWRITTEN
    assert row.run_id == failed.pk and row.verdict == "incomplete" and row.collected == 1200
    assert row.why  # the finding it failed for, where the paused run had none


def test_the_silent_only_filter_finds_it_for_the_run_that_failed(api, db):
    # The row flags the silent loss it fails for; the filter read the paused run after it and lost it.
    failed = _overwritten_then_paused_run(api)
    assert failed.silent
    assert api.post("/sources/shop/resume").json()["health"] == "failing"
    (row,) = overview_page(OverviewFilters(silent_only=True), 1).object_list
    assert row.run_id == failed.pk and row.silent


def test_the_silent_only_filter_leaves_out_a_source_resumed_into_a_loud_failure(api, db):
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=9000))
    api.post_run(run_report("shop", 2, collected=1200, exit_code=1))
    assert not Run.objects.get(source__slug="shop", verdict="incomplete").silent
    assert api.post("/sources/shop/pause", {"reason": "fix deployed", "until": None}).status_code == 200
    api.post_run(run_report("shop", 1, collected=9000))
    assert api.post("/sources/shop/resume").json()["health"] == "failing"
    assert overview_page(OverviewFilters(silent_only=True), 1).object_list == []


def test_while_paused_the_row_shows_the_paused_run(api, db):
    _overwritten_then_paused_run(api)
    row = _row()
    paused = Run.objects.get(source__slug="shop", verdict="paused")
    assert row.state == "paused" and row.run_id == paused.pk and row.verdict == "paused"


def test_a_source_resumed_into_ok_is_shown_for_its_last_run(api, db):
    for n in (3, 2):
        api.post_run(run_report("shop", n))
    assert api.post("/sources/shop/pause", {"reason": "site migration", "until": None}).status_code == 200
    api.post_run(run_report("shop", 1))
    assert api.post("/sources/shop/resume").json()["health"] == "ok"
    row = _row()
    assert row.state == "ok" and row.run_id == Source.objects.get(slug="shop").last_run_id


def test_retention_keeps_the_run_a_failing_source_fails_for(api, db):
    failed = _overwritten_then_paused_run(api)
    assert failed.pk in retention.kept_among([failed.pk])


def test_the_upgrade_points_each_source_at_its_last_judged_run(api, db):
    failed = _overwritten_then_paused_run(api)
    Source.objects.update(last_judged_run=None)
    migration = import_module("sources.migrations.0030_last_judged_run")
    migration.point_at_the_last_judged_run(apps, SimpleNamespace(connection=connection))  # as migrate's schema editor
    assert Source.objects.get(slug="shop").last_judged_run_id == failed.pk
    # A late judged report, older than the paused run, does not move it back.
    api.post_run(run_report("shop", 5, collected=9000, suffix="late"))
    assert Source.objects.get(slug="shop").last_judged_run_id == failed.pk


def test_a_resume_reads_the_latest_judged_run_by_start_not_a_late_report(api, db):
    # A report from days before the failure, posted late (a spool emptied), arrives after the failing
    # run: it speaks for the past, not the present. Read by arrival, the resume took its "complete"
    # for the source's present and settled a source whose latest crawl lost 87% on ok.
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=9000))
    api.post_run(run_report("shop", 3, collected=1200))
    failed = Run.objects.get(source__slug="shop", verdict="incomplete")
    api.post_run(run_report("shop", 5, collected=9000, suffix="late"))
    assert Run.objects.get(run_id="shop-5-late").verdict == "complete"
    assert api.post("/sources/shop/pause", {"reason": "fix deployed", "until": None}).status_code == 200
    api.post_run(run_report("shop", 1, collected=9000))
    assert api.post("/sources/shop/resume").json()["health"] == "failing"
    assert _row().run_id == failed.pk
