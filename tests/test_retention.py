"""Retention: prune removes old runs and run details in batches, never a last, baseline or accepted run."""

import json
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import F, OuterRef, Subquery
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sources import jobs
from sources.alerts import channels
from sources.ingest.baselines import accept_as_baseline
from sources.models import (
    FailureWindowEvent,
    Flip,
    Notification,
    PagingIncident,
    PauseEvent,
    ProxyTransition,
    RetentionMark,
    Run,
    Source,
)
from sources.services import retention
from tests.conftest import run_report

pytestmark = pytest.mark.django_db

LOST = [f"https://shop.test/list?page={p}" for p in range(30)]


def details(n: int) -> dict:
    at = run_report("x", n)["started_at"]
    return dict(
        pages={"expected": 40, "fetched": 10, "lost": 30, "lost_urls": LOST},
        failure_window={
            "threshold": 0.3,
            "events": [{"at": at, "seq": 1, "kind": "tripped", "ratio": 0.4}],
            "series": [[0, 0.0], [100, 0.2], [200, 0.4]],
        },
        proxy_transitions=[
            {
                "proxy": "p1",
                "at": at,
                "from": "eligible",
                "to": "cooling",
                "reason": "connect_refused",
                "stage": "connect",
            }
        ],
    )


def policy(**overrides) -> retention.Policy:
    return retention.Policy(
        **{**dict(detail_days=30, lost_urls=20, runs_days=400, sent_notifications_days=90, batch=1000), **overrides}
    )


def runs_of(slug: str) -> dict[int, Run]:
    """days ago -> run, from the run ids run_report gives (source-n-)."""
    return {int(r.run_id.split("-")[1]): r for r in Run.objects.filter(source__slug=slug)}


@pytest.fixture
def history(api, django_user_model):
    """shop: a run on each of these days ago, the 450-day one incomplete and accepted as baseline; dormant:
    two runs long ago, its last (incomplete) and its baseline. Each run arrived when it finished."""
    posts = [("shop", n, details(n)) for n in (500, 450, 420, 401, 399, 200, 60, 31, 29, 1)]
    posts += [("dormant", 600, {}), ("dormant", 500, {"declared_total": 1000, "collected": 10})]
    # In the order they arrived, as a service sees them: ids follow arrival.
    for slug, n, extra in sorted(posts, key=lambda post: -post[1]):
        bad = {"declared_total": 1000, "collected": 400} if (slug, n) == ("shop", 450) else {}
        assert api.post_run(run_report(slug, n, **extra, **bad)).status_code == 201
    Run.objects.update(received_at=F("finished_at"))
    # A transition's arrival is its run's, copied at ingest.
    ProxyTransition.objects.update(
        received_at=Subquery(Run.objects.filter(pk=OuterRef("run_id")).values("received_at")[:1])
    )
    accept_as_baseline(runs_of("shop")[450], django_user_model.objects.create_user("accepting-operator"))
    return runs_of("shop")


def test_runs_older_than_400_days_go_with_their_breaker_events_and_proxy_transitions(history):
    result = retention.prune(policy=policy(detail_days=None))
    assert sorted(runs_of("shop")) == [1, 29, 31, 60, 200, 399, 450]  # 450: accepted, see below
    assert (result.runs, result.breaker_events, result.proxy_transitions) == (3, 3, 3)
    assert not FailureWindowEvent.objects.filter(run__in=[history[n].pk for n in (500, 420, 401)]).exists()
    assert FailureWindowEvent.objects.count() == ProxyTransition.objects.count() == 7


def test_a_sources_last_run_and_baseline_run_are_kept_however_old(history):
    dormant = Source.objects.get(slug="dormant")
    assert dormant.last_run.run_id == "dormant-500-" and dormant.baseline_run.run_id == "dormant-600-"
    result = retention.prune(policy=policy())
    assert sorted(runs_of("dormant")) == [500, 600]
    dormant.refresh_from_db()
    assert dormant.last_run_id and dormant.baseline_run_id
    assert result.kept == 3  # dormant's two, and shop's accepted run


