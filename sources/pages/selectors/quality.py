"""Reads of data quality beyond counts for the pages: fields against their floors, the trend series.

Everything here works on rows a page has loaded anyway (the source with its last run, the chart's
runs); the one query is the baseline a source's latest run was judged against, and only for a run
that counted fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q

from completeness.verdicts import Baseline, TrendReference, Verdict
from completeness.verdicts.fields import JudgedField, judged_fields
from completeness.verdicts.trend import PastRun, trend_references
from sources.models import Run, Source

GOOD = Q(verdict=Verdict.COMPLETE) | Q(accepted_as_baseline=True)


def judged_baseline(source: Source, run: Run) -> Baseline | None:
    """The baseline `run` was judged against: the latest good run that arrived before it.

    One indexed single-row query, always: the source row keeps the baseline as it is now, and in the
    common case the latest run, being complete, is that baseline itself.
    """
    earlier = (
        Run.objects.filter(source=source)
        .filter(GOOD)
        .filter(Q(started_at__lt=run.started_at) | Q(started_at=run.started_at, pk__lt=run.pk))
        .order_by("-started_at", "-id")
        .values_list("collected", "field_counts")
        .first()
    )
    return Baseline(*earlier) if earlier else None


def latest_fields(source: Source) -> tuple[Run | None, list[JudgedField]]:
    """The source's latest run and its fields against the baseline it was judged by, worst first."""
    run = source.last_run
    if run is None or run.field_counts is None:
        return run, []
    baseline = judged_baseline(source, run)
    return run, judged_fields(run.field_counts, run.collected, run.field_floors, baseline)


def run_fields(run: Run) -> list[JudgedField]:
    return judged_fields(run.field_counts, run.collected, run.field_floors)


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
            good=run["verdict"] == Verdict.COMPLETE or run["accepted_as_baseline"],
            confirms=(run["verdict"] == Verdict.COMPLETE and run["declared_total"] is not None)
            or run["accepted_as_baseline"],
        )
        for run in runs
    ]
    return trend_references(past, days, known_from=known_from)
