"""The Procfile's processes as production starts them (`bin/process NAME`, each in its own process
group): the whole scale-out stack for tests/test_stack.py, and the `web` line alone (gunicorn with
gunicorn.conf.py) on 127.0.0.1 and a free port, over a migrated database of its own, with a token, for
tests that need the real server's workers (slow clients, counting across processes, bad inputs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.slow_clients import get
from tests.alerts.sinks import answers, free_port
from tests.alerts.stack import Database, manage

ROOT = Path(__file__).resolve().parent.parent


class Procfile:
    """The Procfile's processes, each in its own process group so that it can be killed whole."""

    def __init__(self, tmp: Path, env: dict):
        self.tmp, self.env = tmp, env
        self.running: dict[str, subprocess.Popen] = {}

    def run(self, name: str) -> None:
        done = subprocess.run(
            ["bin/process", name], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr

    def start(self, name: str) -> None:
        log = open(self.tmp / f"{name}.log", "a")
        self.running[name] = subprocess.Popen(
            ["bin/process", name], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def up(self, *setup: str) -> str:
        """Migrate, create a token and run the `setup` lines (Python, in one shell: start-up is slow),
        start web, worker and beat, and wait for gunicorn. Returns the token."""
        self.run("migrate")
        script = ["from django.core.management import call_command", "call_command('create_token', 'stack')", *setup]
        output = shell(self.env, "\n".join(script))
        token = next(line for line in output.splitlines() if line.startswith("cmpl_"))
        for name in ("web", "worker", "beat"):
            self.start(name)
        if not answers(f"{self.env['SITE_URL']}/api/v1/openapi.json", timeout=60):
            pytest.fail(f"gunicorn did not answer\n{self.logs()}")
        return token

    def kill(self, name: str) -> None:
        """SIGKILL to the process and its children (Celery's pool), as an OOM killer or a lost host would."""
        process = self.running.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-4000:]}" for p in sorted(self.tmp.glob("*.log")))

    def stop(self) -> None:
        for process in self.running.values():
            os.killpg(process.pid, signal.SIGTERM)
        for process in self.running.values():
            stop_group(process, signal_first=False)


def stop_group(process: subprocess.Popen, *, timeout: float = 15, signal_first: bool = True) -> None:
    """SIGTERM to the process's group (started with start_new_session), then SIGKILL to whatever has not
    ended within `timeout` seconds."""
    if signal_first:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def shell(env: dict, script: str) -> str:
    done = manage(env, "shell", "-c", script)
    assert done.returncode == 0, done.stderr
    return done.stdout


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
        created = manage(env, "create_token", "web", "--source", "elsewhere")
        assert created.returncode == 0, created.stderr
        token = created.stdout.splitlines()[-1]
        web = Procfile(tmp, env)
        web.start("web")
        try:
            assert answers(f"http://127.0.0.1:{port}/healthz", timeout=60), web.logs()
            # Each worker loads Django on its first request: a few more so that every one has.
            for _ in range(8 * workers):
                get(port, "/healthz", timeout=10)
            yield port, token
        finally:
            web.stop()
    finally:
        db.__exit__(None, None, None)
