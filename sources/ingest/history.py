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

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Q, QuerySet, Subquery, Value, Window
from django.db.models.functions import Coalesce

from completeness import cadence
from completeness.report import RunReport
from completeness.verdicts import Baseline, History, RuleSettings, TrendReference, Verdict
from completeness.verdicts.expectation import (
    MIN_SPAN,
    KnownRun,
    Normal,
    learn,
    learning_set,
    level_trend,
    lowest_factor,
)
from completeness.verdicts.fit_state import from_state, normal_state
from completeness.verdicts.shares import Shares, learn_shares
from sources.ingest import rows
from sources.models import Run, Source

# A good run: complete, or accepted by an operator as the new normal. Baselines, trend references and
# the learned normal are drawn from good runs only. The same two ideas in SQL and in Python.
GOOD = Q(verdict=Verdict.COMPLETE) | Q(accepted_as_baseline=True)
# A run that says how large the source really is now: the trend window opens no earlier than it.
CONFIRMS_SIZE = Q(verdict=Verdict.COMPLETE, declared_total__isnull=False) | Q(accepted_as_baseline=True)


def is_good(verdict: str, accepted: bool) -> bool:
    return verdict == Verdict.COMPLETE or accepted


def confirms_size(verdict: str, declared_total: int | None, accepted: bool) -> bool:
    return (verdict == Verdict.COMPLETE and declared_total is not None) or accepted


def history_for(source: Source, report: RunReport, settings: RuleSettings, *, paused: bool) -> History:
    """What judging `report` reads of the source's past. Sets `source.normal_state` and
    `source.usual_gap` when it refitted the source's normal, for the caller to store with the rest of
    the source's state."""
    # A paused run is judged by no rule, but shows the baseline of its time beside what it collected.
    baseline = baseline_for(source, report.started_at)
    known = None
    cached = cached_normal(source, report.started_at, settings)
    refitted = cached is None
    if cached is None:
        known = known_runs(
            source,
            report.started_at,
            days=max(settings.learn_days, settings.trend_days),
            with_fields=report.fields is not None or source.baseline_field_counts is not None,
        )
        normal = learn(
            known,
            report.started_at,
            learn_days=settings.learn_days,
            learn_min_runs=settings.learn_min_runs,
            min_margin=settings.min_margin,
        )
        shares = learn_shares(
            known, report.started_at, learn_days=settings.learn_days, learn_min_runs=settings.learn_min_runs
        )
        if source.normal_state is None or report.started_at >= _as_of(source.normal_state):
            # Read from the same runs, and refreshed as often: how often the source reports.
            source.usual_gap = cadence.usual_gap(
                [run.started_at for run in known] + ([] if paused else [report.started_at])
            )
            first = learning_set(known, report.started_at, learn_days=settings.learn_days)[:1]
            source.normal_state = {
                "as_of": report.started_at.isoformat(),
                "settings": _learning_settings(settings),
                "since": first[0].started_at.isoformat() if first else None,
                **normal_state(normal, shares),
            }
        else:
            refitted = False
    else:
        normal, shares = cached
    if normal is None:
        trend = None if paused else trend_for(source, report, settings, baseline)
        return History(baseline=baseline, trend=trend, shares=shares, refitted=refitted)
    levels = None
    if not paused and report.declared_total is None and _may_fall(source, report, normal, settings):
        if known is None:
            known = known_runs(source, report.started_at, days=settings.trend_days, with_fields=False)
        levels = level_trend(
            known,
            normal,
            key=-1,
            started_at=report.started_at,
            collected=report.collected,
            trend_days=settings.trend_days,
            drop_threshold=settings.drop_threshold,
        )
    return History(
        baseline=baseline,
        normal=normal,
        expectation=normal.at(report.started_at),
        level_trend=levels,
        shares=shares,
        refitted=refitted,
    )


# A source's normal is refitted from its recent runs at most this often (by the runs' own clock): a
# source that reports every few hours would otherwise read its 56 days at every report (1-5 ms on
# PostgreSQL: the runs of one source lie on as many heap pages), and a day of runs moves a median of
# weeks little. Under a day, so that a daily source whose schedule drifts by minutes still refits at
# every report; a young one refits until it could have a normal.
REFIT_AFTER = timedelta(hours=20)


