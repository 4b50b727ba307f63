"""What judging a run reads of its source's past: the last good run and the trend window's reference.

Both are bounded. The baseline lives on the source row (a late report costs one indexed single-row
query); the trend reference is one aggregate over the trend window on the run_history index, and the
common case skips it: the source row keeps an upper bound of any window's best (trend_ceiling), and a
report at or above (1 - drop_threshold) times that bound cannot trip the trend rule.

"Earlier" is the spec's order: by started_at, and among runs of one started_at (a re-run of one slot)
by arrival. Every stored run arrived before the report being judged, so runs with the same started_at
count as earlier here.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Count, Max, Q, QuerySet, Subquery, Value, Window
from django.db.models.functions import Coalesce

from completeness.report import RunReport
from completeness.verdicts import Baseline, History, RuleSettings, TrendReference, Verdict
from sources.models import Run, Source

GOOD = Q(verdict=Verdict.COMPLETE) | Q(accepted_as_baseline=True)
# A run that says how large the source really is now: the trend window opens no earlier than it.
CONFIRMS_SIZE = Q(verdict=Verdict.COMPLETE, declared_total__isnull=False) | Q(accepted_as_baseline=True)


def history_for(source: Source, report: RunReport, settings: RuleSettings, *, paused: bool) -> History:
    # A paused run is judged by no rule, but shows the baseline of its time beside what it collected.
    baseline = baseline_for(source, report.started_at)
    trend = None if paused else trend_for(source, report, settings, baseline)
    return History(baseline=baseline, trend=trend)


def baseline_for(source: Source, started_at: datetime) -> Baseline | None:
    """The latest good run that started no later than `started_at`."""
    if source.baseline_started_at is None or source.baseline_started_at <= started_at:
        if source.baseline_collected is None:
            return None
        return Baseline(source.baseline_collected, source.baseline_field_counts)
    earlier = (
        Run.objects.filter(source=source, started_at__lte=started_at)
        .filter(GOOD)
        .order_by("-started_at", "-id")
        .values_list("collected", "field_counts")
        .first()
    )
    return Baseline(*earlier) if earlier else None


def trend_for(
    source: Source, report: RunReport, settings: RuleSettings, baseline: Baseline | None
) -> TrendReference | None:
    if report.declared_total is not None:
        return None
    # Where drop fires, trend keeps quiet: the run is judged already, and needs no window.
    if baseline is not None and _may_decline(baseline.collected, report.collected, settings):
        return None
    in_order = source.last_run_started_at is None or report.started_at >= source.last_run_started_at
    if in_order and not _may_decline(source.trend_ceiling, report.collected, settings):
        return None
    return trend_reference(source, report.started_at, settings.trend_days)


def _may_decline(ceiling: int | None, collected: int, settings: RuleSettings) -> bool:
    # No good run yet, or one the report is not far enough below: the trend rule cannot fire.
    return ceiling is not None and collected < (1 - settings.drop_threshold) * ceiling


def trend_window(source: Source, started_at: datetime, days: int) -> QuerySet[Run]:
    """The good runs of the trend window before a run that started at `started_at`, each annotated
    with `anchored_at`: the start of the latest run in the window that confirmed the source's size."""
    since = started_at - timedelta(days=days)
    in_window = Run.objects.filter(source=source, started_at__gte=since, started_at__lte=started_at)
    anchor = Subquery(in_window.filter(CONFIRMS_SIZE).order_by("-started_at", "-id").values("started_at")[:1])
    return (
        in_window.filter(GOOD)
        .annotate(anchored_at=anchor)
        .filter(started_at__gte=Coalesce(anchor, Value(since)))
    )


def trend_reference(source: Source, started_at: datetime, days: int) -> TrendReference | None:
    """One query on the run_history index, bounded by the window: the best good run and how many."""
    best = (
        trend_window(source, started_at, days)
        .annotate(runs=Window(Count("id")))
        .order_by("-collected", "-started_at", "-id")
        .values_list("collected", "started_at", "runs", "anchored_at")
        .first()
    )
    if best is None:
        return None
    collected, best_started_at, runs, anchored_at = best
    return TrendReference(runs=runs, best=collected, best_started_at=best_started_at, anchored_at=anchored_at)


def ceiling_after_good_run(source: Source, run: Run, *, in_order: bool) -> int:
    """trend_ceiling once `run` (complete) is stored: reset by the newest run that confirmed the
    source's size, raised by any other. A late run may only raise it: it stays an upper bound."""
    confirms = run.declared_total is not None
    if (confirms and in_order) or source.trend_ceiling is None:
        return run.collected
    return max(source.trend_ceiling, run.collected)


def ceiling_after_acceptance(source: Source, run: Run) -> int | None:
    """trend_ceiling once an operator accepted `run`: the window now opens no earlier than it, so the
    best since then bounds every window that includes it; an older bound may be tighter still."""
    since = (
        Run.objects.filter(source=source, started_at__gte=run.started_at)
        .filter(GOOD | Q(pk=run.pk))
        .aggregate(best=Max("collected"))["best"]
    )
    if source.trend_ceiling is None:
        return since
    return min(source.trend_ceiling, since)
