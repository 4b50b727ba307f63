"""Delivering the outbox: claim a notification, send it, record what happened.

A notification is claimed by one conditional UPDATE (its status and version as read), so of several
workers handed the same id exactly one sends it. Nothing is ever checked and then sent. Per source
and channel, notifications go in order and stale ones are superseded (sources.alerts.ordering).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from completeness.alerts.retry import Outcome, OutcomeKind, RetryPolicy, gives_up, next_attempt
from sources.alerts import ordering, transports
from sources.alerts.ordering import DELIVERABLE
from sources.models import Channel, Notification

log = logging.getLogger(__name__)

Status = Notification.Status


def retry_policy() -> RetryPolicy:
    return RetryPolicy(
        base_seconds=settings.ALERTS_RETRY_BASE_SECONDS,
        max_seconds=settings.ALERTS_RETRY_MAX_SECONDS,
        give_up_after_seconds=settings.ALERTS_GIVE_UP_AFTER_SECONDS,
    )


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def claim(notification_id: int, now: datetime, worker: str) -> Notification | None:
    """Take the notification for sending, or None when it is not due or another worker has it."""
    seen = (
        Notification.objects.filter(pk=notification_id, status__in=DELIVERABLE, next_attempt_at__lte=now)
        .values("status", "version")
        .first()
    )
    if seen is None:
        return None
    won = Notification.objects.filter(pk=notification_id, status=seen["status"], version=seen["version"]).update(
        status=Status.SENDING, version=F("version") + 1, attempts=F("attempts") + 1, claimed_at=now, claimed_by=worker
    )
    if not won:
        return None
    return Notification.objects.select_related("channel").get(pk=notification_id)


def deliver(notification_id: int, now: datetime | None = None) -> str:
    """Send one notification if it is due, unclaimed and first in line for its source and channel;
    returns the status it is left in ("waiting" while an older one for its pair is on its way)."""
    now = now or timezone.now()
    found = Notification.objects.filter(pk=notification_id).only("pk", "channel_id", "source_id", "status").first()
    if found is None:
        return "skipped"
    if found.source_id is not None and found.status in DELIVERABLE:
        ordering.supersede_stale(_pair(found))
        if ordering.waits_for_older(found):
            return "waiting"
    notification = claim(notification_id, now, worker_name())
    if notification is None:
        status = Notification.objects.filter(pk=notification_id).values_list("status", flat=True).first()
        return Status.SUPERSEDED if status == Status.SUPERSEDED else "skipped"
    try:
        outcome = transports.send(notification.channel, notification.event)
    except Exception as exc:  # noqa: BLE001
        # A fault of ours, not the receiver's: retried (and logged), never left claimed, never "broken".
        log.exception("notification %s: sending raised", notification.pk)
        outcome = Outcome.transient(f"unexpected {type(exc).__name__}: {exc}")
    done = timezone.now()
    mine = Notification.objects.filter(pk=notification.pk, status=Status.SENDING, version=notification.version)
    channel = Channel.objects.filter(pk=notification.channel_id)
    if outcome.kind is OutcomeKind.SENT:
        status, changes = Status.SENT, dict(sent_at=done, last_error="")
        channel.filter(broken=True).update(broken=False)
    elif outcome.kind is OutcomeKind.PERMANENT:
        status, changes = Status.FAILED, dict(last_error=outcome.error)
        channel.update(broken=True, last_error=outcome.error, last_error_at=done)
    else:
        policy = retry_policy()
        next_at = next_attempt(policy, notification.attempts, done, outcome.retry_after)
        if gives_up(policy, notification.created_at, next_at):
            status, changes = Status.FAILED, dict(last_error=f"gave up after {notification.attempts} attempts: {outcome.error}")
        else:
            status, changes = Status.RETRYING, dict(last_error=outcome.error, next_attempt_at=next_at)
        channel.update(last_error=outcome.error, last_error_at=done)
    if not mine.update(status=status, version=F("version") + 1, **changes):
        # The sweep took this claim for lost and handed it out again; that attempt's result stands.
        log.warning("notification %s: result %s arrived after its claim was reclaimed", notification.pk, status)
    if notification.source_id is not None:
        status = _after(notification, status)
    return status


def _pair(notification: Notification):
    return Notification.objects.filter(channel_id=notification.channel_id, source_id=notification.source_id)


def _after(notification: Notification, status: str) -> str:
    """A retry that a notification written meanwhile made stale is superseded; once this one is out of
    the way, the next in line for its source and channel is handed out rather than left for the sweep."""
    from completeness import jobs
    from completeness.tasks import enqueue

    if status == Status.RETRYING and ordering.supersede_stale(_pair(notification).filter(pk=notification.pk)):
        status = Status.SUPERSEDED
    if status != Status.RETRYING:
        for next_id in ordering.next_in_line(notification.channel_id, [notification.source_id], timezone.now()):
            enqueue(jobs.deliver_notification, next_id)
    return status


def sweep(now: datetime | None = None) -> list[int]:
    """Hand out again what is due: new rows whose queue message was lost, retries, and lost claims."""
    from completeness import jobs
    from completeness.tasks import enqueue

    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.ALERTS_CLAIM_TIMEOUT_SECONDS)
    Notification.objects.filter(status=Status.SENDING, claimed_at__lt=stale).update(
        status=Status.RETRYING, version=F("version") + 1, next_attempt_at=now,
        last_error="claimed by a worker that did not finish; sending again",
    )
    due = list(
        ordering.not_blocked(Notification.objects.filter(status__in=DELIVERABLE, next_attempt_at__lte=now), now)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[: settings.ALERTS_SWEEP_BATCH]
    )
    for notification_id in due:
        enqueue(jobs.deliver_notification, notification_id)
    return due


def retry_now(notifications) -> int:
    """An operator's "send again": failed or waiting notifications become due at once."""
    return notifications.filter(status__in=[Status.FAILED, Status.RETRYING, Status.PENDING]).update(
        status=Status.PENDING, version=F("version") + 1, next_attempt_at=timezone.now()
    )
