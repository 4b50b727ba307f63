"""Failure-window breaker.

A rolling window over the last N requests by count, not by time: a time window
empties when the run slows down and its ratio then jumps around on three
observations. Only real trouble counts as bad (see `classes.DEFAULT_BAD_CLASSES`);
a 404 is the catalogue's normal life.

Life cycle: running -> (ratio >= threshold with >= min_samples) tripped/paused
-> after the pause a bounded probe -> resumed (probe bad share < threshold) or
paused again; after `max_failed_probes` failed probes in a row: stopped.

A URL counts once, however often it is retried: pass `key` (the URL) to
`record()` and a URL that failed before and fails again is no new evidence
about the site, only about that URL; it does not enter the window, so a tail
of retries of a few permanently broken pages never trips the breaker. A
probe is made of URLs not known to be broken while there are any: pass
`key` and `fresh_waiting` to `admit()`.

`seq` in events is the run's progress: requests judged while running plus the
requests of successful probes. A failed probe's requests do not advance it,
because the crawler must redo them ("resume exactly where the run stopped").
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .classes import DEFAULT_BAD_CLASSES, REQUEST_CLASSES, classify_exception, classify_status
from .clock import SYSTEM_CLOCK, Clock, isoformat

MAX_SERIES_POINTS = 10_000


class BreakerState(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    PROBING = "probing"
    STOPPED = "stopped"


@dataclass(frozen=True)
class Admission:
    """Whether the next request may go out now.

    When not allowed and not stopped, `wait_seconds` says when asking again can
    change the answer; None means "when an in-flight probe request finishes".
    """

    allowed: bool
    stopped: bool = False
    wait_seconds: float | None = None
    probe_round: int | None = None  # set when this request belongs to a probe


class FailureWindowBreaker:
    def __init__(
        self,
        *,
        size: int = 200,
        threshold: float = 0.35,
        min_samples: int = 50,
        pause_seconds: float = 300.0,
        probe_size: int = 20,
        max_failed_probes: int = 3,
        bad_classes: Iterable[str] = DEFAULT_BAD_CLASSES,
        series_every: int | None = None,
        min_body_bytes: int = 0,
        probe_timeout_seconds: float = 120.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if size < 1 or not 1 <= min_samples <= size:
            raise ValueError("need 1 <= min_samples <= size")
        if not 0 < threshold <= 1:
            raise ValueError("threshold must lie in (0, 1]")
        if probe_size < 1 or max_failed_probes < 1 or pause_seconds < 0:
            raise ValueError("probe_size and max_failed_probes must be >= 1, pause_seconds >= 0")
        unknown = set(bad_classes) - set(REQUEST_CLASSES)
        if unknown:
            raise ValueError(f"unknown request classes: {sorted(unknown)}")
        if "not_found" in set(bad_classes):
            raise ValueError("not_found is attrition, never a failure")
        self.min_body_bytes = min_body_bytes
        self.probe_timeout_seconds = probe_timeout_seconds
        self.size = size
        self.threshold = threshold
        self.min_samples = min_samples
        self.pause_seconds = pause_seconds
        self.probe_size = probe_size
        self.max_failed_probes = max_failed_probes
        self.bad_classes = tuple(bad_classes)
        self._bad = frozenset(self.bad_classes)
        self._clock = clock
        self._lock = threading.Lock()
        self._window: deque[int] = deque(maxlen=size)
        self._bad_in_window = 0
        self.state = BreakerState.RUNNING
        self.seq = 0
        self.events: list[dict[str, Any]] = []
        self._resume_at = 0.0
        self._probe_sent = 0
        self._probe_done = 0
        self._probe_bad = 0
        self._probe_outcomes: list[int] = []
        self._failed_probes = 0
        self._probe_round = 0
        self._series_every = series_every
        self.series: list[list[float]] = [[0, 0.0]] if series_every else []
        self.late_outcomes = 0
        self.repeated_failures = 0  # bad outcomes of URLs already known broken: not counted
        self._broken: set[str] = set()
        self.lost_probe_requests = 0
        self._probe_started = 0.0

    # -- reading -------------------------------------------------------------

    @property
    def samples(self) -> int:
        return len(self._window)

    @property
    def ratio(self) -> float:
        return self._bad_in_window / len(self._window) if self._window else 0.0

    @property
    def stopped(self) -> bool:
        return self.state is BreakerState.STOPPED

    def is_bad(self, request_class: str) -> bool:
        if request_class not in REQUEST_CLASSES:
            raise ValueError(f"unknown request class {request_class!r}")
        return request_class in self._bad

    # -- admitting requests --------------------------------------------------

    def admit(self, key: str | None = None, fresh_waiting: bool = False) -> Admission:
        """Ask before sending a request; a granted admission must be followed
        by exactly one `record()` of its outcome. During a probe a URL known
        to be broken waits while requests for other URLs (`fresh_waiting`)
        can be probed instead: its failure would say nothing about the site."""
        with self._lock:
            if self.state is BreakerState.STOPPED:
                return Admission(allowed=False, stopped=True)
            if self.state is BreakerState.PAUSED:
                remaining = self._resume_at - self._clock.monotonic()
                if remaining > 0:
                    return Admission(allowed=False, wait_seconds=remaining)
                self._start_probe()
            if self.state is BreakerState.PROBING:
                # The probe is bounded: a probe that may grow floods the
                # output with garbage again on a site that is still down.
                if self._probe_sent >= self.probe_size:
                    if self._clock.monotonic() - self._probe_started < self.probe_timeout_seconds:
                        return Admission(allowed=False, wait_seconds=None)
                    # Probe requests whose outcome never came back (dropped,
                    # cancelled) are replaced, or the probe would wait forever.
                    self.lost_probe_requests += self._probe_sent - self._probe_done
                    self._probe_sent = self._probe_done
                    self._probe_started = self._clock.monotonic()
                if fresh_waiting and key is not None and key in self._broken:
                    return Admission(allowed=False, wait_seconds=None)
                self._probe_sent += 1
                return Admission(allowed=True, probe_round=self._probe_round)
            return Admission(allowed=True)

    def wait_for_admission(self, sleep: Callable[[float], None] = time.sleep, poll_seconds: float = 0.05) -> bool:
        """Blocking form of `admit()` for plain-Python crawlers: returns True
        when the request may go, False once the breaker has stopped for good.

        Only useful when other threads complete the in-flight probe requests,
        or when the caller is the only sender (then it never waits on a probe).
        """
        while True:
            admission = self.admit()
            if admission.allowed:
                return True
            if admission.stopped:
                return False
            sleep(admission.wait_seconds if admission.wait_seconds is not None else poll_seconds)

    def wait_while_paused(self, sleep: Callable[[float], None] = time.sleep) -> bool:
        """Block through a pause without taking an admission; False once the
        breaker has stopped for good. For a sequential crawler's main loop."""
        while True:
            with self._lock:
                if self.state is BreakerState.STOPPED:
                    return False
                remaining = self._resume_at - self._clock.monotonic()
                if self.state is not BreakerState.PAUSED or remaining <= 0:
                    return True
            sleep(remaining)

    # -- recording outcomes --------------------------------------------------

    def known_broken(self, key: str | None) -> bool:
        """Whether this URL's last outcome was bad (a retry failing again repeats it)."""
        return key is not None and key in self._broken

    def record(self, request_class: str, admission: Admission | None = None, key: str | None = None) -> BreakerState:
        """Record one request's outcome; returns the state after it.

        Pass the request's `Admission` when several requests are in flight at
        once, so an outcome of a request sent before the trip is never taken
        for a probe result. Pass `key` (the URL) so that a URL counts once
        however often it is retried.
        """
        bad = 1 if self.is_bad(request_class) else 0
        with self._lock:
            repeated = False
            if key is not None:
                if bad:
                    repeated = key in self._broken
                    self._broken.add(key)
                else:
                    self._broken.discard(key)
            if repeated and self.state is BreakerState.RUNNING:
                self.repeated_failures += 1
                return self.state
            if (
                admission is not None
                and self.state is BreakerState.PROBING
                and admission.probe_round != self._probe_round
            ):
                self.late_outcomes += 1
                return self.state
            if self.state is BreakerState.RUNNING:
                self._push(bad)
                self.seq += 1
                self._maybe_add_series_point()
                if len(self._window) >= self.min_samples and self.ratio >= self.threshold:
                    self._event("tripped", ratio=round(self.ratio, 4), samples=len(self._window))
                    # Sampled every `series_every` requests alone, the line stayed at 0% through a
                    # whole outage that tripped and healed between two samples, under the trip's mark.
                    self._add_series_point()
                    self._pause()
            elif self.state is BreakerState.PROBING and self._probe_done < self._probe_sent:
                self._probe_done += 1
                self._probe_bad += bad
                self._probe_outcomes.append(bad)
                if self._probe_done >= self.probe_size:
                    self._judge_probe()
            else:
                # Requests that were already in flight when the breaker
                # tripped: they neither confirm nor refute the outage.
                self.late_outcomes += 1
            return self.state

    def record_response(self, status: int, body_length: int, admission: Admission | None = None) -> str:
        """Classify an HTTP response (a 200 shorter than `min_body_bytes` is a
        stub: `short_body`), record it, and return its class."""
        request_class = classify_status(status, body_length, self.min_body_bytes)
        self.record(request_class, admission)
        return request_class

    def record_exception(self, exc: BaseException, admission: Admission | None = None) -> str:
        """Classify a transport failure (timeout, reset, refused, ...), record it,
        and return its class."""
        request_class = classify_exception(exc)
        self.record(request_class, admission)
        return request_class

    # -- internals -----------------------------------------------------------

    def _push(self, bad: int) -> None:
        if len(self._window) == self._window.maxlen:
            self._bad_in_window -= self._window[0]
        self._window.append(bad)
        self._bad_in_window += bad

    def _pause(self) -> None:
        self.state = BreakerState.PAUSED
        self._resume_at = self._clock.monotonic() + self.pause_seconds

    def _start_probe(self) -> None:
        self.state = BreakerState.PROBING
        self._probe_started = self._clock.monotonic()
        self._probe_round += 1
        self._probe_sent = self._probe_done = self._probe_bad = 0
        self._probe_outcomes = []

    def _judge_probe(self) -> None:
        sent, bad = self._probe_done, self._probe_bad
        self._event("probe", sent=sent, bad=bad)
        if bad / sent < self.threshold:
            self.seq += sent
            self._failed_probes = 0
            # The trip's bad outcomes would re-trip at once; the probe is the
            # freshest evidence of how the site behaves now.
            self._window.clear()
            self._bad_in_window = 0
            for outcome in self._probe_outcomes:
                self._push(outcome)
            self.state = BreakerState.RUNNING
            self._event("resumed")
            self._add_series_point()
            return
        self._failed_probes += 1
        if self._failed_probes >= self.max_failed_probes:
            self.state = BreakerState.STOPPED
            self._event("stopped", ratio=round(self.ratio, 4), samples=len(self._window))
            return
        self._pause()

    def _event(self, kind: str, **fields: Any) -> None:
        self.events.append({"at": isoformat(self._clock.now()), "seq": self.seq, "kind": kind, **fields})

    def _maybe_add_series_point(self) -> None:
        every = self._series_every
        if not every or self.seq % every:
            return
        self._add_series_point()

    def _add_series_point(self) -> None:
        every = self._series_every
        if not every:
            return
        point = [self.seq, round(self.ratio, 4)]
        if self.series and self.series[-1][0] == self.seq:
            self.series[-1] = point  # one point per seq: the latest ratio there
        else:
            self.series.append(point)
        if len(self.series) > MAX_SERIES_POINTS:
            # Halve the resolution instead of growing without bound.
            self.series = self.series[::2]
            self._series_every = every * 2

    # -- a run that goes on in another process --------------------------------

    def to_saved(self) -> dict[str, Any]:
        """The run's progress and history so far, as JSON (a Scrapy crawl paused with JOBDIR)."""
        with self._lock:
            return {
                "seq": self.seq,
                "events": [dict(event) for event in self.events],
                "series": [list(point) for point in self.series],
                "series_every": self._series_every,
            }

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from saved progress; the window starts empty (the outcomes before the pause say
        nothing about the site now), so a run paused while tripped resumes running."""
        with self._lock:
            self.seq = saved["seq"]
            self.events = [dict(event) for event in saved["events"]] + self.events
            if self._series_every:
                self.series = [list(point) for point in saved["series"]] or self.series
                self._series_every = saved["series_every"] or self._series_every

    # -- report --------------------------------------------------------------

    def to_report(self) -> dict[str, Any]:
        """The run report's `failure_window` object."""
        with self._lock:
            report: dict[str, Any] = {
                "size": self.size,
                "threshold": self.threshold,
                "min_samples": self.min_samples,
                "bad_classes": list(self.bad_classes),
                "events": [dict(event) for event in self.events],
            }
            if self.series:
                report["series"] = [list(point) for point in self.series]
            return report
