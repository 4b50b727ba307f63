"""Server time of the pages and the periodic jobs at scale, on PostgreSQL (and SQLite for small shapes).

    python bench/pages.py --db postgres --sources 20000      # the fleet we size for: 20,000 sources x 365 days x 4 runs/day
    python bench/pages.py                                    # both databases, 2,000 sources
    python bench/pages.py --db postgres --sources 200 --days 90

The data is bulk-inserted straight into the tables (COPY on PostgreSQL): this measures the pages and
jobs, not ingest, and 29 million reports through the API would take days. Rows go in the order reports
arrive (every source's first run, then every source's second...), so a source's runs are spread over the
table as in production, and the primary key follows arrival as the retention job expects. Runs older
than RETAIN_DETAIL_DAYS hold what the retention job leaves of them (no raw body): the steady state of a
service that has run for a year. A filled database is reused when it holds the requested shape.

Pages are requested through Django's full middleware stack (test client, logged in): the median of
--repeat requests of one URL after a warm-up, and for the source page also the first request of each
of --repeat other sources (their rows not yet in any cache of PostgreSQL's own). The jobs run inside a
transaction that is rolled back, so every run of the bench measures the same work.
"""

from __future__ import annotations

import argparse
import json
import math
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
PG_BASE = "postgres://completeness:completeness@127.0.0.1:5432"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.databases import ensure_pg_database  # noqa: E402

FIELDS = ("title", "price", "area", "phone", "photos")
REGIONS = ("ae", "sa", "eg", "uk", "de", "us", "fr", "in")
# Every OVERDUE_EVERY-th source stopped reporting two days ago: the overdue job has work.
OVERDUE_EVERY = 100

RUN_COLUMNS = (
    "id",
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
    "delivery_attempted",
    "delivery_delivered",
    "delivery_errors",
    "snapshot_action",
    "snapshot_rows",
    "breaker_threshold",
    "breaker_peak_ratio",
    "breaker_last_event",
    "outcomes",
    "outcome_rates",
    "counters",
    "meta",
    "field_counts",
    "raw",
    "verdict",
    "silent",
    "findings",
    "completeness",
    "baseline_collected",
    "accepted_as_baseline",
    # Columns added after the bench was written (not null, no database default).
    "end_reason",
    "expectation_basis",
)
FLIP_COLUMNS = ("source_id", "old_health", "new_health", "at", "run_id", "cause", "announced")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--sources", type=int, default=2000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--per-day", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return
    for db in ["sqlite", "postgres"] if args.db == "both" else [args.db]:
        url = database_url(db, args)
        env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING", "DEBUG": "0"}
        if db == "postgres":
            ensure_pg_database(url)
        # One process per database: settings read DATABASE_URL once, at import.
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--db",
                db,
                "--sources",
                str(args.sources),
                "--days",
                str(args.days),
                "--per-day",
                str(args.per_day),
                "--repeat",
                str(args.repeat),
            ],
            env=env,
            check=True,
            cwd=ROOT,
        )


def database_url(db: str, args) -> str:
    if db == "postgres":
        return os.environ.get("BENCH_PG_URL", f"{PG_BASE}/completeness_pages_{args.sources}")
    path = Path(os.environ.get("BENCH_SQLITE_DIR", ROOT / "var" / "bench")) / f"pages-{args.sources}.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def run_child(args) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "completeness.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    shape = f"{args.sources}x{args.days}x{args.per_day}"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS bench_shape (shape varchar(100), filled_at varchar(40))")
        cursor.execute("SELECT filled_at FROM bench_shape WHERE shape = %s", [shape])
        row = cursor.fetchone()
    if row is None:
        now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        fill(args.sources, args.days, args.per_day, now)
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM bench_shape")
            cursor.execute("INSERT INTO bench_shape VALUES (%s, %s)", [shape, now.isoformat()])
    else:
        now = datetime.fromisoformat(row[0])
    from sources.models import ProxyTransition

    if not ProxyTransition.objects.exists():
        fill_proxies(args.sources)
    # The pages and jobs see the clock of the fill's last hour, however long ago the fill ran: which
    # sources are overdue depends on it. Everything reads the time through timezone.now().
    from django.utils import timezone

    timezone.now = lambda: now + timedelta(minutes=10)
    measure(args, now)


# -- filling ------------------------------------------------------------------------------------------


