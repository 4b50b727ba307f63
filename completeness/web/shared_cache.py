"""Django's default cache (Redis at CACHE_URL, else files under VAR_DIR/cache), used so that its outage
costs only what it counts or saves, never a request: each use says what it does without the cache.

A cache that cannot be reached raises redis' RedisError (refused, timed out, reset) or, for the file
cache, OSError (a full or read-only disk). Only those are caught: any other error is a bug and stays one.
The warning is logged once a minute per use and process, with how many were left out, so an outage
does not write a line per request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache
from redis.exceptions import RedisError

T = TypeVar("T")
log = logging.getLogger("completeness.cache")

UNREACHABLE: tuple[type[Exception], ...] = (RedisError, OSError)
WARN_EVERY_SECONDS = 60.0

_lock = threading.Lock()
_warned_at: dict[str, float] = {}
_unlogged: dict[str, int] = {}
_UNREACHED = object()


def attempt(use: Callable[[], T], without: T, doing: str) -> T:
    """`use()`, which calls the cache; `without` if the cache cannot be reached. `doing` names what is
    done instead, for the warning ("overview filter lists read from the database")."""
    try:
        return use()
    except UNREACHABLE as exc:
        _warn(doing, exc)
        return without


def kept(key: str, kind: type[T], compute: Callable[[], T], seconds: int, doing: str) -> T:
    """What the cache keeps under `key` if it is a `kind`, else `compute()`, kept there for `seconds`.
    Without the cache: `compute()` each time, and a cache that just failed is not waited on again."""
    found: object = attempt(lambda: cache.get(key), _UNREACHED, doing)
    if isinstance(found, kind):
        return found
    value = compute()
    if found is not _UNREACHED:
        attempt(lambda: cache.set(key, value, seconds), None, doing)
    return value


def _warn(doing: str, exc: Exception) -> None:
    now = time.monotonic()
    with _lock:
        last = _warned_at.get(doing)
        if last is not None and now - last < WARN_EVERY_SECONDS:
            _unlogged[doing] = _unlogged.get(doing, 0) + 1
            return
        _warned_at[doing] = now
        unlogged = _unlogged.pop(doing, 0)
    more = f" ({unlogged} more since the last warning)" if unlogged else ""
    log.warning("the cache cannot be reached, %s%s: %s: %s", doing, more, type(exc).__name__, exc)
