"""Retention: the one write path that removes stored history (`manage.py prune`, and the daily job).

What it guarantees:

- A source's last run and its baseline run are never deleted, nor a run an operator accepted as a
  baseline: the verdicts of the next report and the record of that decision depend on them. Flips and
  pause events are never deleted (a flip's or pause's link to a deleted run becomes empty).
- Nothing the source page draws is removed within its year: the charts read a run's columns, and runs
  are deleted only after RETAIN_RUNS_DAYS (400 by default). Past RETAIN_DETAIL_DAYS a run keeps its
  columns and loses its raw body (and with it the breaker's series of ratios) and every lost URL past
  the first RETAIN_LOST_URLS; its breaker events and proxy transitions go with the run itself.
- Each batch of at most PRUNE_BATCH runs is its own transaction, so no lock is held for longer than a
  batch takes, and an interrupted pass loses nothing: the next one carries on where it stopped.
- Sent notifications go after RETAIN_SENT_NOTIFICATIONS_DAYS, and paging incidents closed that long
  ago with them; an open incident stays, whatever its age.
- Running it twice, or while reports arrive, removes nothing it should not: a run's age counts from
  its arrival (received_at), and a run being accepted as baseline while a batch deletes is either
  kept or the acceptance fails.

Runs are walked by primary key, which follows arrival, so each batch is an index range and no index
on the age is needed. The walk stops at the first run too young to prune: everything after it arrived
later. Sources have no index on last_run or baseline_run (docs/decisions.md, "Storage and speed"): the
runs they point at are looked up by primary key from a scan of the sources table, once per batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import takewhile
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Func, IntegerField, Q, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from sources.models import (
    FailureWindowEvent,
    Notification,
    PagingIncident,
    ProxyTransition,
    RetentionMark,
    Run,
    Source,
)

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models.sql.compiler import SQLCompiler

DETAIL_MARK = "run_detail"
PRUNED_KEY = "_pruned"


@dataclass(frozen=True)
class Policy:
    detail_days: int | None  # None: keep forever
    lost_urls: int
    runs_days: int | None
    sent_notifications_days: int | None
    batch: int

    @classmethod
    def from_settings(cls) -> Policy:
        return cls(
            detail_days=settings.RETAIN_DETAIL_DAYS,
            lost_urls=settings.RETAIN_LOST_URLS,
            runs_days=settings.RETAIN_RUNS_DAYS,
            sent_notifications_days=settings.RETAIN_SENT_NOTIFICATIONS_DAYS,
            batch=settings.PRUNE_BATCH,
        )


@dataclass
class Pruned:
    dry_run: bool
    runs: int = 0
    breaker_events: int = 0
    proxy_transitions: int = 0
    details: int = 0
    notifications: int = 0
    incidents: int = 0
    kept: int = 0  # old enough to go, but a last run, a baseline or an accepted one
    seconds: float = 0.0
    finished: bool = True
    lost_urls_kept: int = 0
    # What arrived before these went (None: that kind is kept forever).
    cutoffs: dict[str, datetime | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "cutoffs"}

    def lines(self) -> list[str]:
        verb = "would remove" if self.dry_run else "removed"

        def since(kind: str, event: str = "arrived") -> str:
            cutoff = self.cutoffs.get(kind)
            return f"{event} before {cutoff:%Y-%m-%d %H:%M} UTC" if cutoff else "kept forever (off)"

        return [
            f"runs: {verb} {self.runs} ({since('runs')}), with {self.breaker_events} breaker events and "
            f"{self.proxy_transitions} proxy transitions; kept {self.kept} last, baseline or accepted runs",
            f"run details: {verb} the raw body, breaker series and lost URLs past the first "
            f"{self.lost_urls_kept} of {self.details} runs ({since('details')})",
            f"sent notifications: {verb} {self.notifications} ({since('notifications')})",
            f"closed paging incidents: {verb} {self.incidents} ({since('notifications', 'closed')})",
            *([] if self.finished else ["out of time: the next pass carries on from here"]),
        ]


def prune(
    *,
    now: datetime | None = None,
    policy: Policy | None = None,
    dry_run: bool = False,
    time_budget: float | None = None,
) -> Pruned:
    """Remove what the policy (settings by default) no longer keeps; with dry_run, count it and change nothing.

    With a time budget (seconds), no batch starts after it ran out: the result says `finished=False`
    and the next pass carries on where this one stopped.
    """
    started = timezone.now()
    deadline = time.monotonic() + time_budget if time_budget is not None else None
    now = now or started
    policy = policy or Policy.from_settings()
    result = Pruned(dry_run=dry_run, lost_urls_kept=policy.lost_urls)

    def cutoff(days: int | None) -> datetime | None:
        return now - timedelta(days=days) if days is not None else None

    result.cutoffs = {
        "runs": cutoff(policy.runs_days),
        "details": cutoff(policy.detail_days),
        "notifications": cutoff(policy.sent_notifications_days),
    }
    try:
        # Runs first: their details need no trimming once they are gone.
        if result.cutoffs["runs"]:
            _delete_runs(result.cutoffs["runs"], policy.batch, result, dry_run, deadline)
        if result.cutoffs["details"]:
            _trim_details(result.cutoffs["details"], result.cutoffs["runs"], policy, now, result, dry_run, deadline)
        if result.cutoffs["notifications"]:
            _delete_sent_notifications(result.cutoffs["notifications"], policy.batch, result, dry_run, deadline)
            _delete_closed_incidents(result.cutoffs["notifications"], result, dry_run)
    except _OutOfTime:
        result.finished = False
    result.seconds = (timezone.now() - started).total_seconds()
    return result


class _OutOfTime(Exception):
    pass


def _on_time(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _OutOfTime


def kept_among(ids: list[int]) -> set[int]:
    """The runs among `ids` that are never deleted: some source's last, last judged or baseline run, or
    accepted ones."""
    # One scan of the sources table (no index on these columns, on purpose) for the whole batch.
    pointed = Source.objects.filter(
        Q(last_run__in=ids) | Q(last_judged_run__in=ids) | Q(baseline_run__in=ids)
    ).values_list("last_run", "last_judged_run", "baseline_run")
    kept = {run for row in pointed for run in row if run is not None}
    kept.update(Run.objects.filter(pk__in=ids, accepted_as_baseline=True).values_list("pk", flat=True))
    return kept & set(ids)


def _window(after: int, size: int) -> list[tuple[int, datetime]]:
    return list(Run.objects.filter(pk__gt=after).order_by("pk").values_list("pk", "received_at")[:size])


def _delete_runs(cutoff: datetime, batch: int, result: Pruned, dry_run: bool, deadline: float | None) -> None:
    after = 0
    while True:
        _on_time(deadline)
        with transaction.atomic():
            window = _window(after, batch)
            if not window:
                return
            after = window[-1][0]
            old = [pk for pk, received_at in window if received_at < cutoff]
            kept = kept_among(old)
            result.kept += len(kept)
            doomed = [pk for pk in old if pk not in kept]
            if doomed:
                if dry_run:
                    result.runs += len(doomed)
                    result.breaker_events += FailureWindowEvent.objects.filter(run__in=doomed).count()
                    result.proxy_transitions += ProxyTransition.objects.filter(run__in=doomed).count()
                else:
                    _delete(doomed, result)
        if len(old) < len(window):
            return  # this window reached the runs that arrived after the cutoff


def _delete(ids: list[int], result: Pruned) -> None:
    # Locked and read again: an acceptance committed since kept_among ran keeps its run (the
    # acceptance itself locks the source, not the run, and fails if the run is gone).
    locked = list(
        Run.objects.select_for_update().filter(pk__in=ids, accepted_as_baseline=False).values_list("pk", flat=True)
    )
    # only("pk"): the collector would otherwise read every column of every run, raw bodies included.
    _, by_model = Run.objects.filter(pk__in=locked).only("pk").delete()
    result.runs += by_model.get(Run._meta.label, 0)
    result.breaker_events += by_model.get(FailureWindowEvent._meta.label, 0)
    result.proxy_transitions += by_model.get(ProxyTransition._meta.label, 0)


class JSONArrayLength(Func):
    output_field = IntegerField()

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, tuple[str | int, ...]]:
        return super().as_sql(compiler, connection, function="JSON_ARRAY_LENGTH", **extra)

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, tuple[str | int, ...]]:
        return super().as_sql(compiler, connection, function="JSONB_ARRAY_LENGTH", **extra)


def _trim_details(
    cutoff: datetime,
    runs_cutoff: datetime | None,
    policy: Policy,
    now: datetime,
    result: Pruned,
    dry_run: bool,
    deadline: float | None,
) -> None:
    after = RetentionMark.objects.filter(name=DETAIL_MARK).values_list("last_id", flat=True).first() or 0
    pruned_raw = {PRUNED_KEY: f"raw report removed {now:%Y-%m-%d} after {policy.detail_days} days (RETAIN_DETAIL_DAYS)"}
    while True:
        _on_time(deadline)
        with transaction.atomic():
            window = _window(after, policy.batch)
            # Up to the first run too young: the mark must not pass a run that still waits its turn.
            old = list(takewhile(lambda row: row[1] < cutoff, window))
            ids = [pk for pk, _ in old]
            if ids and dry_run:
                # What the run walk would delete first is not counted twice.
                kept = kept_among(ids) if runs_cutoff else set()
                result.details += sum(1 for pk, at in old if runs_cutoff is None or at >= runs_cutoff or pk in kept)
            elif ids:
                Run.objects.filter(pk__in=ids).update(raw=pruned_raw)
                long = (
                    Run.objects.filter(pk__in=ids)
                    .annotate(n=JSONArrayLength("lost_urls"))
                    .filter(n__gt=policy.lost_urls)
                    .only("pk", "lost_urls")
                )
                trimmed = []
                for run in long:
                    run.lost_urls = run.lost_urls[: policy.lost_urls]
                    trimmed.append(run)
                Run.objects.bulk_update(trimmed, ["lost_urls"])
                _advance_mark(ids[-1])
                result.details += len(ids)
            if ids:
                after = ids[-1]
        if len(old) < len(window) or not window:
            return


def _advance_mark(last_id: int) -> None:
    # Greatest: a pass running beside another never moves the mark back.
    moved = RetentionMark.objects.filter(name=DETAIL_MARK).update(
        last_id=Greatest(F("last_id"), Value(last_id)), updated_at=timezone.now()
    )
    if not moved:
        RetentionMark.objects.get_or_create(name=DETAIL_MARK, defaults={"last_id": last_id})


def _delete_sent_notifications(
    cutoff: datetime, batch: int, result: Pruned, dry_run: bool, deadline: float | None
) -> None:
    sent = Notification.objects.filter(status=Notification.Status.SENT, created_at__lt=cutoff)
    if dry_run:
        result.notifications = sent.count()
        return
    while True:
        _on_time(deadline)
        with transaction.atomic():
            # created_at leads an index (notification_recent): each batch is a range of it.
            ids = list(sent.order_by("created_at", "id").values_list("pk", flat=True)[:batch])
            if not ids:
                return
            Notification.objects.filter(pk__in=ids).delete()
            result.notifications += len(ids)


def _delete_closed_incidents(cutoff: datetime, result: Pruned, dry_run: bool) -> None:
    """Paging incidents closed before the cut-off: the history of pages, kept as long as the
    notifications that carried them. An open one is never removed: the next flip of its sources
    reads it. A few a week at most, so one statement."""
    closed = PagingIncident.objects.filter(closed_at__lt=cutoff)
    if dry_run:
        result.incidents = closed.count()
        return
    result.incidents, _ = closed.delete()
