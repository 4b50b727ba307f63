"""Order per (source, channel): a channel hears about a source in the order things happened, and
never hears a stale word after a fresh one.

Notifications of one source are written under its row lock, so their ids are in the order of what
caused them. A notification is sent only when nothing older for its source and channel is still on
its way, and one that a newer notification has made stale (completeness.alerts.policy.SUPERSEDED_BY)
is marked superseded instead of being sent: a "failing" waiting out a retry never arrives after the
"resolved" written five seconds later.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from completeness.alerts.policy import SUPERSEDED_BY
from sources.models import Notification

Status = Notification.Status
DELIVERABLE = [Status.PENDING, Status.RETRYING]
UNDELIVERED = [Status.PENDING, Status.RETRYING, Status.SENDING]


def _same_pair(**more) -> QuerySet[Notification]:
    return Notification.objects.filter(channel=OuterRef("channel"), source=OuterRef("source"), **more)


def supersede_stale(notifications: QuerySet[Notification], *, newer_kinds: frozenset[str] | None = None) -> int:
    """Mark superseded every unsent notification among these that a newer one for its source and
    channel makes stale; one UPDATE per rule of SUPERSEDED_BY (only the rules that newer_kinds can
    trigger, when given). A notification being sent is left alone: its result decides, and
    supersede_stale runs again after it."""
    count = 0
    for older, newers in SUPERSEDED_BY:
        if newer_kinds is not None and not newer_kinds & newers:
            continue
        newer = _same_pair(pk__gt=OuterRef("pk"), kind__in=newers)
        count += (
            notifications.filter(status__in=DELIVERABLE, kind__in=older, source__isnull=False)
            .filter(Exists(newer))
            .update(
                status=Status.SUPERSEDED,
                version=F("version") + 1,
                last_error="superseded by a newer notification for this source",
            )
        )
    return count


def waits_for_older(notification: Notification) -> bool:
    """True while an older notification for the same source and channel is still on its way."""
    if notification.source_id is None:
        return False
    return Notification.objects.filter(
        channel_id=notification.channel_id,
        source_id=notification.source_id,
        pk__lt=notification.pk,
        status__in=UNDELIVERED,
    ).exists()


def not_blocked(
    notifications: QuerySet[Notification], now: datetime, *, pending_goes: bool = False
) -> QuerySet[Notification]:
    """Those not behind an older notification of their source and channel that cannot go now (being
    sent, or waiting for a later attempt); an older one that is due may go with them, in order.
    pending_goes: every pending one goes now, whatever its time (a grouping turn sends them all)."""
    later = Q(status=Status.RETRYING) if pending_goes else Q(status__in=DELIVERABLE)
    blocking = _same_pair(pk__lt=OuterRef("pk")).filter(Q(status=Status.SENDING) | later & Q(next_attempt_at__gt=now))
    return notifications.filter(~Exists(blocking))


def next_in_line(channel_id: int, source_ids: list[int], now: datetime) -> list[int]:
    """Per source, the oldest notification for this channel that is due: what may go next."""
    ids = []
    for source_id in source_ids:
        head = (
            Notification.objects.filter(channel_id=channel_id, source_id=source_id, status__in=UNDELIVERED)
            .order_by("pk")
            .values_list("pk", "status", "next_attempt_at")
            .first()
        )
        if head and head[1] in DELIVERABLE and head[2] <= now:
            ids.append(head[0])
    return ids
