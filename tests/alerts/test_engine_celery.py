"""End to end on Celery: a real worker and beat against Redis, the web server, and Slack-compatible receivers.

Runs on a database all the processes see (a fresh PostgreSQL database on the PostgreSQL run, a file
on the SQLite run). Skipped only when Redis is not reachable, and never where ALERTS_E2E_REQUIRE_REDIS
is set (CI sets it: .ci/run starts Redis).
"""

import os
import sqlite3
import time
import uuid
from contextlib import closing

import psycopg
import pytest

from tests.alerts.sinks import HttpSink, Reply
from tests.alerts.stack import Database, Stack, redis_reachable

if not redis_reachable() and not os.environ.get("ALERTS_E2E_REQUIRE_REDIS"):
    pytest.skip(
        "Redis is not reachable on 127.0.0.1:6379 (start redis-server to run the Celery end-to-end test)",
        allow_module_level=True,
    )

QUIET = 2.5  # seconds with beat sweeping every 0.5 s: long enough for a stray message to arrive


def run(n: int, source: str, **fields) -> dict:
    return dict(
        source=source,
        run_id=f"{source}-{n}",
        started_at=f"2026-09-{n:02d}T03:00:00Z",
        finished_at=f"2026-09-{n:02d}T04:00:00Z",
        exit_code=0,
        **fields,
    )


GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=300)


def test_celery_worker_and_beat_deliver_exactly_the_expected_messages(tmp_path, e2e_template):
    with (
        HttpSink() as slack,
        HttpSink() as flaky,
        e2e_template.copy(tmp_path) as db,
        Stack(
            tmp_path,
            db.url,
            TASK_ENGINE="celery",
            CELERY_TASK_QUEUE=f"e2e-{uuid.uuid4().hex[:8]}",
            ALERTS_SWEEP_SECONDS=0.5,
            ALERTS_OVERDUE_SECONDS=0.5,
            ALERTS_RETRY_BASE_SECONDS=0.2,
            ALERTS_RETRY_MAX_SECONDS=0.5,
            # Slack channels group what comes within a second: "resolved" is held, then sent by beat's sweep.
            ALERTS_GROUP_SECONDS=1,
        ) as stack,
    ):
        # The processes start while the token and channels are made: none needs them before a report.
        stack.serve()
        start_worker_and_beat(stack, tmp_path)
        stack.setup(
            ["slack", slack.url("/slack"), "--source", "shop", "--source", "quiet"],
            ["slack", flaky.url("/flaky"), "--source", "flaky"],
        )
        assert stack.token.startswith("cmpl_")
        flaky.reply(Reply(500), Reply(500), Reply(500))
        stack.wait_until_serving()

        for source in ("shop", "quiet", "flaky"):
            assert stack.post_run(**run(1, source, **GOOD)).status_code == 201
        # The flaky receiver answers 500 three times: its alert must still arrive, in the end.
        assert stack.post_run(**run(2, "flaky", **BAD)).status_code == 201

        assert stack.post_run(**run(2, "shop", **BAD)).json()["verdict"] == "incomplete"
        first = slack.wait_for(1, timeout=30)
        assert len(first) == 1, stack.logs()
        assert "shop is failing silently (was ok)" in first[0].json()["text"]

        assert stack.post_run(**run(3, "shop", **BAD)).status_code == 201  # still failing: nothing
        time.sleep(QUIET)
        assert len(slack.received()) == 1

        assert stack.post("/sources/quiet/pause", {"reason": "site migration"}).status_code == 200
        assert stack.post_run(**run(2, "quiet", **BAD)).json()["verdict"] == "paused"

        assert stack.post_run(**run(4, "shop", **GOOD)).json()["verdict"] == "complete"
        both = slack.wait_for(2, timeout=20)
        assert len(both) == 2, stack.logs()
        assert "shop is ok again (was failing)" in both[1].json()["text"]

        attempts = flaky.wait_for(4, timeout=20)
        assert [r.path for r in attempts] == ["/flaky"] * 4, stack.logs()
        assert len({r.body for r in attempts}) == 1 and "flaky is failing" in attempts[0].json()["text"]

        time.sleep(QUIET)
        # Exactly: one failing and one resolved for shop, nothing for the paused source, no duplicates.
        assert len(slack.received()) == 2
        assert len(flaky.received()) == 4


def start_worker_and_beat(stack: Stack, tmp_path, beat_level: str = "WARNING") -> None:
    """A solo Celery worker and beat, as the Procfile runs them, on the stack's settings."""
    stack.start(
        "worker",
        "-m",
        "celery",
        "-A",
        "completeness",
        "worker",
        "-P",
        "solo",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "WARNING",
    )
    stack.start(
        "beat", "-m", "celery", "-A", "completeness", "beat", "-s", str(tmp_path / "beat-schedule"), "-l", beat_level
    )


def last_starts(db: Database) -> dict[str, str]:
    """Each periodic job's last start as the processes recorded it (what /readyz reads)."""
    query = "SELECT name, started_at FROM sources_jobrun"
    if db.postgres:
        with psycopg.connect(db.url) as conn:
            rows = conn.execute(query).fetchall()
    else:
        with closing(sqlite3.connect(db.path)) as conn:
            rows = conn.execute(query).fetchall()
    return {name: str(started_at) for name, started_at in rows}


def test_beat_sends_each_periodic_job_that_fell_due_when_it_starts_and_the_others_keep_their_schedule(
    tmp_path, e2e_template
):
    """Beat counted every first interval from its own start: the daily prune first ran a day after each
    start (never, where beat restarts more often), and a fresh deployment's /readyz had it late all day."""
    with (
        e2e_template.copy(tmp_path) as db,
        Stack(
            tmp_path,
            db.url,
            TASK_ENGINE="celery",
            CELERY_TASK_QUEUE=f"e2e-{uuid.uuid4().hex[:8]}",
            ALERTS_SWEEP_SECONDS=3600,
            ALERTS_OVERDUE_SECONDS=3600,
        ) as stack,
    ):
        # prune (daily) never ran, check_overdue (hourly here) two hours ago; sweep_outbox and
        # send_digests (hourly) a minute ago.
        stack.manage(
            "shell",
            "-c",
            "from datetime import timedelta\n"
            "from django.utils import timezone\n"
            "from sources.alerts.watch import record_run\n"
            "record_run('check_overdue', timezone.now() - timedelta(hours=2))\n"
            "for name in ('sweep_outbox', 'send_digests'): record_run(name, timezone.now() - timedelta(minutes=1))",
        )
        before = last_starts(db)
        assert set(before) == {"check_overdue", "sweep_outbox", "send_digests"}
        # Beat at INFO: its log names each task it sends.
        start_worker_and_beat(stack, tmp_path, beat_level="INFO")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            runs = last_starts(db)
            if "prune" in runs and runs["check_overdue"] != before["check_overdue"]:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"beat sent neither prune nor check_overdue at start: {runs}\n{stack.logs()}")
        time.sleep(QUIET)
        after = last_starts(db)
        assert {name: after[name] for name in ("sweep_outbox", "send_digests")} == {
            name: before[name] for name in ("sweep_outbox", "send_digests")
        }, stack.logs()
        # Sent once each, through beat's schedule (the next run an interval from now), and not again.
        beat_log = (tmp_path / "beat.log").read_text()
        assert [beat_log.count(f"Sending due task {name} ") for name in ("prune", "check_overdue")] == [1, 1], beat_log
