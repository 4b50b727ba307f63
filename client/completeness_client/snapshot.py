"""Snapshot guard: a partial run never replaces a full snapshot.

A source of 9,000 listings overwritten by the 1,200 a timed-out run managed to
fetch loses 7,800 rows that were never sold. Replace only after a complete
run; otherwise keep the previous snapshot, and say which in the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .validation import is_integer

# The share of its declared total (net of removed) a run must collect to be complete: the service's own
# default (`min_completeness`, docs/verdicts.md). At 1.0 a site whose count was off by one (200 of 201)
# made the crawler say incomplete where the service calls the run complete, and its crawler_reported
# rule believes the crawler. A source whose total is only approximate needs a lower setting still
# (COMPLETENESS_MIN_COMPLETENESS): the crawler's word overrules the share the service learns.
DEFAULT_MIN_COMPLETENESS = 0.99
# More than this share of the declared total answering 404/410 in one run is not attrition: the service's
# `mass_removal` rule (docs/verdicts.md), with the same fixed quarter.
MASS_REMOVAL_SHARE = 0.25


@dataclass(frozen=True)
class SnapshotDecision:
    replace: bool
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def action(self) -> str:
        return "replaced" if self.replace else "kept_previous"


def evidence_of_loss(
    *,
    collected: int,
    declared_total: int | None = None,
    removed: int = 0,
    pages_lost: int = 0,
    records_lost: int = 0,
    failed_batches: Sequence[Any] = (),
    breaker_stopped: bool = False,
    finish_reason: str | None = None,
    min_completeness: float = DEFAULT_MIN_COMPLETENESS,
    record_errors: int = 0,
) -> list[str]:
    """What this run's own numbers say was lost, one reason each; empty when
    nothing says so. This is the crawler's verdict: `incomplete` only on
    evidence. A source that announces no total is no evidence of anything.
    """
    if not 0 < min_completeness <= 1:
        raise ValueError("min_completeness must lie in (0, 1]")
    reasons: list[str] = []
    if not all(is_integer(n) for n in (collected, removed)) or not (
        declared_total is None or is_integer(declared_total)
    ):
        # Not numbers (a spider that set the total from the page's text, "201"): validation names
        # them, and the report is still written. Compared here, they raised while the run closed,
        # and the run was neither written nor posted.
        declared_total = None
    if finish_reason is not None and finish_reason != "finished":
        reasons.append(f"the run ended with reason {finish_reason!r}, not 'finished'")
    if declared_total is not None:
        denominator = max(0, declared_total - removed)
        if denominator and collected < min_completeness * denominator:
            reasons.append(f"collected {collected} of {denominator} declared")
    if pages_lost:
        reasons.append(f"{pages_lost} listing page(s) lost")
    if records_lost:
        reasons.append(f"{records_lost} record(s) lost after retries")
    reasons.extend(describe_batch(batch) for batch in failed_batches)
    if breaker_stopped:
        reasons.append("the run was stopped by the failure-window breaker")
    if record_errors:
        reasons.append(f"{record_errors} record callback(s) raised an exception")
    return reasons


def describe_batch(batch: Any) -> str:
    """One failed batch in words: what was not stored, and why."""
    if not isinstance(batch, dict):
        return f"a failed batch: {batch!r}"
    name, rows, error = batch.get("name", "?"), batch.get("rows", "?"), batch.get("error", "")
    if name in ("item_pipeline:dropped", "item_pipeline:duplicates"):
        return f"{rows} item(s) {error}"
    if name == "item_pipeline:error":
        return f"{rows} item(s) lost to an item pipeline error ({error})"
    return f"{rows} row(s) not stored: {name} ({error})"


def judge_completeness(
    *,
    collected: int,
    declared_total: int | None = None,
    removed: int = 0,
    pages_lost: int = 0,
    records_lost: int = 0,
    failed_batches: Sequence[Any] = (),
    breaker_stopped: bool = False,
    finish_reason: str | None = None,
    min_completeness: float = DEFAULT_MIN_COMPLETENESS,
    require_declared_total: bool = False,
    record_errors: int = 0,
) -> SnapshotDecision:
    """Whether a run is complete enough to replace the published snapshot.

    Every piece of evidence of loss (`evidence_of_loss`) refuses. `removed`
    records (404/410 during the run) left the source, so they leave the
    denominator too. `min_completeness` is the tolerance: the share of the
    denominator that must be collected (0.99 by default, as the service's; 1.0:
    all of it). Without a declared
    total nothing can be measured against; by default such a run may replace
    when nothing else went wrong and it collected something,
    `require_declared_total=True` refuses it. (An empty result without a
    total is no evidence of loss, so it does not make the crawler's verdict
    incomplete, but it is never published over a snapshot.) `finish_reason`
    (None when the crawler does not say) must be "finished".
    """
    reasons = evidence_of_loss(
        collected=collected,
        declared_total=declared_total,
        removed=removed,
        pages_lost=pages_lost,
        records_lost=records_lost,
        failed_batches=failed_batches,
        breaker_stopped=breaker_stopped,
        finish_reason=finish_reason,
        min_completeness=min_completeness,
        record_errors=record_errors,
    )
    if declared_total is None:
        if require_declared_total:
            reasons.append("the source declared no total to check against")
        elif collected == 0:
            # An empty result with nothing to say the source is empty is the
            # incident this guard exists for, not a snapshot.
            reasons.append("collected nothing and the source declared no total")
    elif (
        declared_total > 0
        and removed > MASS_REMOVAL_SHARE * declared_total
        and (collected < min_completeness * declared_total)
    ):
        # Record pages answering 404/410 by the thousand (record URLs that moved, a broken deploy) are
        # counted as removed: taken off the total, nothing was short, and a snapshot of what was left
        # replaced the full one. The service's mass_removal rule judges the run incomplete alike.
        reasons.append(
            f"collected {collected} of {declared_total} declared: {removed} declared records answered 404/410"
        )
    return SnapshotDecision(replace=not reasons, reasons=tuple(reasons))


def guard_snapshot(decision: SnapshotDecision, replace: Callable[[], int | None]) -> dict[str, Any]:
    """Call `replace()` (which publishes the new snapshot and returns its row
    count) only when the decision allows it; returns the report's `snapshot`."""
    if not decision.replace:
        return {"action": "kept_previous", "rows": None}
    rows = replace()
    return {"action": "replaced", "rows": rows}
