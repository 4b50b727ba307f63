"""When a source is overdue: the one definition of its deadline, in Python and in SQL.

The clock starts at the later of the last report (or the source's creation) and the last change of
health, so a source coming back from a pause gets a full interval before it can be overdue; the
deadline is that start plus the expected interval plus the grace. The overdue job
(sources.services.overdue), the alert's facts (sources.alerts.outbox), the pages and /metrics all
read it here. It imports only the models, so every layer may.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import BooleanField, DateTimeField, ExpressionWrapper, F, Func, Max, Q, Value
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce, Greatest
from django.db.models.lookups import GreaterThan

from sources.models import Flip, Health, Source

CLOCK_START = Greatest(Coalesce("last_report_at", "created_at"), "health_since")


def clock_start(source: Source) -> datetime:
    return max(source.last_report_at or source.created_at, source.health_since)


def deadline(source: Source) -> datetime | None:
    """When the source becomes overdue without a report; None for a source with no expected interval."""
    if source.expected_interval is None:
        return None
    return clock_start(source) + source.expected_interval + source.grace


def deadline_missed(source: Source) -> datetime | None:
    """For a source already overdue: the deadline it missed. Its flip moved health_since to the flip's
    time, so the clock counts from the last report (or creation) alone; where a pause ended after the
    last report, the real deadline was later, and this is the earliest it can have been."""
    if source.expected_interval is None:
        return None
    return _no_later_than_the_flip(
        source, (source.last_report_at or source.created_at) + source.expected_interval + source.grace
    )


def deadline_missed_exactly(source: Source) -> datetime | None:
    """For a source already overdue: the deadline it missed, as its alert told it. The clock started
    at the later of the last report and the change of health before the overdue flip (a pause that
    ended after the last report gave a full interval from its end): that change is the flip before it.
    One query; a list of sources asks deadlines_missed_exactly() once for all of them."""
    if source.expected_interval is None:
        return None
    if source.health != Health.OVERDUE:  # overdue by the clock, not flipped yet: health_since is the change
        return deadline(source)
    latest = list(source.flips.order_by("-at", "-id").values_list("new_health", "at")[:2])
    if not latest or latest[0][0] != Health.OVERDUE:
        return deadline_missed(source)
    return _missed(source, latest[1][1] if len(latest) == 2 else None)


def _missed(source: Source, change_before: datetime | None) -> datetime:
    """The deadline an overdue source missed, given the change of health before its overdue flip (None:
    no change since it was created, so the clock ran from its last report or its creation)."""
    start = source.last_report_at or source.created_at
    if change_before is not None:
        start = max(start, change_before)
    assert source.expected_interval is not None
    return _no_later_than_the_flip(source, start + source.expected_interval + source.grace)


def _no_later_than_the_flip(source: Source, missed: datetime) -> datetime:
    """An overdue source missed its deadline by the time it was flipped. Read with the settings of now,
    an interval lengthened since (the remedy for one set too short) put it ahead: the page said
    "overdue since" tomorrow, and "the next was due" then."""
    if source.health == Health.OVERDUE:
        return min(missed, source.health_since)
    return missed


def deadlines_missed_exactly(sources: Iterable[Source]) -> dict[int, datetime]:
    """deadline_missed_exactly() of each flipped-overdue source among `sources`, by id, in one query:
    the latest change of health before each one's overdue flip."""
    overdue = [s for s in sources if s.health == Health.OVERDUE and s.expected_interval is not None]
    if not overdue:
        return {}
    before = dict(
        Flip.objects.filter(source__in=overdue, at__lt=F("source__health_since"))
        .order_by()
        .values("source_id")
        .annotate(latest=Max("at"))
        .values_list("source_id", "latest")
    )
    return {s.pk: _missed(s, before.get(s.pk)) for s in overdue}


def is_quiet(source: Source, now: datetime) -> bool:
    """Not paused, with no overdue clock, and no report for QUIET_AFTER_GAPS of its usual gaps
    (completeness.cadence; quiet_after is kept at ingest): a crawler that stopped, which nothing alerts on."""
    return (
        not source.paused
        and source.expected_interval is None
        and source.quiet_after is not None
        and source.quiet_after < now
    )


def quiet_without_clock(now: datetime) -> Q:
    """is_quiet() as a filter on sources: the overview's list and /metrics."""
    return Q(paused=False, expected_interval=None, quiet_after__lt=now)


def deadline_expression() -> ExpressionWrapper[CombinedExpression]:
    """deadline() in SQL, for annotating a query of sources."""
    return ExpressionWrapper(CLOCK_START + F("expected_interval") + F("grace"), output_field=DateTimeField())


def deadline_passed(now: datetime) -> Q:
    """deadline() < now, as a filter on sources (null for a source with no interval, so never true).

    On SQLite, Django does datetime + duration arithmetic in a Python function called per row (50 ms
    for 2,000 sources); julianday() does it in SQL (durations are stored there as microseconds,
    timestamps as text of one format, so max() of two is the later).
    """
    if connection.vendor == "sqlite":
        stamp = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        return Q(
            _JulianDeadlinePassed(
                "last_report_at", "created_at", "health_since", "expected_interval", "grace", Value(stamp)
            )
        )
    return Q(GreaterThan(Value(now), deadline_expression()))


class _JulianDeadlinePassed(Func):
    """SQLite's deadline test in julianday() arithmetic. Its columns are compiled as the query names
    them, so it holds inside a subquery whose table has an alias of its own."""

    output_field = BooleanField()

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        parts, params = [], []
        for expression in self.get_source_expressions():
            sql, found = compiler.compile(expression)
            parts.append(sql)
            params.extend(found)
        last_report, created, since, interval, grace, now = parts
        return (
            f"(julianday(max(coalesce({last_report}, {created}), {since})) - julianday({now}))"
            f" * 86400000000.0 + {interval} + {grace} < 0",
            params,
        )
