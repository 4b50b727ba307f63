"""Reminders: a source that stays failing or overdue is said again, every Channel.remind_every, to
the channels that ask for it, until someone acknowledges it (sources.alerts.acks) or it changes.

The clock counts from the channel's last word about the source (its alert, or the last reminder),
so a reminder comes remind_every after it and never twice in one interval. Run every minute by the
check_overdue job; a reminder is written under the source's row lock, like a flip, so it keeps its
place in the source's order and a recovery written after it supersedes it if still unsent.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from completeness.alerts.policy import PROBLEMS, Alert
from completeness.alerts.severity import hears
from completeness.durations import human_duration
from sources import clock, episodes
from sources.alerts import acks, outbox
from sources.models import Channel, Notification, Source


def open_problems(channel: Channel):
    """The sources this channel covers that are failing or overdue, not paused and not acknowledged."""
    sources = Source.objects.filter(health__in=PROBLEMS, paused=False)
    if not channel.all_sources:
        sources = sources.filter(pk__in=outbox.covered(channel).values("pk"))
    return sources.filter(~acks.acknowledged())


def due_for(channel: Channel, now: datetime):
    """The sources this channel should be reminded of now: one query per channel."""
    # Only channels with an interval are asked (remind).
    assert channel.remind_every is not None, f"channel {channel.pk} sends no reminders"
    quiet_since = now - channel.remind_every
    said_lately = Notification.objects.filter(channel=channel, source=OuterRef("pk"), created_at__gt=quiet_since)
    return open_problems(channel).filter(health_since__lte=quiet_since).filter(~Exists(said_lately)).distinct()


def send_reminders(now: datetime | None = None) -> list[str]:
    """Write the reminders due now; returns "slug -> channel id" for each."""
    now = now or timezone.now()
    written = []
    for channel in Channel.objects.filter(remind_every__isnull=False, kind__in=outbox.ALERT_KINDS):
        for source_id in due_for(channel, now).values_list("pk", flat=True):
            with transaction.atomic():
                source = Source.objects.select_for_update().filter(pk=source_id).first()
                # Asked again under the lock: a report, an acknowledgement or a pause may have come since.
                if source is None or not due_for(channel, now).filter(pk=source_id).exists():
                    continue
                if remind(source, channel, now) is not None:
                    written.append(f"{source.slug} -> {channel.pk}")
    return written


def brief(channel: Channel, now: datetime | None = None) -> list[str]:
    """A channel added while sources it covers are failing or overdue hears of each at once, as a
    reminder, instead of nothing until their next change of health (or its first reminder interval,
    or never without one). As a reminder, a recovery then follows it, and a storm of them reaches a
    person as one message (sources.alerts.storms). Acknowledged problems are left out, as reminders
    leave them out. Returns the slugs it was told of."""
    if channel.kind not in outbox.ALERT_KINDS:
        return []
    now = now or timezone.now()
    told = []
    for source_id in open_problems(channel).values_list("pk", flat=True).distinct():
        with transaction.atomic():
            # Under the source's lock, like a flip, so that a recovery written meanwhile comes after it;
            # asked again there, as send_reminders asks: a report or an acknowledgement may have come.
            source = Source.objects.select_for_update().filter(pk=source_id).first()
            if source is None or not open_problems(channel).filter(pk=source_id).exists():
                continue
            if remind(source, channel, now, new_channel=True) is not None:
                told.append(source.slug)
    return told


def remind(source: Source, channel: Channel, now: datetime, *, new_channel: bool = False) -> Notification | None:
    """The reminder, or None when it is less severe than the channel hears (an overdue source on a
    channel for failures and data loss only)."""
    # A failure began when its first bad run started, as the pages date it: after a backfill the
    # source's health changed when the history arrived, days after that run.
    began = source.health_since
    if source.health == "failing":
        started, _ = episodes.failure_started(source)
        began = min(began, started or began)
    elif source.health == "overdue":
        # From the deadline it missed, as the pages and its alert date it: the clock job flips it a
        # minute later, or days later when the job was not running ("overdue for 29 s" of a source
        # silent for three days).
        missed = clock.deadline_missed_exactly(source)
        began = min(began, missed or began)
    lasted = round((now - began).total_seconds())  # whole seconds, as every time in an event
    problem = {"health": source.health, "since": outbox.iso(began), "for_seconds": lasted}
    # A failing source's latest judged run says what is wrong; an overdue one's absence of runs cites none.
    run = episodes.failing_run(source) if source.health == "failing" else None
    event = outbox.make_event(
        Alert.REMINDER,
        source,
        at=now,
        cause=(
            f"{source.health} for {human_duration(lasted)} when this channel was added, not acknowledged"
            if new_channel
            else f"still {source.health} after {human_duration(lasted)}, not acknowledged"
        ),
        run=run,
        problem=problem,
    )
    if not hears(channel.min_severity, event["severity"]):
        return None
    return outbox.write(Alert.REMINDER, event, [channel.pk], source=source, run=run, now=now)[0]
