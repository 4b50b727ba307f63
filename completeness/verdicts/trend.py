"""The trend rule's reference at every run of a history already in memory.

sources.ingest.history.trend_reference asks the database for one run's reference when it is judged; a
chart of a year of runs would ask it once per run. This is the same window computed over the runs the
chart has loaded anyway: the good runs that arrived before a run and started within `days` before it, the
window opening no earlier than the latest of them that confirmed the source's size.
tests/test_trend_chart.py holds the two to the same answers.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
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

    One pass with a sliding maximum: a year of runs every six hours walked window by window cost
    300 ms. A run that arrived after one placed later (a late report) breaks the sliding window's
    assumption for the runs it precedes; those few are computed one by one.
    """
    count = len(runs)
    span = timedelta(days=days)
    starts = [run.started_at for run in runs]
    good_before = [0] * (count + 1)
    for index, run in enumerate(runs):
        good_before[index + 1] = good_before[index] + run.good
    # Positions of runs that arrived after some run placed after them.
    late, earliest_after = [], None
    for index in range(count - 1, -1, -1):
        if earliest_after is not None and runs[index].key > earliest_after:
            late.append(index)
        earliest_after = runs[index].key if earliest_after is None else min(earliest_after, runs[index].key)
    late.reverse()

    references: list[TrendReference | None] = []
    best: deque[int] = deque()  # good positions of the window, their ranks decreasing
    anchor = -1  # the latest confirming good position before the run
    for index, run in enumerate(runs):
        if index > 0 and runs[index - 1].good:
            previous = index - 1
            while best and _rank(runs[best[-1]]) <= _rank(runs[previous]):
                best.pop()
            best.append(previous)
            if runs[previous].confirms:
                anchor = previous
        since = run.started_at - span
        first = bisect_left(starts, since)
        if any(runs[j].key > run.key for j in late[bisect_left(late, first) : bisect_left(late, index)]):
            references.append(_reference_among(runs, index, span, known_from))
            continue
        anchored = anchor >= first
        if not anchored and known_from is not None and since < known_from:
            references.append(None)
            continue
        opens = bisect_left(starts, runs[anchor].started_at) if anchored else first
        while best and best[0] < opens:
            best.popleft()
        if not best:
            references.append(None)
            continue
        top = runs[best[0]]
        references.append(
            TrendReference(
                runs=good_before[index] - good_before[opens],
                best=top.collected,
                best_started_at=top.started_at,
                anchored_at=runs[anchor].started_at if anchored else None,
            )
        )
    return references


def _rank(run: PastRun) -> tuple[int, datetime, int]:
    # The database's order for the best run: most collected, then the latest.
    return (run.collected, run.started_at, run.key)


def _reference_among(
    runs: Sequence[PastRun], index: int, span: timedelta, known_from: datetime | None
) -> TrendReference | None:
    """One run's reference, walking its window: the definition the sliding pass must agree with."""
    run = runs[index]
    since = run.started_at - span
    members = [
        other for other in runs if other.good and since <= other.started_at <= run.started_at and other.key < run.key
    ]
    members.sort(key=lambda other: (other.started_at, other.key))
    anchor = next((other for other in reversed(members) if other.confirms), None)
    if anchor is None and known_from is not None and since < known_from:
        return None
    opens = anchor.started_at if anchor is not None else since
    window = [other for other in members if other.started_at >= opens]
    if not window:
        return None
    top = max(window, key=_rank)
    return TrendReference(
        runs=len(window),
        best=top.collected,
        best_started_at=top.started_at,
        anchored_at=anchor.started_at if anchor is not None else None,
    )
