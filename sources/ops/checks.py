"""Readiness: is each thing the service needs to do its work reachable from this process right now?

Each check returns None when its dependency answers and the reason when it does not; a check never
raises, so /readyz always answers, 503 naming what is down.
"""

from __future__ import annotations

import re
from typing import cast
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import caches
from django.db import connections


def _reason(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}".strip()[:300]


def database(alias: str = "default") -> str | None:
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure means "not ready"; the reason is reported, not raised
        return _reason(exc)
    return None


def broker() -> str | None:
    """django-q2's ORM broker is a table of the database it names; Celery's broker is Redis."""
    engine = settings.TASK_ENGINE
    if engine == "django_q":
        return _orm_queue(cast(str, settings.Q_CLUSTER.get("orm", "default")))
    if engine == "celery":
        return _celery_broker(settings.CELERY_BROKER_URL, settings.READYZ_TIMEOUT_SECONDS)
    return f"TASK_ENGINE is {engine!r}: no broker to check"


def _orm_queue(alias: str) -> str | None:
    from django_q.models import OrmQ

    try:
        # The queue table itself, not just the connection: a database without django_q's
        # migrations cannot take a job either.
        OrmQ.objects.using(alias).exists()
    except Exception as exc:
        return _reason(exc)
    return None


def _celery_broker(url: str, timeout: float) -> str | None:
    try:
        if urlsplit(url).scheme in ("redis", "rediss"):
            return _redis(url, timeout)
        from kombu import Connection

        with Connection(url, connect_timeout=timeout) as connection:
            connection.ensure_connection(max_retries=1)
    except Exception as exc:
        return _reason(exc)
    return None


def cache() -> str | None:
    """The rate limits and the overview go on without it (completeness/web/shared_cache.py), but
    uncounted and slower: an operator is told. Redis (CACHE_URL) is PINGed as the broker is, each
    server it lists; the file cache is asked for a key, which takes its lock file in VAR_DIR/cache."""
    config = settings.CACHES["default"]
    if config["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
        location = config["LOCATION"]
        # As Django's RedisCache reads it: one URL, several in one string, or a list.
        servers = re.split("[;,]", location) if isinstance(location, str) else location
        for url in servers:
            reason = _redis(url, settings.READYZ_TIMEOUT_SECONDS)
            if reason is not None:
                return reason
        return None
    try:
        caches["default"].has_key("readyz")
    except Exception as exc:
        return _reason(exc)
    return None


def _redis(url: str, timeout: float) -> str | None:
    try:
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return _reason(exc)
    return None


CHECKS = {"database": database, "broker": broker}
# Reported, never failing readiness: without the cache every report is still stored and every page
# answers. Every web process shares the one cache, so all would turn unready together, and a load
# balancer that drops unready processes would refuse the reports they would still store.
DEGRADING = {"cache": cache}


def readiness() -> dict[str, str | None]:
    """name -> None (up) or why it is down, for every dependency that readiness needs."""
    return {name: check() for name, check in CHECKS.items()}


def degradation() -> dict[str, str | None]:
    """name -> None (up) or why it is down, for what the service goes on without."""
    return {name: check() for name, check in DEGRADING.items()}


def alert_path() -> dict:
    """The oldest undelivered notification's age, broken channels and the periodic jobs' last runs
    (sources.alerts.watch): for people and scrapers to read, no part of readiness."""
    from sources.alerts import watch

    try:
        return watch.as_json(watch.alert_path())
    except Exception as exc:
        return {"error": _reason(exc)}
