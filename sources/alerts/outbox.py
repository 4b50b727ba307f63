"""Writing notifications: in the transaction of the flip or run that causes them, delivered after commit.

A row in the outbox is the promise of a message. It is committed with its cause or not at all, and
the periodic sweep keeps the promise even when the queue message sent after commit is lost.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import F, Max, Q, QuerySet
from django.utils import timezone

from completeness.alerts import triage
from completeness.alerts.messages import enforced_findings
from completeness.alerts.policy import (
    OVERWRITE_BY_OLDER_RUN_CAUSE,
    OVERWRITE_CAUSE,
    PROBLEMS,
    Alert,
    alert_for_flip,
    alerts_on_overwrite,
    closes_incident_on_pause,
)
from completeness.alerts.severity import PROBLEM_ALERTS, Subscription, names, route, severity_of
from completeness.text import one_line
from completeness.verdicts import Verdict
from sources import clock, episodes
from sources.alerts import incidents, ordering
from sources.models import Channel, Flip, Health, Notification, Run, Source
from sources.queue import QUEUE_UNREACHABLE, enqueue

log = logging.getLogger(__name__)

ALERT_KINDS = [
    Channel.Kind.EMAIL,
    Channel.Kind.SLACK,
    Channel.Kind.WEBHOOK,
    Channel.Kind.PAGERDUTY,
    Channel.Kind.OPSGENIE,
    Channel.Kind.APPRISE,
]
# Channels that keep an incident open until they are told it is over (a storm is one: incidents.py).
PAGING_KINDS = incidents.PAGING_KINDS


def channels_for(source: Source, kinds: list[str] | None = None) -> QuerySet[Channel]:
    """The channels whose scope covers the source (by slug, tag, owner or team), whatever the severity."""
    ids = [sub.channel_id for sub in subscriptions(source, kinds or list(Channel.Kind.values))]
    return Channel.objects.filter(pk__in=ids)


def covered(channel: Channel) -> QuerySet[Source]:
    """The sources a channel covers, as a queryset (the reverse of subscriptions, for periodic jobs)."""
    if channel.all_sources:
        return Source.objects.all()
    scope = Q(channels=channel) | Q(tags__channels=channel)
    owners, teams = names(channel.owners), names(channel.teams)
    if owners:
        scope |= Q(owner__in=owners)
    if teams:
        scope |= Q(team__in=teams)
    return Source.objects.filter(pk__in=Source.objects.filter(scope).values("pk"))


@lru_cache(maxsize=64)
def _subscriptions_sql(ops, kinds: int) -> str:
    quote = ops.quote_name

    def table(model) -> str:
        return quote(model._meta.db_table)

    def column(model, field: str) -> str:
        return quote(model._meta.get_field(field).column)

    by_source, by_tag, source_tags = Channel.sources.through, Channel.tags.through, Source.tags.through
    listed = (
        f"(c.all_sources OR EXISTS (SELECT 1 FROM {table(by_source)} cs"
        f" WHERE cs.{column(by_source, 'channel')} = c.id AND cs.{column(by_source, 'source')} = %s)"
        f" OR EXISTS (SELECT 1 FROM {table(by_tag)} ct JOIN {table(source_tags)} st"
        f" ON st.{column(source_tags, 'tag')} = ct.{column(by_tag, 'tag')}"
        f" WHERE ct.{column(by_tag, 'channel')} = c.id AND st.{column(source_tags, 'source')} = %s))"
    )
    return (
        f"SELECT c.id, c.min_severity, {listed}, c.owners, c.teams FROM {table(Channel)} c"
        f" WHERE c.kind IN ({', '.join(['%s'] * kinds)}) ORDER BY c.id"
    )


def subscriptions(source: Source, kinds: Sequence[str]) -> list[Subscription]:
    """Every channel of these kinds with its filters and whether it lists the source: plain SQL built
    once, since flips and heartbeats ask it in the ingest path (the ORM compiling the same query cost
    more than running it). Owners and teams are matched here (a handful of channels, not a table)."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_subscriptions_sql(connection.ops, len(kinds)), [source.pk, source.pk, *kinds])
        rows = cursor.fetchall()
    found = [
        Subscription(channel_id, min_severity, bool(listed), names(owners or ""), names(teams or ""))
        for channel_id, min_severity, listed, owners, teams in rows
    ]
    return [sub for sub in found if sub.covers(owner=source.owner, team=source.team)]


def channel_ids_for(
    source: Source, kinds: Sequence[str], *, kind: str | None = None, severity: str = "info"
) -> list[int]:
    """The ids of the channels of these kinds that cover the source and hear an alert of this kind and
    severity (every covering channel when no kind is given)."""
    subs = subscriptions(source, kinds)
    if kind is None:
        return [sub.channel_id for sub in subs]
    return route(kind, severity, subs, owner=source.owner, team=source.team)


