"""When a maintenance window is open: pure arithmetic over its first occurrence and a week."""

from __future__ import annotations

from datetime import datetime, timedelta

WEEK = timedelta(days=7)
PLANNED_AHEAD = timedelta(days=366)


def occurrence(starts_at: datetime, ends_at: datetime, weekly: bool, now: datetime) -> tuple[datetime, datetime] | None:
    """The occurrence open at `now` as (start, end), or None. A weekly window repeats its first
    occurrence every 7 days (in UTC: a window set in local time moves by an hour with daylight saving)."""
    if now < starts_at:
        return None
    start = starts_at
    if weekly:
        start += WEEK * ((now - starts_at) // WEEK)
    end = start + (ends_at - starts_at)
    return (start, end) if now < end else None


def next_start(starts_at: datetime, ends_at: datetime, weekly: bool, now: datetime) -> datetime | None:
    """When the next occurrence after `now` starts; None for a one-off window that has begun."""
    if now < starts_at:
        return starts_at
    if not weekly:
        return None
    return starts_at + WEEK * ((now - starts_at) // WEEK + 1)


def problem(starts_at: datetime, ends_at: datetime, weekly: bool, now: datetime) -> tuple[str, str] | None:
    """Why these times make no window, as (the field to blame, why), or None."""
    if ends_at <= starts_at:
        return "ends_at", "ends_at must come after starts_at"
    if weekly and ends_at - starts_at >= WEEK:
        return "ends_at", "a weekly window lasts less than a week"
    if not weekly and ends_at <= now:
        return "ends_at", "the window is over already"
    if ends_at - starts_at > timedelta(days=366):
        return "ends_at", "a window lasts at most 366 days"
    if starts_at - now > PLANNED_AHEAD:
        # As a pause's end (sources.services.pausing): a window in the year 9999 is a typo, not a plan.
        return "starts_at", f"a window starts at most {PLANNED_AHEAD.days} days ahead"
    return None
