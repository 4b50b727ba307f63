"""Run-report builder: one object a crawler feeds during the run and turns
into a spec-valid report at the end."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .breaker import Admission, FailureWindowBreaker
from .classes import REQUEST_CLASSES
from .clock import SYSTEM_CLOCK, Clock, isoformat
from .fields import FieldCoverage
from .proxies import ProxyPool
from .snapshot import (
    DEFAULT_MIN_COMPLETENESS,
    SnapshotDecision,
    evidence_of_loss,
    guard_snapshot,
    judge_completeness,
)
from .validation import MAX_BATCH_NAME_LENGTH, MAX_TEXT_LENGTH, ReportInvalid, validate_report

EXIT_COMPLETE = 0
EXIT_INCOMPLETE = 3

# The service refuses a whole report (422) for more than 10,000 lost URLs or one longer than 2,000
# characters, and any body over 1 MiB (413): a crawl cut short with its scheduler full of listing
# pages would never be judged at all. `pages.lost` keeps counting every page; the URLs are examples.
MAX_LOST_URLS = 1_000
MAX_LOST_URL_LENGTH = 2_000
MAX_LOST_URLS_CHARS = 256 * 1024


def named_lost_urls(lost: list[str]) -> list[str]:
    """The lost URLs a report names: the first ones (failed before never fetched), within bounds."""
    named: list[str] = []
    chars = 0
    for url in lost:
        if len(named) == MAX_LOST_URLS:
            break
        if len(url) > MAX_LOST_URL_LENGTH:
            continue
        chars += len(url)
        if chars > MAX_LOST_URLS_CHARS:
            break
        named.append(url)
    return named


# A pool's transitions go into the report too, about 180 bytes each: a pool of hundreds churning
# through a long crawl wrote tens of thousands, the body passed the service's 1 MiB (413) and the run was
# never judged. At most this many are sent (about 360 KB, beside the lost URLs' 256 KB).
MAX_PROXY_TRANSITIONS = 2_000


def reported_transitions(transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transitions a report carries, in their order: all of them within the bound; past it every
    proxy's latest first (the service's proxies page reads each proxy's state from it), the most recent
    proxies first, then the latest of the others."""
    if len(transitions) <= MAX_PROXY_TRANSITIONS:
        return transitions
    latest_of: dict[str, int] = {}
    for index, transition in enumerate(transitions):
        latest_of[transition.get("proxy")] = index
    latest = set(latest_of.values())
    # Newest first within each kind; a list's order is the pool's, which is time order.
    ranked = sorted(range(len(transitions)), key=lambda i: (i not in latest, -i))
    kept = sorted(ranked[:MAX_PROXY_TRANSITIONS])
    return [transitions[i] for i in kept]


def _cut(text: Any, limit: int) -> Any:
    return text[: limit - 1] + "…" if isinstance(text, str) and len(text) > limit else text


def new_run_id(source: str, started_at: datetime) -> str:
    return f"{source}-{started_at.strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"