def test_a_run_an_operator_accepted_as_baseline_is_kept(history):
    retention.prune(policy=policy())
    assert runs_of("shop")[450].accepted_as_baseline


def test_flips_pause_events_and_notifications_outlive_the_runs_they_point_at(history):
    old = history[500]
    source = old.source
    flip = Flip.objects.create(source=source, old_health="ok", new_health="failing", run=old)
    pause = PauseEvent.objects.create(source=source, action="pause", origin="api", run=old)
    channel = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")
    waiting = Notification.objects.create(channel=channel, source=source, run=old, kind="failing", event={})
    retention.prune(policy=policy())
    for row in (flip, pause, waiting):
        row.refresh_from_db()
        assert row.run_id is None


def test_past_30_days_a_run_keeps_its_columns_and_loses_its_raw_body_series_and_lost_urls_past_20(history):
    before = {
        n: (r.collected, r.verdict, r.breaker_peak_ratio, r.pages_lost, r.field_counts) for n, r in history.items()
    }
    result = retention.prune(policy=policy())
    after = runs_of("shop")
    for n in (31, 60, 200, 399):
        run = after[n]
        assert list(run.raw) == [retention.PRUNED_KEY], n
        assert run.lost_urls == LOST[:20]
        assert (run.collected, run.verdict, run.breaker_peak_ratio, run.pages_lost, run.field_counts) == before[n]
        assert run.breaker_events.count() == 1  # events go with the run, after 400 days
    for n in (1, 29):
        assert after[n].raw["failure_window"]["series"] == [[0, 0.0], [100, 0.2], [200, 0.4]]
        assert after[n].lost_urls == LOST
    # shop's 31..399 and 450, dormant's two: what is left past the detail age.
    assert result.details == 7


def test_a_second_pass_trims_nothing_and_reads_no_trimmed_run_again(history):
    retention.prune(policy=policy(batch=3))
    mark = RetentionMark.objects.get(name="run_detail").last_id
    assert mark == history[31].pk
    with CaptureQueriesContext(connection) as queries:
        again = retention.prune(policy=policy(batch=3))
    assert (again.runs, again.details) == (0, 0)
    windows = [q["sql"] for q in queries if "received_at" in q["sql"] and '"id" >' in q["sql"]]
    detail_window = [sql for sql in windows if re.search(rf'"id" > {mark}\b', sql)]
    assert detail_window, windows  # the detail pass started at its mark


def test_dry_run_counts_what_a_real_run_then_removes_and_changes_nothing(history):
    channel = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")
    Notification.objects.create(
        channel=channel, kind="failing", event={}, status="sent", created_at=timezone.now() - timedelta(days=91)
    )
    raws = {r.pk: r.raw for r in Run.objects.all()}
    # Beside the old one, the channel was told of the sources failing when it was added (pending).
    notifications = Notification.objects.count()
    dry = retention.prune(policy=policy(), dry_run=True)
    assert {r.pk: r.raw for r in Run.objects.all()} == raws
    assert not RetentionMark.objects.exists() and Notification.objects.count() == notifications
    real = retention.prune(policy=policy())
    assert dry.as_dict() | {"dry_run": False, "seconds": 0} == real.as_dict() | {"seconds": 0}
    assert (real.runs, real.details, real.notifications) == (3, 7, 1)


def test_sent_notifications_older_than_90_days_go_and_undelivered_ones_stay(db):
    channel = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")
    now = timezone.now()

    def make(status, days):
        return Notification.objects.create(
            channel=channel, kind="failing", event={}, status=status, created_at=now - timedelta(days=days)
        ).pk

    gone = [make("sent", 91), make("sent", 200)]
    stay = [make("sent", 89), make("failed", 300), make("pending", 300), make("retrying", 120)]
    result = retention.prune(policy=policy(batch=1))
    assert result.notifications == 2
    assert sorted(Notification.objects.values_list("pk", flat=True)) == sorted(stay)
    assert not Notification.objects.filter(pk__in=gone).exists()