def heard_of(source: Source, channel_ids: list[int]) -> list[int]:
    """Those of the channels whose last word about the source was a problem (its opening alert, a data
    loss, a reminder) not yet followed by its end: the channels a "resolved" goes to."""
    if not channel_ids:
        return []
    last = (
        Notification.objects.filter(
            source=source, channel_id__in=channel_ids, kind__in=[*PROBLEM_ALERTS, Alert.RESOLVED]
        )
        .values("channel_id")
        .annotate(last=Max("pk"))
        .values_list("last", flat=True)
    )
    problems = Notification.objects.filter(pk__in=list(last), kind__in=PROBLEM_ALERTS)
    return sorted(problems.values_list("channel_id", flat=True))


def source_page_url(source: Source) -> str:
    return f"{settings.SITE_URL}/sources/{source.slug}/"


def run_page_url(run: Run) -> str:
    return f"{settings.SITE_URL}/runs/{run.pk}/"


def iso(at: datetime | None) -> str | None:
    # Seconds are plenty for an alert; receivers parse ISO, people get messages.human_time.
    return at.isoformat(timespec="seconds") if at is not None else None


def make_event(
    kind: Alert,
    source: Source | None,
    *,
    at: datetime,
    cause: str = "",
    change: tuple[str, str] | None = None,
    run: Run | None = None,
    overdue: dict | None = None,
    problem: dict | None = None,
    channel: dict | None = None,
    incident: dict | None = None,
) -> dict:
    """The event frozen in each notification (completeness.alerts.messages documents its keys)."""
    findings = enforced_findings(run.findings) if run is not None and run.verdict == Verdict.INCOMPLETE else []
    run_facts = None
    if run is not None:
        run_facts = {
            "run_id": run.run_id,
            "verdict": run.verdict,
            "started_at": iso(run.started_at),
            "finished_at": iso(run.finished_at),
            "exit_code": run.exit_code,
            "silent": run.silent,
            # What the crawler did with its published snapshot: "783 of 900 missing" reads as lost data
            # downstream unless the message says the previous snapshot was kept.
            "snapshot": run.snapshot_action or None,
            # The run's own page, one tap from the message: its findings, counts and report.
            "url": run_page_url(run),
        }
    source_facts = None
    if source is not None:
        source_facts = {
            "slug": source.slug,
            "name": source.display_name,
            "url": source_page_url(source),
            "region": source.region,
            # What a storm's sources may share; a heartbeat is never grouped, and runs with every report.
            "tags": [] if kind == Alert.HEARTBEAT else sorted(tag.name for tag in source.tags.all()),
        }
    event = {
        # Delivery is at least once: a receiver deduplicates with this, which every retry repeats.
        "id": str(uuid.uuid4()),
        "kind": str(kind),
        "at": iso(at),
        "cause": cause or run_cause(kind, run_facts, findings),
        "source": source_facts,
        "change": {"from": change[0], "to": change[1]} if change else None,
        "run": run_facts,
        "findings": findings,
        "overdue": overdue,
        "problem": problem,
        "channel": channel,
        # resolved (and channel_healed): {"opened_at", "duration_seconds"} of the problem it ends.
        "incident": incident,
        # Set for paging channels only (sources.alerts.incidents); present always, as the docs show it,
        # so that a receiver's schema need not tell a missing key from null.
        "page": None,
    }
    event["severity"] = str(severity_of(event))
    event["oncall"] = None
    if source is not None:
        event["oncall"] = triage.oncall_facts(
            kind=kind,
            severity=severity_of(event),
            owner=source.owner,
            team=source.team,
            runbook_url=source.runbook_url,
            acknowledge_url=acknowledge_url(source),
            crawler_knew=run is not None and run.verdict == Verdict.INCOMPLETE and not run.silent,
        )
    return event


def acknowledge_url(source: Source) -> str:
    """The row of the open-problems table on /alerts/ that holds the source's acknowledge form. The
    query names the source to the server too (a browser never sends the #part): followed after the
    problem ended, the page says so instead of opening on a table without that row."""
    return f"{settings.SITE_URL}/alerts/?ack={source.slug}#ack-{source.slug}"


def run_cause(kind: str, run: dict | None, findings: list[dict]) -> str:
    """What a run-caused flip carries as its cause (flips by the clock or a person say their own)."""
    if run is None or kind not in (Alert.FAILING, Alert.RESOLVED, Alert.SNAPSHOT_OVERWRITTEN):
        return ""
    cause = f"run {run['run_id']} {run['verdict']}"
    if findings:
        cause += f": {', '.join(f['rule'] for f in findings)}"
    if run.get("silent"):
        cause += " (silent: the crawler claimed success)"
    return cause


