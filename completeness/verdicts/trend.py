"""The trend rule's reference at every run of a history already in memory.

sources.history.trend_reference asks the database for one run's reference when it is judged; a chart
of a year of runs would ask it once per run. This is the same window computed over the runs the chart
has loaded anyway: the good runs that arrived before a run and started within `days` before it, the
window opening no earlier than the latest of them that confirmed the source's size.
tests/test_trend_chart.py holds the two to the same answers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from completeness.verdicts.types import TrendReference


@dataclass(frozen=True)
class PastRun:
    # Arrival order (the run's id): of two runs with one started_at, the one that arrived first is
    # earlier, and a run judged before another arrived never saw it.
    key: int
    started_at: datetime
    collected: int
    good: bool  # complete, or accepted as baseline
    confirms: bool  # complete against its own declared total, or accepted as baseline


def trend_references(
    runs: Sequence[PastRun], days: int, *, known_from: datetime | None = None
) -> list[TrendReference | None]:
    """Per run (runs ordered by started_at, then key): the reference the trend rule reads for it.

    None where the window holds no good run, and where the window reaches back before `known_from`
    (the oldest run loaded) with no confirming run inside it: the runs that would decide are not here,
    and a line drawn from part of a window would be wrong, not just short.
    """
    span = timedelta(days=days)
    good = [run for run in runs if run.good]
    starts = [run.started_at for run in good]
    references: list[TrendReference | None] = []
    for run in runs:
        since = run.started_at - span
        members = [
            other for other in good[bisect_left(starts, since):bisect_right(starts, run.started_at)]
            if other.key < run.key
        ]
        anchor = next((other for other in reversed(members) if other.confirms), None)
        if anchor is None and known_from is not None and since < known_from:
            references.append(None)
            continue
        opens = anchor.started_at if anchor is not None else since
        window = [other for other in members if other.started_at >= opens]
        if not window:
            references.append(None)
            continue
        best = max(window, key=lambda other: (other.collected, other.started_at, other.key))
        references.append(TrendReference(
            runs=len(window), best=best.collected, best_started_at=best.started_at,
            anchored_at=anchor.started_at if anchor is not None else None,
        ))
    return references
