"""What the pages read about alerts."""

from __future__ import annotations

from dataclasses import dataclass

from sources.alerts import acks
from sources.models import Acknowledgement, Flip, Notification, Source
from sources.queries import Capped, capped_query

RECENT_FLIPS = 50


@dataclass(frozen=True)
class Problem:
    source: Source
    acknowledgement: Acknowledgement | None


# Each row carries an acknowledge form: 500 rows were 300 KB and most of the page's 140 ms at
# 20,000 sources. The overview pages through the rest.
OPEN_PROBLEMS_SHOWN = 100


def open_problems(limit: int = OPEN_PROBLEMS_SHOWN) -> Capped:
    """Sources failing or overdue now, longest first, each with the acknowledgement of its problem:
    the first `limit` of them, and how many there are (the overview pages through them all)."""
    found = capped_query(acks.open_problems(), limit)
    sources = found.items
    if not sources:
        return found
    # Only acknowledgements as recent as the oldest open problem can belong to one.
    oldest = min(source.health_since for source in sources)
    current = {}
    for ack in Acknowledgement.objects.filter(source__in=sources, health_since__gte=oldest).order_by("at", "id"):
        current[(ack.source_id, ack.health_since)] = ack
    return Capped([Problem(source, current.get((source.pk, source.health_since))) for source in sources], found.total)


def recent_flips(limit: int = RECENT_FLIPS):
    return Flip.objects.select_related("source", "run").order_by("-at", "-id")[:limit]


def notifications():
    return Notification.objects.select_related("channel", "source").order_by("-created_at", "-id")