def test_paging_incidents_closed_over_90_days_ago_go_and_open_ones_stay_however_old(db):
    channel = channels.create_channel(kind="pagerduty", target="0123456789abcdef0123456789abcdef")
    now = timezone.now()

    def incident(opened_days, closed_days):
        return PagingIncident.objects.create(
            channel=channel,
            key=f"storm-{opened_days}-{closed_days}",
            opened_at=now - timedelta(days=opened_days),
            last_joined_at=now - timedelta(days=opened_days),
            closed_at=None if closed_days is None else now - timedelta(days=closed_days),
        ).pk

    gone = incident(120, 91)
    stay = [incident(95, 89), incident(300, None)]
    dry = retention.prune(policy=policy(), dry_run=True)
    assert dry.incidents == 1 and PagingIncident.objects.count() == 3
    assert retention.prune(policy=policy()).incidents == 1
    assert sorted(PagingIncident.objects.values_list("pk", flat=True)) == sorted(stay)
    assert not PagingIncident.objects.filter(pk=gone).exists()
    assert retention.prune(policy=policy(sent_notifications_days=None)).incidents == 0


def test_small_batches_remove_the_same_as_one_large_batch(history):
    result = retention.prune(policy=policy(batch=2))
    assert (result.runs, result.details, result.kept) == (3, 7, 3)
    assert sorted(runs_of("shop")) == [1, 29, 31, 60, 200, 399, 450]


def test_deleting_runs_reads_no_raw_body_and_scans_sources_once_per_batch(history):
    with CaptureQueriesContext(connection) as queries:
        retention.prune(policy=policy(detail_days=None, batch=4))
    selects = [q["sql"] for q in queries if q["sql"].startswith("SELECT")]
    assert not [sql for sql in selects if '"raw"' in sql or '"lost_urls"' in sql]
    run_windows = [sql for sql in selects if 'FROM "sources_run"' in sql and "LIMIT 4" in sql]
    source_scans = [sql for sql in selects if sql.startswith('SELECT "sources_source"."last_run_id"')]
    assert len(source_scans) == len(run_windows)


def test_off_keeps_everything(history):
    result = retention.prune(policy=policy(detail_days=None, runs_days=None, sent_notifications_days=None))
    assert (result.runs, result.details, result.notifications) == (0, 0, 0)
    assert Run.objects.count() == 12


def figures(response) -> dict[str, dict]:
    found = re.findall(r'data-target="chart-(\w+)">(.*?)</script>', response.content.decode(), re.S)
    figures = {name: json.loads(body) for name, body in found}
    for figure in figures.values():
        # The range ends at the second the page is drawn: two renders may straddle a second.
        figure["layout"]["xaxis"].pop("range", None)
    return figures


def test_the_source_page_draws_the_same_year_of_charts_after_a_prune(history, staff_client):
    # The page shows 90 days unless asked: the year is a range of its own.
    before = staff_client.get("/sources/shop/?range=1y")
    assert before.status_code == 200
    retention.prune(policy=policy())
    after = staff_client.get("/sources/shop/?range=1y")
    assert after.status_code == 200
    charts = figures(after)
    assert charts == figures(before)
    collected = {t["name"]: t for t in charts["collected"]["data"]}["collected"]
    assert len(collected["y"]) == 5  # the year: 200, 60, 31 (trimmed), 29 and 1 days ago
    breaker = {t["name"]: t for t in charts["breaker"]["data"]}
    assert any(len(t.get("y") or []) >= 5 for t in breaker.values())  # peaks read columns, not raw bodies


