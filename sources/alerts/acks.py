"""Acknowledging a source's problem: the one write path for the API and the alerts page."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from completeness.alerts.policy import PROBLEMS, Alert
from sources.alerts.ordering import DELIVERABLE
from sources.models import Acknowledgement, Notification, Source

NOTE_LIMIT = 2000


class NothingToAcknowledge(Exception):
    """The source is not failing or overdue (any more): there is nothing to acknowledge."""


@transaction.atomic
def acknowledge(*, source: Source, by: str, note: str = "") -> Acknowledgement:
    """Acknowledge the source's present problem: reminders about it stop (unsent ones are superseded)
    until its health changes. Under the source's row lock, so it names the problem that is there."""
    locked = Source.objects.select_for_update().get(pk=source.pk)
    if locked.health not in PROBLEMS or locked.paused:
        raise NothingToAcknowledge(f"{locked.slug} is {locked.health}: there is nothing to acknowledge")
    ack = Acknowledgement.objects.create(
        source=locked, health=locked.health, health_since=locked.health_since, by=by[:200], note=note[:NOTE_LIMIT]
    )
    Notification.objects.filter(source=locked, kind=Alert.REMINDER, status__in=DELIVERABLE).update(
        status=Notification.Status.SUPERSEDED, last_error=f"acknowledged by {ack.by}"
    )
    return ack


@dataclass(frozen=True)
class Acknowledged:
    """A problem's acknowledgements as the pages show them: the latest, with the latest note any of
    them wrote. A second person acknowledging without a note replaced the first one's "looking into
    the proxies" with nothing."""

    by: str
    at: datetime
    note: str = ""
    # Who wrote the note, where that is not the latest acknowledgement.
    note_by: str = ""


def acknowledged_as_shown(acks: Iterable[Acknowledgement]) -> Acknowledged | None:
    """The summary of one problem's acknowledgements, given oldest first."""
    latest, noted = None, None
    for ack in acks:
        latest = ack
        if ack.note:
            noted = ack
    if latest is None:
        return None
    if noted is None:
        return Acknowledged(by=latest.by, at=latest.at)
    return Acknowledged(by=latest.by, at=latest.at, note=noted.note, note_by="" if noted is latest else noted.by)


def acknowledged() -> Exists:
    """For a Source queryset: whether its present problem is acknowledged."""
    return Exists(Acknowledgement.objects.filter(source=OuterRef("pk"), health_since=OuterRef("health_since")))


def open_problems() -> QuerySet[Source]:
    """Sources failing or overdue now (and not paused), the longest first."""
    return Source.objects.filter(health__in=PROBLEMS, paused=False).order_by("health_since", "slug")
