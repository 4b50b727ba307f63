"""Pacing: the kit's adaptive delay per download slot, and Retry-After.

A delay doubled after a failure and cut by a factor after a success settles
where both moves cancel out: at a failure share p with
p * ln(backoff) = (1 - p) * ln(1 / recovery). With backoff 2 and recovery
0.9 that is 13.2% failures, a crawl losing a record in eight and calling it
pacing; recovery 0.99 moves it to 1.4%. So the factors are reported as
`pacing` for the service to judge, and the default recovery is 0.99.

AutoThrottle is no such controller (its delay tends to latency / target
concurrency and only refuses to shrink on errors): it has no factors to
report, and the kit's pacing stays off while AutoThrottle runs, since two
controllers on one delay fight.

One raise per round trip: a failure of a request sent before the slot's last
raise raises nothing more, unless a success came in since that raise. Requests
in flight together that the site refuses together report one overload, not one
each: eight concurrent 429s at a crawl's start raised the delay 2^8 times, to
its 60 s cap, and at recovery 0.99 it took 477 successes, about 99 minutes, to
fall back under half a second (TCP backs off once per window for the same
reason). One request at a time, every failure raises as before, and the
equilibrium is the p above; with 8 in flight it moves from 1.43% to 1.47% at
0.99, and from 13.2% to 21.9% at 0.9 (bench/pacing.py).

A URL's own failures are no load: a URL that fails again (a retry of a
permanently broken page) takes back the raise its first failure caused and
raises nothing after, so a crawl with 2% broken URLs is not slowed down.

Retry-After (seconds or an HTTP date) on a 429 or 503 holds the slot's next
requests until then, capped at COMPLETENESS_RETRY_AFTER_MAX_SECONDS.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

RETRY_AFTER_STATUSES = frozenset({429, 503})
FAILURE_CLASSES = frozenset({"http_5xx", "http_429", "timeout", "connection_reset", "connection_refused", "short_body"})


def parse_retry_after(value: bytes | str | None, now: float) -> float | None:
    """Seconds to wait, from a Retry-After header; None when absent or unreadable."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None or moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - now)


class Pacing:
    def __init__(
        self,
        *,
        enabled: bool = False,
        backoff: float = 2.0,
        recovery: float = 0.99,
        min_delay: float = 0.0,
        start_delay: float = 0.25,
        max_delay: float = 60.0,
        honor_retry_after: bool = True,
        max_retry_after: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if not backoff > 1 or not 0 < recovery < 1:
            raise ValueError("pacing needs backoff > 1 and recovery in (0, 1)")
        self.enabled = enabled
        self.backoff, self.recovery = backoff, recovery
        self.min_delay, self.start_delay, self.max_delay = min_delay, max(start_delay, min_delay), max_delay
        self.honor_retry_after = honor_retry_after
        self.max_retry_after = max_retry_after
        self._monotonic, self._wall = monotonic, wall
        self._not_before: dict[str, float] = {}
        self._failures: dict[str, int] = {}  # URL -> failures in a row
        self._raised_at: dict[str, float] = {}  # slot -> when its delay was last raised (monotonic)
        self._answered_since_raise: set[str] = set()  # slots with a success since their last raise
        self._raised_by: set[str] = set()  # URLs whose latest failure raised their slot's delay
        self.retry_after_waits = 0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Pacing:
        enabled = settings.getbool("COMPLETENESS_PACING_ENABLED", False)
        if enabled and settings.getbool("AUTOTHROTTLE_ENABLED"):
            logger.warning(
                "COMPLETENESS_PACING_ENABLED is ignored while AUTOTHROTTLE_ENABLED: two controllers of one delay fight"
            )
            enabled = False
        return cls(
            enabled=enabled,
            backoff=settings.getfloat("COMPLETENESS_PACING_BACKOFF", 2.0),
            recovery=settings.getfloat("COMPLETENESS_PACING_RECOVERY", 0.99),
            min_delay=settings.getfloat("DOWNLOAD_DELAY", 0.0),
            start_delay=settings.getfloat("COMPLETENESS_PACING_START_DELAY", 0.25),
            max_delay=settings.getfloat("COMPLETENESS_PACING_MAX_DELAY", 60.0),
            honor_retry_after=settings.getbool("COMPLETENESS_RETRY_AFTER", True),
            max_retry_after=settings.getfloat("COMPLETENESS_RETRY_AFTER_MAX_SECONDS", 300.0),
        )

    def to_report(self) -> dict[str, float] | None:
        return {"backoff": self.backoff, "recovery": self.recovery} if self.enabled else None

    def sent_at(self) -> float:
        """The instant a request leaves for the site, for `observe(sent_at=...)`."""
        return self._monotonic()

    def wait_seconds(self, slot_key: str) -> float:
        """How long the slot's next request must still wait for a Retry-After."""
        until = self._not_before.get(slot_key)
        if until is None:
            return 0.0
        left = until - self._monotonic()
        if left <= 0:
            del self._not_before[slot_key]
            return 0.0
        return left

    def observe(
        self,
        slot_key: str,
        slot: Any,
        request_class: str,
        status: int | None = None,
        retry_after: bytes | str | None = None,
        url: str | None = None,
        sent_at: float | None = None,
    ) -> None:
        """`sent_at`: when the request was sent (`sent_at()`); None, as if after every raise."""
        if self.honor_retry_after and status in RETRY_AFTER_STATUSES:
            seconds = parse_retry_after(retry_after, self._wall())
            if seconds:
                seconds = min(seconds, self.max_retry_after)
                until = self._monotonic() + seconds
                if until > self._not_before.get(slot_key, 0.0):
                    self._not_before[slot_key] = until
                    self.retry_after_waits += 1
        if not self.enabled or slot is None:
            return
        if request_class in FAILURE_CLASSES:
            failures = 1
            if url is not None:
                failures = self._failures[url] = self._failures.get(url, 0) + 1
            if failures == 1:
                if (
                    sent_at is None
                    or sent_at >= self._raised_at.get(slot_key, float("-inf"))
                    or slot_key in self._answered_since_raise
                ):
                    slot.delay = min(self.max_delay, max(slot.delay, self.start_delay) * self.backoff)
                    self._raised_at[slot_key] = self._monotonic()
                    self._answered_since_raise.discard(slot_key)
                    if url is not None:
                        self._raised_by.add(url)
            elif failures == 2 and url in self._raised_by:
                # The URL is broken: its first failure was no load either.
                self._raised_by.discard(url)
                slot.delay = max(self.min_delay, slot.delay / self.backoff)
        elif request_class == "ok":
            if url is not None:
                self._failures.pop(url, None)
                self._raised_by.discard(url)
            self._answered_since_raise.add(slot_key)
            slot.delay = max(self.min_delay, slot.delay * self.recovery)
