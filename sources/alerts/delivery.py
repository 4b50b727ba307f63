"""Delivering the outbox: claim a notification, send it, record what happened.

A notification is claimed by one conditional UPDATE (its status and version as read), so of several
workers handed the same id exactly one sends it. Nothing is ever checked and then sent. Per source
and channel, notifications go in order and stale ones are superseded (sources.alerts.ordering).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import CharField, F, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from completeness.alerts.retry import Outcome, OutcomeKind, RetryPolicy, give_up_before, next_attempt, retried_for
from completeness.durations import human_duration
from sources.alerts import claimers, lanes, ordering, storms, transports, watch
from sources.alerts.ordering import DELIVERABLE
from sources.models import Channel, Notification
from sources.queue import enqueue, enqueue_at

log = logging.getLogger(__name__)

Status = Notification.Status


REFUSED = "refused an alert for good"
# The first wait before recording a delivery's outcome again when the database did not answer (it
# doubles up to 5 s), and the share of ALERTS_CLAIM_TIMEOUT_SECONDS spent trying (_until_recorded).
RECORD_RETRY_FIRST_WAIT = 0.5
RECORD_WITHIN_SHARE = 0.5

T = TypeVar("T")


def retry_policy() -> RetryPolicy:
    return RetryPolicy(
        base_seconds=settings.ALERTS_RETRY_BASE_SECONDS,
        max_seconds=settings.ALERTS_RETRY_MAX_SECONDS,
        give_up_after_seconds=settings.ALERTS_GIVE_UP_AFTER_SECONDS,
        broken_after_seconds=settings.ALERTS_BROKEN_AFTER_SECONDS,
    )


def worker_name() -> str:
    return claimers.identity()


def claim(notification_id: int, now: datetime, worker: str) -> Notification | None:
    """Take the notification for sending, or None when it is not due or another worker has it."""
    seen = (
        Notification.objects.filter(pk=notification_id, status__in=DELIVERABLE, next_attempt_at__lte=now)
        .values("status", "version")
        .first()
    )
    if seen is None:
        return None
    # One transaction: a claim whose row could not be read back (the database went away in between)
    # is undone rather than left "sending" with nothing sent, holding the channel's lane until the
    # claim timeout.
    with transaction.atomic():
        won = Notification.objects.filter(pk=notification_id, status=seen["status"], version=seen["version"]).update(
            status=Status.SENDING,
            version=F("version") + 1,
            attempts=F("attempts") + 1,
            claimed_at=now,
            claimed_by=worker,
        )
        if not won:
            return None
        return Notification.objects.select_related("channel").get(pk=notification_id)


def deliver(notification_id: int, now: datetime | None = None) -> str:
    """Send one notification if it is due, unclaimed and first in line for its source and channel;
    returns the status it is left in ("waiting" while an older one for its pair is on its way,
    "held" while its email or Slack channel waits out the grouping window)."""
    now = now or timezone.now()
    found = (
        Notification.objects.filter(pk=notification_id)
        .select_related("channel")
        .only("pk", "kind", "source_id", "status", "next_attempt_at", "channel__kind")
        .first()
    )
    if found is None:
        return "skipped"
    if found.source_id is not None and found.status in DELIVERABLE:
        ordering.supersede_stale(_pair(found))
        if ordering.waits_for_older(found):
            return "waiting"
    if storms.grouped(found.channel.kind, found.kind):
        if found.status not in DELIVERABLE or found.next_attempt_at > now:
            return "skipped"
        return _deliver_grouped(found, now)
    if lanes.busy(found.channel_id, now):
        # Not waited for: a hanging receiver would hold this worker too (lanes.py).
        return "busy"
    notification = claim(notification_id, now, worker_name())
    if notification is None:
        status = Notification.objects.filter(pk=notification_id).values_list("status", flat=True).first()
        return Status.SUPERSEDED if status == Status.SUPERSEDED else "skipped"
    mine = Notification.objects.filter(pk=notification.pk, status=Status.SENDING, version=notification.version)
    status = _send_and_record(notification.channel, [notification], mine)
    if notification.source_id is not None:
        status = _after(notification, status)
    if status != Status.RETRYING:
        # The lane is free: what a busy answer left behind goes now.
        lanes.hand_out_next(
            notification.channel_id, timezone.now(), grouped_too=not storms.grouped_kind(found.channel.kind)
        )
    return status


def _pair(notification: Notification):
    assert notification.source_id is not None, "only a source's notifications have a pair (both callers check)"
    return Notification.objects.filter(channel_id=notification.channel_id, source_id=notification.source_id)


def _after(notification: Notification, status: str) -> str:
    """A retry that a notification written meanwhile made stale is superseded; once this one is out of
    the way, the next in line for its source and channel is handed out rather than left for the sweep."""
    if status == Status.RETRYING and ordering.supersede_stale(_pair(notification).filter(pk=notification.pk)):
        status = Status.SUPERSEDED
    if status != Status.RETRYING:
        assert notification.source_id is not None, "only a source's notifications wait in line (deliver)"
        for next_id in ordering.next_in_line(notification.channel_id, [notification.source_id], timezone.now()):
            enqueue("deliver_notification", next_id)
    return status


def _deliver_grouped(found: Notification, now: datetime) -> str:
    """Email and Slack: whoever takes the channel's turn sends everything due for it as one message."""
    turn = storms.take_turn(found.channel_id, now)
    if turn is not None:
        storms.hold(found.pk, turn)
        # Handed out when the turn comes, not with the next sweep after it.
        enqueue_at(turn, "deliver_notification", found.pk)
        return "held"
    token = f"{worker_name()}:{uuid.uuid4().hex[:12]}"
    batch = storms.claim_due(found.channel_id, now, token)
    if not batch:
        storms.give_back_turn(found.channel_id, now)
        return "skipped"
    mine = Notification.objects.filter(claimed_by=token, status=Status.SENDING)
    status = _send_and_record(batch[0].channel, batch, mine)
    # A retry that a notification written meanwhile made stale is superseded.
    ordering.supersede_stale(Notification.objects.filter(pk__in=[n.pk for n in batch]))
    # A test message or a breakage notice turned away while this was sent goes now (lanes.py).
    lanes.hand_out_next(found.channel_id, timezone.now(), grouped_too=False)
    return Notification.objects.filter(pk=found.pk).values_list("status", flat=True).first() or status