def cached_normal(
    source: Source, started_at: datetime, settings: RuleSettings
) -> tuple[Normal | None, Shares | None] | None:
    """The normal kept on the source's row, where it still holds for a run at `started_at`: fitted
    under the same settings, for a time no later than this run and less than REFIT_AFTER before it.
    A source without a normal yet reuses that answer only while it is too young to have one, so it
    has one from the first run that may."""
    state = source.normal_state
    if not state or state.get("settings") != _learning_settings(settings):
        return None
    as_of = _as_of(state)
    if not as_of <= started_at < as_of + REFIT_AFTER:
        return None
    if state.get("normal") is None and not _too_young(state.get("since"), started_at):
        return None
    return from_state(state)


@dataclass(frozen=True)
class Learning:
    """A source still learning its normal, as of its last fit (the row keeps it: no query). Until its
    learning set holds learn_min_runs runs over MIN_SPAN, the fixed rules judge it, and a new feed's
    quiet weekend alarms: the source page and API say why and until when (docs/verdicts.md, "A new
    source's first two weeks")."""

    since: date  # the first run of its learning set
    spans_on: date  # a run on this day makes the runs since span MIN_SPAN: the runs after it may have a normal
    spanned: bool  # they span it already: what the source lacks is runs that count


def learning(source: Source) -> Learning | None:
    state = source.normal_state
    if not state or state.get("normal") is not None:
        return None
    if state.get("since"):
        since = datetime.fromisoformat(state["since"]).date()
    elif source.last_run_started_at is not None:
        # The fit read the runs before the one it judged: after a source's first run it read none, and
        # the learning starts at that run at the earliest (later, if that run showed loss).
        since = source.last_run_started_at.date()
    else:
        return None
    spans_on = since + MIN_SPAN
    return Learning(since, spans_on, spanned=datetime.fromisoformat(state["as_of"]).date() > spans_on)


def _too_young(since: str | None, started_at: datetime) -> bool:
    """Whether a source without a normal still cannot have one: its learning set began less than the
    two calendar weeks a normal needs before this run."""
    return since is not None and started_at.date() - datetime.fromisoformat(since).date() < MIN_SPAN


