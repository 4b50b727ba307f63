"""Paging incidents: a storm reaches PagerDuty and Opsgenie as one incident listing its sources,
resolved once, when the last of them recovers (completeness.alerts.paging decides; this stores).

Called by outbox.write in the transaction that writes the notifications. The paging channels' rows
are locked (in id order, after the source's row: the order every writer takes them in), so two
sources flipping at once on two workers cannot both open an incident for one storm.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F

from completeness.alerts import paging
from completeness.alerts.policy import Alert
from completeness.alerts.severity import PROBLEM_ALERTS
from sources.alerts.ordering import DELIVERABLE
from sources.models import Channel, Notification, PagingIncident, Source

# Channels that keep an incident open until they are told it is over.
PAGING_KINDS = [Channel.Kind.PAGERDUTY, Channel.Kind.OPSGENIE]
PLACED = PROBLEM_ALERTS | {Alert.RESOLVED}


def window() -> timedelta:
    return timedelta(seconds=settings.ALERTS_GROUP_SECONDS)


def _plain(row: PagingIncident) -> paging.Incident:
    return paging.Incident(
        key=row.key,
        opened_at=row.opened_at,
        last_joined_at=row.last_joined_at,
        members=tuple(row.members),
        everyone=tuple(row.everyone),
        id=row.pk,
    )


def _store(channel_id: int, incident: paging.Incident, closed_at: datetime | None = None) -> None:
    values = dict(
        last_joined_at=incident.last_joined_at,
        members=list(incident.members),
        everyone=list(incident.everyone),
        closed_at=closed_at,
    )
    if incident.id is None:
        PagingIncident.objects.create(channel_id=channel_id, key=incident.key, opened_at=incident.opened_at, **values)
    else:
        PagingIncident.objects.filter(pk=incident.id).update(**values)


def place(
    kind: str, event: dict, channel_ids: list[int], source: Source | None, now: datetime
) -> tuple[list[int], dict[int, dict]]:
    """For the paging channels among channel_ids, the event each gets (its incident's key and
    sources: event["page"]); returns the channels to write to (a source leaving an incident that others
    keep open is news to nobody's pager) and the events that differ from `event`."""
    if source is None or kind not in PLACED or not channel_ids:
        return channel_ids, {}
    with transaction.atomic():
        pagers = list(
            Channel.objects.select_for_update()
            .filter(pk__in=channel_ids, kind__in=PAGING_KINDS)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if not pagers:
            return channel_ids, {}
        open_by_channel: dict[int, list[paging.Incident]] = {pk: [] for pk in pagers}
        for row in PagingIncident.objects.filter(channel_id__in=pagers, closed_at__isnull=True):
            open_by_channel[row.channel_id].append(_plain(row))
        events, quiet = {}, set()
        for channel_id in pagers:
            if kind == Alert.RESOLVED:
                left = paging.leave(source.slug, open_by_channel[channel_id])
                if left is None:
                    continue  # no incident of ours: the source's own key closes, as before storms were grouped
                _store(channel_id, left.incident, closed_at=now if left.closes else None)
                if not left.closes:
                    quiet.add(channel_id)
                    continue
                events[channel_id] = _closing(event, left.incident, now)
                _supersede_pages(channel_id, left.incident.key)
            else:
                joined = paging.join(source.slug, now, open_by_channel[channel_id], window())
                _store(channel_id, joined.incident)
                events[channel_id] = {**event, "page": paging.facts(joined.incident)}
    return [pk for pk in channel_ids if pk not in quiet], events


def _closing(event: dict, incident: paging.Incident, now: datetime) -> dict:
    page = paging.facts(incident, closes=True)
    if len(incident.everyone) == 1 and event.get("incident"):
        # One source's incident lasted as long as its problem (counted from its flips, as for chat).
        return {**event, "page": page}
    lasted = round((now - incident.opened_at).total_seconds())
    return {**event, "page": page, "incident": {"opened_at": page["opened_at"], "duration_seconds": lasted}}


def _supersede_pages(channel_id: int, key: str) -> int:
    """Pages of an incident now over that have not gone yet never go: a trigger arriving after the
    resolve would open the incident again, for nobody."""
    return Notification.objects.filter(
        channel_id=channel_id, status__in=DELIVERABLE, kind__in=PROBLEM_ALERTS, event__page__key=key
    ).update(
        status=Notification.Status.SUPERSEDED,
        version=F("version") + 1,
        last_error="superseded: its incident was resolved before it went",
    )
