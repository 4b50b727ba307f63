"""What the pages read about alerts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F

from completeness.alerts.why import why_of
from completeness.report import SLUG_PATTERN
from sources import clock, episodes
from sources.alerts import acks
from sources.models import Acknowledgement, Flip, Health, Notification, Source
from sources.queries import Capped, capped_query

RECENT_FLIPS = 50
# The clock job runs every minute: an overdue flip this much after the deadline is news of its own.
NOTICED_LATE = timedelta(minutes=5)


@dataclass(frozen=True)
class Problem:
    source: Source
    acknowledgement: acks.Acknowledged | None
    # An overdue source's deadline as its alert told it (clock.deadlines_missed_exactly); without it,
    # the earliest it can have been.
    missed: datetime | None = None
    # A failing source's first bad run's start (episodes.failures_started).
    failure_started: datetime | None = None
    # The findings of the run that judged it failing (its last judged run: a run posted while paused
    # is not one), for the why the overview gives too.
    judged_findings: list[dict[str, Any]] | None = None

    @property
    def why(self) -> dict[str, Any]:
        return why_of(self.judged_findings) if self.source.health == Health.FAILING else why_of(None)

    @property
    def since(self) -> datetime:
        """When the problem began, as the source page says: an overdue source's at the deadline it
        missed, not when the clock job noticed (minutes later, or days after the service itself was
        down); a failing source's when its first bad run started, not when its report arrived (an hour's
        crawl, or a report posted late)."""
        began = self.failure_started
        if self.source.health == Health.OVERDUE:
            began = self.missed or clock.deadline_missed(self.source)
        if began is not None and self.source.health_since - began > NOTICED_LATE:
            return began
        return self.source.health_since

    @property
    def noticed(self) -> datetime | None:
        """When the change of health was recorded (the time alerts give), where that is not `since`."""
        return self.source.health_since if self.since != self.source.health_since else None


# Each row carries an acknowledge form: 500 rows were 300 KB and most of the page's 140 ms at
# 20,000 sources. The overview pages through the rest.
OPEN_PROBLEMS_SHOWN = 100


def open_problems(limit: int = OPEN_PROBLEMS_SHOWN) -> Capped:
    """Sources failing or overdue now, longest first, each with the acknowledgement of its problem:
    the first `limit` of them, and how many there are (the overview pages through them all)."""
    # The why's findings come in the same query, from the run the source's health stands on.
    found = capped_query(acks.open_problems().annotate(judged_findings=F("last_judged_run__findings")), limit)
    sources = found.items
    if not sources:
        return found
    # Only acknowledgements as recent as the oldest open problem can belong to one.
    oldest = min(source.health_since for source in sources)
    current: dict[tuple[int, datetime], list[Acknowledgement]] = {}
    for ack in Acknowledgement.objects.filter(source__in=sources, health_since__gte=oldest).order_by("at", "id"):
        current.setdefault((ack.source_id, ack.health_since), []).append(ack)
    missed = clock.deadlines_missed_exactly(sources)
    started = episodes.failures_started(sources)
    return Capped(
        [
            Problem(
                source,
                acks.acknowledged_as_shown(current.get((source.pk, source.health_since), [])),
                missed.get(source.pk),
                started.get(source.pk),
                source.judged_findings,
            )
            for source in sources
        ],
        found.total,
    )


def recent_flips(limit: int = RECENT_FLIPS):
    return Flip.objects.select_related("source", "run").order_by("-at", "-id")[:limit]


def notifications():
    return Notification.objects.select_related("channel", "source").order_by("-created_at", "-id")


@dataclass(frozen=True)
class AcknowledgeTarget:
    """The source an acknowledge link named, where its row is not on the page: no open problem now
    (the link came from an alert whose problem has ended), or beyond the rows listed."""

    slug: str
    source: Source | None  # None: no source has that slug
    # Since when it is ok, as its page says it (its first good run's start), where it is ok.
    ok_since: datetime | None = None


def acknowledge_target(slug: str | None, problems: Capped) -> AcknowledgeTarget | None:
    if not slug or any(problem.source.slug == slug for problem in problems.items):
        return None
    if not re.fullmatch(SLUG_PATTERN, slug):
        # No source can have it, and PostgreSQL refuses a NUL in a query's text (500): not looked up.
        return AcknowledgeTarget(slug[:100].replace("\x00", ""), None)
    source = Source.objects.filter(slug=slug).first()
    if source is None or source.health != Health.OK:
        return AcknowledgeTarget(slug, source)
    return AcknowledgeTarget(slug, source, episodes.ok_since(source)[0])
