"""A Celery worker whose broker cannot be reached keeps trying, with no limit.

Celery's default gives up after 100 tries, about 50 minutes of a Redis outage, and the worker exits;
without a supervisor that restarts it (a container with no restart policy) the jobs stopped for good
while the web process went on queueing them. The worker here is the Procfile's, started as
`bin/process worker` (docker-compose.yml's command), against a port nothing listens on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.alerts.sinks import free_port
from tests.web_process import stop_group

ROOT = Path(__file__).resolve().parent.parent


def test_a_worker_that_cannot_reach_its_broker_retries_without_a_limit(tmp_path):
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "USE_VENV": "0",
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "TASK_ENGINE": "celery",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",
        "PYTHONUNBUFFERED": "1",
    }
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            ["bin/process", "worker"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 60
            while "Trying again" not in log.read_text() and time.monotonic() < deadline:
                assert worker.poll() is None, log.read_text()
                time.sleep(0.2)
        finally:
            stop_group(worker, timeout=20)
    text = log.read_text()
    retry = next((line for line in text.splitlines() if "Trying again" in line), None)
    assert retry is not None, text
    # Celery names the limit after the attempt: "(1/100)" with its default, "(1/None)" with none.
    assert retry.rstrip().endswith("(1/None)"), retry
