"""The Procfile's `web` line (gunicorn with gunicorn.conf.py) as production starts it, on 127.0.0.1 and
a free port, over a migrated database of its own, with a token: for tests that need the real server's
workers (slow clients, counting across processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.slow_clients import get
from tests.alerts.sinks import answers, free_port
from tests.alerts.stack import Database

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def procfile_web(tmp: Path, workers: int, **settings: str) -> Iterator[tuple[int, str]]:
    """(port, token); the token is scoped to a source named `elsewhere`. `settings` go to the environment."""
    port = free_port()
    db = Database.migrated(tmp)
    try:
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "DATABASE_URL": db.url,
            "VAR_DIR": str(tmp / "var"),
            "ADDR": f"127.0.0.1:{port}",
            "WEB_WORKERS": str(workers),
            **settings,
        }
        for unset in ("WEB_THREADS", "CACHE_URL"):
            if unset not in settings:
                env.pop(unset, None)
        token = subprocess.run(
            [sys.executable, "manage.py", "create_token", "web", "--source", "elsewhere"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.splitlines()[-1]
        with open(tmp / "web.log", "w") as log:
            process = subprocess.Popen(
                ["bin/process", "web"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                assert answers(f"http://127.0.0.1:{port}/healthz", timeout=60), (tmp / "web.log").read_text()
                # Each worker loads Django on its first request: a few more so that every one has.
                for _ in range(8 * workers):
                    get(port, "/healthz", timeout=10)
                yield port, token
            finally:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
    finally:
        db.__exit__(None, None, None)
