"""The service as separate processes (web server, task workers, scheduler) on a database they all see.

For the end-to-end tests: reports go in over HTTP, alerts come out at a real receiver, and nothing in
between runs in the test's own process.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import requests
from django.conf import settings

from tests.alerts.sinks import free_port

ROOT = Path(__file__).resolve().parents[2]


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python manage.py *args` in the project's root with `env`, its output captured as text."""
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def redis_reachable(host: str = "127.0.0.1", port: int = 6379) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class Database:
    """A database the processes share: a new PostgreSQL database when the suite runs on one, else a file.

    Migrating is the slow part of starting a stack, so it happens once: `migrated()` makes a template
    and each test gets a copy of it (CREATE DATABASE ... TEMPLATE, or a file copy).
    """

    def __init__(self, directory: Path, template: Database | None = None):
        db = settings.DATABASES["default"]
        self.postgres = db["ENGINE"].endswith("postgresql")
        self.template = template
        if self.postgres:
            self.params = dict(
                host=db["HOST"] or "127.0.0.1",
                port=db["PORT"] or 5432,
                user=db["USER"],
                password=db["PASSWORD"],
                dbname="postgres",
                autocommit=True,
            )
            self.name = f"completeness_e2e_{uuid.uuid4().hex[:10]}"
            self.url = (
                f"postgres://{db['USER']}:{db['PASSWORD']}@{self.params['host']}:{self.params['port']}/{self.name}"
            )
        else:
            self.path = directory / f"e2e-{uuid.uuid4().hex[:6]}.sqlite3"
            self.url = f"sqlite:///{self.path}"

    @classmethod
    def migrated(cls, directory: Path) -> Database:
        database = cls(directory).__enter__()
        env = {**os.environ, "DATABASE_URL": database.url, "VAR_DIR": str(directory / "var")}
        done = manage(env, "migrate", "--no-input", "-v", "0", timeout=180)
        assert done.returncode == 0, done.stderr
        return database

    def copy(self, directory: Path) -> Database:
        return Database(directory, template=self)

    def __enter__(self):
        if self.postgres:
            template = f' TEMPLATE "{self.template.name}"' if self.template else ""
            with psycopg.connect(**self.params) as conn:
                conn.execute(f'CREATE DATABASE "{self.name}"{template}')
        elif self.template:
            shutil.copyfile(self.template.path, self.path)
        return self

    def __exit__(self, *exc):
        if self.postgres:
            with psycopg.connect(**self.params) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class Stack:
    def __init__(self, tmp_path: Path, database_url: str, **env):
        self.tmp = tmp_path
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "VAR_DIR": str(tmp_path / "var"),
            "SITE_URL": self.base,
            "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "WARNING",
            **{k: str(v) for k, v in env.items()},
        }
        self.processes: list[tuple[str, subprocess.Popen]] = []
        self.token = ""

    def manage(self, *args: str) -> str:
        done = manage(self.env, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def setup(self, *channels: list[str]) -> None:
        """Create a token and add the channels (with add_channel) in one process: start-up is slow."""
        script = "\n".join(
            [
                "from django.core.management import call_command",
                "call_command('create_token', 'e2e')",
                *(f"call_command('add_channel', *{args!r})" for args in channels),
            ]
        )
        output = self.manage("shell", "-c", script)
        self.token = next(line for line in output.splitlines() if line.startswith("cmpl_"))

    def start(self, name: str, *argv: str) -> None:
        log = open(self.tmp / f"{name}.log", "w")
        process = subprocess.Popen(
            [sys.executable, *argv], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        self.processes.append((name, process))

    def logs(self) -> str:
        return "\n".join(f"--- {name}\n{(self.tmp / f'{name}.log').read_text()[-3000:]}" for name, _ in self.processes)

    def serve(self) -> None:
        self.start("web", "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload")

    def wait_until_serving(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"the web server did not start\n{self.logs()}")

    def post_run(self, **body):
        return requests.post(
            f"{self.base}/api/v1/runs", json=body, timeout=10, headers={"Authorization": f"Bearer {self.token}"}
        )

    def post(self, path: str, payload: dict):
        return requests.post(
            f"{self.base}/api/v1{path}", json=payload, timeout=10, headers={"Authorization": f"Bearer {self.token}"}
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for _, process in self.processes:
            process.terminate()
        for _, process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
