"""The pages bench (bench/pages.py) at a small shape on SQLite, so that it cannot rot: a migration that
added a column without a default broke its bulk fill, and nothing noticed. No bound on time here
(docs/benchmarks.md has the measured figures)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_pages_bench_fills_a_small_fleet_and_prints_every_page_and_job(tmp_path):
    env = {**os.environ, "BENCH_SQLITE_DIR": str(tmp_path), "VAR_DIR": str(tmp_path / "var")}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "bench/pages.py", "--db", "sqlite", "--sources", "200", "--days", "7", "--repeat", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout
    for line in ("overview /", "source page (1 year)", "run page", "alerts", "overdue job", "prune job"):
        assert f"  {line}" in printed, printed
    assert (tmp_path / "pages-200.sqlite3").exists()
