"""One page per storm: which incident of a paging channel (PagerDuty, Opsgenie) a source's problem
belongs to, and when that incident is over. Plain data in, decisions out; sources.alerts.incidents
stores the incidents and writes the notifications.

The grouping key is the burst, as for chat (sources.alerts.storms): a problem joins the channel's
open incident that was opened or last joined within the grouping window; otherwise it opens its own,
keyed `completeness/<slug>` as before storms were grouped. A source already in an open incident (a
reminder, failing -> overdue, a data loss while failing) stays in it. The incident resolves when its
last source recovers (or is paused); a source that recovers before the others leaves it silently.

Why the burst and not a shared tag and rule: thirty sources failing within a minute are one cause
whatever their tags (a proxy pool, a network, the monitor's own clock), while a shared tag is no
evidence when the failures come hours apart, and tags differ per fleet. docs/decisions.md says more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True)
class Incident:
    key: str
    opened_at: datetime
    last_joined_at: datetime
    members: tuple[str, ...]  # sources still in trouble
    everyone: tuple[str, ...]  # every source it ever held, in the order they joined
    id: int | None = None  # the stored row's, None until stored


@dataclass(frozen=True)
class Joined:
    incident: Incident
    opened: bool  # a new incident: the first page


@dataclass(frozen=True)
class Left:
    incident: Incident
    closes: bool  # the last source left: resolve it; otherwise nothing is sent


def source_key(slug: str) -> str:
    return f"completeness/{slug}"


def join(slug: str, at: datetime, open_incidents: list[Incident], window: timedelta) -> Joined:
    """The incident this source's problem lands on (open_incidents: the channel's, any order)."""
    for incident in open_incidents:
        if slug in incident.members or incident.key == source_key(slug):
            # Its own key may still be open for others: joining it keeps one incident per key.
            if slug in incident.members:
                return Joined(incident, opened=False)
            return Joined(_with(incident, slug, at), opened=False)
    recent = [i for i in open_incidents if window > timedelta(0) and i.last_joined_at >= at - window]
    if recent:
        return Joined(_with(max(recent, key=lambda i: i.last_joined_at), slug, at), opened=False)
    return Joined(Incident(source_key(slug), at, at, (slug,), (slug,)), opened=True)


def _with(incident: Incident, slug: str, at: datetime) -> Incident:
    everyone = incident.everyone if slug in incident.everyone else (*incident.everyone, slug)
    return replace(incident, members=(*incident.members, slug), everyone=everyone, last_joined_at=at)


def leave(slug: str, open_incidents: list[Incident]) -> Left | None:
    """The incident this source's recovery takes it out of, or None when it is in none (an incident
    opened before storms were grouped: its own key closes it, as before)."""
    for incident in open_incidents:
        if slug in incident.members:
            members = tuple(s for s in incident.members if s != slug)
            return Left(replace(incident, members=members), closes=not members)
    return None


def facts(incident: Incident, *, closes: bool = False) -> dict[str, Any]:
    """What the event carries as "page": the key every service event of the incident uses, and its sources."""
    sources = incident.everyone if closes else incident.members
    return {
        "key": incident.key,
        "opened_at": incident.opened_at.isoformat(timespec="seconds"),
        "sources": list(sources),
        "count": len(sources),
        "closes": closes,
    }


def summary(headline: str, page: dict[str, Any] | None, duration: str = "") -> str:
    """The service's one line: a storm's names how many sources it holds (and the first few)."""
    if not page or page.get("count", 1) <= 1:
        return headline
    sources = page.get("sources") or []
    named = ", ".join(sources[:5]) + (f" and {len(sources) - 5} more" if len(sources) > 5 else "")
    if page.get("closes"):
        after = f" after {duration}" if duration else ""
        return f"All {len(sources)} sources of this incident are ok again or paused{after}: {named}"
    return f"{headline} ({len(sources)} sources in this incident: {named})"