def overdue_facts(source: Source, at: datetime) -> dict:
    """How late and against what: the interval, the grace, the deadline and the last verdict."""
    # mark_overdue's candidates carry the deadline they were found overdue by; the flip has since moved
    # health_since, so without it only the deadline missed can be told.
    due_at = getattr(source, "overdue_at", None) or clock.deadline_missed(source)
    return {
        "last_report_at": iso(source.last_report_at),
        "last_verdict": source.last_verdict,
        # The last run heard of, one tap from the message: did it end early, or stop with a breaker?
        "last_run_url": f"{settings.SITE_URL}/runs/{source.last_run_id}/" if source.last_run_id else None,
        # Whole seconds too, as the API gives these settings: total_seconds() wrote 3600.0.
        "expected_interval_seconds": round(source.expected_interval.total_seconds())
        if source.expected_interval
        else None,
        "grace_seconds": round(source.grace.total_seconds()),
        "due_at": iso(due_at),
        # Whole seconds, as every time in an event: "1032.045099" read as a precision nobody has.
        "late_seconds": round((at - due_at).total_seconds()) if due_at else None,
    }


def notify_flip(flip: Flip, source: Source, *, heartbeat_channels: bool = True) -> list[Notification]:
    """Called by health.change_health_and_notify for every flip; writes a notification per matching channel if it alerts."""
    drop_stale_heartbeats(source, flip.new_health, heartbeat_channels=heartbeat_channels)
    kind = alert_for_flip(flip.old_health, flip.new_health)
    kinds = ALERT_KINDS
    if kind is None and closes_incident_on_pause(flip.old_health, flip.new_health):
        kind, kinds = Alert.RESOLVED, PAGING_KINDS
    if kind is None:
        return []
    return tell(source, kind, flip, kinds=kinds, cause=flip.cause, change=(flip.old_health, flip.new_health))


def tell(
    source: Source,
    kind: Alert,
    flip: Flip,
    *,
    kinds: Sequence[str] = ALERT_KINDS,
    cause: str,
    change: tuple[str, str],
    unheard_only: bool = False,
) -> list[Notification]:
    """Write `kind` about the source's present, dated by `flip`, to the channels that hear it: a
    "resolved" only to those that heard of the problem, and with unheard_only a problem only to
    those that have not (sources.alerts.history: the channels hear where the source stands)."""
    # The source's latest run speaks for its present (a late report may have caused the flip), the
    # latest judged one for a failing source resumed after runs made while paused; an overdue source
    # is about the absence of runs, so it cites none.
    present = episodes.failing_run(source) if source.health == Health.FAILING else source.last_run
    run = None if kind is Alert.OVERDUE else present or flip.run
    # The run's findings decide whether a failing is a data loss: severity is known before the event.
    findings = enforced_findings(run.findings) if run is not None and run.verdict == Verdict.INCOMPLETE else []
    severity = severity_of({"kind": kind, "findings": findings})
    channel_ids = channel_ids_for(source, kinds, kind=kind, severity=severity)
    if kind is Alert.RESOLVED:
        channel_ids = heard_of(source, channel_ids)
    elif unheard_only:
        heard = set(heard_of(source, channel_ids))
        channel_ids = [channel_id for channel_id in channel_ids if channel_id not in heard]
    if not channel_ids:
        return []  # before the event, whose tags cost a query
    overdue = overdue_facts(source, flip.at) if kind is Alert.OVERDUE else None
    incident = incident_facts(source, flip) if kind is Alert.RESOLVED else None
    event = make_event(
        kind, source, at=flip.at, cause=cause, change=change, run=run, overdue=overdue, incident=incident
    )
    return write(kind, event, channel_ids, source=source, flip=flip, run=flip.run)


def incident_facts(source: Source, flip: Flip) -> dict | None:
    """When the problem this flip ends began: the first flip into a problem since the source was last
    ok or paused (failing -> overdue -> ok is one incident, as it is one dedup key)."""
    earlier = Flip.objects.filter(source=source).exclude(pk=flip.pk)
    calm = earlier.exclude(new_health__in=PROBLEMS).order_by("-pk").values_list("pk", flat=True).first()
    problems = earlier.filter(new_health__in=PROBLEMS)
    if calm is not None:
        problems = problems.filter(pk__gt=calm)
    opening = problems.order_by("pk").values_list("pk", "at").first()
    if opening is None:
        return None
    opened_at = opening[1]
    lasted = round((flip.at - opened_at).total_seconds())
    facts = {"opened_at": iso(opened_at), "duration_seconds": lasted}
    began = problem_began(opening[0], opened_at)
    if began is not None:
        facts["began_at"] = iso(began)
    return facts


