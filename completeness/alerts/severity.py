"""How urgent an alert is, and which channels hear it: plain data in, decisions out.

A data loss (a partial run replaced the full snapshot) and a 1% shortfall used to reach the same
channels with the same urgency. Each alert now has a severity, and each channel a minimum severity
and an owner/team filter beside its sources and tags (sources.alerts.outbox asks these functions).

Alerts that end something (resolved, a channel healed) have no urgency of their own: they go to the
channels that heard what they end, whatever those channels' minimum, so no incident is left open and
no channel hears "ok again" for a failure it was never told of.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from completeness.alerts import messages
from completeness.alerts.policy import Alert


class Severity(StrEnum):
    """Most urgent first; a channel hears its minimum and everything above it."""

    DATA_LOSS = "data_loss"  # a partial run replaced the published snapshot: consumers already took it
    FAILING = "failing"  # runs are incomplete
    OVERDUE = "overdue"  # no report in time: the crawler may be fine and its scheduler not
    INFO = "info"  # recovered, a test, an alert channel broken or working again


# Lowest first: the index is the rank.
ORDER = [Severity.INFO, Severity.OVERDUE, Severity.FAILING, Severity.DATA_LOSS]
LABELS = {
    Severity.DATA_LOSS: "data loss only",
    Severity.FAILING: "failing and data loss",
    Severity.OVERDUE: "overdue, failing and data loss",
    Severity.INFO: "everything (also channel breakages)",
}
# These end what an earlier alert began: routed to whoever heard the beginning (see the module's doc).
# The choices of a channel's minimum severity, least first (the model's field and its form).
CHOICES: list[tuple[str, str]] = [(level.value, LABELS[level]) for level in ORDER]

FOLLOWS = frozenset({Alert.RESOLVED, Alert.CHANNEL_HEALED})
# Always delivered to the channel it was asked for.
ALWAYS = frozenset({Alert.TEST})
# Alerts that open or repeat a problem: what "heard the beginning" looks for.
PROBLEM_ALERTS = frozenset({Alert.FAILING, Alert.OVERDUE, Alert.SNAPSHOT_OVERWRITTEN, Alert.REMINDER})


def rank(severity: str) -> int:
    return ORDER.index(Severity(severity))


def severity_of(event: dict[str, Any]) -> Severity:
    """Data loss whatever the kind that carries it (a failing flip whose run overwrote the snapshot, or
    the snapshot_overwritten alert itself), then failing, then overdue; a reminder is as urgent as the
    problem it repeats; anything else is information."""
    kind = event["kind"]
    if kind in PROBLEM_ALERTS and messages.data_loss(event):
        return Severity.DATA_LOSS
    if kind == Alert.REMINDER:
        kind = (event.get("problem") or {}).get("health", Alert.FAILING)
    if kind == Alert.FAILING:
        return Severity.FAILING
    if kind == Alert.OVERDUE:
        return Severity.OVERDUE
    return Severity.INFO


def names(text: str) -> frozenset[str]:
    """A channel's owner or team filter as stored: names separated by commas."""
    return frozenset(name.strip() for name in text.split(",") if name.strip())


def normalise_names(text: str) -> str:
    """What is stored: the names trimmed, deduplicated and sorted, so that the form shows what counts."""
    return ", ".join(sorted(names(text)))


@dataclass(frozen=True)
class Subscription:
    """A channel's filters. listed: it covers all sources, or the source by slug or by a tag."""

    channel_id: int
    min_severity: str
    listed: bool
    owners: frozenset[str] = frozenset()
    teams: frozenset[str] = frozenset()

    def covers(self, *, owner: str, team: str) -> bool:
        """The scope is a union, as for sources and tags: listed, or owned by a listed owner or team."""
        return self.listed or (bool(owner) and owner in self.owners) or (bool(team) and team in self.teams)

    def hears(self, severity: str) -> bool:
        return hears(self.min_severity or Severity.INFO, severity)


def hears(min_severity: str, severity: str) -> bool:
    """Whether a channel of this minimum severity hears an alert of `severity`: its minimum and above."""
    return rank(severity) >= rank(min_severity)


def heard_by(severity: str) -> list[str]:
    """The minimum severities of the channels that hear an alert of `severity` (for a query over them)."""
    return [level.value for level in ORDER if hears(level, severity)]


def route(kind: str, severity: str, subscriptions: Iterable[Subscription], *, owner: str, team: str) -> list[int]:
    """The channels (ids) an alert of this kind and severity about a source of this owner and team goes
    to, before FOLLOWS narrows the enders to those that heard the beginning (sources.alerts.outbox)."""
    found = []
    for sub in subscriptions:
        if not sub.covers(owner=owner, team=team):
            continue
        if kind in FOLLOWS or kind in ALWAYS or sub.hears(severity):
            found.append(sub.channel_id)
    return found