def _send_and_record(channel: Channel, batch: list[Notification], mine) -> str:
    """Send the batch as one message (one notification: its own message) and record the outcome on
    every row still claimed by this attempt (mine); returns the status they were left in."""
    try:
        # People read these: a change they never heard is told with the one they hear.
        events = storms.with_stories(channel.pk, batch) if channel.kind in storms.HUMAN else [n.event for n in batch]
        if len(batch) == 1:
            outcome = transports.send(channel, events[0])
        else:
            outcome = transports.send_group(channel, events)
    except Exception as exc:
        # A fault of ours, not the receiver's: retried (and logged), never left claimed, never "broken".
        log.exception("notifications %s: sending raised", [n.pk for n in batch])
        outcome = Outcome.transient(f"unexpected {type(exc).__name__}: {exc}")
    # The message is out (or refused): its outcome is recorded even across a database restart.
    status, changes = _until_recorded(lambda: _record(channel, batch, mine, outcome))
    if status == Status.RETRYING:
        # Sent again when due, not with the next sweep after that (the sweep remains the net).
        for notification in batch:
            enqueue_at(changes["next_attempt_at"], "deliver_notification", notification.pk)
    if len(batch) == 1:
        return Notification.objects.filter(pk=batch[0].pk).values_list("status", flat=True).first() or status
    return status


def _until_recorded(record: Callable[[], T]) -> T:
    """Run `record` in a transaction, again while the database does not answer (a restart, a failover),
    for up to half the claim timeout. Raised at once, the error left the notification "sending",
    claimed by a worker that was alive: the sweep waited ALERTS_CLAIM_TIMEOUT_SECONDS (5 min) before
    taking it back, the channel's lane was held all that time (every other alert to it answered
    "busy"), and then the message that had been sent was sent a second time."""
    deadline = time.monotonic() + settings.ALERTS_CLAIM_TIMEOUT_SECONDS * RECORD_WITHIN_SHARE
    wait = RECORD_RETRY_FIRST_WAIT
    while True:
        try:
            with transaction.atomic():
                return record()
        except (OperationalError, InterfaceError) as exc:
            if time.monotonic() + wait > deadline:
                raise
            log.warning("recording a delivery: the database did not answer (%s), trying again in %.1f s", exc, wait)
            time.sleep(wait)
            wait = min(wait * 2, 5.0)
            if not connection.in_atomic_block:
                # A connection the restart broke is closed, so that the next attempt opens a new one.
                connection.close_if_unusable_or_obsolete()


