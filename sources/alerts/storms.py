"""Storms: many sources flipping at once (a proxy pool down) reach a person as one message, not thirty.

An email, Slack or Apprise channel sends at most one alert message per ALERTS_GROUP_SECONDS. The worker that
moves the channel's next_send_at forward (one conditional UPDATE, as a claim) takes the turn: it
sends at once everything due for the channel, as one message. Alerts arriving before the turn ends
are held until then (their next_attempt_at) and go out together with the sweep that follows. The
first alert of a quiet channel is therefore never delayed; what follows it within the window is
delayed by at most the window plus the sweep's interval. Webhooks and heartbeats are for machines:
one event per source, never held. PagerDuty and Opsgenie get one event per alert, never held, but a
storm shares one incident (sources.alerts.incidents).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Max, Q

from completeness.alerts import messages
from completeness.alerts.policy import GROUPED
from sources.alerts import ordering
from sources.alerts.ordering import DELIVERABLE
from sources.models import Channel, Notification

# Apprise's services are chats (Teams, Discord, Telegram, Mattermost): people read them. PagerDuty and
# Opsgenie group a storm into one incident by its key instead (sources.alerts.incidents).
HUMAN = frozenset({Channel.Kind.EMAIL, Channel.Kind.SLACK, Channel.Kind.APPRISE})
# One message names at most this many; the rest go in the next turn (a message of thousands of
# sources is read by nobody, and a claim that size would outlast its timeout on a slow receiver).
MOST_PER_MESSAGE = 500
# The changes a story tells (messages.story).
STORY_KINDS = frozenset(messages.STORY_VERBS)


def grouped_kind(channel_kind: str) -> bool:
    """Whether this kind of channel groups alerts into turns (then those go with its turns)."""
    return channel_kind in HUMAN and settings.ALERTS_GROUP_SECONDS > 0


def grouped(channel_kind: str, kind: str) -> bool:
    # A test message is what an operator is waiting for: never held, never taking a turn.
    return channel_kind in HUMAN and kind in GROUPED and settings.ALERTS_GROUP_SECONDS > 0


def window() -> timedelta:
    return timedelta(seconds=settings.ALERTS_GROUP_SECONDS)


def take_turn(channel_id: int, now: datetime) -> datetime | None:
    """None when this worker has the channel's turn to send; else when the next turn comes."""
    channel = Channel.objects.filter(pk=channel_id)
    if channel.filter(Q(next_send_at__isnull=True) | Q(next_send_at__lte=now)).update(next_send_at=now + window()):
        return None
    return channel.values_list("next_send_at", flat=True).first() or now


def hold(notification_id: int, turn: datetime) -> None:
    Notification.objects.filter(pk=notification_id, status__in=DELIVERABLE, next_attempt_at__lt=turn).update(
        next_attempt_at=turn
    )


def give_back_turn(channel_id: int, now: datetime) -> None:
    """Nothing was due after all (another worker sent it): the next alert need not wait."""
    Channel.objects.filter(pk=channel_id, next_send_at=now + window()).update(next_send_at=None)


def claim_due(channel_id: int, now: datetime, token: str) -> list[Notification]:
    """Claim, in one UPDATE, the channel's alerts that go in this turn: every new one (those held for
    this turn included, even if held a moment after it began) and every retry that is due, each when
    first in line for its source."""
    ordering.supersede_stale(Notification.objects.filter(channel_id=channel_id))
    due = ordering.not_blocked(
        Notification.objects.filter(channel_id=channel_id, kind__in=GROUPED).filter(
            Q(status=Notification.Status.PENDING) | Q(status=Notification.Status.RETRYING, next_attempt_at__lte=now)
        ),
        now,
        pending_goes=True,
    )
    ids = list(due.order_by("pk").values_list("pk", flat=True)[:MOST_PER_MESSAGE])
    Notification.objects.filter(pk__in=ids, status__in=DELIVERABLE).update(
        status=Notification.Status.SENDING,
        version=F("version") + 1,
        attempts=F("attempts") + 1,
        claimed_at=now,
        claimed_by=token,
    )
    return list(
        Notification.objects.filter(claimed_by=token, status=Notification.Status.SENDING)
        .select_related("channel")
        .order_by("pk")
    )


def with_stories(channel_id: int, batch: list[Notification]) -> list[dict]:
    """The batch's events, each that follows changes its channel never heard (superseded within a turn,
    or behind a retry) telling them too: chat hears "flapped: failed 12:01, ok 12:01", not an "ok
    again" about a failure it was never told of. Two queries, however large the batch."""
    sources = {n.source_id for n in batch if n.source_id is not None and n.kind in STORY_KINDS}
    if not sources:
        return [n.event for n in batch]
    mine = Notification.objects.filter(channel_id=channel_id, source_id__in=sources)
    last_heard = dict(
        mine.filter(status=Notification.Status.SENT)
        .values("source_id")
        .annotate(last=Max("pk"))
        .values_list("source_id", "last")
    )
    unheard: dict[int, list[tuple[int, dict]]] = {}
    missed = mine.filter(status=Notification.Status.SUPERSEDED, kind__in=STORY_KINDS, pk__lt=max(n.pk for n in batch))
    for pk, source_id, event in missed.order_by("pk").values_list("pk", "source_id", "event"):
        if pk > last_heard.get(source_id, 0):
            unheard.setdefault(source_id, []).append((pk, event))
    events = []
    for notification in batch:
        heard_of = unheard.get(notification.source_id, []) if notification.source_id is not None else []
        before = [event for pk, event in heard_of if pk < notification.pk]
        steps = messages.story(before, notification.event) if notification.kind in STORY_KINDS else []
        events.append({**notification.event, "story": steps} if steps else notification.event)
    return events
