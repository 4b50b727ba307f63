"""The overview's fleet view: what a team of 500 crawlers lost last week.

Records lost to incomplete runs over the last FLEET_DAYS, in total and for the sources that lost most
(the run that lost most named on top: a partial run that replaced a snapshot of 84,401 rows was one
pink row among fifty), and runs that failed or sources that went late, per hour. It follows the
overview's source filters (owner, team, region, tag), so a team reads its own week.

Five queries whatever the fleet: incomplete runs are read through the partial index
run_incomplete_recent (about 2% of runs; 11,000 a week at 20,000 sources reporting four times a
day), late sources through flip_recent, and everything is aggregated in SQL, at most
LOSS_SOURCES + 1 + 2 x 24 x FLEET_DAYS rows back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, IntegerField, Max, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncHour

from completeness.verdicts import Verdict
from completeness.web import shared_cache
from sources.models import Flip, Health, Run
from sources.pages.selectors.overview import SCOPE_FILTERS, OverviewFilters, source_scope
from sources.queries import HAS_TARGET, expected_records, records_short

FLEET_DAYS = 7
LOSS_SOURCES = 10  # sources listed by records short; the rest are counted
# The overview reads the week from the cache for this long: at 20,000 sources its five queries took
# 140 ms of an overview that is 90 ms without them, and a week's totals a minute old tell the same story.
FLEET_CACHE_SECONDS = 60
FLEET_CACHE_SHAPE = 2


@dataclass(frozen=True)
class WorstRun:
    run_id: int
    slug: str
    name: str
    started_at: datetime
    short: int
    expected: int
    collected: int
    overwritten: bool  # it replaced the published snapshot
    replaced_rows: int | None  # what the snapshot held before (the baseline it was judged by)

    @property
    def display_name(self) -> str:
        # As the table of losses below it names sources: the line and its row must read as one source.
        return self.name or self.slug


@dataclass(frozen=True)
class SourceLoss:
    slug: str
    name: str
    short: int
    runs: int
    overwrites: int

    @property
    def display_name(self) -> str:
        return self.name or self.slug


@dataclass(frozen=True)
class Hour:
    start: datetime
    failed: int  # incomplete runs started in the hour
    late: int  # sources that went overdue in the hour


@dataclass(frozen=True)
class Fleet:
    since: datetime
    days: int
    short: int  # records short of expected over every incomplete run of the window
    expected: int  # what those runs were expected to bring
    runs: int  # incomplete runs
    sources: int  # sources with an incomplete run
    overwrites: int  # incomplete runs that replaced the published snapshot
    worst: WorstRun | None
    losses: list[SourceLoss]
    hours: list[Hour]

    @property
    def more_sources(self) -> int:
        return max(self.sources - len(self.losses), 0)

    @property
    def peak(self) -> int:
        return max((h.failed + h.late for h in self.hours), default=0)

    @property
    def peak_hour(self) -> Hour | None:
        """The busiest hour (the latest, where several are as busy), for the caption to name."""
        return max(reversed(self.hours), key=lambda h: h.failed + h.late, default=None) if self.peak else None

    def bars(self, height: int = 40) -> list[dict[str, Any]]:
        """The hourly chart as SVG rectangles, a unit wide per hour, scaled to the busiest hour (drawn
        on the server: the overview loads no chart library). Hours with nothing are left out."""
        scale = height / self.peak if self.peak else 0
        drawn = []
        for x, hour in enumerate(self.hours):
            if hour.failed or hour.late:
                failed, late = hour.failed * scale, hour.late * scale
                drawn.append(
                    {
                        "x": x,
                        "failed_y": round(height - failed, 2),
                        "failed_h": round(failed, 2),
                        "late_y": round(height - failed - late, 2),
                        "late_h": round(late, 2),
                        "hour": hour,
                    }
                )
        return drawn

    @property
    def failed(self) -> int:
        return sum(h.failed for h in self.hours)

    @property
    def late(self) -> int:
        return sum(h.late for h in self.hours)


def cached_fleet(filters: OverviewFilters, now: datetime) -> Fleet:
    """The week for these filters as computed within the last FLEET_CACHE_SECONDS, or now."""
    scope = json.dumps([getattr(filters, name) for name in SCOPE_FILTERS])
    # The key names the shape of what is kept: a week pickled before a field was added (WorstRun.name)
    # is not read back by code that expects it, for the minute it would live after an upgrade.
    key = f"fleet-week:{FLEET_CACHE_SHAPE}:" + hashlib.sha256(scope.encode()).hexdigest()
    # Without the cache the week is computed for each overview: slower, never wrong.
    return shared_cache.kept(
        key, Fleet, lambda: fleet(filters, now), FLEET_CACHE_SECONDS, "overview week computed anew"
    )


def fleet(filters: OverviewFilters, now: datetime, days: int = FLEET_DAYS) -> Fleet:
    since = now - timedelta(days=days)
    # verdict and started_at: the partial index run_incomplete_recent.
    incomplete = Run.objects.filter(
        source_scope(filters, "source__"), verdict=Verdict.INCOMPLETE, started_at__gte=since
    )
    overwrite = Q(snapshot_action="replaced")
    totals = incomplete.aggregate(
        runs=Count("id"),
        sources=Count("source", distinct=True),
        overwrites=Count("id", filter=overwrite),
        short=Coalesce(Sum(records_short()), 0),
        expected=Coalesce(Sum(expected_records(), filter=HAS_TARGET), 0),
    )
    losses = [
        SourceLoss(row["source__slug"], row["source__name"], row["short"], row["runs"], row["overwrites"])
        for row in incomplete.order_by()
        .values("source_id", "source__slug", "source__name")
        .annotate(
            short=Coalesce(Sum(records_short()), 0),
            runs=Count("id"),
            overwrites=Count("id", filter=overwrite),
            latest=Max("started_at"),
        )
        .order_by("-short", "-overwrites", "-latest", "source__slug")[:LOSS_SOURCES]
    ]
    return Fleet(
        since=since,
        days=days,
        short=totals["short"],
        expected=totals["expected"],
        runs=totals["runs"],
        sources=totals["sources"],
        overwrites=totals["overwrites"],
        worst=_worst_run(incomplete),
        losses=losses,
        hours=_hours(incomplete, filters, since, now),
    )


def _worst_run(incomplete: QuerySet[Run]) -> WorstRun | None:
    """The run that lost most; of equal losses an overwrite first (the published data went with it)."""
    run = (
        incomplete.annotate(short=Coalesce(records_short(), 0, output_field=IntegerField()))
        .order_by("-short", "-started_at", "-id")
        .values(
            "id",
            "source__slug",
            "source__name",
            "started_at",
            "short",
            "collected",
            "snapshot_action",
            "baseline_collected",
        )
        .annotate(expected=expected_records())
        .first()
    )
    if run is None:
        return None
    overwritten = run["snapshot_action"] == "replaced"
    return WorstRun(
        run_id=run["id"],
        slug=run["source__slug"],
        name=run["source__name"],
        started_at=run["started_at"],
        short=run["short"],
        expected=run["expected"] or 0,
        collected=run["collected"],
        overwritten=overwritten,
        replaced_rows=run["baseline_collected"] if overwritten else None,
    )


def _hours(incomplete: QuerySet[Run], filters: OverviewFilters, since: datetime, now: datetime) -> list[Hour]:
    """Every hour of the window, oldest first, with its failed runs and its sources gone late. A run
    dated ahead of the clock (a crawler's clock may be ahead) counts in the present hour."""
    first = since.replace(minute=0, second=0, microsecond=0)
    slots = int((now - first) / timedelta(hours=1)) + 1
    failed = [0] * slots
    late = [0] * slots

    def slot(moment: datetime) -> int:
        return min(max(int((moment - first) / timedelta(hours=1)), 0), slots - 1)

    per_hour = incomplete.order_by().annotate(hour=TruncHour("started_at")).values("hour").annotate(n=Count("id"))
    for row in per_hour:
        failed[slot(row["hour"])] += row["n"]
    went_late = (
        Flip.objects.filter(source_scope(filters, "source__"), new_health=Health.OVERDUE, at__gte=since)
        .order_by()
        .annotate(hour=TruncHour("at"))
        .values("hour")
        .annotate(n=Count("id"))
    )
    for row in went_late:
        late[slot(row["hour"])] += row["n"]
    return [Hour(first + timedelta(hours=i), failed[i], late[i]) for i in range(slots)]
