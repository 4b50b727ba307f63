"""The clock's half of health: sources that stopped reporting, and pauses whose end time came."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from completeness.alerts.messages import human_time
from completeness.durations import human_duration
from sources import clock
from sources.models import Health, Source
from sources.services import health, pausing

WATCHED = [Health.OK, Health.FAILING]


def overdue_candidates(now: datetime) -> QuerySet[Source]:
    """Unpaused sources with an interval whose clock has run out: one query over the sources table."""
    return (
        Source.objects.filter(paused=False, expected_interval__isnull=False, health__in=WATCHED)
        .annotate(overdue_at=clock.deadline_expression())
        .filter(overdue_at__lt=now)
    )


def clock_cause(source: Source) -> str:
    since = human_time(source.last_report_at.isoformat()) if source.last_report_at else "it was registered"
    # Only a source with an interval is a candidate (overdue_candidates).
    assert source.expected_interval is not None, f"{source.slug} has no expected interval"
    every = human_duration(source.expected_interval.total_seconds())
    grace = human_duration(source.grace.total_seconds())
    return f"clock: no report since {since} (expected every {every}, grace {grace})"


def mark_overdue(now: datetime | None = None) -> list[str]:
    """Flip every source that is overdue (each alerts once: an overdue source is no candidate)."""
    now = now or timezone.now()
    flipped = []
    for source_id in overdue_candidates(now).values_list("pk", flat=True):
        with transaction.atomic():
            # Re-read under the lock: a report or a pause may have arrived since the scan.
            source = overdue_candidates(now).select_for_update(of=("self",)).filter(pk=source_id).first()
            if source is None:
                continue
            health.change_health_and_notify(source, Health.OVERDUE, cause=clock_cause(source), now=now)
            source.save(update_fields=["health", "health_since"])
            flipped.append(source.slug)
    return flipped


def lift_expired_pauses(now: datetime | None = None) -> list[str]:
    now = now or timezone.now()
    lifted = []
    for source in Source.objects.filter(paused=True, paused_until__lte=now):
        pausing.lift_expired_pause(source, now)
        lifted.append(source.slug)
    return lifted
