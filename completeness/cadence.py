"""How often a source reports, read from its runs, and when one that has no overdue clock has gone quiet.

Nothing alerts on this: a crawler's schedule is the operator's to state (`expected_interval`), and an
alarm from a guessed one would fire on every irregular crawler. The pages show it instead, so that a
crawler that stopped and that no clock watches is still seen (docs/dashboard.md, "No overdue clock").
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

# The latest runs whose starts tell how often a source reports, and how many gaps that takes.
CADENCE_RUNS = 21
CADENCE_MIN_GAPS = 5
# A source without an overdue clock that has not reported for this many of its usual gaps is quiet.
QUIET_AFTER_GAPS = 3


def usual_gap(starts: Iterable[datetime]) -> timedelta | None:
    """The median gap between the starts of the latest CADENCE_RUNS runs (re-runs of one slot, a gap
    of 0, left out); None with fewer than CADENCE_MIN_GAPS gaps."""
    latest = sorted(starts)[-CADENCE_RUNS:]
    gaps = sorted(later - earlier for earlier, later in zip(latest, latest[1:], strict=False) if later > earlier)
    if len(gaps) < CADENCE_MIN_GAPS:
        return None
    middle = len(gaps) // 2
    return gaps[middle] if len(gaps) % 2 else (gaps[middle - 1] + gaps[middle]) / 2


def quiet_after(last_report_at: datetime | None, gap: timedelta | None) -> datetime | None:
    """From when a source that reports every `gap` and last reported at `last_report_at` is quiet."""
    if last_report_at is None or gap is None:
        return None
    return last_report_at + gap * QUIET_AFTER_GAPS
