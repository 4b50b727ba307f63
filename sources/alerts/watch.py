"""Watching the alert path: a broken channel is said on the channels that still work, what failed on
it is offered for sending again once it works, and the periodic jobs' last runs and the oldest
undelivered notification are there to read (pages, /readyz, /metrics).

A channel that silently stopped delivering is worse than none: everyone believes they would hear.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Min, Q
from django.utils import timezone

from completeness.alerts.policy import Alert
from completeness.alerts.severity import Severity
from sources.alerts import outbox
from sources.alerts.ordering import UNDELIVERED
from sources.models import Channel, JobRun, Notification
from sources.queue import enqueue

# What failed longer ago than this is history, not news: it is not offered for sending again.
RESEND_WITHIN = timedelta(hours=24)
# A periodic job is late once it has not started for this many of its intervals (a minute's job
# that ran 2 min 59 s ago is on time; one beat missed is no alarm, three are).
LATE_AFTER_INTERVALS = 3


def announce_broken(
    channel: Channel, error: str, at: datetime, cause: str = "refused an alert for good"
) -> list[Notification]:
    """Called once per breakage (by the delivery that marked the channel broken): a channel_broken
    notification for every other alert channel that is not broken itself."""
    others = list(
        # A breakage is information: channels that asked for more severe alerts only are not told.
        Channel.objects.filter(broken=False, kind__in=outbox.ALERT_KINDS, min_severity=Severity.INFO)
        .exclude(pk=channel.pk)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    facts = _facts(channel, error)
    event = outbox.make_event(Alert.CHANNEL_BROKEN, None, at=at, cause=f"channel #{channel.pk} {cause}", channel=facts)
    return outbox.write(Alert.CHANNEL_BROKEN, event, others, now=at)


def announce_healed(channel: Channel, at: datetime) -> list[Notification]:
    """Called once per healing (by the delivery that cleared the channel's broken flag): the channels
    that still work hear that it works again, which also closes the incident its breakage opened on
    PagerDuty or Opsgenie (the same key, completeness/channel/<id>), with how long it was broken."""
    others = list(
        # A breakage is information: channels that asked for more severe alerts only are not told.
        Channel.objects.filter(broken=False, kind__in=outbox.ALERT_KINDS, min_severity=Severity.INFO)
        .exclude(pk=channel.pk)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    facts = _facts(channel, channel.last_error)
    broken_at = (
        Notification.objects.filter(kind=Alert.CHANNEL_BROKEN, event__channel__id=channel.pk)
        .order_by("-pk")
        .values_list("created_at", flat=True)
        .first()
    )
    incident = None
    if broken_at is not None:
        incident = {"opened_at": outbox.iso(broken_at), "duration_seconds": round((at - broken_at).total_seconds())}
    event = outbox.make_event(
        Alert.CHANNEL_HEALED,
        None,
        at=at,
        cause=f"channel #{channel.pk} delivered an alert again",
        channel=facts,
        incident=incident,
    )
    return outbox.write(Alert.CHANNEL_HEALED, event, others, now=at)


def _facts(channel: Channel, error: str) -> dict:
    return {
        "id": channel.pk,
        "name": str(channel),
        "kind": channel.kind,
        "target": channel.masked_target,
        "error": error[:500],
        "url": f"{settings.SITE_URL}/alerts/channels/{channel.pk}/",
    }


def failed_recently(now: datetime):
    return Q(notifications__status=Notification.Status.FAILED, notifications__created_at__gte=now - RESEND_WITHIN)


def channels_with_resendable(now: datetime | None = None):
    """Channels annotated with `resendable`: how many of their notifications failed in the last 24 h."""
    now = now or timezone.now()
    return Channel.objects.annotate(resendable=Count("notifications", filter=failed_recently(now)))


def resend_failed(channel: Channel, now: datetime | None = None) -> int:
    """An operator's "send again" for a channel that works again: its notifications that failed in
    the last 24 h become due now. Per source only the latest word goes (sources.alerts.ordering
    supersedes the stale ones when they come up), so a failure long resolved is not announced again."""
    now = now or timezone.now()
    failed = channel.notifications.filter(status=Notification.Status.FAILED, created_at__gte=now - RESEND_WITHIN)
    ids = list(failed.order_by("pk").values_list("pk", flat=True))
    count = Notification.objects.filter(pk__in=ids, status=Notification.Status.FAILED).update(
        status=Notification.Status.PENDING, next_attempt_at=now, last_error="sent again by an operator"
    )
    for notification_id in ids:
        enqueue("deliver_notification", notification_id)
    return count


def broken_channels():
    return Channel.objects.filter(broken=True).order_by("pk")


@dataclass(frozen=True)
class JobState:
    name: str
    every_seconds: float
    started_at: datetime | None
    finished_at: datetime | None
    error: str
    seconds_since: float | None  # None: never ran

    @property
    def late(self) -> bool:
        return self.seconds_since is None or self.seconds_since > LATE_AFTER_INTERVALS * self.every_seconds

    @property
    def due(self) -> bool:
        """Never ran, or last started an interval or more ago (Celery's beat sends these when it starts)."""
        return self.seconds_since is None or self.seconds_since >= self.every_seconds


@dataclass(frozen=True)
class AlertPath:
    oldest_undelivered_at: datetime | None
    oldest_undelivered_seconds: float | None
    jobs: list[JobState]


def record_run(name: str, started_at: datetime, error: str = "") -> None:
    """One row per job, written when a run ends (raised or not), so a scrape reads one small table."""
    JobRun.objects.update_or_create(
        name=name, defaults=dict(started_at=started_at, finished_at=timezone.now(), error=error[:2000])
    )


def jobs(now: datetime) -> list[JobState]:
    runs = {run.name: run for run in JobRun.objects.all()}
    states = []
    for name, setting in settings.PERIODIC_JOBS.items():
        run = runs.get(name)
        states.append(
            JobState(
                name=name,
                every_seconds=float(getattr(settings, setting)),
                started_at=run.started_at if run else None,
                finished_at=run.finished_at if run else None,
                error=run.error if run else "",
                seconds_since=(now - run.started_at).total_seconds() if run else None,
            )
        )
    return states


def alert_path(now: datetime | None = None) -> AlertPath:
    """Two small queries: the oldest undelivered notification and the job runs (pages have the broken
    channels from the banner's context processor already)."""
    now = now or timezone.now()
    oldest = Notification.objects.filter(status__in=UNDELIVERED).aggregate(at=Min("created_at"))["at"]
    return AlertPath(
        oldest_undelivered_at=oldest,
        oldest_undelivered_seconds=(now - oldest).total_seconds() if oldest else None,
        jobs=jobs(now),
    )


def as_json(path: AlertPath) -> dict:
    return {
        "oldest_undelivered_seconds": path.oldest_undelivered_seconds,
        "broken_channels": broken_channels().count(),
        "jobs": {
            job.name: {
                "last_started_at": outbox.iso(job.started_at),
                "seconds_since": job.seconds_since,
                "every_seconds": job.every_seconds,
                "late": job.late,
                "last_error": job.error or None,
            }
            for job in path.jobs
        },
    }