def fill(n_sources: int, days: int, per_day: int, now: datetime) -> None:
    from django.conf import settings
    from django.db import connection, transaction

    from sources.models import Source

    started = time.perf_counter()
    print(f"[{connection.vendor}] filling {n_sources:,} sources x {days} days x {per_day} runs/day ...", flush=True)
    with connection.cursor() as cursor:
        tables = (
            "sources_proxytransition",
            "sources_failurewindowevent",
            "sources_flip",
            "sources_pauseevent",
            "sources_baselineacceptance",
            "sources_notification",
            "sources_run",
            "sources_source_tags",
            "sources_source",
        )
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        else:
            for table in tables:
                cursor.execute(f"DELETE FROM {table}")
    Source.objects.bulk_create(
        (
            Source(
                id=i + 1,
                slug=f"src-{i:05d}",
                name=f"Source {i}",
                region=REGIONS[i % len(REGIONS)],
                expected_interval=timedelta(hours=24 / per_day),
                grace=timedelta(hours=2),
            )
            for i in range(n_sources)
        ),
        batch_size=2000,
    )
    generator = RunGenerator(n_sources, days, per_day, now, settings.RETAIN_DETAIL_DAYS)
    for day in range(days):
        runs, flips = generator.day(day)
        with transaction.atomic():
            insert(connection, "sources_run", RUN_COLUMNS, runs)
            insert(connection, "sources_flip", FLIP_COLUMNS, flips)
        if day % 30 == 29 or day == days - 1:
            print(
                f"  day {day + 1}/{days}: {generator.next_id - 1:,} runs, {time.perf_counter() - started:.0f} s",
                flush=True,
            )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in ("sources_run", "sources_source"):
                cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
        # Statistics first: without them the planner's first plans are guesses.
        cursor.execute("ANALYZE")
    generator.settle_sources(now)
    print(f"[{connection.vendor}] filled in {time.perf_counter() - started:.0f} s", flush=True)


PROXY_COLUMNS = (
    "source_id",
    "run_id",
    "proxy",
    "at",
    "from_state",
    "to_state",
    "reason",
    "stage",
    "until",
    "received_at",
)
TEMPORARY = ("connect_timeout", "slow_body", "connect_refused")


def fill_proxies(n_sources: int) -> None:
    """Two proxies leaving and (mostly) coming back in every run of one source in a hundred: 4,000
    proxies in 8 pools, about 1.1 million transitions at 20,000 sources, one in a thousand dated a year
    ahead by its crawler."""
    from django.db import connection, transaction

    from sources.ingest import proxy_current
    from sources.models import Run

    started = time.perf_counter()

    rng = random.Random(3)
    runs = Run.objects.filter(source_id__in=range(1, n_sources + 1, 100)).order_by("pk")
    rows = []
    for run_pk, source_id, received_at in runs.values_list("pk", "source_id", "received_at").iterator(10_000):
        pool = f"pool-{REGIONS[(source_id - 1) % len(REGIONS)]}"
        for _ in range(2):
            proxy = f"{pool}/exit-{rng.randrange(500):04d}"
            at = received_at - timedelta(minutes=rng.randint(5, 35))
            if rng.random() < 0.001:
                at += timedelta(days=365)
            leaving = rng.random() < 0.05
            reason = rng.choice(TEMPORARY)
            rows.append(
                (
                    source_id,
                    run_pk,
                    proxy,
                    at,
                    "eligible",
                    "excluded" if leaving else "cooling",
                    reason,
                    "connect",
                    None if leaving else at + timedelta(minutes=5),
                    received_at,
                )
            )
            if not leaving:
                rows.append(
                    (
                        source_id,
                        run_pk,
                        proxy,
                        at + timedelta(minutes=5),
                        "cooling",
                        "eligible",
                        "probe_succeeded",
                        "probe",
                        None,
                        received_at,
                    )
                )
    with transaction.atomic():
        insert(connection, "sources_proxytransition", PROXY_COLUMNS, rows)
        proxy_current.rebuild()  # what ingest keeps up, report by report
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sources_proxytransition")
    print(f"[{connection.vendor}] {len(rows):,} proxy transitions in {time.perf_counter() - started:.0f} s", flush=True)


