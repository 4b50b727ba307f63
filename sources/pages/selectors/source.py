"""Read-side queries of the source page (split from sources/pages/selectors/overview.py, which keeps the
overview's and the run page's). source_state stays there: it mirrors the overview's SQL. The proxy
chart's query is in sources/pages/selectors/proxies.py, with the proxies page's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import CharField
from django.db.models.functions import Cast, Coalesce, Substr
from django.utils import timezone

from completeness.verdicts import DEFAULT_MODES, RULES
from completeness.verdicts.types import ALWAYS_ENFORCED
from sources.models import BaselineAcceptance, Flip, PauseEvent, Run, Source

RUN_HISTORY_PAGE_SIZE = 25
# The longest history the charts of a source page cover (the range control's "1 y", with a day to spare).
CHART_HISTORY = timedelta(days=366)


def source_by_slug(slug: str) -> Source | None:
    # A run's raw report can be a megabyte (10,000 breaker points): the page reads none of it here.
    return (
        Source.objects.select_related("last_run", "baseline_run")
        .defer("last_run__raw", "baseline_run__raw", "last_run__lost_urls", "baseline_run__lost_urls")
        .prefetch_related("tags")
        .filter(slug=slug)
        .first()
    )


CHART_RUN_FIELDS = (
    "id",
    "collected",
    "declared_total",
    "baseline_collected",
    "verdict",
    "silent",
    "completeness",
    "completeness_floor",
    "breaker_peak_ratio",
    "breaker_threshold",
    "accepted_as_baseline",
    "field_counts",
    "field_floors",
    "field_usual",
    "expected",
    "expected_low",
)


# The most runs a source page loads: a year of hourly runs would be 8,760 rows, each with up to 200
# field counts, before being thinned to 500 points a line. A source that reports more often than
# that shows its latest CHART_MAX_RUNS runs and says from when.
CHART_MAX_RUNS = 3_000


def chart_runs(
    source: Source, now: datetime | None = None, *, since: datetime | None = None, limit: int = CHART_MAX_RUNS
) -> list[dict[str, Any]]:
    """The source's runs since `since` (default: CHART_HISTORY ago), at most the latest `limit`,
    oldest first, only the columns the charts read.

    The time axis comes as text ("YYYY-MM-DD HH:MM:SS", UTC, the form plotly.js reads): parsing a
    year of timestamps into aware datetimes only to format them again was a fifth of the source
    page's time on PostgreSQL.
    """
    now = now or timezone.now()
    latest = list(
        Run.objects.filter(source=source, started_at__gte=since or now - CHART_HISTORY)
        .order_by("-started_at", "-id")
        .values(*CHART_RUN_FIELDS, x=Substr(Cast("started_at", output_field=CharField()), 1, 19))[:limit]
    )
    latest.reverse()
    return latest


@dataclass(frozen=True)
class RuleRow:
    rule: str
    mode: str
    default_mode: str
    fired: int
    fired_enforced: int
    window: int
    locked: bool


def rule_table(source: Source) -> list[RuleRow]:
    """Per rule: its mode and on how many of the last RULE_COST_WINDOW runs it fired, in any mode.

    An observed rule's count is exactly what enforcing it would have cost in failing runs.
    """
    window = settings.RULE_COST_WINDOW
    recent = list(
        Run.objects.filter(source=source).order_by("-started_at", "-id").values_list("findings", flat=True)[:window]
    )
    fired = {rule: 0 for rule in RULES}
    enforced = {rule: 0 for rule in RULES}
    for findings in recent:
        for rule in {f.get("rule") for f in findings or []}:
            if rule in fired:
                fired[rule] += 1
        for rule in {f.get("rule") for f in findings or [] if f.get("mode") == "enforce"}:
            if rule in enforced:
                enforced[rule] += 1
    modes = source.rule_settings()
    return [
        RuleRow(
            rule=rule,
            mode=modes.mode_of(rule).value,
            default_mode=DEFAULT_MODES[rule].value,
            fired=fired[rule],
            fired_enforced=enforced[rule],
            window=len(recent),
            locked=rule in ALWAYS_ENFORCED,
        )
        for rule in RULES
    ]


RUN_LIST_FIELDS = (
    "id",
    "source_id",
    "run_id",
    "started_at",
    "finished_at",
    "exit_code",
    "crawler_verdict",
    "paused",
    "verdict",
    "silent",
    "findings",
    "collected",
    "declared_total",
    "removed",
    "completeness",
    "baseline_collected",
    "expected",
    "accepted_as_baseline",
    "snapshot_action",
)


def run_history(source: Source, page: str | int | None) -> Page[Run]:
    runs = Run.objects.filter(source=source).order_by("-started_at", "-id").only(*RUN_LIST_FIELDS)
    return Paginator(runs, RUN_HISTORY_PAGE_SIZE).get_page(page)


def pause_history(source: Source, limit: int = 10) -> list[PauseEvent]:
    event_fields = [f.name for f in PauseEvent._meta.concrete_fields]
    return list(
        source.pause_events.select_related("run").only(*event_fields, "run__started_at").order_by("-at", "-id")[:limit]
    )


def baseline_history(source: Source, limit: int = 10) -> list[BaselineAcceptance]:
    return list(
        source.baseline_acceptances.select_related("run")
        .only("accepted_at", "accepted_by_name", "previous_baseline", "note", "run__run_id", "run__collected")
        .order_by("-accepted_at", "-id")[:limit]
    )


def recent_flips(source: Source, limit: int = 10) -> list[Flip]:
    # The run's start only (the log says when a backfilled run ran), not its whole stored report.
    flip_fields = [f.name for f in Flip._meta.concrete_fields]
    return list(source.flips.select_related("run").only(*flip_fields, "run__started_at").order_by("-at", "-id")[:limit])


def paused_periods(source: Source, since: datetime, now: datetime) -> list[tuple[datetime, datetime]]:
    """When the source was paused between `since` and `now`, from its pause events: shaded on the
    charts, so that a pause does not read as an outage.

    A crawler's pause and its end came with a run, and are drawn from that run's start, where the
    charts draw the run: a backfill's paused week was shaded as a sliver at the minute it was posted.
    Events are taken in the order they happened, and no boundary goes back before the one before it
    (a crawler's paused run that started before an operator's resume pauses from the resume on)."""
    periods: list[tuple[datetime, datetime]] = []
    start: datetime | None = None
    first = True
    boundary = since
    events = (
        PauseEvent.objects.filter(source=source, at__gte=since)
        .order_by("at", "id")
        .values_list("action", Coalesce("run__started_at", "at"))
    )
    for action, when in events:
        boundary = max(boundary, min(when, now))
        if action == PauseEvent.Action.PAUSE:
            start = boundary if start is None else start  # a pause while paused changes its terms, not its start
        elif action == PauseEvent.Action.RESUME:
            if first and start is None:
                start = since  # paused before the period began
            if start is not None and boundary > start:
                periods.append((start, boundary))
            start = None
        first = False
    if start is None and first and source.paused:
        start = since  # paused throughout, no event inside the period
    if start is not None:
        periods.append((start, now))
    return periods
