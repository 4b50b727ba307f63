"""One delivery in flight per channel: a receiver that hangs holds one worker, never all of them.

Measured on Celery's prefork worker with two processes (tests/alerts/test_isolation.py): a webhook
hanging 12 s per request delayed PagerDuty's pages by 9.8, 9.8 and 19.2 s, each hanging request
holding a worker for the 10 s read timeout. With a lane per channel, a worker handed a notification
for a channel that already has one being sent does not wait: it answers "busy" and takes its next
job, and the delivery in flight hands the channel's next due notification out when it ends (the
sweep stays the net). The pages then arrived 0.1 s after the reports.

Considered: shorter timeouts (a hang still holds every worker, only for less time; a slow but
healthy receiver would be cut off), and a queue per channel (right, but both engines would need a
queue per channel created and consumed at run time). The lane costs one indexed query per delivery.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from completeness.alerts.policy import GROUPED
from sources.alerts import ordering
from sources.alerts.ordering import DELIVERABLE
from sources.models import Notification
from sources.queue import enqueue


def busy(channel_id: int, now: datetime) -> bool:
    """Another delivery to this channel is being sent (a claim older than the claim timeout is taken
    for lost, as the sweep takes it)."""
    fresh = now - timedelta(seconds=settings.ALERTS_CLAIM_TIMEOUT_SECONDS)
    return Notification.objects.filter(
        channel_id=channel_id, status=Notification.Status.SENDING, claimed_at__gte=fresh
    ).exists()


def hand_out_next(channel_id: int, now: datetime, *, grouped_too: bool = True) -> int | None:
    """Enqueue the channel's oldest due notification that may go now, if any: what a busy answer left
    behind goes when the lane is free rather than with the next sweep."""
    due = Notification.objects.filter(channel_id=channel_id, status__in=DELIVERABLE, next_attempt_at__lte=now)
    if not grouped_too:
        due = due.exclude(kind__in=GROUPED)
    found = ordering.not_blocked(due, now).order_by("pk").values_list("pk", flat=True).first()
    if found is not None:
        enqueue("deliver_notification", found)
    return found