def insert(connection, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    if not rows:
        return
    names = ", ".join(columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)


class RunGenerator:
    """Each source's runs, slot by slot in arrival order, with what ingest would have judged."""

    def __init__(self, n_sources: int, days: int, per_day: int, now: datetime, detail_days: int):
        self.rng = random.Random(1)
        self.n_sources, self.per_day = n_sources, per_day
        self.step = timedelta(hours=24 / per_day)
        self.first = now - timedelta(days=days) + timedelta(minutes=5)
        self.slots = days * per_day
        self.detail_cutoff = now - timedelta(days=detail_days)
        self.pruned_raw = json.dumps({"_pruned": f"raw report removed after {detail_days} days (RETAIN_DETAIL_DAYS)"})
        self.size = [self.rng.randint(300, 50_000) for _ in range(n_sources)]
        self.baseline: list[tuple | None] = [None] * n_sources  # run id, collected, started, field counts
        self.latest: list[tuple | None] = [None] * n_sources  # run id, verdict, started, finished
        self.failing = [False] * n_sources
        self.next_id = 1

    def day(self, day: int) -> tuple[list[tuple], list[tuple]]:
        runs, flips = [], []
        for slot in range(day * self.per_day, (day + 1) * self.per_day):
            start = self.first + slot * self.step
            finished = start + timedelta(minutes=40)
            for index in range(self.n_sources):
                if index % OVERDUE_EVERY == 1 and slot >= self.slots - 2 * self.per_day:
                    continue  # stopped reporting
                runs.append(self.run(index, slot, start, finished, flips))
        return runs, flips

    def run(self, index: int, slot: int, start: datetime, finished: datetime, flips: list) -> tuple:
        rng, size = self.rng, self.size[index]
        source_id, run_pk = index + 1, self.next_id
        self.next_id += 1
        declared = index % 10 < 7
        breaker = index % 4 == 0
        # Every 25th source degrades silently on its latest runs: the overview has something on top.
        degrading = index % 25 == 0
        collected = int(size * rng.uniform(0.995, 1.005))
        bad = rng.random() < 0.02 or (degrading and slot >= self.slots - 3)
        if bad:
            collected = int(collected * rng.uniform(0.5, 0.9))
        baseline = self.baseline[index]
        findings = "[]"
        if bad:
            rule, expected = ("declared_total", size) if declared else ("drop", baseline[1] if baseline else size)
            findings = json.dumps(
                [
                    {
                        "rule": rule,
                        "mode": "enforce",
                        "message": f"collected {collected:,}",
                        "expected": expected,
                        "actual": collected,
                    }
                ]
            )
        silent = bad and (degrading or rng.random() < 0.5)
        verdict = "incomplete" if bad else "complete"
        if bad != self.failing[index]:
            old, new = ("ok", "failing") if bad else ("failing", "ok")
            flips.append((source_id, old, new, finished, run_pk, "run", True))
            self.failing[index] = bad
        filled = {
            name: int(collected * share) for name, share in zip(FIELDS, (1.0, 0.98, 0.93, 0.71, 0.88), strict=True)
        }
        pages = max(1, size // 50)
        raw = self.pruned_raw
        if finished >= self.detail_cutoff:
            raw = json.dumps(
                {
                    "source": f"src-{index:05d}",
                    "run_id": f"r{slot}",
                    "started_at": start.isoformat(),
                    "finished_at": finished.isoformat(),
                    "declared_total": size if declared else None,
                    "collected": collected,
                    "requests": {
                        "total": collected + pages,
                        "by_class": {"ok": collected + pages - 12, "not_found": 4, "http_5xx": 8},
                    },
                    "pages": {"expected": pages, "fetched": pages, "lost": 0, "lost_urls": []},
                    "snapshot": {"action": "replaced", "rows": collected},
                    "fields": filled,
                    "outcomes": {"generated": collected, "url_filters_rejected": 212},
                }
            )
        row = (
            run_pk,
            source_id,
            f"r{slot}",
            f"{source_id:016x}{slot:048x}",
            finished,
            start,
            finished,
            0 if silent or not bad else 1,
            "complete" if silent or not bad else "incomplete",
            False,
            "",
            size if declared else None,
            collected,
            collected,
            rng.randint(0, 30),
            collected + pages,
            json.dumps({"ok": collected + pages - 12, "not_found": 4, "http_5xx": 8}),
            pages,
            pages,
            0,
            "[]",
            "[]",
            collected,
            collected,
            "{}",
            "keep" if bad and not silent else "replaced",
            collected,
            0.35 if breaker else None,
            round(rng.uniform(0.0, 0.5), 3) if breaker else None,
            "",
            json.dumps({"generated": collected, "url_filters_rejected": 212}),
            "{}",
            "{}",
            "{}",
            json.dumps(filled),
            raw,
            verdict,
            silent,
            findings,
            collected / size if declared else None,
            baseline[1] if baseline else None,
            False,
            "",
            "",
        )
        self.latest[index] = (run_pk, verdict, start, finished)
        if not bad:
            self.baseline[index] = (run_pk, collected, start, filled)
        return row

    def settle_sources(self, now: datetime) -> None:
        """What ingest keeps on each source row: latest run, baseline, health."""
        from sources.models import Source

        sources = []
        for index in range(self.n_sources):
            run_pk, verdict, started, finished = self.latest[index]
            baseline = self.baseline[index]
            sources.append(
                Source(
                    id=index + 1,
                    last_run_id=run_pk,
                    last_verdict=verdict,
                    last_run_started_at=started,
                    last_report_at=finished,
                    baseline_run_id=baseline and baseline[0],
                    baseline_collected=baseline and baseline[1],
                    baseline_started_at=baseline and baseline[2],
                    baseline_field_counts=baseline and baseline[3],
                    trend_ceiling=int(self.size[index] * 1.005) + 1,
                    health="failing" if self.failing[index] else "ok",
                    health_since=now - timedelta(days=3),
                )
            )
        Source.objects.bulk_update(
            sources,
            [
                "last_run",
                "last_verdict",
                "last_run_started_at",
                "last_report_at",
                "baseline_run",
                "baseline_collected",
                "baseline_started_at",
                "baseline_field_counts",
                "trend_ceiling",
                "health",
                "health_since",
            ],
            batch_size=1000,
        )


# -- measuring ----------------------------------------------------------------------------------------


def measure(args, filled_at: datetime) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from sources.models import Run, Source

    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    rng = random.Random(7)
    slugs = list(Source.objects.order_by("slug").values_list("slug", flat=True))
    source = slugs[len(slugs) // 2]
    latest_run = Source.objects.get(slug=source).last_run_id
    runs = Run.objects.order_by("-pk").values_list("pk", flat=True).first()
    print(
        f"\n{connection.vendor}: {len(slugs):,} sources, {runs:,} runs, filled {filled_at:%Y-%m-%d %H:%M} UTC; "
        f"measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    # Forty teams of 500 crawlers, each crawler with one of 2,000 owners, the fleet view
    # is read by a team). Set here, once, so a database filled before it is measured the same way.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE sources_source SET team = 'team-' || (id % 40), owner = 'owner-' || (id % 2000) WHERE team = ''"
        )
    fleet_week(filled_at)
    pages = [
        ("overview /", "/"),
        ("overview, one team (500 sources)", "/?team=team-7"),
        ("overview, failing only", "/?health=failing"),
        (f"overview, page {len(slugs) // 100}", f"/?page={len(slugs) // 100}"),
        ("overview, search", "/?q=src-0123"),
        ("source page (90 days)", f"/sources/{source}/"),
        ("source page (1 year)", f"/sources/{source}/?range=1y"),
        ("run page", f"/runs/{latest_run}/"),
        ("proxies", "/proxies/"),
        ("alerts", "/alerts/"),
        ("admin: runs", "/admin/sources/run/"),
        ("admin: sources", "/admin/sources/source/"),
    ]
    for label, url in pages:
        timed(client, label, url, args.repeat)
    from sources.services.tokens import create_token

    _, token = create_token("bench")
    api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {token}")
    for label, url in (
        ("API: sources", "/api/v1/sources"),
        ("API: sources, last page", f"/api/v1/sources?page={-(-len(slugs) // 50)}"),
        ("API: runs of a source", f"/api/v1/sources/{source}/runs"),
    ):
        timed(api, label, url, args.repeat)
    for range_ in ("", "?range=1y"):
        others = rng.sample(slugs, args.repeat)
        timings = []
        for slug in others:
            started = time.perf_counter()
            response = client.get(f"/sources/{slug}/{range_}")
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
        label = f"source page{' (1 year)' if range_ else ''}, {args.repeat} others"
        print(
            f"  {label:<34} first request median {statistics.median(timings):7.1f} ms, max {max(timings):7.1f} ms",
            flush=True,
        )
    jobs(filled_at)
    if connection.vendor == "postgresql":
        sizes()


def fleet_week(filled_at: datetime) -> None:
    """The overview's fleet view alone (sources/pages/selectors/fleet.py), for the whole fleet and one team."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sources.pages.selectors.fleet import fleet
    from sources.pages.selectors.overview import OverviewFilters

    now = filled_at + timedelta(minutes=10)
    for label, filters in (
        ("fleet week, all sources", OverviewFilters()),
        ("fleet week, one team", OverviewFilters(team="team-7")),
    ):
        timings = []
        for _ in range(5):
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                view = fleet(filters, now)
                timings.append((time.perf_counter() - started) * 1000)
        print(
            f"  {label:<34} median {statistics.median(timings):7.1f} ms ({len(queries)} queries): {view.short:,} records "
            f"lost to {view.runs:,} incomplete runs of {view.sources:,} sources, {view.overwrites:,} overwrites",
            flush=True,
        )


def timed(client, label: str, url: str, repeat: int) -> None:
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cache.clear()  # the first request computes what pages keep for a while (the overview's week)
    started = time.perf_counter()
    response = client.get(url)
    first = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, (url, response.status_code)
    timings = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
    print(
        f"  {label:<34} median {statistics.median(timings):7.1f} ms, first {first:7.1f} ms "
        f"({len(queries)} queries, {len(response.content) / 1024:,.0f} KiB)",
        flush=True,
    )


def jobs(filled_at: datetime) -> None:
    """The periodic jobs' work at this size, each in a transaction rolled back afterwards."""
    from django.conf import settings
    from django.db import transaction

    from sources.models import RetentionMark, Run
    from sources.services import overdue, retention

    class Rollback(Exception):
        pass

    def once(label: str, work) -> None:
        started = time.perf_counter()
        try:
            with transaction.atomic():
                result = work()
                elapsed = time.perf_counter() - started
                raise Rollback
        except Rollback:
            pass
        print(f"  {label:<34} {elapsed * 1000:9.0f} ms  {result}", flush=True)

    def overdue_twice():
        # The first pass flips the sources that stopped reporting; the next minute's finds nothing new.
        started = time.perf_counter()
        first = len(overdue.mark_overdue(filled_at + timedelta(minutes=10)))
        middle = time.perf_counter()
        second = len(overdue.mark_overdue(filled_at + timedelta(minutes=11)))
        return (
            f"{first} sources flipped in {(middle - started) * 1000:,.0f} ms, then {second} in "
            f"{(time.perf_counter() - middle) * 1000:,.0f} ms"
        )

    once("overdue job (two passes)", overdue_twice)

    # The daily prune in its steady state: one day later, a day's runs are past the runs' age limit
    # (here the age of the oldest, so the same amount as a year-old service prunes daily) and a day's
    # runs past the details' limit (the mark says the ones before were done on earlier days).
    oldest = Run.objects.order_by("pk").values_list("received_at", flat=True).first()
    runs_days = math.ceil((filled_at - oldest) / timedelta(days=1))
    policy = retention.Policy(
        detail_days=settings.RETAIN_DETAIL_DAYS,
        lost_urls=settings.RETAIN_LOST_URLS,
        runs_days=runs_days,
        sent_notifications_days=settings.RETAIN_SENT_NOTIFICATIONS_DAYS,
        batch=settings.PRUNE_BATCH,
    )
    detail_done = filled_at - timedelta(days=settings.RETAIN_DETAIL_DAYS)
    last_done = last_received_before(detail_done)

    def prune():
        RetentionMark.objects.update_or_create(name=retention.DETAIL_MARK, defaults={"last_id": last_done or 0})
        result = retention.prune(now=filled_at + timedelta(days=1), policy=policy)
        return f"{result.runs:,} runs deleted, {result.details:,} runs' details trimmed, kept {result.kept}"

    once("prune job, one day's work", prune)


def last_received_before(moment: datetime) -> int | None:
    """The newest run received before `moment`, by bisecting the primary key (which follows arrival):
    some 25 single-row reads. Walking the key back from the newest run read every run of the
    details' month from disk, more than ten minutes with the table out of the operating system's cache."""
    from sources.models import Run

    def at_or_before(pk: int) -> tuple[int, datetime] | None:
        return Run.objects.filter(pk__lte=pk).order_by("-pk").values_list("pk", "received_at").first()

    def received_before(pk: int) -> bool:
        found = at_or_before(pk)
        return found is not None and found[1] < moment

    low = Run.objects.order_by("pk").values_list("pk", flat=True).first()
    high = Run.objects.order_by("-pk").values_list("pk", flat=True).first()
    if low is None or high is None or not received_before(low):
        return None
    if received_before(high):
        return high
    while high - low > 1:  # the run at or before `low` was received before `moment`, at `high` not
        middle = (low + high) // 2
        if received_before(middle):
            low = middle
        else:
            high = middle
    found = at_or_before(low)
    return found[0] if found else None


def sizes() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        total = cursor.fetchone()[0]
        cursor.execute(
            "SELECT pg_table_size('sources_run'), pg_indexes_size('sources_run'), "
            "(SELECT COUNT(*) FROM sources_source), (SELECT reltuples FROM pg_class WHERE relname = 'sources_run')"
        )
        table, indexes, n_sources, n_runs = cursor.fetchone()
    gib = 1024**3
    print(
        f"  database {total / gib:.1f} GiB: runs {table / gib:.1f} GiB (with TOAST) + their indexes "
        f"{indexes / gib:.1f} GiB; {total / max(n_runs, 1):,.0f} bytes per run overall",
        flush=True,
    )


if __name__ == "__main__":
    main()