def problem_began(flip_id: int, opened_at: datetime) -> datetime | None:
    """When the problem began as the pages and reminders date it: its first bad run's start, or the
    deadline an overdue source missed, read from what its opening alert told (its run's start, its
    due_at). The flip is when it was noticed: "ok again after 1 min" ended a failure whose crawl had
    run 50 min, and an overdue source silent for 5 h. None when no alert was written for it."""
    told = Notification.objects.filter(flip_id=flip_id).values_list("event", flat=True).first()
    if not told:
        return None
    if told.get("overdue"):
        began = told["overdue"].get("due_at")
    else:
        began = (told.get("run") or {}).get("started_at")
    if not began:
        return None
    return min(datetime.fromisoformat(began), opened_at)


def drop_stale_heartbeats(source: Source, health: str, *, heartbeat_channels: bool = True) -> None:
    """A heartbeat still on its way (its receiver down, waiting for a retry) says the source's runs are
    complete. Once the source is failing or overdue that is stale: sent after the flip, it kept an
    uptime monitor green for as long as its receiver had been down. Superseded, as a newer heartbeat
    supersedes it (completeness.alerts.policy.SUPERSEDED_BY); one in flight is left to its result."""
    if health not in PROBLEMS or not heartbeat_channels:
        return
    Notification.objects.filter(source=source, kind=Alert.HEARTBEAT, status__in=ordering.DELIVERABLE).update(
        status=Notification.Status.SUPERSEDED,
        version=F("version") + 1,
        last_error=f"superseded: the source went {health} before it was sent",
    )


def notify_run(
    source: Source, run: Run, *, any_heartbeat_channel: bool = True, in_order: bool = True
) -> list[Notification]:
    """Called by ingest right after a run is stored, before the source's health moves.

    A complete run calls the heartbeats; a run that overwrote a full snapshot alerts even when the
    source is already failing (from any other health its own flip alerts, listing the finding).
    Ingest learns with its source lock whether any heartbeat channel exists, which spares most
    complete runs the scope query.
    """
    if run.verdict == Verdict.COMPLETE:
        # A run older than the source's latest says nothing of it now: its beat kept an uptime monitor
        # green while the latest run was incomplete.
        if not any_heartbeat_channel or not in_order:
            return []
        event = make_event(Alert.HEARTBEAT, source, at=run.received_at, run=run)
        heartbeats = channel_ids_for(source, [Channel.Kind.HEARTBEAT])
        return write(Alert.HEARTBEAT, event, heartbeats, source=source, run=run)
    # A run older than the source's latest (in_order false) does not move its health.
    if alerts_on_overwrite(source.health, run.enforced_rules, moves_health=in_order):
        channel_ids = channel_ids_for(source, ALERT_KINDS, kind=Alert.SNAPSHOT_OVERWRITTEN, severity="data_loss")
        if not channel_ids:
            return []
        event = make_event(
            Alert.SNAPSHOT_OVERWRITTEN,
            source,
            at=run.received_at,
            cause=OVERWRITE_CAUSE if in_order else OVERWRITE_BY_OLDER_RUN_CAUSE,
            run=run,
        )
        return write(Alert.SNAPSHOT_OVERWRITTEN, event, channel_ids, source=source, run=run)
    return []


def write(
    kind: str,
    event: dict,
    channel_ids: list[int],
    *,
    source: Source | None = None,
    flip: Flip | None = None,
    run: Run | None = None,
    now: datetime | None = None,
) -> list[Notification]:
    now = now or timezone.now()
    # A storm is one incident on a paging channel: each gets its incident's key and sources.
    channel_ids, paged = incidents.place(kind, event, channel_ids, source, now)
    if not channel_ids:
        return []
    notifications = Notification.objects.bulk_create(
        Notification(
            channel_id=channel_id,
            source=source,
            flip=flip,
            run=run,
            kind=kind,
            event=paged.get(channel_id, event),
            created_at=now,
            next_attempt_at=now,
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
    try:
        for notification_id in ids:
            enqueue("deliver_notification", notification_id)
    except QUEUE_UNREACHABLE as exc:
        # One line that says what becomes of them, in place of the hundred-line traceback Django's
        # robust on_commit logged for each report that flipped while Redis was down.
        log.warning(
            "could not queue the delivery of notification(s) %s, the task queue cannot be reached (%s: %s): "
            "they wait in the outbox, and the sweep_outbox job sends them once the broker answers again "
            "(/readyz names it)",
            ", ".join(map(str, ids)),
            type(exc).__name__,
            one_line(str(exc)),
        )
