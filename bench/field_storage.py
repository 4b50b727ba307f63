"""Where a run's field counts live: a JSON column on the run, or a narrow table of (run, field, count).

    python bench/field_storage.py [--database-url postgres://…] [--runs 20000] [--fields 20]

Builds both layouts in scratch tables of the given PostgreSQL database (dropped afterwards), with
`--runs` runs, a year of 4 runs a day per source, and `--fields` fields each, and prints for each layout:
bytes on disk per run (table, TOAST and indexes), the time to write one run's counts (one statement
per run, as ingest would), and the time to read a source page's year of counts (1,460 runs). Asserts
nothing about time.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import psycopg

DEFAULT_DB = "postgres://completeness:completeness@127.0.0.1:5432/completeness"
FIELD_NAMES = [
    "title",
    "price",
    "phone",
    "address",
    "description",
    "images",
    "seller",
    "category",
    "currency",
    "posted_at",
    "location",
    "mileage",
    "year",
    "make",
    "model",
    "bedrooms",
    "bathrooms",
    "area",
    "agent",
    "features",
    "condition",
    "brand",
    "size",
    "colour",
]

SCHEMA = """
DROP TABLE IF EXISTS bench_runs_json, bench_runs_plain, bench_run_fields;
CREATE TABLE bench_runs_json (id bigserial PRIMARY KEY, source_id int NOT NULL, started_at timestamptz NOT NULL,
                              collected int NOT NULL, field_counts jsonb);
CREATE INDEX ON bench_runs_json (source_id, started_at DESC, id DESC);
CREATE TABLE bench_runs_plain (id bigserial PRIMARY KEY, source_id int NOT NULL, started_at timestamptz NOT NULL,
                               collected int NOT NULL);
CREATE INDEX ON bench_runs_plain (source_id, started_at DESC, id DESC);
CREATE TABLE bench_run_fields (run_id bigint NOT NULL REFERENCES bench_runs_plain (id), field varchar(100) NOT NULL,
                               filled int NOT NULL, PRIMARY KEY (run_id, field));
"""


def counts(rng: random.Random, fields: int, collected: int) -> dict[str, int]:
    return {name: rng.randint(collected // 2, collected) for name in FIELD_NAMES[:fields]}


def size(cur, *tables: str) -> int:
    return sum(cur.execute("SELECT pg_total_relation_size(%s)", [t]).fetchone()[0] for t in tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=DEFAULT_DB)
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--fields", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(7)
    rows = []
    for n in range(args.runs):
        collected = rng.randint(900, 1100)
        rows.append(
            (n % max(1, args.runs // 1460), "2026-01-01T00:00:00Z", collected, counts(rng, args.fields, collected))
        )

    with psycopg.connect(args.database_url, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(SCHEMA)
        started = time.perf_counter()
        for source_id, at, collected, fields in rows:
            with conn.transaction():
                cur.execute(
                    "INSERT INTO bench_runs_json (source_id, started_at, collected, field_counts) "
                    "VALUES (%s, %s, %s, %s)",
                    [source_id, at, collected, json.dumps(fields)],
                )
        json_write = (time.perf_counter() - started) / len(rows)

        started = time.perf_counter()
        for source_id, at, collected, fields in rows:
            with conn.transaction():
                run_id = cur.execute(
                    "INSERT INTO bench_runs_plain (source_id, started_at, collected) VALUES (%s, %s, %s) RETURNING id",
                    [source_id, at, collected],
                ).fetchone()[0]
                # One statement for the run's fields, as sources.ingest.rows writes events on PostgreSQL.
                cur.execute(
                    "INSERT INTO bench_run_fields (run_id, field, filled) "
                    "SELECT %s, key, value::int FROM jsonb_each_text(%s::jsonb)",
                    [run_id, json.dumps(fields)],
                )
        table_write = (time.perf_counter() - started) / len(rows)
        cur.execute("VACUUM ANALYZE bench_runs_json, bench_runs_plain, bench_run_fields")

        json_bytes = size(cur, "bench_runs_json") / len(rows)
        plain_bytes = size(cur, "bench_runs_plain") / len(rows)
        table_bytes = (size(cur, "bench_runs_plain", "bench_run_fields")) / len(rows)

        def timed(sql: str) -> float:
            best = float("inf")
            for _ in range(5):
                started = time.perf_counter()
                cur.execute(sql, [0]).fetchall()
                best = min(best, time.perf_counter() - started)
            return best

        json_read = timed(
            "SELECT started_at, collected, field_counts FROM bench_runs_json WHERE source_id = %s "
            "ORDER BY started_at LIMIT 1460"
        )
        table_read = timed(
            "SELECT r.started_at, r.collected, f.field, f.filled FROM bench_runs_plain r "
            "JOIN bench_run_fields f ON f.run_id = r.id WHERE r.source_id = %s "
            "ORDER BY r.started_at LIMIT 29200"
        )
        cur.execute("DROP TABLE bench_run_fields, bench_runs_plain, bench_runs_json")

    print(f"{args.runs:,} runs, {args.fields} fields each")
    print(f"{'layout':<28}{'bytes/run':>12}{'write ms/run':>15}{'read a year ms':>17}")
    print(
        f"{'JSON column on the run':<28}{json_bytes - plain_bytes:>12,.0f}{json_write * 1000:>15.3f}{json_read * 1000:>17.1f}"
    )
    print(
        f"{'narrow table':<28}{table_bytes - plain_bytes:>12,.0f}{table_write * 1000:>15.3f}{table_read * 1000:>17.1f}"
    )
    print("bytes/run: what the field counts add to a run without them (table, TOAST, indexes);")
    print("write: one transaction per run, the run's row and its counts (the narrow table in one more statement)")


if __name__ == "__main__":
    main()
