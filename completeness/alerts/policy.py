"""Which changes of a source's health alert (docs/alerts.md has the table and the reasons)."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum


class Alert(StrEnum):
    FAILING = "failing"
    OVERDUE = "overdue"
    RESOLVED = "resolved"
    SNAPSHOT_OVERWRITTEN = "snapshot_overwritten"
    HEARTBEAT = "heartbeat"
    TEST = "test"
    # A source still failing or overdue, nobody having acknowledged it: said again every
    # Channel.remind_every (sources.alerts.reminders).
    REMINDER = "reminder"
    # A channel refused an alert for good (a webhook answering 404): said once per breakage on the
    # channels that still work (sources.alerts.watch), since nobody would otherwise hear of it.
    CHANNEL_BROKEN = "channel_broken"
    # That channel delivered again: said once on the channels that heard it was broken, and closing
    # the incident its breakage opened on PagerDuty or Opsgenie.
    CHANNEL_HEALED = "channel_healed"
    # Once a week, to the email and Slack channels that want it: each covered source's week in a line.
    DIGEST = "digest"


OK = "ok"
# Healths that are a problem someone must hear about; paused is a decision, not a problem.
PROBLEMS = frozenset({"failing", "overdue"})


def alert_for_flip(old_health: str, new_health: str) -> Alert | None:
    """One alert per change: into a problem (or from one problem into another), and back to ok.

    Going into or out of a pause never alerts, except that a source resumed into a problem does:
    its problem was silenced while paused, so nobody has heard of it.
    """
    if new_health == old_health:
        return None
    if new_health in PROBLEMS:
        return Alert(new_health)
    if new_health == OK and old_health in PROBLEMS:
        return Alert.RESOLVED
    return None


# How long a source's history must have stopped arriving before its channels hear where it stands:
# a backfill posts a source's runs back to back, seconds apart, even at the API's rate limit.
HISTORY_SETTLES = timedelta(minutes=2)


def is_history(finished_at: datetime, received_at: datetime, after: timedelta | None) -> bool:
    """Whether a report is history: received more than `after` after its run finished (None: never).

    A backfill of a month of runs sent each old incident as a live "failing" and its end as "ok again
    after 0 s"; a change of health from history is recorded and shown, and what the channels hear is
    where the source stands once the history is in (sources.alerts.history)."""
    return after is not None and received_at - finished_at > after


def closes_incident_on_pause(old_health: str, new_health: str) -> bool:
    """A problem ended by a pause (an operator's, a crawler's or a maintenance window's): chat hears
    nothing (a pause is a decision, not news), but an incident a paging channel opened for the problem
    must close, or it stays open for ever. Sent as a `resolved` to PagerDuty and Opsgenie only."""
    return old_health in PROBLEMS and new_health == "paused"


# The cause an overwrite alert carries: while failing, or by a run reported after a newer one (the
# source may be ok; its messages must not say "already failing").
OVERWRITE_CAUSE = "snapshot overwritten by a partial run"
OVERWRITE_BY_OLDER_RUN_CAUSE = "snapshot overwritten by a partial run reported after a newer one"


def alerts_on_overwrite(health_before_run: str, enforced_rules: list[str], *, moves_health: bool = True) -> bool:
    """A partial run that replaced a full snapshot is data loss: it alerts even while already failing.

    From any other health the run's own flip into failing alerts, and lists the finding; but a run
    that does not move the health (it arrived after a newer run) flips nothing, and its overwrite
    went unheard. While paused nothing alerts.
    """
    if "snapshot_overwritten" not in enforced_rules:
        return False
    return health_before_run == "failing" or (not moves_health and health_before_run != "paused")


# Where a source stands: each of these says where it is now, so an older one still unsent would
# arrive after it and leave the channel's last word wrong.
STATE_ALERTS = frozenset({Alert.FAILING, Alert.OVERDUE, Alert.RESOLVED, Alert.REMINDER})

# (older kinds, newer kinds): an unsent notification of an older kind is superseded, never sent,
# once one of a newer kind exists for the same source and channel. A newer heartbeat makes an
# older one pointless (a monitor would count a run that finished long ago). Data loss
# (snapshot_overwritten) is never stale: it is delivered, in its order.
SUPERSEDED_BY = (
    (STATE_ALERTS, STATE_ALERTS),
    (frozenset({Alert.HEARTBEAT}), frozenset({Alert.HEARTBEAT})),
)

# What a storm is made of: these are grouped into one message per human channel within the window.
GROUPED = STATE_ALERTS | {Alert.SNAPSHOT_OVERWRITTEN}
