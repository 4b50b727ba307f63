"""The intentional-pause switch: one write path for the API, the pages, the admin, crawler reports and the clock."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from sources.models import PauseEvent, PauseOrigin, Run, Source

# A pause is for an outage or a season, not for ever; and an end time of year 10000 (9999 at -14:00)
# would be stored and then break every page that reads it.
MAX_PAUSE_AHEAD = timedelta(days=366)
MAX_REASON = 500


def until_problem(until: datetime, now: datetime) -> str | None:
    """Why `until` is no end time for a pause starting `now`, or None: the API and the page share it."""
    if until <= now:
        return "must lie in the future"
    if until - now > MAX_PAUSE_AHEAD:
        return f"must lie at most {MAX_PAUSE_AHEAD.days} days ahead"
    return None


PAUSE_FIELDS = ["paused", "paused_by", "paused_reason", "paused_since", "paused_until", "pause_origin"]


def pause_locked_row(
    source: Source,
    *,
    origin: str,
    actor: str,
    reason: str = "",
    until: datetime | None = None,
    run: Run | None = None,
    now: datetime | None = None,
) -> PauseEvent:
    """Mark the source paused; the caller holds the source's row lock and saves PAUSE_FIELDS."""
    now = now or timezone.now()
    if not source.paused:
        source.paused_since = now
    source.paused = True
    source.paused_by = actor
    source.paused_reason = reason
    source.paused_until = until
    source.pause_origin = origin
    return PauseEvent.objects.create(
        source=source,
        action=PauseEvent.Action.PAUSE,
        origin=origin,
        actor=actor,
        reason=reason,
        until=until,
        at=now,
        run=run,
    )


def resume_locked_row(
    source: Source,
    *,
    origin: str,
    actor: str,
    reason: str = "",
    run: Run | None = None,
    now: datetime | None = None,
) -> PauseEvent | None:
    """Mark the source resumed (None if it was not paused); the caller holds the row lock and saves."""
    if not source.paused:
        return None
    source.paused = False
    source.paused_by = ""
    source.paused_reason = ""
    source.paused_since = None
    source.paused_until = None
    source.pause_origin = ""
    return PauseEvent.objects.create(
        source=source,
        action=PauseEvent.Action.RESUME,
        origin=origin,
        actor=actor,
        reason=reason,
        at=now or timezone.now(),
        run=run,
    )


def lift_expired_locked_row(source: Source, now: datetime | None = None) -> PauseEvent | None:
    """A pause with an end time lifts itself; recorded as the clock's doing."""
    now = now or timezone.now()
    if not source.pause_expired(now):
        return None
    return resume_locked_row(source, origin=PauseOrigin.CLOCK, actor="clock", reason="pause end time reached", now=now)


def _locked(source: Source) -> Source:
    return Source.objects.select_for_update().get(pk=source.pk)


def settle_health(source: Source, cause: str, now: datetime) -> None:
    from sources.services import health

    # Paused while paused; once resumed, what its last judged run says (never ok for lack of one).
    verdict = source.last_verdict if source.paused else health.last_judged_verdict(source)
    health.change_health_and_notify(source, health.health_after_run(source, verdict), cause=cause, now=now)
    source.save(update_fields=[*PAUSE_FIELDS, "health", "health_since"])


@transaction.atomic
def pause_source(source: Source, *, origin: str, actor: str, reason: str, until: datetime | None = None) -> Source:
    """Pause by an operator or a crawler's explicit call: holds until resumed or until `until`. Takes the
    source's row lock itself, settles its health and saves; inside ingest, which already holds the lock,
    pause_locked_row is the call."""
    now = timezone.now()
    source = _locked(source)
    pause_locked_row(source, origin=origin, actor=actor, reason=reason, until=until, now=now)
    settle_health(source, f"paused by {actor}: {reason}", now)
    return source


@transaction.atomic
def resume_source(source: Source, *, origin: str, actor: str, reason: str = "") -> Source:
    """Resume, taking the row lock itself; health returns to what the last judged run says."""
    now = timezone.now()
    source = _locked(source)
    if resume_locked_row(source, origin=origin, actor=actor, reason=reason, now=now) is not None:
        settle_health(source, f"resumed by {actor}", now)
    return source


@transaction.atomic
def lift_expired_pause(source: Source, now: datetime | None = None) -> Source:
    """The clock's half of a pause with an end time (the periodic job and page loads call this)."""
    now = now or timezone.now()
    source = _locked(source)
    if lift_expired_locked_row(source, now) is not None:
        settle_health(source, "pause end time reached", now)
    return source
