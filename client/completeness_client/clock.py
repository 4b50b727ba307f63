"""Time sources.

In-process durations (pauses, cooldowns, budgets) use a monotonic clock so a
wall-clock correction cannot shorten or stretch them; only report timestamps
use the wall clock, always timezone-aware.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to, so tests never sleep.

    Both readings advance together, the way real time does.
    """

    def __init__(self, start: datetime | None = None, monotonic_start: float = 1000.0) -> None:
        self._wall = start or datetime(2026, 9, 14, 3, 0, tzinfo=UTC)
        if self._wall.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")
        self._mono = monotonic_start

    def monotonic(self) -> float:
        return self._mono

    def now(self) -> datetime:
        return self._wall

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not run backwards")
        self._mono += seconds
        self._wall += timedelta(seconds=seconds)


SYSTEM_CLOCK = SystemClock()


def isoformat(moment: datetime) -> str:
    """ISO 8601 with an explicit offset; refuses naive datetimes."""
    if moment.tzinfo is None or moment.tzinfo.utcoffset(moment) is None:
        raise ValueError("naive datetime: report timestamps must carry an offset")
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def wall_time_after(clock: Clock, seconds: float) -> datetime:
    """The wall-clock moment a monotonic deadline `seconds` from now maps to."""
    return clock.now() + timedelta(seconds=max(0.0, seconds))
