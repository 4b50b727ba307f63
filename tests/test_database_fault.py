"""PostgreSQL stopped and started under a steady load of reports.

A gunicorn of the Procfile serves a fresh database on a PostgreSQL cluster of its own; a thread posts
reports at a steady rate; the cluster is stopped (`pg_ctlcluster ... stop -m fast`) for a few seconds
and started again. Then: while it was down every answer was 503 with Retry-After and a JSON body (an
answer, never a dropped connection), the same gunicorn stores reports again without a restart, and
after the crawlers' retries of what got 503 every report is stored exactly once.

Stopping a cluster stops every database on it, so the test never touches the suite's own cluster:
FAULT_PG_CLUSTER names the one to stop ("15 fault": version and name; .ci/run creates and starts it,
with the same role as the main cluster). Needs root (pg_ctlcluster). Without FAULT_PG_CLUSTER it skips,
except where STACK_E2E_REQUIRED is set (CI's PostgreSQL run): there it can only pass or fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
import requests
from django.conf import settings

from tests.alerts.sinks import free_port
from tests.web_process import stop_group

ROOT = Path(__file__).resolve().parent.parent
POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
CLUSTER = os.environ.get("FAULT_PG_CLUSTER", "").split()
if not POSTGRES:
    pytest.skip("the database fault test runs with the PostgreSQL suite", allow_module_level=True)
if not (len(CLUSTER) == 2 and shutil.which("pg_ctlcluster")) and not os.environ.get("STACK_E2E_REQUIRED"):
    pytest.skip("FAULT_PG_CLUSTER names no PostgreSQL cluster this test may stop", allow_module_level=True)

DOWN_SECONDS = 4
POST_EVERY_SECONDS = 0.05


def cluster_port(version: str, name: str) -> int:
    line = subprocess.run(["pg_lsclusters", "-h", version, name], capture_output=True, text=True, check=True).stdout
    return int(line.split()[2])


def pg_ctl(action: str, *options: str) -> None:
    subprocess.run(["pg_ctlcluster", *CLUSTER, action, *options], check=True, capture_output=True, timeout=60)


@dataclass
class Answer:
    run_id: str
    body: bytes
    sent_at: float
    status: int | None  # None: no answer at all (refused, reset, timed out)
    retry_after: str | None = None
    json_body: dict | None = None


class Load(threading.Thread):
    """Posts one new report every POST_EVERY_SECONDS until stopped, keeping every answer."""

    def __init__(self, base: str, token: str):
        super().__init__(daemon=True)
        self.base, self.token = base, token
        self.answers: list[Answer] = []
        self.halt = threading.Event()
        self.session = requests.Session()

    def post(self, run_id: str, body: bytes) -> Answer:
        answer = Answer(run_id, body, time.monotonic(), None)
        try:
            response = self.session.post(
                f"{self.base}/api/v1/runs",
                data=body,
                timeout=10,
                headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            )
        except requests.RequestException:
            return answer
        answer.status, answer.retry_after = response.status_code, response.headers.get("Retry-After")
        if response.headers.get("Content-Type", "").startswith("application/json"):
            answer.json_body = response.json()
        return answer

    def run(self) -> None:
        started = datetime.now(UTC) - timedelta(hours=2)
        n = 0
        while not self.halt.is_set():
            n += 1
            run_id = f"fault-{n}"
            body = json.dumps(
                {
                    "source": "steady",
                    "run_id": run_id,
                    "exit_code": 0,
                    "collected": 100 + n,
                    "started_at": (started + timedelta(seconds=n)).isoformat(),
                    "finished_at": (started + timedelta(seconds=n + 1)).isoformat(),
                }
            ).encode()
            self.answers.append(self.post(run_id, body))
            self.halt.wait(POST_EVERY_SECONDS)

    def since(self, moment: float) -> list[Answer]:
        return [a for a in self.answers if a.sent_at >= moment]


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_postgres_stopped_and_started_under_load_loses_no_report_and_needs_no_restart(tmp_path):
    assert len(CLUSTER) == 2, "FAULT_PG_CLUSTER must name the cluster to stop, e.g. '15 fault'"
    assert CLUSTER[1] != "main", "never stop the main cluster: other test runs use it"
    db = settings.DATABASES["default"]
    server = dict(host="127.0.0.1", port=cluster_port(*CLUSTER), user=db["USER"], password=db["PASSWORD"])
    name = f"completeness_fault_{uuid.uuid4().hex[:10]}"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DATABASE_URL": f"postgres://{server['user']}:{server['password']}@127.0.0.1:{server['port']}/{name}",
        "VAR_DIR": str(tmp_path / "var"),
        "ADDR": f"127.0.0.1:{port}",
        "WEB_WORKERS": "2",
        # Persistent connections are the harder case: each worker must notice its connection died.
        "DB_CONN_MAX_AGE": "60",
        "PYTHONUNBUFFERED": "1",
    }
    with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    log = open(tmp_path / "web.log", "a")
    web = None
    try:
        for step in (["bin/process", "migrate"], [sys.executable, "manage.py", "create_token", "fault"]):
            done = subprocess.run(step, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
        token = done.stdout.strip().splitlines()[-1]
        web = subprocess.Popen(
            ["bin/process", "web"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_until(lambda: _ready(base), 30, "gunicorn to answer")

        load = Load(base, token)
        load.start()
        try:
            wait_until(lambda: sum(a.status == 201 for a in load.answers) >= 10, 10, "reports before the outage")
            stopping = time.monotonic()
            pg_ctl("stop", "-m", "fast")
            stopped = time.monotonic()
            time.sleep(DOWN_SECONDS)
            starting = time.monotonic()
            pg_ctl("start")
            started = time.monotonic()
            wait_until(
                lambda: sum(a.status == 201 for a in load.since(started)) >= 10,
                15,
                "reports stored again after the restart",
            )
        finally:
            load.halt.set()
            load.join(timeout=15)

        answers = load.answers
        logs = (tmp_path / "web.log").read_text()[-4000:]
        assert all(a.status is not None for a in answers), (
            f"{sum(a.status is None for a in answers)} posts got no answer at all\n{logs}"
        )
        assert {a.status for a in answers} <= {201, 503}, {a.status for a in answers}
        assert all(a.status == 201 for a in answers if a.sent_at < stopping), "failed before the outage"
        down = [a for a in answers if a.sent_at >= stopped and a.sent_at < starting]
        assert down and all(a.status == 503 for a in down), "posts while the cluster was down must get 503"
        for answer in answers:
            if answer.status == 503:
                assert answer.retry_after and int(answer.retry_after) > 0, answer
                assert answer.json_body and answer.json_body["detail"], answer
        assert web.poll() is None, "gunicorn must ride it out, not exit"

        # What got 503 the crawler retries (the kit does: docs/api.md); a report whose commit made
        # it before the answer was lost is a repeat (200), every other one is new (201).
        retries = Load(base, token)
        for answer in answers:
            if answer.status == 503:
                retried = retries.post(answer.run_id, answer.body)
                assert retried.status in (200, 201), retried

        with psycopg.connect(**server, dbname=name) as conn:
            stored = conn.execute(
                "SELECT run.run_id, count(*) FROM sources_run run JOIN sources_source source"
                " ON source.id = run.source_id WHERE source.slug = 'steady' GROUP BY run.run_id"
            ).fetchall()
        counts = dict(stored)
        assert set(counts) == {a.run_id for a in answers}, "every report posted is stored"
        assert set(counts.values()) == {1}, "and each exactly once"
        print(
            f"{len(answers)} posts, {sum(a.status == 503 for a in answers)} answered 503, "
            f"down {starting - stopped:.1f}s, stop took {stopped - stopping:.1f}s, start {started - starting:.1f}s"
        )
    finally:
        if web is not None:
            stop_group(web)
        log.close()
        if _cluster_down():
            pg_ctl("start")
        with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _ready(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def _cluster_down() -> bool:
    line = subprocess.run(["pg_lsclusters", "-h", *CLUSTER], capture_output=True, text=True).stdout
    return "online" not in line
