"""The benches that fill tables directly (bench/pages.py, bench/retention.py) at small shapes, so that
they cannot rot: a migration that added a column without a default broke their bulk fills, and nothing
noticed. No bound on time here (docs/benchmarks.md has the measured figures)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def bench(script: str, *args: str, env: dict[str, str]) -> str:
    """What the bench printed; it must exit 0."""
    done = subprocess.run(
        [sys.executable, f"bench/{script}", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_pages_bench_fills_a_small_fleet_and_prints_every_page_and_job(tmp_path):
    env = {**os.environ, "BENCH_SQLITE_DIR": str(tmp_path), "VAR_DIR": str(tmp_path / "var")}
    env.pop("DATABASE_URL", None)
    printed = bench("pages.py", "--db", "sqlite", "--sources", "200", "--days", "7", "--repeat", "1", env=env)
    for line in ("overview /", "source page (1 year)", "run page", "alerts", "overdue job", "prune job"):
        assert f"  {line}" in printed, printed
    assert (tmp_path / "pages-200.sqlite3").exists()


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="the retention bench measures PostgreSQL"
)
def test_the_retention_bench_fills_prunes_and_prints_its_bytes():
    # Its bulk fill had rotted since migration 0011 (a run's end_reason has no default).
    base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    env = {**os.environ, "BENCH_PG_URL": f"{base}/completeness_retention_bench_test"}
    printed = bench("retention.py", "--sources", "20", "--days", "30", "--per-day", "1", env=env)
    for line in ("prune --dry-run", "after VACUUM FULL", "deleting 1,000 runs, 20,000 sources, without those keys"):
        assert line in printed, printed
