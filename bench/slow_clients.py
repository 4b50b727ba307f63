"""Slow clients against gunicorn started as production starts it: does /healthz still answer?

Starts `gunicorn completeness.wsgi` with gunicorn.conf.py on 127.0.0.1 and the worker options given,
opens slow clients, and times /healthz every 0.25 s while they hang on:

- `headers`: clients that send a request line and then one header byte every 2 s, never finishing;
- `bodies`: POSTs to /api/v1/runs with a valid token, a Content-Length of 1 MiB and a body dripped
  a byte every 2 s;
- `heavy`: 128 KB bodies of `\\"` runs, sent whole (a nesting input that once held a worker for 30 s).

    .venv/bin/python -m bench.slow_clients --headers 20 --bodies 4 --heavy 4 -- --workers 4
    .venv/bin/python -m bench.slow_clients --headers 60 -- --workers 4 --threads 32
    # sync workers, as the Procfile had them (gunicorn turns sync with threads > 1 into gthread):
    .venv/bin/python -m bench.slow_clients --headers 20 -- --workers 4 --worker-class sync --threads 1

Prints the latency figures of /healthz (answered within 1 s, within 5 s, not at all).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str, timeout: float) -> int | None:
    """One GET on a new connection; the status, or None when nothing came back within `timeout`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            head = s.recv(64)
            return int(head.split()[1]) if head.startswith(b"HTTP/") else None
    except OSError:
        return None


class Server:
    """gunicorn as the Procfile and bin/serve run it (gunicorn.conf.py is read from ROOT)."""

    def __init__(self, gunicorn_args: list[str], env: dict[str, str]):
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "gunicorn"), "completeness.wsgi", "--bind", f"127.0.0.1:{self.port}"]
            + gunicorn_args,
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if get(self.port, "/healthz", timeout=5) == 200:
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        self.log.seek(0)
        raise RuntimeError(f"gunicorn did not answer:\n{self.log.read().decode(errors='replace')[-3000:]}")

    def logs(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        import signal

        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class SlowClients:
    """Connections that each hold the server as long as they are open, dripping a byte every `every` s."""

    def __init__(self, port: int, every: float = 2.0):
        self.port, self.every = port, every
        self.sockets: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drip, daemon=True)
        self.dropped = 0

    def open_headers(self, count: int) -> None:
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            self.sockets.append(s)

    def open_bodies(self, count: int, token: str) -> None:
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(
                (
                    "POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"Authorization: Bearer {token}\r\nContent-Length: 1048576\r\n\r\n["
                ).encode()
            )
            self.sockets.append(s)

    def _drip(self) -> None:
        while not self.stop.wait(self.every):
            for s in list(self.sockets):
                try:
                    s.sendall(b"a")
                except OSError:
                    self.sockets.remove(s)
                    self.dropped += 1

    def __enter__(self) -> SlowClients:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        for s in self.sockets:
            s.close()


def heavy_bodies(port: int, token: str, count: int) -> list[threading.Thread]:
    """`count` posts of 128 KB of `\\"` runs at once, each in a thread of its own (not awaited)."""
    import requests

    body = '{"source": "shop", "run_id": "' + '\\"' * 65_000 + '"}'

    def post() -> None:
        try:
            requests.post(
                f"http://127.0.0.1:{port}/api/v1/runs",
                data=body.encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                timeout=60,
            )
        except requests.RequestException:
            pass

    threads = [threading.Thread(target=post, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    return threads


def probe(port: int, seconds: float, timeout: float = 5.0) -> list[float | None]:
    """/healthz every 0.25 s for `seconds`: each answer's latency, None for no 200 within `timeout`."""
    latencies: list[float | None] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        status = get(port, "/healthz", timeout)
        latencies.append(time.monotonic() - started if status == 200 else None)
        time.sleep(0.25)
    return latencies


def summary(latencies: list[float | None]) -> str:
    answered = sorted(x for x in latencies if x is not None)
    within = sum(1 for x in answered if x < 1.0)
    worst = f"{answered[-1]:.3f} s" if answered else "-"
    median = f"{answered[len(answered) // 2]:.3f} s" if answered else "-"
    return (
        f"{len(latencies)} probes: {within} within 1 s, {len(answered) - within} later,"
        f" {len(latencies) - len(answered)} unanswered in 5 s; median {median}, worst {worst}"
    )


@contextmanager
def environment(tmp: Path):
    """A database of its own (SQLite unless DATABASE_URL is set), migrated, with a token."""
    env = {
        **os.environ,
        "VAR_DIR": str(tmp),
        "PYTHONUNBUFFERED": "1",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-" + "k" * 40 + "0123456789",
    }
    env.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True)
    out = subprocess.run(
        [python, "manage.py", "create_token", "bench", "--source", "elsewhere"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    yield env, out.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--headers", type=int, default=20, help="slow-header clients")
    parser.add_argument("--bodies", type=int, default=0, help="slow-body clients (1 MiB announced)")
    parser.add_argument("--heavy", type=int, default=0, help='128 KB bodies of \\" runs, posted whole')
    parser.add_argument("--seconds", type=float, default=12, help="how long to probe /healthz")
    parser.add_argument("gunicorn_args", nargs="*", help="after --: gunicorn's worker options")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, environment(Path(tmp)) as (env, token):
        server = Server(args.gunicorn_args, env)
        try:
            server.wait_ready()
            print(f"gunicorn {' '.join(args.gunicorn_args)}")
            print(f"  idle:         {summary(probe(server.port, 3))}")
            with SlowClients(server.port) as slow:
                slow.open_headers(args.headers)
                slow.open_bodies(args.bodies, token)
                heavy_bodies(server.port, token, args.heavy)
                time.sleep(0.5)
                label = f"{args.headers} headers, {args.bodies} bodies, {args.heavy} heavy"
                print(f"  {label}: {summary(probe(server.port, args.seconds))} (dropped by the server: {slow.dropped})")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
