"""The weekly digest per channel that wants one (email and Slack): what each covered source's week was.

The `send_digests` job (hourly, both engines: settings.PERIODIC_JOBS) writes one `digest` notification
per channel whose last digest is a week old (or that never had one), claimed by one conditional UPDATE
of Channel.digest_sent_at so that two schedulers write it once. It is delivered through the outbox like
any alert (retried, shown on /alerts/). What it says is completeness.alerts.digest's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from completeness.alerts import digest
from completeness.alerts.policy import PROBLEMS, Alert
from completeness.verdicts import Verdict
from sources.alerts import outbox
from sources.models import Channel, Flip, Run, Source
from sources.queries import records_short

WEEK = timedelta(days=7)
DIGEST_KINDS = [Channel.Kind.EMAIL, Channel.Kind.SLACK]


def week_rows(sources: QuerySet[Source], since: datetime, until: datetime) -> list[dict]:
    """A row of numbers per source for [since, until): judged runs, complete ones, records short over
    the incomplete ones (against each run's declared total less removed, else its expected, else its snapshot), episodes of trouble
    (failing or overdue) and the longest of them, clipped to the week. Three queries."""
    found = list(
        sources.order_by("slug").values(
            "pk", "slug", "health", "paused", "paused_since", "paused_until", "paused_reason"
        )
    )
    ids = [s["pk"] for s in found]
    runs = {
        r["source_id"]: r
        for r in Run.objects.filter(source_id__in=ids, started_at__gte=since, started_at__lt=until)
        .exclude(verdict=Verdict.PAUSED)
        .values("source_id")
        .annotate(
            runs=Count("pk"),
            complete=Count("pk", filter=Q(verdict=Verdict.COMPLETE)),
            short=Coalesce(Sum(records_short(), filter=Q(verdict=Verdict.INCOMPLETE)), 0),
        )
    }
    flips: dict[int, list[tuple[datetime, str, str]]] = {}
    # A change of health caused by a run is dated by that run's start, as the pages date a failure: a
    # backfill posted this week changed health this week for runs of last month, which read as this
    # week's episodes of a few seconds each. A run starts before its report arrives, so `at` bounds it.
    for source_id, at, when, old, new in (
        Flip.objects.filter(source_id__in=ids, at__gte=since)
        .annotate(when=Coalesce("run__started_at", "at"))
        .filter(when__gte=since, when__lt=until)
        .order_by("source_id", "at", "pk")
        .values_list("source_id", "at", "when", "old_health", "new_health")
    ):
        mine = flips.setdefault(source_id, [])
        if mine and when < mine[-1][0]:
            # Its run started before the change it undid (a crawl that ran past its deadline ended the
            # overdue it caused): dated by the run, the recovery came first and the source read as
            # overdue the whole week. It is dated by its arrival instead.
            when = at
        mine.append((when, old, new))
    rows = []
    for source in found:
        mine = flips.get(source["pk"], [])
        started_in_trouble = (mine[0][1] if mine else source["health"]) in PROBLEMS
        episodes, longest = episodes_of(mine, started_in_trouble, since, until)
        counted: Mapping[str, Any] = runs.get(source["pk"]) or {}
        rows.append(
            {
                "slug": source["slug"],
                "url": outbox.source_page_url(Source(slug=source["slug"])),
                "runs": counted.get("runs", 0),
                "complete": counted.get("complete", 0),
                "records_short": counted.get("short", 0),
                "episodes": episodes,
                "longest_seconds": longest,
                "paused": pause_of(source),
            }
        )
    return rows


def pause_of(source: Mapping[str, Any]) -> dict[str, Any] | None:
    """A source paused now: since when, until when (None: until resumed) and why."""
    if not source["paused"]:
        return None
    return {
        "since": outbox.iso(source["paused_since"]),
        "until": outbox.iso(source["paused_until"]),
        "reason": source["paused_reason"],
    }


def episodes_of(
    flips: list[tuple[datetime, str, str]], in_trouble: bool, since: datetime, until: datetime
) -> tuple[int, float]:
    """How many episodes of trouble overlapped the week, and the longest part of one inside it."""
    began = since if in_trouble else None
    episodes, longest = (1 if in_trouble else 0), 0.0
    for at, _old, new in flips:
        if new in PROBLEMS and began is None:
            began, episodes = at, episodes + 1
        elif new not in PROBLEMS and began is not None:
            longest, began = max(longest, (at - began).total_seconds()), None
    if began is not None:
        longest = max(longest, (until - began).total_seconds())
    return episodes, longest


def due(now: datetime) -> QuerySet[Channel]:
    return Channel.objects.filter(weekly_digest=True, kind__in=DIGEST_KINDS).filter(
        Q(digest_sent_at__isnull=True) | Q(digest_sent_at__lte=now - WEEK)
    )


def send_digests(now: datetime | None = None) -> list[int]:
    """Write the digests due now; returns the ids of the channels that got one."""
    now = now or timezone.now()
    written = []
    for channel in due(now).order_by("pk"):
        if not outbox.covered(channel).exists():
            # A week of nothing ("0 sources, 0 with problems") is no news: asked again with the next
            # check, it goes once the channel covers a source.
            continue
        with transaction.atomic():
            # Claimed as the grouping turn is: of two schedulers running this at once, one writes it.
            claimed = Channel.objects.filter(pk=channel.pk, digest_sent_at=channel.digest_sent_at)
            if channel.digest_sent_at is None:
                claimed = Channel.objects.filter(pk=channel.pk, digest_sent_at__isnull=True)
            if not claimed.update(digest_sent_at=now):
                continue
            since = now - WEEK
            rows = digest.worst_first(week_rows(outbox.covered(channel), since, now))
            facts = {"since": outbox.iso(since), "until": outbox.iso(now), "sources": rows}
            event = outbox.make_event(Alert.DIGEST, None, at=now, cause="weekly digest")
            event["digest"] = facts
            outbox.write(Alert.DIGEST, event, [channel.pk], now=now)
            written.append(channel.pk)
    return written
