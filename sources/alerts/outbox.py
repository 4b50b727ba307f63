"""Writing notifications: in the transaction of the flip or run that causes them, delivered after commit.

A row in the outbox is the promise of a message. It is committed with its cause or not at all, and
the periodic sweep keeps the promise even when the queue message sent after commit is lost.
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import lru_cache

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from completeness.alerts.messages import enforced_findings
from completeness.alerts.policy import Alert, alert_for_flip, alerts_on_overwrite
from completeness.verdicts import Verdict
from sources.alerts import ordering
from sources.models import Channel, Flip, Notification, Run, Source

log = logging.getLogger(__name__)

ALERT_KINDS = [Channel.Kind.EMAIL, Channel.Kind.SLACK, Channel.Kind.WEBHOOK]


def channels_for(source: Source, kinds: list[str] | None = None) -> QuerySet[Channel]:
    """The channels whose scope covers the source: one query, however many channels there are."""
    in_scope = Q(all_sources=True) | Q(sources=source) | Q(tags__sources=source)
    channels = Channel.objects.filter(in_scope)
    if kinds is not None:
        channels = channels.filter(kind__in=kinds)
    return channels.distinct()


@lru_cache(maxsize=64)
def _channel_ids_sql(ops, kinds: int) -> str:
    quote = ops.quote_name

    def table(model) -> str:
        return quote(model._meta.db_table)

    def column(model, field: str) -> str:
        return quote(model._meta.get_field(field).column)

    by_source, by_tag, source_tags = Channel.sources.through, Channel.tags.through, Source.tags.through
    return (
        f"SELECT c.id FROM {table(Channel)} c WHERE c.kind IN ({', '.join(['%s'] * kinds)}) AND (c.all_sources"
        f" OR EXISTS (SELECT 1 FROM {table(by_source)} cs"
        f" WHERE cs.{column(by_source, 'channel')} = c.id AND cs.{column(by_source, 'source')} = %s)"
        f" OR EXISTS (SELECT 1 FROM {table(by_tag)} ct JOIN {table(source_tags)} st"
        f" ON st.{column(source_tags, 'tag')} = ct.{column(by_tag, 'tag')}"
        f" WHERE ct.{column(by_tag, 'channel')} = c.id AND st.{column(source_tags, 'source')} = %s))"
        " ORDER BY c.id"
    )


def channel_ids_for(source: Source, kinds: list[str]) -> list[int]:
    """The ids of the channels of these kinds whose scope covers the source: channels_for's scope, as
    plain SQL built once, since flips and heartbeats ask it in the ingest path (the ORM compiling the
    same query cost more than running it)."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_channel_ids_sql(connection.ops, len(kinds)), [*kinds, source.pk, source.pk])
        return [channel_id for (channel_id,) in cursor.fetchall()]


def source_page_url(source: Source) -> str:
    return f"{settings.SITE_URL}/sources/{source.slug}/"


def make_event(
    kind: Alert,
    source: Source | None,
    *,
    at: datetime,
    cause: str = "",
    change: tuple[str, str] | None = None,
    run: Run | None = None,
) -> dict:
    findings = enforced_findings(run.findings) if run is not None and run.verdict == Verdict.INCOMPLETE else []
    return {
        "kind": str(kind),
        "at": at.isoformat(),
        "cause": cause,
        "source": (
            {"slug": source.slug, "name": source.display_name, "url": source_page_url(source)} if source else None
        ),
        "change": {"from": change[0], "to": change[1]} if change else None,
        "run": (
            {"run_id": run.run_id, "verdict": run.verdict, "started_at": run.started_at.isoformat()} if run else None
        ),
        "findings": findings,
    }


def notify_flip(flip: Flip, source: Source) -> list[Notification]:
    """Called by health.set_health for every flip; writes a notification per matching channel if it alerts."""
    kind = alert_for_flip(flip.old_health, flip.new_health)
    if kind is None:
        return []
    # The source's latest run speaks for its present (a late report may have caused the flip);
    # an overdue source is about the absence of runs, so it cites none.
    run = None if kind is Alert.OVERDUE else source.last_run or flip.run
    event = make_event(kind, source, at=flip.at, cause=flip.cause, change=(flip.old_health, flip.new_health), run=run)
    return write(kind, event, channel_ids_for(source, ALERT_KINDS), source=source, flip=flip, run=flip.run)


def notify_run(source: Source, run: Run, *, any_heartbeat_channel: bool = True) -> list[Notification]:
    """Called by ingest right after a run is stored, before the source's health moves.

    A complete run calls the heartbeats; a run that overwrote a full snapshot alerts even when the
    source is already failing (from any other health its own flip alerts, listing the finding).
    Ingest learns with its source lock whether any heartbeat channel exists, which spares most
    complete runs the scope query.
    """
    if run.verdict == Verdict.COMPLETE:
        if not any_heartbeat_channel:
            return []
        event = make_event(Alert.HEARTBEAT, source, at=run.received_at, run=run)
        heartbeats = channel_ids_for(source, [Channel.Kind.HEARTBEAT])
        return write(Alert.HEARTBEAT, event, heartbeats, source=source, run=run)
    if alerts_on_overwrite(source.health, run.enforced_rules):
        event = make_event(
            Alert.SNAPSHOT_OVERWRITTEN, source, at=run.received_at, cause="snapshot overwritten by a partial run", run=run
        )
        return write(Alert.SNAPSHOT_OVERWRITTEN, event, channel_ids_for(source, ALERT_KINDS), source=source, run=run)
    return []


def write(
    kind: str,
    event: dict,
    channel_ids: list[int],
    *,
    source: Source | None = None,
    flip: Flip | None = None,
    run: Run | None = None,
) -> list[Notification]:
    now = timezone.now()
    if not channel_ids:
        return []
    notifications = Notification.objects.bulk_create(
        Notification(
            channel_id=channel_id, source=source, flip=flip, run=run, kind=kind, event=event,
            created_at=now, next_attempt_at=now,
        )
        for channel_id in channel_ids
    )
    ids = [n.pk for n in notifications]
    if source is not None:
        # At once, so that pages and the sweep never treat a stale notification as due.
        ordering.supersede_stale(
            Notification.objects.filter(source=source, channel_id__in=channel_ids), newer_kinds=frozenset({kind})
        )
    # robust: a queue that is down must not turn a committed report into an error; the sweep resends.
    transaction.on_commit(lambda: enqueue_deliveries(ids), robust=True)
    return notifications


def enqueue_deliveries(ids: list[int]) -> None:
    from completeness import jobs
    from completeness.tasks import enqueue

    for notification_id in ids:
        enqueue(jobs.deliver_notification, notification_id)
