"""Server time of the overview and of a source page with a full year of runs, on SQLite and PostgreSQL.

    python bench/pages.py                      # both databases, 2,000 sources x 365 days x 4 runs/day
    python bench/pages.py --db postgres --sources 200

The data is bulk-inserted straight into the tables (COPY on PostgreSQL): this measures the pages, not
ingest, and 2.9 million reports through the API would take hours. A filled database is reused when it
already holds the requested shape. Each page is requested through Django's full middleware stack (test
client, logged in); the figure is the median of --repeat requests after one warm-up request.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

# The settings refuse the built-in key with DEBUG off; a benchmark's servers and its own Django share this one.
os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(24).hex())

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://completeness:completeness@127.0.0.1:5432/completeness_dash_bench")
SQLITE_PATH = ROOT / "var" / "bench" / "pages.sqlite3"

RUN_COLUMNS = (
    "source_id", "run_id", "report_digest", "received_at", "started_at", "finished_at", "exit_code",
    "crawler_verdict", "paused", "pause_reason", "declared_total", "collected", "written", "removed",
    "requests_by_class", "lost_urls", "failed_batches", "delivery_errors", "snapshot_action",
    "breaker_threshold", "breaker_peak_ratio", "breaker_last_event", "outcomes", "outcome_rates", "counters",
    "meta", "raw", "verdict", "silent", "findings", "completeness", "baseline_collected", "accepted_as_baseline",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--sources", type=int, default=2000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--per-day", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return
    for db in (["sqlite", "postgres"] if args.db == "both" else [args.db]):
        env = {**os.environ, "DATABASE_URL": database_url(db), "LOG_LEVEL": "WARNING", "DEBUG": "0"}
        if db == "postgres":
            ensure_pg_database()
        # One process per database: settings read DATABASE_URL once, at import.
        subprocess.run(
            [sys.executable, __file__, "--child", "--db", db, "--sources", str(args.sources), "--days",
             str(args.days), "--per-day", str(args.per_day), "--repeat", str(args.repeat)],
            env=env, check=True, cwd=ROOT,
        )


def database_url(db: str) -> str:
    if db == "postgres":
        return PG_URL
    SQLITE_PATH.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{SQLITE_PATH}"


def ensure_pg_database() -> None:
    import psycopg

    base, name = PG_URL.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def run_child(args) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "completeness.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    expected = args.sources * args.days * args.per_day
    from sources.models import Run

    from django.db.models import Q

    from sources.models import Source

    if Run.objects.count() != expected:
        fill(args.sources, args.days, args.per_day)
    elif Source.objects.filter(Q(last_run__isnull=True) | Q(last_verdict="")).exists():
        settle_sources(datetime.now(UTC).replace(minute=0, second=0, microsecond=0))
    measure(args, expected)


def fill(n_sources: int, days: int, per_day: int) -> None:
    from django.db import connection, transaction

    from sources.models import FailureWindowEvent, Flip, PauseEvent, ProxyTransition, Run, Source

    started = time.perf_counter()
    print(f"[{connection.vendor}] filling {n_sources} sources x {days} days x {per_day} runs/day ...", flush=True)
    with transaction.atomic():
        Source.objects.update(last_run=None, baseline_run=None)
        for model in (ProxyTransition, FailureWindowEvent, Flip, PauseEvent, Run, Source):
            model.objects.all().delete()
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    rng = random.Random(1)
    regions = ["ae", "sa", "eg", "uk", "de", "us", "fr", "in"]
    Source.objects.bulk_create(
        Source(slug=f"src-{i:05d}", name=f"Source {i}", region=regions[i % len(regions)],
               expected_interval=timedelta(hours=6), grace=timedelta(hours=2))
        for i in range(n_sources)
    )
    sources = list(Source.objects.order_by("id").values_list("id", flat=True))
    columns = ", ".join(RUN_COLUMNS)
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY sources_run ({columns}) FROM STDIN") as copy:
                for row in run_rows(sources, days, per_day, now, rng):
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(RUN_COLUMNS))
            batch: list[tuple] = []
            for row in run_rows(sources, days, per_day, now, rng):
                batch.append(row)
                if len(batch) == 20_000:
                    cursor.executemany(f"INSERT INTO sources_run ({columns}) VALUES ({marks})", batch)
                    batch.clear()
            if batch:
                cursor.executemany(f"INSERT INTO sources_run ({columns}) VALUES ({marks})", batch)
    # Statistics first: without them the planner scans the whole table for each source below.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    settle_sources(now)
    print(f"[{connection.vendor}] filled in {time.perf_counter() - started:.0f} s", flush=True)


def run_rows(sources: list[int], days: int, per_day: int, now: datetime, rng: random.Random):
    step = timedelta(hours=24 / per_day)
    first = now - timedelta(days=days) + timedelta(minutes=5)
    runs = days * per_day
    for index, source_id in enumerate(sources):
        size = rng.randint(300, 50_000)
        declared = index % 10 < 7
        breaker = index % 4 == 0
        # Every 25th source degrades silently on its latest runs: the overview has something on top.
        degrading = index % 25 == 0
        baseline = None
        for k in range(runs):
            start = first + k * step
            collected = int(size * rng.uniform(0.995, 1.005))
            bad = rng.random() < 0.02 or (degrading and k >= runs - 3)
            if bad:
                collected = int(collected * rng.uniform(0.5, 0.9))
            total = size if declared else None
            findings = []
            if bad:
                rule, expected = ("declared_total", size) if declared else ("drop", baseline or size)
                findings = [{"rule": rule, "mode": "enforce", "message": f"collected {collected}",
                             "expected": expected, "actual": collected}]
            verdict = "incomplete" if bad else "complete"
            silent = bad and (degrading or rng.random() < 0.5)
            finished = start + timedelta(minutes=40)
            yield (
                source_id, f"r{k}", f"{source_id:016x}{k:048x}", finished, start, finished, 0 if silent or not bad else 1,
                "complete" if silent or not bad else "incomplete", False, "", total, collected, collected, 0,
                "{}", "[]", "[]", "{}", "replaced", 0.35 if breaker else None,
                round(rng.uniform(0.0, 0.5), 3) if breaker else None, "", "{}", "{}", "{}", "{}",
                json.dumps({"source": f"src-{index:05d}", "run_id": f"r{k}", "collected": collected}),
                verdict, silent, json.dumps(findings), collected / size if declared else None, baseline, False,
            )
            if not bad:
                baseline = collected


def settle_sources(now: datetime) -> None:
    """What ingest keeps on each source row: latest run, baseline, health."""
    from django.db import connection

    print(f"[{connection.vendor}] setting each source's latest run and baseline ...", flush=True)
    from django.db.models import OuterRef, Subquery

    from sources.models import Run, Source

    latest = Run.objects.filter(source=OuterRef("pk")).order_by("-started_at", "-id")
    good = latest.filter(verdict="complete")
    Source.objects.update(
        last_run=Subquery(latest.values("pk")[:1]),
        baseline_run=Subquery(good.values("pk")[:1]),
        baseline_collected=Subquery(good.values("collected")[:1]),
        baseline_started_at=Subquery(good.values("started_at")[:1]),
        last_report_at=Subquery(latest.values("received_at")[:1]),
        last_run_started_at=Subquery(latest.values("started_at")[:1]),
        last_verdict=Subquery(latest.values("verdict")[:1]),
        health_since=now - timedelta(days=3),
    )
    failing = Run.objects.filter(pk=OuterRef("last_run_id"), verdict="incomplete")
    from django.db.models import Exists

    Source.objects.filter(Exists(failing)).update(health="failing")


def measure(args, runs: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from sources.models import Source

    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    source = Source.objects.order_by("slug").first()
    results = {}
    for label, url in (("overview", "/"), ("source page (full year)", f"/sources/{source.slug}/")):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        timings = []
        for _ in range(args.repeat):
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                client.get(url)
                timings.append((time.perf_counter() - started) * 1000)
        results[label] = (statistics.median(timings), len(queries))
    print(f"\n{connection.vendor}: {args.sources} sources, {runs:,} runs "
          f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs)")
    for label, (median, queries) in results.items():
        print(f"  {label:<26} median {median:7.1f} ms  ({queries} queries, {args.repeat} requests)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