def _record(channel: Channel, batch: list[Notification], mine, outcome: Outcome) -> tuple[str, dict[str, Any]]:
    """Record the outcome of sending `batch` on every row still claimed by this attempt (mine), mark or
    heal the channel and announce that; returns the status the rows were left in and what changed."""
    done = timezone.now()
    channel_row = Channel.objects.filter(pk=channel.pk)
    gave_up = 0
    newly_broken = healed = False
    broken_error, broken_cause = outcome.error, REFUSED
    changes: dict[str, Any]
    if outcome.kind is OutcomeKind.SENT:
        status, changes = Status.SENT, dict(sent_at=done, last_error="")
        # It works: the channel's old error would only mislead whoever reads its page. Conditional,
        # as a claim: of all the deliveries that succeed at once, one announces that it works again.
        healed = bool(channel_row.filter(broken=True).update(broken=False, last_error="", last_error_at=None))
        channel_row.filter(~Q(last_error="")).update(last_error="", last_error_at=None)
    elif outcome.kind is OutcomeKind.PERMANENT:
        status, changes = Status.FAILED, dict(last_error=outcome.error)
        # Conditional, as a claim: of all the deliveries refused at once, one announces the breakage.
        newly_broken = bool(
            channel_row.filter(broken=False).update(broken=True, last_error=outcome.error, last_error_at=done)
        )
        if not newly_broken:
            channel_row.update(last_error=outcome.error, last_error_at=done)
    else:
        policy = retry_policy()
        attempts = max(n.attempts for n in batch)
        next_at = next_attempt(policy, attempts, done, outcome.retry_after)
        status, changes = Status.RETRYING, dict(last_error=outcome.error, next_attempt_at=next_at)
        channel_row.update(last_error=outcome.error, last_error_at=done)
        # Those whose retries would outlast the give-up window fail now, each saying its attempts.
        gave_up = mine.filter(created_at__lt=give_up_before(policy, next_at)).update(
            status=Status.FAILED,
            version=F("version") + 1,
            last_error=Concat(
                Value("gave up after "), Cast("attempts", CharField()), Value(f" attempts: {outcome.error}")
            ),
        )
        if gave_up:
            # Those alerts are lost as surely as refused ones. Left unmarked, the channel read "ok" on
            # every page once they had failed, and the other channels never heard it had been down.
            broken_cause = "failed every retry until its alerts were given up"
            broken_error = (
                f"alerts given up after {human_duration(policy.give_up_after_seconds)} of retries: {outcome.error}"
            )
        elif policy.broken_after_seconds and retried_for(policy, attempts) >= policy.broken_after_seconds:
            # A day of silence before anyone hears that Slack is down is too long: after an hour of
            # failed retries the channel is broken, and announced, while its alerts are still retried;
            # the next delivery that works heals it and says so.
            failing = human_duration(retried_for(policy, attempts))
            broken_cause = f"failed every delivery for {failing}"
            broken_error = (
                f"every delivery failed for {failing}, retried until its alerts are "
                f"{human_duration(policy.give_up_after_seconds)} old: {outcome.error}"
            )
        if broken_cause != REFUSED:  # either of the two above
            newly_broken = bool(
                channel_row.filter(broken=False).update(broken=True, last_error=broken_error, last_error_at=done)
            )
    if not mine.update(status=status, version=F("version") + 1, **changes) + gave_up:
        # The sweep took this claim for lost and handed it out again; that attempt's result stands.
        log.warning("notifications %s: result %s arrived after the claim was reclaimed", [n.pk for n in batch], status)
    if newly_broken:
        watch.announce_broken(channel, broken_error, done, cause=broken_cause)
    if healed:
        watch.announce_healed(channel, done)
    return status, changes


def sweep(now: datetime | None = None) -> list[int]:
    """Hand out again what is due: new rows whose queue message was lost, retries, and lost claims."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.ALERTS_CLAIM_TIMEOUT_SECONDS)
    taken_back = dict(
        status=Status.RETRYING,
        version=F("version") + 1,
        next_attempt_at=now,
        last_error="claimed by a worker that did not finish; sending again",
    )
    Notification.objects.filter(status=Status.SENDING, claimed_at__lt=stale).update(**taken_back)
    # A worker known to be gone is not waited for: its claim held the channel's lane (claimers.py).
    claims = Notification.objects.filter(status=Status.SENDING)
    for claimed_by in set(claims.values_list("claimed_by", flat=True)):
        if claimers.gone(claimed_by):
            claims.filter(claimed_by=claimed_by).update(**taken_back)
    due = list(
        ordering.not_blocked(Notification.objects.filter(status__in=DELIVERABLE, next_attempt_at__lte=now), now)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[: settings.ALERTS_SWEEP_BATCH]
    )
    for notification_id in due:
        enqueue("deliver_notification", notification_id)
    return due


def retry_now(notifications) -> int:
    """An operator's "send again": failed or waiting notifications become due at once."""
    return notifications.filter(status__in=[Status.FAILED, Status.RETRYING, Status.PENDING]).update(
        status=Status.PENDING, version=F("version") + 1, next_attempt_at=timezone.now()
    )
