"""Source health and its flips. Alerts are sent on flips, never on each run."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from django.utils import timezone

from completeness.verdicts import Verdict
from sources.alerts import outbox
from sources.episodes import last_judged_run
from sources.models import Flip, Health, Run, Source

CAUSE_MAX = cast(int, Flip._meta.get_field("cause").max_length)  # a CharField: always set


def health_after_run(source: Source, verdict: str) -> str:
    if source.paused:
        return Health.PAUSED
    return Health.FAILING if verdict == Verdict.INCOMPLETE else Health.OK


def last_judged_verdict(source: Source) -> str:
    """The verdict of the source's latest run that was judged, runs made while paused skipped: what a
    source's health returns to when a pause (an operator's or a window's) ends. A pause never turns
    an incomplete run into `ok`; a source with no judged run keeps its last verdict."""
    judged = last_judged_run(source)
    return judged.verdict if judged is not None else source.last_verdict


def change_health_and_notify(
    source: Source,
    new_health: str,
    *,
    run: Run | None = None,
    cause: str = "",
    now: datetime | None = None,
    heartbeat_channels: bool = True,
    history: bool = False,
) -> Flip | None:
    """Move the source to new_health; when it changes, record the flip and write its notifications to
    the outbox (in the caller's transaction, so an alert is sent exactly when the flip commits). The
    caller saves the source. heartbeat_channels=False: the caller knows none exists (ingest counts
    them with its lock), so no heartbeat waiting for its receiver can have gone stale. history: the
    run that caused it is history (policy.is_history); the flip is recorded unannounced, and the
    channels hear where the source stands once its history stops arriving (sources.alerts.history)."""
    if source.health == new_health:
        return None
    now = now or timezone.now()
    # A cause may quote a pause reason of up to 500 characters; the column keeps its head.
    if len(cause) > CAUSE_MAX:
        cause = cause[: CAUSE_MAX - 1] + "…"
    flip = Flip.objects.create(
        source=source,
        old_health=source.health,
        new_health=new_health,
        at=now,
        run=run,
        cause=cause,
        announced=not history,
    )
    source.health = new_health
    source.health_since = now
    # In the flip's own transaction: an alert is committed with its cause or not at all.
    if history:
        outbox.drop_stale_heartbeats(source, new_health, heartbeat_channels=heartbeat_channels)
    else:
        outbox.notify_flip(flip, source, heartbeat_channels=heartbeat_channels)
    return flip
