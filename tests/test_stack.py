"""The scale-out stack of docker-compose.yml without Docker: PostgreSQL, Redis, gunicorn with 4 workers,
a Celery worker and beat, each started as `bin/process NAME` from the Procfile, exactly as the compose
file starts them. Reports go in over HTTP; alerts come out at webhook receivers on 127.0.0.1; /readyz is green.

Needs PostgreSQL (the suite's database) and Redis. It skips without them, except where
STACK_E2E_REQUIRED is set: .ci/run sets it for the PostgreSQL run, so there it can only pass or fail.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
import requests
from django.conf import settings

from tests.alerts.sinks import HttpSink, Reply, free_port
from tests.alerts.stack import Database, redis_reachable
from tests.web_process import Procfile

ROOT = Path(__file__).resolve().parent.parent
POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
missing = [what for what, there in (("PostgreSQL", POSTGRES), ("Redis", redis_reachable())) if not there]
if missing and not os.environ.get("STACK_E2E_REQUIRED"):
    pytest.skip(f"the scale-out stack needs {' and '.join(missing)}", allow_module_level=True)

pytestmark = pytest.mark.django_db(transaction=True)
# The broker's Redis database: a run sharing Redis with others may take a database of its own.
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def run(n: int, source: str, collected: int) -> dict:
    return dict(
        source=source,
        run_id=f"{source}-{n}",
        started_at=f"2026-09-{n:02d}T03:00:00Z",
        finished_at=f"2026-09-{n:02d}T04:00:00Z",
        exit_code=0,
        declared_total=1000,
        collected=collected,
    )


def celery_env(tmp: Path, database_url: str, port: int, *, workers: int, queue: str, **alerts: str) -> dict:
    """The Procfile's environment on Celery, as docker-compose gives it: this database, Redis, a queue of
    the test's own, and the alert timings the test needs (each `name` as ALERTS_<NAME>)."""
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DATABASE_URL": database_url,
        "VAR_DIR": str(tmp / "var"),
        "SITE_URL": f"http://127.0.0.1:{port}",
        "ADDR": f"127.0.0.1:{port}",
        "WEB_WORKERS": str(workers),
        "TASK_ENGINE": "celery",
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_QUEUE": queue,
        **{f"ALERTS_{name.upper()}": value for name, value in alerts.items()},
        "PYTHONUNBUFFERED": "1",
    }


def poster(base: str, token: str):
    def post(body: dict) -> requests.Response:
        return requests.post(f"{base}/api/v1/runs", json=body, timeout=10, headers={"Authorization": f"Bearer {token}"})

    return post


def wait_for_events(sink: HttpSink, count: int, logs, timeout: float = 40) -> list[dict]:
    received = sink.wait_for(count, timeout=timeout)
    assert len(received) >= count, logs()
    return [r.json() for r in received]


