"""/metrics: Prometheus text, open to the loopback address, otherwise behind METRICS_TOKEN; right with several workers."""

import logging
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from sources.alerts import channels
from sources.models import Flip, Health, Notification, Source
from tests.alerts.sinks import free_port
from tests.alerts.stack import Database, manage
from tests.conftest import report
from tests.test_database_down import database_down  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = {"REMOTE_ADDR": "10.1.2.3"}


def scrape(client, **extra) -> dict:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return samples(response.content.decode())


def samples(text: str) -> dict:
    """(name, sorted labels) -> value, for every sample of the exposition."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict, name: str, **labels) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


# Access


def test_metrics_are_open_to_the_loopback_address(client):
    assert client.get("/metrics").status_code == 200  # the test client comes from 127.0.0.1
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200


def test_without_metrics_token_anyone_else_is_refused(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", **OUTSIDE).status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ", **OUTSIDE).status_code == 403


def test_with_metrics_token_anyone_else_needs_that_bearer_token(client, settings):
    settings.METRICS_TOKEN = "s3cret-scrape-token"
    missing = client.get("/metrics", **OUTSIDE)
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape-tokem", **OUTSIDE).status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Basic s3cret-scrape-token", **OUTSIDE).status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token", **OUTSIDE).status_code == 200


def test_a_request_forwarded_by_a_local_proxy_is_not_taken_for_the_loopback(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 403
    assert client.get("/metrics", HTTP_FORWARDED="for=203.0.113.9").status_code == 403


@pytest.mark.parametrize(
    "header",
    ["HTTP_X_REAL_IP", "HTTP_X_CLIENT_IP", "HTTP_TRUE_CLIENT_IP", "HTTP_CF_CONNECTING_IP", "HTTP_VIA"],
)
def test_a_request_carrying_only_another_proxys_client_header_is_not_taken_for_the_loopback(client, settings, header):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", **{header: "203.0.113.9"}).status_code == 403
    # The same request without it, from the loopback: answered.
    assert client.get("/metrics").status_code == 200


def test_with_trust_loopback_off_the_loopback_needs_the_token_too(client, settings):
    # A TCP proxy on the same host (stunnel, HAProxy in TCP mode) passes no header naming its client:
    # every scrape it forwards arrives from 127.0.0.1.
    settings.TRUST_LOOPBACK = False
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 403
    settings.METRICS_TOKEN = "s3cret-scrape-token"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token").status_code == 200


# Counted in the process


def test_a_silent_incomplete_report_moves_the_silent_counter_and_a_complete_one_does_not(api, client):
    before = scrape(client)
    # The crawler exits 0 with a tenth missing: incomplete, and silent.
    assert api.post_run(report(run_id="a", declared_total=1000, collected=900)).json()["silent"] is True
    after_silent = scrape(client)
    assert value(after_silent, "completeness_reports_total", verdict="incomplete", silent="true") == (
        value(before, "completeness_reports_total", verdict="incomplete", silent="true") + 1
    )
    assert api.post_run(report(run_id="b", declared_total=1000, collected=1000)).status_code == 201
    after_complete = scrape(client)
    assert value(after_complete, "completeness_reports_total", verdict="incomplete", silent="true") == (
        value(after_silent, "completeness_reports_total", verdict="incomplete", silent="true")
    )
    assert value(after_complete, "completeness_reports_total", verdict="complete", silent="false") == (
        value(before, "completeness_reports_total", verdict="complete", silent="false") + 1
    )


def test_a_repeated_report_is_not_counted_again_but_its_answer_is_timed(api, client):
    assert api.post_run(report()).status_code == 201
    before = scrape(client)
    assert api.post_run(report()).status_code == 200
    after = scrape(client)
    assert value(after, "completeness_reports_total", verdict="complete", silent="false") == (
        value(before, "completeness_reports_total", verdict="complete", silent="false")
    )
    assert value(after, "completeness_ingest_seconds_count") == value(before, "completeness_ingest_seconds_count") + 1
    assert value(after, "completeness_ingest_seconds_bucket", le="+Inf") == value(
        after, "completeness_ingest_seconds_count"
    )


# Read from the database


def test_sources_by_health_flips_and_overdue_sources(api, client):
    now = timezone.now()
    hour = timedelta(hours=1)
    api.post_run(report(source="good", run_id="1", declared_total=1000, collected=1000))
    api.post_run(report(source="bad", run_id="1", declared_total=1000, collected=1000))
    api.post_run(
        report(
            source="bad",
            run_id="2",
            declared_total=1000,
            collected=100,
            started_at="2026-09-16T03:00:00Z",
            finished_at="2026-09-16T04:00:00Z",
        )
    )
    Source.objects.create(slug="marked", health=Health.OVERDUE, expected_interval=hour, last_report_at=now - 5 * hour)
    # Past its deadline, but the clock job has not run since: overdue all the same.
    Source.objects.create(
        slug="late", expected_interval=hour, grace=hour, last_report_at=now - 3 * hour, health_since=now - 3 * hour
    )
    Source.objects.create(slug="on-time", expected_interval=hour, grace=hour, last_report_at=now, health_since=now)
    Source.objects.create(slug="stopped", paused=True, health=Health.PAUSED)
    # No clock, and three of its usual gaps without a report (and one still within them: not counted).
    day = timedelta(days=1)
    Source.objects.create(slug="gone", usual_gap=day, last_report_at=now - 4 * day, quiet_after=now - day)
    Source.objects.create(slug="resting", usual_gap=day, last_report_at=now - day, quiet_after=now + 2 * day)

    found = scrape(client)
    assert {h: value(found, "completeness_sources", health=h) for h in Health.values} == {
        "ok": 5,
        "failing": 1,
        "overdue": 1,
        "paused": 1,
    }
    assert value(found, "completeness_sources_overdue") == 2
    assert value(found, "completeness_sources_overdue_unmarked") == 1
    assert value(found, "completeness_sources_quiet_without_clock") == 1
    assert (
        value(found, "completeness_flips_total", to="failing") == Flip.objects.filter(new_health="failing").count() == 1
    )
    assert value(found, "completeness_stored_state_up") == 1


def test_the_oldest_undelivered_notification_age_appears_while_one_waits_and_is_0_when_none(client):
    found = scrape(client)
    assert value(found, "completeness_notification_oldest_undelivered_age_seconds") == 0
    assert value(found, "completeness_notifications", status="pending") == 0

    channel = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")
    Notification.objects.create(
        channel=channel, kind="failing", event={}, created_at=timezone.now() - timedelta(minutes=10)
    )
    Notification.objects.create(channel=channel, kind="failing", event={}, status=Notification.Status.RETRYING)
    Notification.objects.create(
        channel=channel,
        kind="failing",
        event={},
        status=Notification.Status.FAILED,
        created_at=timezone.now() - timedelta(days=2),
    )
    found = scrape(client)
    age = value(found, "completeness_notification_oldest_undelivered_age_seconds")
    assert 600 <= age < 660  # the failed one is older, but nobody is trying to deliver it any more
    assert value(found, "completeness_notifications", status="pending") == 1
    assert value(found, "completeness_notifications", status="retrying") == 1
    assert value(found, "completeness_notifications", status="failed") == 1

    Notification.objects.exclude(status=Notification.Status.FAILED).update(status=Notification.Status.SENT)
    found = scrape(client)
    assert value(found, "completeness_notification_oldest_undelivered_age_seconds") == 0
    assert value(found, "completeness_notifications", status="failed") == 1


def test_a_scrape_costs_the_same_few_queries_however_many_sources_there_are(client, django_assert_num_queries):
    Source.objects.bulk_create([Source(slug=f"s{n}") for n in range(5)])
    with django_assert_num_queries(5):
        scrape(client)
    Source.objects.bulk_create([Source(slug=f"t{n}") for n in range(200)])
    with django_assert_num_queries(5):
        scrape(client)


def test_a_scrape_answers_with_stored_state_up_0_when_the_database_fails(client, monkeypatch):
    from sources.ops import metrics

    def fail(self, now):
        raise RuntimeError("database went away")

    monkeypatch.setattr(metrics.StoredState, "_sources", fail)
    found = scrape(client)
    assert value(found, "completeness_stored_state_up") == 0
    assert ("completeness_ingest_seconds_count", ()) in found


# Several worker processes


@pytest.mark.skipif(os.environ.get("PROMETHEUS_MULTIPROC_DIR") is not None, reason="the test sets the mode itself")
def test_under_gunicorn_with_two_workers_every_scrape_counts_every_workers_reports(tmp_path):
    database = Database.migrated(tmp_path)
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database.url, "VAR_DIR": str(tmp_path / "var"), "LOG_LEVEL": "WARNING"}
    base = f"http://127.0.0.1:{port}"
    created = manage(env, "create_token", "m")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    # The command line of bin/serve; gunicorn.conf.py in the working directory turns on multiprocess mode.
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "completeness.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "gunicorn.log").open("w"),
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{base}/healthz", timeout=2).raise_for_status()
                break
            except requests.RequestException:
                assert time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()
                time.sleep(0.2)
        for n in range(12):
            # A new connection each time, so the reports spread over both workers.
            answer = requests.post(
                f"{base}/api/v1/runs",
                json=report(run_id=f"r{n}", declared_total=1000, collected=900),
                headers={"Authorization": f"Bearer {token}", "Connection": "close"},
                timeout=10,
            )
            assert answer.status_code == 201, answer.text
        for _ in range(6):
            found = samples(requests.get(f"{base}/metrics", headers={"Connection": "close"}, timeout=10).text)
            assert value(found, "completeness_reports_total", verdict="incomplete", silent="true") == 12
            assert value(found, "completeness_ingest_seconds_count") == 12
    finally:
        server.terminate()
        server.wait(timeout=15)
        database.__exit__(None, None, None)


@pytest.mark.usefixtures("database_down")
def test_a_scrape_during_an_outage_logs_one_line_not_a_traceback(client, caplog):
    with caplog.at_level(logging.WARNING, logger="sources.ops.metrics"):
        found = scrape(client)
    assert value(found, "completeness_stored_state_up") == 0
    (record,) = [r for r in caplog.records if r.name == "sources.ops.metrics"]
    assert record.levelname == "WARNING" and record.exc_info is None
    assert record.getMessage().startswith("metrics: the database did not answer (OperationalError")
