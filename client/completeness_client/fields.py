"""Field coverage: per record field, how many collected records had it filled.

A source that keeps serving every listing but stops filling its price passes
every count; only per-field fill rates show it. The report's `fields` object
holds at most MAX_FIELDS names of 1 to MAX_NAME_LENGTH characters.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from typing import Any

MAX_FIELDS = 200
MAX_NAME_LENGTH = 100

_EMPTY_CONTAINERS = (str, bytes, list, tuple, set, frozenset, dict)


def is_filled(value: Any) -> bool:
    """Present, not None, not an empty string, list or dict."""
    if value is None:
        return False
    if isinstance(value, _EMPTY_CONTAINERS) or isinstance(value, Mapping):
        return len(value) > 0
    return True


class FieldCoverage:
    """Counts filled fields over records, in bounded memory.

    Beyond MAX_FIELDS names it keeps the smallest names in sort order, so
    which names are dropped depends only on the names seen, never on the
    order records arrived in (a concurrent crawl's order varies run to run).
    A name is dropped either the first time it is seen or for good, so every
    kept count covers all records.
    """

    def __init__(self, max_fields: int = MAX_FIELDS) -> None:
        self.max_fields = max_fields
        self.counts: dict[str, int] = {}
        self._largest: list[tuple[_Reversed, str]] = []  # max-heap of kept names
        self._rejected: set[str] = set()
        self.dropped_names = 0  # distinct names left out (too long, or over the limit)
        self.records = 0

    def observe(self, record: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        items = record.items() if isinstance(record, Mapping) else record
        self.records += 1
        seen: set[str] = set()
        for key, value in items:
            name = str(key)
            if name in seen:
                continue
            seen.add(name)
            # A name seen only empty still shows, as 0: "never filled" is the finding.
            if name in self.counts or self._admit(name):
                self.counts[name] = self.counts.get(name, 0) + is_filled(value)

    def _admit(self, name: str) -> bool:
        if not 1 <= len(name) <= MAX_NAME_LENGTH:
            self._reject(name)
            return False
        if len(self.counts) < self.max_fields:
            heapq.heappush(self._largest, (_Reversed(name), name))
            return True
        largest = self._largest[0][1]
        if name > largest:
            self._reject(name)
            return False
        heapq.heapreplace(self._largest, (_Reversed(name), name))
        del self.counts[largest]
        self._reject(largest)
        return True

    def _reject(self, name: str) -> None:
        # A rejected name stays rejected without this set (the largest kept
        # name only ever decreases); the set only keeps the count distinct,
        # and is bounded because key names made from data would grow forever.
        if name not in self._rejected and len(self._rejected) < 10_000:
            self._rejected.add(name)
            self.dropped_names += 1

    def to_saved(self) -> dict[str, Any]:
        """The counts so far, as JSON, for a crawl that goes on in another process (Scrapy's JOBDIR)."""
        return {
            "counts": dict(self.counts),
            "records": self.records,
            "rejected": sorted(self._rejected),
            "dropped_names": self.dropped_names,
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from saved counts (made with the same `max_fields`); this one has seen nothing yet."""
        for name, count in saved["counts"].items():
            self.counts[name] = count
            heapq.heappush(self._largest, (_Reversed(name), name))
        self.records = saved["records"]
        self._rejected = set(saved["rejected"])
        self.dropped_names = saved["dropped_names"]

    def to_report(self, collected: int | None = None) -> dict[str, int]:
        """The report's `fields`, sorted by name; counts capped at `collected`
        (a spider may report fewer distinct records than items it yielded)."""
        cap = self.records if collected is None else collected
        return {name: min(count, cap) for name, count in sorted(self.counts.items())}


class _Reversed:
    """Orders strings backwards, turning heapq's min-heap into a max-heap."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.value == other.value
