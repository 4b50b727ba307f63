"""Reads of data quality beyond counts for the pages: fields against their floors, the trend series.

Everything here works on rows a page has loaded anyway (the source with its last run, the chart's
runs); the one query is the baseline a source's latest run was judged against, and only for a run
that counted fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from completeness.verdicts import Baseline, TrendReference
from completeness.verdicts.fields import JudgedField, judged_fields
from completeness.verdicts.trend import PastRun, trend_references
from sources.ingest import history
from sources.models import Run, Source


def judged_baseline(source: Source, run: Run) -> Baseline | None:
    """The baseline `run` was judged against: the latest good run stored before it. The source row keeps
    the baseline as it is now, and in the common case the latest run, being complete, is that baseline
    itself; hence the query."""
    return history.good_run_before(source, run.started_at, stored_as=run.pk)


def latest_fields(source: Source) -> tuple[Run | None, list[JudgedField]]:
    """The source's latest run and its fields against the baseline it was judged by, worst first."""
    run = source.last_run
    if run is None or run.field_counts is None:
        return run, []
    baseline = judged_baseline(source, run)
    usuals = run.field_usual
    if usuals is None and baseline is not None:
        # Stored before the usual coverage was kept: the baseline's is what its floors were mostly set from.
        usuals = baseline.coverage()
    return run, judged_fields(run.field_counts, run.collected, run.field_floors, baseline, usuals)


def run_fields(run: Run) -> list[JudgedField]:
    return judged_fields(run.field_counts, run.collected, run.field_floors, usuals=run.field_usual)


def open_floors(fields: Sequence[JudgedField]) -> list[str]:
    """The fields judged against a floor of 0 (any coverage passes), which the pages explain: a
    learned optional field on a run too small to tell its loss, an operator's minimum of 0, or a
    baseline's coverage no higher than field_drop."""
    return sorted(f.name for f in fields if f.floor == 0)


def started_at(run: dict[str, Any]) -> datetime:
    # chart_runs gives the time as UTC text; its own datetime when a caller loaded one.
    started = run.get("started_at")
    if started is None:
        started = datetime.fromisoformat(run["x"]).replace(tzinfo=UTC)
    return started


def trend_series(runs: Sequence[dict[str, Any]], days: int, known_from: datetime | None) -> list[TrendReference | None]:
    """The trend reference at each of the chart's runs (oldest first), from those runs alone."""
    if all(run["declared_total"] is not None for run in runs):
        # The rule never speaks where a total is declared, and the chart draws nothing there.
        return [None] * len(runs)
    past = [
        PastRun(
            key=run["id"],
            started_at=started_at(run),
            collected=run["collected"],
            good=history.is_good(run["verdict"], run["accepted_as_baseline"]),
            confirms=history.confirms_size(run["verdict"], run["declared_total"], run["accepted_as_baseline"]),
        )
        for run in runs
    ]
    return trend_references(past, days, known_from=known_from)
