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


def request_classes_from_stats(stats: Mapping[str, Any]) -> dict[str, int]:
    by_class = dict.fromkeys(REQUEST_CLASSES, 0)
    for key, value in stats.items():
        if key.startswith(STATUS_PREFIX):
            try:
                status = int(key[len(STATUS_PREFIX) :])
            except ValueError:
                by_class["other"] += _count(value)
                continue
            by_class[classify_status(status)] += _count(value)
        elif key.startswith(EXCEPTION_PREFIX):
            name = key[len(EXCEPTION_PREFIX) :]
            if is_refusal(name):
                continue
            by_class[classify_exception_name(name)] += _count(value)
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
    if isinstance(stats.get("finish_reason"), str):
        fields["meta"]["finish_reason"] = stats["finish_reason"]
    elapsed = stats.get("elapsed_time_seconds")
    if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool):
        fields["meta"]["elapsed_time_seconds"] = round(float(elapsed), 3)
    return fields