def test_the_procfile_stack_alerts_through_celery_marks_overdue_and_survives_a_killed_worker(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with HttpSink() as hook, HttpSink() as slow_hook, Database(tmp_path) as db:
        env = celery_env(
            tmp_path,
            db.url,
            port,
            workers=4,
            queue=f"stack-{uuid.uuid4().hex[:8]}",
            sweep_seconds="0.5",
            overdue_seconds="0.5",
            claim_timeout_seconds="3",
            retry_base_seconds="0.2",
            retry_max_seconds="0.5",
        )
        stack = Procfile(tmp_path, env)
        try:
            token = stack.up(
                "from datetime import timedelta",
                "from sources.models import Source",
                "Source.objects.create(slug='quiet', expected_interval=timedelta(seconds=3), grace=timedelta(0))",
                f"call_command('add_channel', 'webhook', '{hook.url('/hook')}', '--method', 'POST',"
                " '--source', 'shop', '--source', 'quiet')",
                f"call_command('add_channel', 'webhook', '{slow_hook.url('/slow')}', '--method', 'POST',"
                " '--source', 'victim')",
            )
            post = poster(base, token)

            # Ready: the database and Redis (the broker of TASK_ENGINE=celery) answer.
            ready = requests.get(f"{base}/readyz", timeout=10)
            assert ready.status_code == 200, ready.text

            # A flip reaches the webhook through Redis and the Celery worker; beat runs the overdue
            # clock, so `quiet`, registered with a 3 s interval and never heard from, flips overdue.
            assert post(run(1, "shop", 1000)).status_code == 201
            assert post(run(2, "shop", 400)).json()["verdict"] == "incomplete"
            events = wait_for_events(hook, 2, stack.logs)
            assert sorted((e["kind"], e["source"]["slug"]) for e in events) == [
                ("failing", "shop"),
                ("overdue", "quiet"),
            ]

            # A worker killed in the middle of a delivery: the receiver holds the request, the worker
            # dies, a new one starts, and the sweep hands the claim out again once it is stale.
            slow_hook.reply(Reply(delay=8))
            assert post(run(1, "victim", 1000)).status_code == 201
            assert post(run(2, "victim", 100)).json()["verdict"] == "incomplete"
            [interrupted] = wait_for_events(slow_hook, 1, stack.logs)
            stack.kill("worker")
            stack.start("worker")
            second = wait_for_events(slow_hook, 2, stack.logs, timeout=60)[1]
            assert second == interrupted and second["kind"] == "failing"
            time.sleep(3)
            # Exactly once more: one interrupted attempt, one delivery, nothing after it.
            assert len(slow_hook.received()) == 2, stack.logs()
            with psycopg.connect(db.url) as conn:
                statuses = conn.execute(
                    "SELECT n.status FROM sources_notification n JOIN sources_source s ON s.id = n.source_id "
                    "WHERE s.slug = 'victim'"
                ).fetchall()
            assert statuses == [("sent",)]
            assert len(hook.received()) == 2  # and nothing else reached the first receiver
        finally:
            stack.stop()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def test_on_celery_an_alert_reaches_its_receiver_within_a_second_and_a_retry_goes_out_when_due(tmp_path):
    """The sweep runs once a minute here, as in production: only the queue message can be this fast."""
    import redis

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    queue = f"latency-{uuid.uuid4().hex[:8]}"
    broker = redis.Redis.from_url(REDIS_URL)
    # Not emptied first: the Redis may be shared (TEST_REDIS_URL gives a run a database of its own).
    unread_before = broker.llen("celery")
    with HttpSink() as hook, HttpSink() as flaky, Database(tmp_path) as db:
        env = celery_env(
            tmp_path,
            db.url,
            port,
            workers=2,
            queue=queue,
            sweep_seconds="60",
            overdue_seconds="60",
            retry_base_seconds="1",
            retry_max_seconds="1",
        )
        stack = Procfile(tmp_path, env)
        try:
            token = stack.up(
                f"call_command('add_channel', 'webhook', '{hook.url('/hook')}', '--source', 'shop')",
                f"call_command('add_channel', 'webhook', '{flaky.url('/flaky')}', '--source', 'flaky')",
            )
            post = poster(base, token)
            # The worker is up once a first flip has gone through (not timed: processes are starting).
            assert post(run(1, "shop", 1000)).status_code == 201
            assert post(run(2, "shop", 400)).json()["verdict"] == "incomplete"
            wait_for_events(hook, 1, stack.logs, timeout=60)

            latencies = []
            for n in range(3, 23):  # 20 flips: ok, failing, ok, ...
                answered = post(run(n, "shop", 1000 if n % 2 else 400))
                at = time.monotonic()
                assert answered.status_code == 201
                arrived = hook.wait_for(n - 1, timeout=10)
                assert len(arrived) == n - 1, stack.logs()
                latencies.append(max(0.0, arrived[-1].at - at))
            print(
                f"report-to-webhook latency over 20 flips: p50 {percentile(latencies, 0.5):.3f} s,"
                f" p95 {percentile(latencies, 0.95):.3f} s, max {max(latencies):.3f} s"
            )
            assert percentile(latencies, 0.95) < 1.0, latencies
            assert [e["kind"] for e in (r.json() for r in hook.received()[1:])] == ["resolved", "failing"] * 10

            # A receiver answering 500 once gets the retry after ALERTS_RETRY_BASE_SECONDS, not a minute later.
            flaky.reply(Reply(500))
            assert post(run(1, "flaky", 1000)).status_code == 201
            assert post(run(2, "flaky", 400)).status_code == 201
            first, second = wait_for_events(flaky, 2, stack.logs, timeout=90) and flaky.received()[:2]
            print(f"retry after a 500: {second.at - first.at:.2f} s (due after 1 s)")
            assert second.at - first.at < 5, second.at - first.at

            # Nothing was published where no worker reads: Celery's default queue did not grow, and ours drained.
            assert broker.llen("celery") == unread_before
            assert broker.llen(queue) == 0
        finally:
            stack.stop()