def test_the_run_page_of_a_trimmed_run_still_renders(history, staff_client):
    retention.prune(policy=policy())
    page = staff_client.get(f"/runs/{history[60].pk}/")
    assert page.status_code == 200
    assert b"raw report removed" in page.content


def test_the_command_prints_what_it_removed_or_would(history, settings):
    settings.RETAIN_RUNS_DAYS, settings.RETAIN_DETAIL_DAYS = 400, 30
    out = StringIO()
    call_command("prune", "--dry-run", stdout=out)
    assert "runs: would remove 3" in out.getvalue() and "dry run, nothing changed" in out.getvalue()
    assert Run.objects.count() == 12
    out = StringIO()
    call_command("prune", stdout=out)
    text = out.getvalue()
    assert "runs: removed 3" in text and "3 breaker events and 3 proxy transitions" in text
    assert "of 7 runs" in text and "sent notifications: removed 0" in text
    assert Run.objects.count() == 9


def test_the_prune_job_runs_daily_on_both_engines(history):
    from django.conf import settings as settings_module

    from completeness.celery import app
    from sources import queue

    assert settings_module.PERIODIC_JOBS["prune"] == "PRUNE_SECONDS"
    assert app.conf.beat_schedule["prune"]["args"] == ("prune",)
    assert app.conf.beat_schedule["prune"]["schedule"] == timedelta(days=1)
    assert queue.run("prune")["runs"] == 3


def test_retention_settings_take_days_or_off(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from completeness.settings import env_days

    monkeypatch.setenv("RETAIN_X", "45")
    assert env_days("RETAIN_X", "30") == 45
    monkeypatch.setenv("RETAIN_X", "off")
    assert env_days("RETAIN_X", "30") is None
    monkeypatch.delenv("RETAIN_X")
    assert env_days("RETAIN_X", "30") == 30
    for bad in ("0", "-3", "a month"):
        monkeypatch.setenv("RETAIN_X", bad)
        with pytest.raises(ImproperlyConfigured):
            env_days("RETAIN_X", "30")


def test_a_run_deleted_through_the_orm_still_clears_the_sources_reference_to_it(history):
    # The sources table has no foreign key to runs in the database (migration 0005_ops_retention):
    # the ORM's on_delete keeps the references right.
    dormant = Source.objects.get(slug="dormant")
    Run.objects.filter(pk=dormant.last_run_id).delete()
    dormant.refresh_from_db()
    assert dormant.last_run_id is None and dormant.baseline_run_id is not None


def test_a_pass_out_of_time_stops_between_batches_and_the_next_carries_on(history, monkeypatch):
    calls = {"n": 0}
    on_time = retention._on_time

    def three_batches(deadline):
        calls["n"] += 1
        if calls["n"] > 3:
            raise retention._OutOfTime
        on_time(deadline)

    monkeypatch.setattr(retention, "_on_time", three_batches)
    first = retention.prune(policy=policy(batch=2), time_budget=60)
    assert not first.finished and first.runs == 3 and first.details == 0
    assert "out of time" in first.lines()[-1]
    monkeypatch.setattr(retention, "_on_time", on_time)
    rest = retention.prune(policy=policy(batch=2), time_budget=60)
    assert rest.finished and rest.runs == 0 and rest.details == 7


def test_the_job_queues_its_continuation_when_out_of_time(history, settings):
    from django_q.models import OrmQ

    # django-q2's ORM broker, for real: the continuation is a queued message naming the job.
    settings.TASK_ENGINE, settings.TASKS_SYNC = "django_q", False

    def queued() -> list[str]:
        return [message.task["func"] for message in OrmQ.objects.all()]

    settings.PRUNE_TIME_BUDGET_SECONDS = 0
    assert jobs.prune()["finished"] is False and queued() == ["sources.jobs.prune"]
    settings.PRUNE_TIME_BUDGET_SECONDS = 40
    assert jobs.prune()["finished"] is True and queued() == ["sources.jobs.prune"]
