"""Database bytes per run before and after a prune, on PostgreSQL, for a generated history.

    python bench/retention.py                         # 200 sources x 450 days x 4 runs/day
    python bench/retention.py --sources 50 --days 450 --per-day 1

Each run starts from a new database (BENCH_PG_URL, default completeness_ops_bench) filled straight
into the tables with COPY and INSERT ... SELECT: what a year and a bit of reports leaves behind, with
raw bodies the size real ones have (a breaker series on a quarter of the sources, lost URLs on a
tenth of the runs, proxy transitions on a quarter of the sources, a sent notification every ten days
per source). Then `prune` runs with the default settings and the bytes are measured three times:
before, after the prune and a plain VACUUM (what autovacuum gets to: the files keep their size, the
space is reused by new runs), and after VACUUM FULL (what the kept rows take). It also times deleting
a batch of runs with and without the foreign keys from the sources table (docs/operations.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

# The settings refuse the built-in key with DEBUG off; a benchmark's servers and its own Django share this one.
os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(24).hex())

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://completeness:completeness@127.0.0.1:5432/completeness_ops_bench")
TABLES = ("sources_run", "sources_failurewindowevent", "sources_proxytransition", "sources_notification")
RUN_COLUMNS = (
    "source_id",
    "run_id",
    "report_digest",
    "received_at",
    "started_at",
    "finished_at",
    "exit_code",
    "crawler_verdict",
    "paused",
    "pause_reason",
    "declared_total",
    "collected",
    "written",
    "removed",
    "requests_total",
    "requests_by_class",
    "pages_expected",
    "pages_fetched",
    "pages_lost",
    "lost_urls",
    "failed_batches",
    "delivery_errors",
    "snapshot_action",
    "breaker_threshold",
    "breaker_peak_ratio",
    "breaker_last_event",
    "outcomes",
    "outcome_rates",
    "counters",
    "meta",
    "raw",
    "verdict",
    "silent",
    "findings",
    "completeness",
    "baseline_collected",
    "accepted_as_baseline",
    "end_reason",
    "expectation_basis",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=200)
    parser.add_argument("--days", type=int, default=450)
    parser.add_argument("--per-day", type=int, default=4)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return
    import psycopg

    base, name = PG_URL.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {**os.environ, "DATABASE_URL": PG_URL, "LOG_LEVEL": "WARNING", "DEBUG": "0"}
    subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "--sources",
            str(args.sources),
            "--days",
            str(args.days),
            "--per-day",
            str(args.per_day),
        ],
        env=env,
        check=True,
        cwd=ROOT,
    )


def run_child(args) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "completeness.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    started = time.perf_counter()
    fill(args.sources, args.days, args.per_day, now)
    print(f"filled in {time.perf_counter() - started:.0f} s", flush=True)
    vacuum("VACUUM ANALYZE")
    before = sizes()
    fk = fk_check_cost(args.sources)

    from sources.services import retention

    batch_seconds = []
    delete = retention._delete

    def timed(ids, result):
        t = time.perf_counter()
        delete(ids, result)
        batch_seconds.append(time.perf_counter() - t)

    retention._delete = timed
    dry = retention.prune(dry_run=True)
    result = retention.prune()
    vacuum("VACUUM ANALYZE")
    after_vacuum = sizes()
    vacuum("VACUUM FULL ANALYZE")
    after_full = sizes()
    # The steady state: the daily job a day later finds one day of runs to delete and one to trim.
    next_day = retention.prune(now=datetime.now(UTC) + timedelta(days=1))

    print(
        f"\nPostgreSQL {connection.pg_version // 10000}: {args.sources} sources x {args.days} days x "
        f"{args.per_day} runs/day ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs)"
    )
    print(f"  prune --dry-run {dry.seconds:.1f} s; prune {result.seconds:.1f} s: " + "; ".join(result.lines()))
    print(
        f"  a day later: prune {next_day.seconds:.1f} s: {next_day.runs} runs deleted, {next_day.details} trimmed, "
        f"{next_day.notifications} notifications deleted"
    )
    if batch_seconds:
        print(
            f"  {len(batch_seconds)} delete batches of up to {retention.Policy.from_settings().batch} runs: "
            f"median {sorted(batch_seconds)[len(batch_seconds) // 2] * 1000:.0f} ms, "
            f"longest {max(batch_seconds) * 1000:.0f} ms"
        )
    for label, (runs, by_table) in (
        ("before", before),
        ("after prune + VACUUM", after_vacuum),
        ("after VACUUM FULL", after_full),
    ):
        total = sum(by_table.values())
        print(
            f"  {label:<22} {runs:>9,} runs  {total / 2**20:8.1f} MiB  {total / runs:8,.0f} bytes/run  ("
            + ", ".join(f"{t.removeprefix('sources_')} {b / 2**20:.1f}" for t, b in by_table.items())
            + " MiB)"
        )
    for label, (ms, checks) in fk.items():
        print(f"  deleting 1,000 runs, {label}: {ms:,.0f} ms, of it {checks:,.0f} ms checking sources")
    sys.stdout.flush()


def vacuum(statement: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"{statement} {table}")


def sizes() -> tuple[int, dict[str, int]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sources_run")
        runs = cursor.fetchone()[0]
        by_table = {}
        for table in TABLES:
            cursor.execute("SELECT pg_total_relation_size(%s)", [table])
            by_table[table] = cursor.fetchone()[0]
    return runs, by_table


def fill(n_sources: int, days: int, per_day: int, now: datetime) -> None:
    from django.db import connection, transaction

    from sources.alerts import channels
    from sources.models import Source

    Source.objects.bulk_create(Source(slug=f"src-{i:05d}") for i in range(n_sources))
    sources = list(Source.objects.order_by("id").values_list("id", flat=True))
    rng = random.Random(1)
    columns = ", ".join(RUN_COLUMNS)
    with transaction.atomic(), connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY sources_run ({columns}) FROM STDIN") as copy:
            for row in run_rows(sources, days, per_day, now, rng):
                copy.write_row(row)
    channel = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")
    with connection.cursor() as cursor:
        # Breaker events (3 a run) where a breaker ran, proxy transitions (4 a run) on a quarter of the sources.
        cursor.execute(
            "INSERT INTO sources_failurewindowevent (source_id, run_id, at, seq, kind, ratio, samples, sent, bad) "
            "SELECT r.source_id, r.id, r.started_at + g * interval '5 minutes', g, "
            "(ARRAY['tripped', 'probe', 'resumed'])[g], 0.4, 100, 100, 40 "
            "FROM sources_run r CROSS JOIN generate_series(1, 3) g WHERE r.breaker_peak_ratio IS NOT NULL"
        )
        cursor.execute(
            "INSERT INTO sources_proxytransition (source_id, run_id, proxy, at, from_state, to_state, reason, stage) "
            "SELECT r.source_id, r.id, 'pool-ae/exit-' || (r.id % 50), r.started_at + g * interval '3 minutes', "
            "'eligible', 'cooling', 'connect_refused', 'connect' "
            "FROM sources_run r CROSS JOIN generate_series(1, 4) g WHERE r.source_id % 4 = 1"
        )
        # One sent notification every ten days per source.
        cursor.execute(
            "INSERT INTO sources_notification (channel_id, source_id, run_id, kind, event, status, version, attempts,"
            " next_attempt_at, last_error, claimed_by, created_at, sent_at) "
            "SELECT %s, r.source_id, r.id, 'failing', "
            "jsonb_build_object('kind', 'failing', 'source', 'src', 'cause', repeat('x', 200)), 'sent', 2, 1, "
            "r.received_at, '', '', r.received_at, r.received_at "
            "FROM sources_run r WHERE r.run_id LIKE '%%0'",
            [channel.pk],
        )
        cursor.execute("ANALYZE")
    settle_sources()


def run_rows(sources: list[int], days: int, per_day: int, now: datetime, rng: random.Random):
    step = timedelta(hours=24 / per_day)
    first = now - timedelta(days=days)
    # Arrival order, across sources: ids follow it as they do in service.
    for k in range(days * per_day):
        start = first + k * step
        finished = start + timedelta(minutes=40)
        for index, source_id in enumerate(sources):
            size = 5_000 + (index * 7919) % 45_000
            collected = int(size * rng.uniform(0.98, 1.0))
            breaker = index % 4 == 0
            lost = (
                [f"https://site-{index}.test/catalogue/list?page={p}&sort=new" for p in range(50)]
                if rng.random() < 0.1
                else []
            )
            raw = {
                "source": f"src-{index:05d}",
                "run_id": f"r{k}",
                "started_at": start.isoformat(),
                "finished_at": finished.isoformat(),
                "exit_code": 0,
                "declared_total": size,
                "collected": collected,
                "requests": {"by_class": {"ok": collected, "not_found": 12, "timeout": 3}},
                "pages": {"expected": 200, "fetched": 200 - len(lost), "lost": len(lost), "lost_urls": lost},
                "outcomes": {"generated": collected, "rejected": 10},
                "counters": {"hosts": 3},
                "meta": {"crawler": "scrapy 2.19", "workers": 4},
            }
            if breaker:
                raw["failure_window"] = {
                    "threshold": 0.35,
                    "size": 200,
                    "min_samples": 50,
                    "events": [{"at": start.isoformat(), "seq": n, "kind": "probe", "ratio": 0.2} for n in range(3)],
                    "series": [[n * 25, round(rng.uniform(0, 0.4), 3)] for n in range(400)],
                }
            yield (
                source_id,
                f"r{k}",
                f"{source_id:016x}{k:048x}",
                finished,
                start,
                finished,
                0,
                "complete",
                False,
                "",
                size,
                collected,
                collected,
                0,
                collected + 15,
                json.dumps(raw["requests"]["by_class"]),
                200,
                200 - len(lost),
                len(lost),
                json.dumps(lost),
                "[]",
                "{}",
                "replaced",
                0.35 if breaker else None,
                0.4 if breaker else None,
                "probe" if breaker else "",
                json.dumps(raw["outcomes"]),
                '{"rejected": 0.0002}',
                '{"hosts": 3}',
                json.dumps(raw["meta"]),
                json.dumps(raw),
                "complete",
                False,
                "[]",
                collected / size,
                size,
                False,
                "finished",
                "",
            )


def settle_sources() -> None:
    from django.db.models import OuterRef, Subquery

    from sources.models import Run, Source

    latest = Run.objects.filter(source=OuterRef("pk")).order_by("-started_at", "-id")
    Source.objects.update(last_run=Subquery(latest.values("pk")[:1]), baseline_run=Subquery(latest.values("pk")[:1]))


def fk_check_cost(n_sources: int) -> dict[str, tuple[float, float]]:
    """Deleting 1,000 runs with and without the foreign keys of sources.last_run and baseline_run.

    Each in a transaction that is rolled back, the constraints made immediate so that EXPLAIN ANALYZE
    counts their checks, the sources table grown to 2,000 and 20,000 rows: (whole delete ms, of it in
    those foreign keys' checks ms). Migration 0005_ops_retention dropped the keys; they are put back here
    for the comparison only.
    """
    from django.db import connection, transaction

    from sources.models import Source

    found = {}
    for total in (2_000, 20_000):
        for keys in (True, False):
            try:
                with transaction.atomic(), connection.cursor() as cursor:
                    Source.objects.bulk_create(Source(slug=f"pad-{i:05d}") for i in range(max(0, total - n_sources)))
                    cursor.execute("ANALYZE sources_source")
                    if keys:
                        for column in ("last_run_id", "baseline_run_id"):
                            cursor.execute(
                                f"ALTER TABLE sources_source ADD CONSTRAINT bench_{column} FOREIGN KEY ({column}) "
                                "REFERENCES sources_run (id) DEFERRABLE INITIALLY DEFERRED"
                            )
                    # Runs no source points at, as the prune deletes (a small fleet's first 1,000 hold some).
                    cursor.execute(
                        "SELECT id FROM sources_run r WHERE NOT EXISTS (SELECT 1 FROM sources_source s"
                        " WHERE s.last_run_id = r.id OR s.baseline_run_id = r.id) ORDER BY id LIMIT 1000"
                    )
                    ids = [row[0] for row in cursor.fetchall()]
                    for table in ("sources_failurewindowevent", "sources_proxytransition", "sources_notification"):
                        cursor.execute(f"DELETE FROM {table} WHERE run_id = ANY(%s)", [ids])
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                    cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM sources_run WHERE id = ANY(%s)", [ids])
                    plan = cursor.fetchone()[0]
                    plan = (json.loads(plan) if isinstance(plan, str) else plan)[0]
                    checks = sum(
                        t["Time"] for t in plan.get("Triggers", []) if "bench_" in t.get("Constraint Name", "")
                    )
                    found[f"{total:,} sources, {'with' if keys else 'without'} those keys"] = (
                        plan["Execution Time"],
                        checks,
                    )
                    raise _Rollback
            except _Rollback:
                pass
    return found


class _Rollback(Exception):
    pass


if __name__ == "__main__":
    main()
