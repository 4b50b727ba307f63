"""Maintenance windows: pauses planned ahead, for sources, tags or a region, once or weekly.

A window is not a second kind of silence. The clock job (check_overdue, every minute) opens each
occurrence by pausing every covered source until the occurrence's end, with origin "window"; from
there the pause does what a pause does: runs are judged `paused` and kept out of the baseline,
nothing alerts, the overdue clock skips the source, and the pause lifts itself at its end time.
An occurrence therefore begins up to a minute late (the job's interval), never early.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from completeness import windows as schedule
from sources import queries
from sources.models import MaintenanceWindow, PauseEvent, PauseOrigin, Source, Tag
from sources.services import pausing


def covered(window: MaintenanceWindow) -> QuerySet[Source]:
    scope = Q(maintenance_windows=window) | Q(tags__maintenance_windows=window)
    if window.region:
        scope |= Q(region=window.region)
    return Source.objects.filter(scope).distinct()


def covering(source: Source) -> QuerySet[MaintenanceWindow]:
    scope = Q(sources=source) | Q(tags__sources=source)
    if source.region:
        scope |= Q(region=source.region)
    return MaintenanceWindow.objects.filter(scope).distinct()


@transaction.atomic
def create_window(
    *,
    name: str,
    starts_at: datetime,
    ends_at: datetime,
    weekly: bool = False,
    reason: str = "",
    source_slugs: list[str] | None = None,
    tag_names: list[str] | None = None,
    region: str = "",
    created_by: str = "",
) -> MaintenanceWindow:
    """A window over known sources and tags and/or a region; refuses times that make no window."""
    source_slugs, tag_names = source_slugs or [], tag_names or []
    errors = {}
    problem = schedule.problem(starts_at, ends_at, weekly, timezone.now())
    if problem:
        field, why = problem
        errors[field] = why
    if not (source_slugs or tag_names or region):
        errors["sources"] = "name at least one source, tag or region"
    sources, unknown = queries.by_name(Source, "slug", source_slugs)
    if unknown:
        errors["sources"] = f"no such source: {', '.join(sorted(set(unknown)))}"
    tags, unknown = queries.by_name(Tag, "name", tag_names)
    if unknown:
        errors["tags"] = f"no such tag: {', '.join(sorted(set(unknown)))}"
    if errors:
        raise ValidationError(errors)
    window = MaintenanceWindow.objects.create(
        name=name[:100],
        reason=reason[:500],
        starts_at=starts_at,
        ends_at=ends_at,
        weekly=weekly,
        region=region,
        created_by=created_by,
    )
    window.sources.add(*sources)
    window.tags.add(*tags)
    return window


def open_windows(now: datetime | None = None) -> list[str]:
    """Pause the sources of every occurrence open now; returns "slug <- window id" for each paused."""
    now = now or timezone.now()
    opened = []
    for window in MaintenanceWindow.objects.filter(starts_at__lte=now):
        found = schedule.occurrence(window.starts_at, window.ends_at, window.weekly, now)
        if found is None:
            continue
        start, end = found
        for source_id in covered(window).filter(paused=False).values_list("pk", flat=True):
            if _open_for(window, source_id, start, end, now):
                opened.append(f"{source_id} <- {window.pk}")
    return opened


@transaction.atomic
def _open_for(window: MaintenanceWindow, source_id: int, start: datetime, end: datetime, now: datetime) -> bool:
    # Under the lock: a report or an operator's pause may have come since the scan. Any pause (an
    # operator's, or another window's) stands: it is not replaced by this one.
    source = Source.objects.select_for_update().filter(pk=source_id, paused=False).first()
    if source is None:
        return False
    actor = f"window:{window.pk}"
    # Once per occurrence: a source an operator resumed during the window stays resumed.
    if PauseEvent.objects.filter(source=source, origin=PauseOrigin.WINDOW, actor=actor, at__gte=start).exists():
        return False
    reason = f"maintenance window {window.name}" + (f": {window.reason}" if window.reason else "")
    pausing.pause_locked_row(source, origin=PauseOrigin.WINDOW, actor=actor, reason=reason, until=end, now=now)
    pausing.settle_health(source, f"paused by {reason}", now)
    return True


class Occurrence(TypedDict):
    """A window's occurrence as the source page and the API show it (WindowOut)."""

    id: int
    name: str
    reason: str
    weekly: bool
    open: bool  # open now: the covered sources are paused by it
    starts_at: datetime  # the open occurrence's start, else the next one's
    ends_at: datetime


def upcoming_of(window: MaintenanceWindow, now: datetime | None = None) -> Occurrence | None:
    """The occurrence open now, else the next; None when the window is over for good."""
    now = now or timezone.now()
    open_now = schedule.occurrence(window.starts_at, window.ends_at, window.weekly, now)
    start = open_now[0] if open_now else schedule.next_start(window.starts_at, window.ends_at, window.weekly, now)
    if start is None:
        return None
    return {
        "id": window.pk,
        "name": window.name,
        "reason": window.reason,
        "weekly": window.weekly,
        "open": open_now is not None,
        "starts_at": start,
        "ends_at": start + (window.ends_at - window.starts_at),
    }


def upcoming(source: Source, now: datetime | None = None) -> list[Occurrence]:
    """The windows covering the source that are open now or will open again, soonest first: for the
    source page and the API."""
    now = now or timezone.now()
    found = [occurrence for window in covering(source) if (occurrence := upcoming_of(window, now))]
    return sorted(found, key=lambda w: w["starts_at"])