def _as_of(state: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(state["as_of"])


def _learning_settings(settings: RuleSettings) -> list[float]:
    return [settings.learn_days, settings.learn_min_runs, settings.min_margin]


def _may_fall(source: Source, report: RunReport, normal: Normal, settings: RuleSettings) -> bool:
    """Whether the trend rule could fire: the run's own level must lie below (1 - drop_threshold) times
    a reference, and no reference exceeds the best good run since the size was last confirmed
    (trend_ceiling, an upper bound) divided by the smallest rhythm factor. Spares the window's read."""
    if source.trend_ceiling is None:
        return False
    own = report.collected / normal.factor(report.started_at)
    return own < (1 - settings.drop_threshold) * source.trend_ceiling / lowest_factor(normal)


KNOWN_RUN_COLUMNS = (
    "id",
    "started_at",
    "collected",
    "verdict",
    "accepted_as_baseline",
    "declared_total",
    "removed",
    "exit_code",
    "crawler_verdict",
    "pages_lost",
    "pages_fetched",
    "records_lost",
    "written",
    "breaker_last_event",
    "expected",
)
# Whether any batch failed, not the batches: decoding each run's list cost more than the rest. Both
# databases print an empty JSON list as [] (SQLite keeps the text Django wrote, PostgreSQL normalises).
ANY_BATCH_FAILED = """CAST(failed_batches AS TEXT) <> '[]'"""
KNOWN_RUNS_WHERE = (
    "WHERE source_id = %s AND started_at >= %s AND started_at <= %s AND verdict <> %s ORDER BY started_at, id"
)


def known_runs(source: Source, started_at: datetime, *, days: int, with_fields: bool) -> list[KnownRun]:
    """The source's unpaused runs of the `days` before a run (one range scan of the run_history index),
    as the expectation and the level trend read them. At four runs a day and the default 56 days that
    is 224 narrow rows; field counts only for a source that counts fields. Read without the ORM's
    compilation: a refit reads this window at one report in four, and building the rows cost more
    than the database spent finding them."""
    columns = KNOWN_RUN_COLUMNS + (("field_counts",) if with_fields else ())
    since = rows.datetime_param(started_at - timedelta(days=days))
    until = rows.datetime_param(started_at)
    found = rows.fetch_values(
        Run,
        KNOWN_RUNS_WHERE,
        [source.pk, since, until, Verdict.PAUSED.value],
        fields=columns,
        extra=(ANY_BATCH_FAILED,),
    )
    known = []
    for row in found:
        (
            key,
            started,
            collected,
            verdict,
            accepted,
            declared,
            removed,
            exit_code,
            crawler_verdict,
            pages_lost,
            pages_fetched,
            records_lost,
            written,
            breaker_last_event,
            expected,
        ) = row[:15]
        denominator = declared - removed if declared is not None else None
        known.append(
            KnownRun(
                key=key,
                started_at=started,
                collected=collected,
                good=is_good(verdict, accepted),
                confirms=confirms_size(verdict, declared, accepted),
                accepted=accepted,
                evidence=has_direct_evidence(
                    collected=collected,
                    exit_code=exit_code,
                    crawler_verdict=crawler_verdict,
                    pages_lost=pages_lost,
                    pages_fetched=pages_fetched,
                    records_lost=records_lost,
                    written=written,
                    batch_failed=row[-1],
                    breaker_last_event=breaker_last_event,
                ),
                expected=expected,
                share=collected / denominator if denominator else None,
                fields=row[15] if with_fields else None,
            )
        )
    return known


def has_direct_evidence(
    *,
    collected: int,
    exit_code: int | None,
    crawler_verdict: str,
    pages_lost: int | None,
    pages_fetched: int | None,
    records_lost: int | None,
    written: int | None,
    batch_failed: bool,
    breaker_last_event: str,
) -> bool:
    """Whether a stored run fired (or would now fire) one of the rules that see loss directly, in
    any mode: crawler_reported, lost_pages, records_lost, failed_batches, breaker_stopped, layout.
    Such a run teaches nothing about the source's normal (verdicts.md, Learning set)."""
    return bool(
        crawler_verdict == "incomplete"
        or (exit_code is not None and exit_code != 0)
        or pages_lost
        or records_lost
        or batch_failed
        or (written is not None and written < collected)
        or breaker_last_event == "stopped"
        or (pages_fetched and collected == 0)
    )


def baseline_for(source: Source, started_at: datetime) -> Baseline | None:
    """The latest good run that started no later than `started_at`: the source row's, unless the run
    is a late report from before it."""
    if source.at_or_after_baseline(started_at):
        if source.baseline_collected is None:
            return None
        return Baseline(source.baseline_collected, source.baseline_field_counts)
    return good_run_before(source, started_at)


def good_run_before(source: Source, started_at: datetime, *, stored_as: int | None = None) -> Baseline | None:
    """The latest good run that started no later than `started_at`: one indexed single-row query. For a
    run already stored (`stored_as`, its pk), a good run started at the same instant counts only if it
    was stored before it, and the run itself never does."""
    same_instant = Q(started_at=started_at) if stored_as is None else Q(started_at=started_at, pk__lt=stored_as)
    earlier = (
        Run.objects.filter(source=source)
        .filter(GOOD)
        .filter(Q(started_at__lt=started_at) | same_instant)
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
    return in_window.filter(GOOD).annotate(anchored_at=anchor).filter(started_at__gte=Coalesce(anchor, Value(since)))


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
    since: int = (  # the run itself is among them
        Run.objects.filter(source=source, started_at__gte=run.started_at)
        .filter(GOOD | Q(pk=run.pk))
        .aggregate(best=Max("collected"))["best"]
    )
    if source.trend_ceiling is None:
        return since
    return min(source.trend_ceiling, since)
