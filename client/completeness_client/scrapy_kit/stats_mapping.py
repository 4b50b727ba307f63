"""Scrapy stats -> run-report fields. Pure functions over a stats dict, so
they are testable without a crawl. Absent counters are zero."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from scrapy.exceptions import IgnoreRequest
from scrapy.utils.misc import load_object

from ..classes import REQUEST_CLASSES, classify_exception_name, classify_status

STATUS_PREFIX = "downloader/response_status_count/"
EXCEPTION_PREFIX = "downloader/exception_type_count/"
SHORT_BODY_STAT = "completeness/short_body_count"
# The part of Scrapy's two counters above that robots.txt took (BreakerMiddleware
# counts every attempt, redirects included): no request outcome of the run, so a
# missing robots.txt is no 404 of a record, which the service reads as attrition.
ROBOTS_STATUS_PREFIX = "completeness/robotstxt/response_status_count/"
ROBOTS_EXCEPTION_PREFIX = "completeness/robotstxt/exception_type_count/"
ROBOTS_COUNTER = "robots_txt_requests"
# Not request outcomes: our own breaker gate, offsite filtering, and the like.
_NOT_OUTCOMES = ("IgnoreRequest", "BreakerStopped")


@lru_cache(maxsize=256)
def is_refusal(name: str) -> bool:
    """An IgnoreRequest (or subclass, the kit's BreakerStopped included) is a
    request refused before or instead of fetching it, not a request outcome."""
    if name.rsplit(".", 1)[-1] in _NOT_OUTCOMES:
        return True
    try:
        exception_type = load_object(name)
    except (ImportError, AttributeError, NameError, ValueError):
        return False
    return isinstance(exception_type, type) and issubclass(exception_type, IgnoreRequest)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _classes(stats: Mapping[str, Any], status_prefix: str, exception_prefix: str) -> dict[str, int]:
    by_class = dict.fromkeys(REQUEST_CLASSES, 0)
    for key, value in stats.items():
        if key.startswith(status_prefix):
            try:
                status = int(key[len(status_prefix) :])
            except ValueError:
                by_class["other"] += _count(value)
                continue
            by_class[classify_status(status)] += _count(value)
        elif key.startswith(exception_prefix):
            name = key[len(exception_prefix) :]
            if is_refusal(name):
                continue
            by_class[classify_exception_name(name)] += _count(value)
    return by_class


def robots_txt_classes(stats: Mapping[str, Any]) -> dict[str, int]:
    """The attempts at robots.txt, by the class Scrapy's counters put them in."""
    return _classes(stats, ROBOTS_STATUS_PREFIX, ROBOTS_EXCEPTION_PREFIX)


def request_classes_from_stats(stats: Mapping[str, Any]) -> dict[str, int]:
    by_class = _classes(stats, STATUS_PREFIX, EXCEPTION_PREFIX)
    for name, count in robots_txt_classes(stats).items():
        by_class[name] = max(0, by_class[name] - count)
    # Stub pages are 200s in Scrapy's counters; the breaker middleware counts
    # them apart, so move them from ok to short_body.
    short = min(_count(stats.get(SHORT_BODY_STAT)), by_class["ok"])
    by_class["ok"] -= short
    by_class["short_body"] += short
    return by_class


def report_fields_from_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """The report fields Scrapy's stats can tell: collected, requests,
    counters (retry_max_reached, item_dropped_count) and meta (finish_reason,
    elapsed_time_seconds)."""
    by_class = request_classes_from_stats(stats)
    fields: dict[str, Any] = {
        "collected": _count(stats.get("item_scraped_count")),
        "requests": {"total": sum(by_class.values()), "by_class": by_class},
        "counters": {
            "retry_max_reached": _count(stats.get("retry/max_reached")),
            "item_dropped_count": _count(stats.get("item_dropped_count")),
        },
        "meta": {},
    }
    robots = sum(robots_txt_classes(stats).values())
    if robots:
        # Left out of requests: said here, so requests.total is not a puzzle next to Scrapy's own count.
        fields["counters"][ROBOTS_COUNTER] = robots
    if isinstance(stats.get("finish_reason"), str):
        fields["meta"]["finish_reason"] = stats["finish_reason"]
    elapsed = stats.get("elapsed_time_seconds")
    if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool):
        fields["meta"]["elapsed_time_seconds"] = round(float(elapsed), 3)
    return fields
