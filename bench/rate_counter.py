"""The rate limiter's counter on each cache a deployment without Redis could use, and on Redis.

For each backend: the cost of one `Limit.hit` (the API makes two or three per request), and how many
of 4 processes x 500 hits at once pass a limit of 1,000 (exact: 1,000).

    DATABASE_URL=sqlite:///tmp/rc.sqlite3 .venv/bin/python -m bench.rate_counter
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "completeness.settings")
os.environ.setdefault("SECRET_KEY", "bench-" + "k" * 40 + "0123456789")

import django

django.setup()

from django.core.cache.backends.base import BaseCache  # noqa: E402
from django.core.cache.backends.db import DatabaseCache  # noqa: E402
from django.core.cache.backends.filebased import FileBasedCache  # noqa: E402
from django.core.cache.backends.locmem import LocMemCache  # noqa: E402
from django.core.cache.backends.redis import RedisCache  # noqa: E402
from django.db import connection  # noqa: E402
from ninja.errors import Throttled  # noqa: E402

from completeness.web import throttle  # noqa: E402
from completeness.web.counters import SharedFileCache  # noqa: E402


def backends(tmp: str) -> dict[str, Callable[[], BaseCache]]:
    made = {
        "locmem (per process)": lambda: LocMemCache("bench", {}),
        "FileBasedCache": lambda: FileBasedCache(f"{tmp}/plain", {"OPTIONS": {"MAX_ENTRIES": 20_000}}),
        "SharedFileCache": lambda: SharedFileCache(f"{tmp}/shared", {"OPTIONS": {"MAX_ENTRIES": 20_000}}),
        "DatabaseCache": lambda: DatabaseCache("bench_cache", {"OPTIONS": {"MAX_ENTRIES": 20_000}}),
    }
    if os.environ.get("BENCH_REDIS_URL"):
        made["RedisCache"] = lambda: RedisCache(os.environ["BENCH_REDIS_URL"], {})
    return made


def hits(tmp: str, name: str, count: int, rate: str, key: str) -> int:
    """`count` hits on one limit; how many were let through."""
    from django.db import connections

    connections.close_all()  # a forked process opens its own
    throttle.cache = backends(tmp)[name]()
    limit = throttle.Limit("bench", "BENCH_RATE")
    passed = 0
    from django.conf import settings

    settings.BENCH_RATE = rate
    for _ in range(count):
        try:
            limit.hit(key)
            passed += 1
        except Throttled:
            pass
    return passed


def main() -> None:
    from django.core.management.commands.createcachetable import Command

    command = Command()
    command.verbosity = 0
    command.create_table("default", "bench_cache", dry_run=False)
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in backends(tmp).items():
            make().clear()
            started = time.perf_counter()
            hits(tmp, name, 2000, "1000000/hour", f"one-{name}")
            per_hit = (time.perf_counter() - started) / 2000 * 1e6
            make().clear()
            with multiprocessing.get_context("fork").Pool(4) as pool:
                passed = sum(pool.starmap(hits, [(tmp, name, 500, "1000/hour", f"four-{name}")] * 4))
            print(f"{name:22} {per_hit:7.0f} us a hit; 4 processes x 500 hits, limit 1000: {passed} passed")
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_cache")


if __name__ == "__main__":
    main()