class RunReport:
    def __init__(
        self,
        source: str,
        run_id: str | None = None,
        *,
        breaker: FailureWindowBreaker | None = None,
        proxy_pool: ProxyPool | None = None,
        clock: Clock = SYSTEM_CLOCK,
        started_at: datetime | None = None,
    ) -> None:
        self.clock = clock
        self.source = source
        self.started_at = started_at or clock.now()
        if self.started_at.tzinfo is None or self.started_at.utcoffset() is None:
            raise ValueError("started_at must be timezone-aware")
        self.run_id = run_id or new_run_id(source, self.started_at)
        self.breaker = breaker
        self.proxy_pool = proxy_pool
        # Until assigned (None included: "the source announces none"), the
        # guard refuses to judge: a default is not this run's number.
        self._declared_total: int | None = None
        self._collected = 0
        self.declared_total_filled = False
        self.collected_filled = False
        self.written: int | None = None
        self.removed = 0
        self.records_lost = 0
        # Record callbacks (parsers of record pages) that raised: their records are lost.
        self.record_errors = 0
        self.requests: Counter[str] = Counter()
        self.pages_expected: int | None = None
        self.pages_fetched = 0
        self.lost_urls: list[str] = []
        # Listing pages that were scheduled but never fetched (a crawl that
        # stopped early); an integration fills these in when the run ends.
        self.unfetched_page_urls: list[str] = []
        self.finish_reason: str | None = None  # None: the crawler does not say
        self.min_completeness = DEFAULT_MIN_COMPLETENESS
        self.field_coverage: FieldCoverage | None = None
        # Set by integrations whose numbers are filled in late (Scrapy): brings
        # them up to date and returns why they are not final yet, or None.
        self.finalizer: Callable[[], str | None] | None = None
        self.failed_batches: list[dict[str, Any]] = []
        self.delivery: dict[str, Any] | None = None
        self.snapshot: dict[str, Any] | None = None
        self.outcomes: dict[str, int] = {}
        self.counters: dict[str, int] = {}
        self.meta: dict[str, str | int | float] = {}
        self.pacing: dict[str, float] | None = None
        self.paused = False
        self.pause_reason: str | None = None
        self.exit_code: int | None = None  # None: derived from the crawler's own verdict
        self.extra_incomplete_reasons: list[str] = []
        # Why rows this process kept in memory are not the whole run's (a Scrapy crawl resumed from
        # JOBDIR: the rows of its earlier parts left with their processes). Refuses every snapshot
        # but one published from files the run appended to (`from_files`).
        self.rows_in_memory_partial: str | None = None

    @property
    def declared_total(self) -> int | None:
        return self._declared_total

    @declared_total.setter
    def declared_total(self, value: int | None) -> None:
        self._declared_total = value
        self.declared_total_filled = True

    @property
    def collected(self) -> int:
        return self._collected

    @collected.setter
    def collected(self, value: int) -> None:
        self._collected = value
        self.collected_filled = True

    # -- during the run -------------------------------------------------------

    def observe_request(self, request_class: str, admission: Admission | None = None, key: str | None = None) -> None:
        """Count one request outcome and feed it to the breaker, if any
        (`key`, the URL: a URL counts once in the breaker however often retried)."""
        if request_class not in REQUEST_CLASSES:
            raise ValueError(f"unknown request class {request_class!r}")
        self.requests[request_class] += 1
        if self.breaker is not None:
            self.breaker.record(request_class, admission, key=key)

    def page_fetched(self) -> None:
        self.pages_fetched += 1

    def page_lost(self, url: str) -> None:
        """A listing page that could not be fetched after retries. It is never
        "the end of the listing"."""
        self.lost_urls.append(url)

    def record_lost(self) -> None:
        """A record (not a listing page) that could not be fetched after retries."""
        self.records_lost += 1

    def observe_record(self, record: Any) -> None:
        """Count which fields of one collected record are filled (`fields`)."""
        if self.field_coverage is None:
            self.field_coverage = FieldCoverage()
        self.field_coverage.observe(record)

    def all_lost_urls(self) -> list[str]:
        lost = list(self.lost_urls)
        known = set(lost)
        lost.extend(url for url in self.unfetched_page_urls if url not in known)
        return lost

    def add_failed_batch(self, name: str, rows: int, error: str) -> None:
        self.failed_batches.append({"name": name, "rows": rows, "error": error})

    def pause(self, reason: str) -> None:
        """Mark the run as deliberately paused or skipped (CRAWL_PAUSED)."""
        self.paused = True
        self.pause_reason = reason

    # -- judgement ------------------------------------------------------------

    def _numbers(self) -> dict[str, Any]:
        return {
            "collected": self.collected,
            "declared_total": self.declared_total,
            "removed": self.removed,
            "pages_lost": len(self.all_lost_urls()),
            "records_lost": self.records_lost,
            "failed_batches": self.failed_batches,
            "breaker_stopped": bool(self.breaker and self.breaker.stopped),
            "finish_reason": self.finish_reason,
            "min_completeness": self.min_completeness,
            "record_errors": self.record_errors,
        }

    def evidence_of_loss(self) -> list[str]:
        """Why this run lost something, in words; empty when nothing says it
        did. The crawler's verdict follows it: no declared total, a pause or
        an empty result is no evidence of loss."""
        not_final = self.finalizer() if self.finalizer is not None else None
        reasons = [not_final] if not_final else []
        reasons += evidence_of_loss(**self._numbers())
        reasons += self.extra_incomplete_reasons
        if self.written is not None and self.written < self.collected:
            reasons.append(f"written {self.written} < collected {self.collected}")
        return reasons

    def completeness(self, *, from_files: bool = False) -> SnapshotDecision:
        """Whether this run may replace the published snapshot: no evidence of
        loss, and final numbers that were filled in, not paused, not an empty
        result without a total. Refuses (does not replace) while the numbers
        are not final or not filled in."""
        reasons: list[str] = []
        not_final = self.finalizer() if self.finalizer is not None else None
        if not_final:
            reasons.append(not_final)
        if not self.collected_filled:
            reasons.append("collected was never filled in")
        if not self.declared_total_filled:
            reasons.append("declared_total was never filled in (set it to None when the source announces none)")
        if self.paused:
            # A deliberately paused or skipped run publishes nothing, whatever it collected.
            reasons.append(f"the run was paused: {self.pause_reason or 'no reason given'}")
        if self.rows_in_memory_partial and not from_files:
            reasons.append(self.rows_in_memory_partial)
        decision = judge_completeness(**self._numbers())
        reasons += list(decision.reasons) + self.extra_incomplete_reasons
        if self.written is not None and self.written < self.collected:
            reasons.append(f"written {self.written} < collected {self.collected}")
        return SnapshotDecision(replace=not reasons, reasons=tuple(reasons))

    def crawler_verdict(self) -> str:
        """`incomplete` on evidence of loss, and only then."""
        return "incomplete" if self.evidence_of_loss() else "complete"

    def guard_snapshot(self, replace: Callable[[], int | None], *, from_files: bool = False) -> dict[str, Any]:
        """Publish through `replace()` only if this run is complete; records
        and returns the report's `snapshot` object. A `replace()` that raises
        is a failed batch (`snapshot`), and the exception goes on.
        `from_files`: `replace()` publishes files the whole run wrote, not rows
        this process holds (see `rows_in_memory_partial`)."""
        try:
            self.snapshot = guard_snapshot(self.completeness(from_files=from_files), replace)
        except Exception as exc:
            # A publish that failed is a store write that failed: swallowed by Scrapy's signal handler
            # (or caught by the caller), the run said complete and exit 0 over a snapshot never written.
            # What it left of the published snapshot is unknown, so `snapshot` stays unsaid.
            self.add_failed_batch("snapshot", self.collected, f"publishing raised {type(exc).__name__}: {exc}")
            raise
        return self.snapshot

    # -- the report -----------------------------------------------------------

    def to_dict(self, finished_at: datetime | None = None) -> dict[str, Any]:
        finished = finished_at or self.clock.now()
        if finished.tzinfo is None or finished.utcoffset() is None:
            raise ValueError("finished_at must be timezone-aware")
        # A wall-clock step backwards during the run must not make the report invalid.
        finished = max(finished, self.started_at)
        verdict = self.crawler_verdict()  # first: a finalizer may bring the numbers up to date
        exit_code = self.exit_code
        if exit_code is None:
            # A pause is no failure: the scheduler should not alarm on it (the service says "paused").
            exit_code = EXIT_COMPLETE if verdict == "complete" or self.paused else EXIT_INCOMPLETE
        report: dict[str, Any] = {
            "source": self.source,
            "run_id": self.run_id,
            "started_at": isoformat(self.started_at),
            "finished_at": isoformat(finished),
            "exit_code": exit_code,
            "crawler_verdict": verdict,
            "paused": self.paused,
            "declared_total": self.declared_total,
            "collected": self.collected,
            "removed": self.removed,
            "records_lost": self.records_lost,
            "end_reason": self.finish_reason[:100] if self.finish_reason else None,
            "requests": {
                "total": sum(self.requests.values()),
                "by_class": {name: self.requests.get(name, 0) for name in REQUEST_CLASSES},
            },
            "pages": {
                "expected": self.pages_expected,
                "fetched": self.pages_fetched,
                "lost": len(lost_urls := self.all_lost_urls()),
                "lost_urls": named_lost_urls(lost_urls),
            },
            # Texts cut to what the service takes: an exception's message (a driver's, with the
            # statement of a 500-row insert) would otherwise have the whole report refused (422).
            "failed_batches": [
                {
                    **b,
                    "name": _cut(b.get("name"), MAX_BATCH_NAME_LENGTH),
                    "error": _cut(b.get("error"), MAX_TEXT_LENGTH),
                }
                for b in self.failed_batches
            ],
        }
        if self.pause_reason:
            report["pause_reason"] = _cut(self.pause_reason, MAX_TEXT_LENGTH)
        if self.written is not None:
            report["written"] = self.written
        if self.field_coverage is not None:
            report["fields"] = self.field_coverage.to_report(self.collected)
        optional = {
            "delivery": self.delivery,
            "snapshot": self.snapshot,
            "pacing": self.pacing,
            "outcomes": dict(self.outcomes) or None,
            "counters": dict(self.counters) or None,  # a copy: kit counters below must not leak back
            "meta": dict(self.meta) or None,
        }
        report.update({key: value for key, value in optional.items() if value is not None})
        if self.breaker is not None:
            report["failure_window"] = self.breaker.to_report()
        if self.proxy_pool is not None:
            transitions = self.proxy_pool.to_report()
            report["proxy_transitions"] = reported_transitions(transitions)
            # Failure kinds stay apart in the report too, never one "dead proxy" count.
            kinds: Counter[str] = Counter()
            for per_proxy in self.proxy_pool.failure_counts().values():
                kinds.update(per_proxy)
            counters = report.setdefault("counters", {})
            if len(transitions) > MAX_PROXY_TRANSITIONS:
                counters.setdefault("proxy_transitions_left_out", len(transitions) - MAX_PROXY_TRANSITIONS)
            for reason, count in sorted(kinds.items()):
                counters.setdefault(f"proxy_failures_{reason}", count)
        return report

    def build(self, finished_at: datetime | None = None) -> dict[str, Any]:
        """The report, validated; raises ReportInvalid naming every bad field."""
        report = self.to_dict(finished_at)
        errors = validate_report(report)
        if errors:
            raise ReportInvalid(errors)
        return report
