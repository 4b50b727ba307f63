"""Ingest throughput: realistic reports over HTTP, concurrency 8, gunicorn with 2 sync workers.

    python bench/ingest.py [--database-url postgres://…] [--reports 3000] [--concurrency 8]

Prints reports per second and latency percentiles; asserts nothing about time. The goal:
at least the ~220-280 requests/s a minimal heartbeat ping endpoint of a well-known Django monitor
manages on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

# The settings refuse the built-in key with DEBUG off; a benchmark's servers and its own Django share this one.
os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(24).hex())

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = "postgres://completeness:completeness@127.0.0.1:5432/completeness_bench"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.databases import ensure_pg_database  # noqa: E402


def realistic_report(source: str, n: int, rng: random.Random) -> dict:
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=6 * n)
    declared = 9000 + rng.randint(-50, 50)
    collected = declared if rng.random() < 0.85 else rng.randint(1000, declared)
    at = lambda minutes: (started + timedelta(minutes=minutes)).isoformat()  # noqa: E731
    events = [
        {"at": at(10), "seq": 1840, "kind": "tripped", "ratio": 0.41, "samples": 200},
        {"at": at(15), "seq": 1840, "kind": "probe", "sent": 20, "bad": 2},
        {"at": at(16), "seq": 1860, "kind": "resumed"},
    ]
    transitions = []
    for p in range(rng.randint(3, 8)):
        proxy = f"pool-{source[-2:]}/exit-{p:04d}"
        transitions += [
            {
                "proxy": proxy,
                "at": at(11 + p),
                "from": "eligible",
                "to": "cooling",
                "reason": rng.choice(["connect_refused", "connect_timeout", "slow_body"]),
                "stage": "connect",
                "until": at(16 + p),
            },
            {
                "proxy": proxy,
                "at": at(16 + p),
                "from": "cooling",
                "to": "probe_allowed",
                "reason": "cooldown_expired",
                "stage": "probe",
            },
            {
                "proxy": proxy,
                "at": at(17 + p),
                "from": "probe_allowed",
                "to": "eligible",
                "reason": "probe_succeeded",
                "stage": "probe",
            },
        ]
    return {
        "source": source,
        "run_id": f"{source}-{n:05d}",
        "started_at": at(0),
        "finished_at": at(55),
        "exit_code": 0,
        "declared_total": declared,
        "collected": collected,
        "written": collected,
        "removed": rng.randint(0, 30),
        "requests": {"total": collected + 400, "by_class": {"ok": collected + 300, "not_found": 40, "http_5xx": 60}},
        "pages": {"expected": 180, "fetched": 180, "lost": 0, "lost_urls": []},
        "snapshot": {"action": "replaced", "rows": collected},
        "failure_window": {
            "size": 200,
            "threshold": 0.35,
            "min_samples": 50,
            "bad_classes": ["http_5xx", "timeout", "connection_reset", "short_body"],
            "events": events,
            "series": [[i * 200, round(rng.random() * 0.2, 3)] for i in range(40)],
        },
        "proxy_transitions": transitions,
        "outcomes": {"generated": collected, "url_filters_rejected": rng.randint(0, 900)},
        "meta": {"crawler": "bench", "host": "worker-1"},
    }


def minimal_report(source: str, n: int, rng: random.Random) -> dict:
    """A run that says only what every crawler can: the data a heartbeat ping would carry, plus counts."""
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=6 * n)
    declared = 9000 + rng.randint(-50, 50)
    return {
        "source": source,
        "run_id": f"{source}-{n:05d}",
        "started_at": started.isoformat(),
        "finished_at": (started + timedelta(minutes=55)).isoformat(),
        "exit_code": 0,
        "declared_total": declared,
        "collected": declared,
    }


def manage(env: dict, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return out.stdout


def wait_until_up(url: str, deadline: float = 30.0) -> None:
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        try:
            requests.get(url, timeout=5)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not come up")


def gunicorn(app: str, port: int, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            app,
            "-w",
            "2",
            "-k",
            "sync",
            # gunicorn.conf.py asks for threads, which would turn these into gthread workers.
            "--threads",
            "1",
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )


TICKS = os.sysconf("SC_CLK_TCK")


def _process_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return found


def _machine_busy() -> float:
    user, nice, system, idle, iowait, *rest = map(int, Path("/proc/stat").read_text().split("\n")[0].split()[1:])
    return (user + nice + system + sum(rest[:3])) / TICKS  # irq, softirq, steal


class CpuMeter:
    """Where the machine's CPU went during a load: this client, the server's workers, and the rest
    (the database's backends and the kernel's work for all of them). On a 2-core machine running all
    three, CPU per request is what bounds the request rate."""

    def __init__(self, server_pid: int):
        self.workers = _children(server_pid)

    def _sample(self) -> tuple[float, float, float]:
        own = os.times()
        return own.user + own.system, sum(map(_process_cpu, self.workers)), _machine_busy()

    def __enter__(self):
        self.start = self._sample()
        return self

    def __exit__(self, *exc):
        end = self._sample()
        self.client, self.server, busy = (b - a for a, b in zip(self.start, end, strict=True))
        self.rest = max(busy - self.client - self.server, 0.0)

    def per_request(self, count: int) -> str:
        ms = lambda seconds: seconds / count * 1000  # noqa: E731
        return (
            f"CPU per request: server {ms(self.server):.1f} ms, database and kernel {ms(self.rest):.1f} ms, "
            f"this client {ms(self.client):.1f} ms"
        )


def load(requests_to_send: list[tuple[str, str]], headers: dict, concurrency: int) -> tuple[list, float]:
    """POST every (url, body) at the given concurrency; returns [(status, seconds)] and the wall time."""
    local = threading.local()

    def post(item: tuple[str, str]) -> tuple[int, float]:
        session = getattr(local, "session", None) or requests.Session()
        local.session = session
        url, body = item
        t0 = time.perf_counter()
        status = session.post(url, data=body, headers=headers, timeout=60).status_code
        return status, time.perf_counter() - t0

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(post, requests_to_send))
    return results, time.perf_counter() - t0


def summary(name: str, results: list, elapsed: float, cpu: CpuMeter) -> float:
    statuses: dict[int, int] = {}
    for status, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    latencies = sorted(latency * 1000 for _, latency in results)
    q = statistics.quantiles(latencies, n=100)
    rate = len(results) / elapsed
    print(
        f"{name:<28} {rate:6.0f} req/s   p50 {q[49]:6.1f} ms   p95 {q[94]:6.1f} ms   p99 {q[98]:6.1f} ms   "
        f"statuses {statuses}"
    )
    print(f"{'':<28} {cpu.per_request(len(results))}")
    return rate


def reference_ping(args, env: dict) -> float:
    codes = subprocess.run(
        [sys.executable, "-c", "from bench.reference.app import create_checks; print(*create_checks(60))"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    url = f"http://127.0.0.1:{args.port + 1}"
    server = gunicorn("bench.reference.app:application", args.port + 1, env)
    try:
        wait_until_up(f"{url}/ping/{codes[0]}")
        items = [(f"{url}/ping/{codes[i % len(codes)]}", "") for i in range(args.reports)]
        with CpuMeter(server.pid) as cpu:
            results, elapsed = load(items, {}, args.concurrency)
    finally:
        server.terminate()
        server.wait(10)
    return summary("reference heartbeat ping", results, elapsed, cpu)


def ingest(args, env: dict) -> float:
    manage(env, "migrate", "--no-input", "-v", "0")
    manage(env, "flush", "--no-input")
    token = manage(env, "create_token", "bench").strip().splitlines()[-1]
    url = f"http://127.0.0.1:{args.port}"
    server = gunicorn("completeness.wsgi", args.port, env)
    try:
        wait_until_up(f"{url}/api/v1/openapi.json")
        rng = random.Random(7)
        sources = [f"bench-{i:03d}" for i in range(args.sources)]
        make = minimal_report if args.minimal else realistic_report
        bodies = [json.dumps(make(sources[i % len(sources)], i // len(sources), rng)) for i in range(args.reports)]
        print(
            f"reports: {len(bodies)}, mean body {statistics.mean(map(len, bodies)) / 1024:.1f} KiB, "
            f"{args.sources} sources, concurrency {args.concurrency}"
        )
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        with CpuMeter(server.pid) as cpu:
            results, elapsed = load([(f"{url}/api/v1/runs", b) for b in bodies], headers, args.concurrency)
    finally:
        server.terminate()
        server.wait(10)
    return summary("ingest POST /api/v1/runs", results, elapsed, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--reports", type=int, default=3000)
    parser.add_argument("--sources", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--minimal",
        action="store_true",
        help="post minimal reports (no events, transitions or outcomes): the ingest path's own cost",
    )
    parser.add_argument(
        "--limiter",
        action="store_true",
        help="count every request in the rate limiter (at a rate no bench reaches): its cost in the cache in use",
    )
    args = parser.parse_args()

    # The benchmark is one client posting as fast as it can: exactly what the API's rate limits refuse.
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DB_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
        "API_RATE_PER_ADDRESS": "1000000/min" if args.limiter else "off",
        "API_RATE_PER_TOKEN": "1000000/min" if args.limiter else "off",
    }
    if args.database_url.startswith("postgres"):
        ensure_pg_database(args.database_url)
    print(
        f"database {args.database_url.split('@')[-1]}; gunicorn, 2 sync workers, persistent connections; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    reference = reference_ping(args, env)
    rate = ingest(args, env)
    print(f"ingest / reference: {rate / reference:.2f}")


if __name__ == "__main__":
    main()
