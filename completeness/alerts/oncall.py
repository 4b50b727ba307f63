"""What the on-call services and Apprise are sent: PagerDuty's Events API v2, Opsgenie's Alert API,
and a title and body for Apprise's chat services.

PagerDuty and Opsgenie are machines that keep state: one incident (alert) per source, keyed by
`dedup_key`, opened by a problem and closed by its "resolved". A later problem of the same source
(a reminder, data loss while failing) lands on the open incident instead of paging again.
"""

from __future__ import annotations

from typing import Any

from completeness.alerts import groups, messages
from completeness.alerts.messages import Event
from completeness.alerts.policy import Alert

CLIENT = "completeness-monitor"
# PagerDuty's summary and Opsgenie's message are cut by the services past these lengths.
PAGERDUTY_SUMMARY_LIMIT, OPSGENIE_MESSAGE_LIMIT, OPSGENIE_DESCRIPTION_LIMIT = 1024, 130, 15000


def dedup_key(event: Event) -> str:
    """One per source (so a recovery closes what its failure opened), per broken channel, per test."""
    if event.get("source"):
        return f"completeness/{event['source']['slug']}"
    if event.get("channel"):
        return f"completeness/channel/{event['channel']['id']}"
    return f"completeness/{event['kind']}/{event['id']}"


def closes(event: Event) -> bool:
    return event["kind"] in (Alert.RESOLVED, Alert.CHANNEL_HEALED)


def opens_and_closes(event: Event) -> bool:
    """A test message shows that the path to the on-call service works: the incident it opens is
    closed at once, so nobody is left to resolve it."""
    return bool(event["kind"] == Alert.TEST)


def pagerduty_severity(event: Event) -> str:
    if messages.data_loss(event):
        return "critical"
    return {Alert.TEST: "info", Alert.CHANNEL_BROKEN: "warning"}.get(event["kind"], "error")


def pagerduty_resolve(event: Event, routing_key: str) -> dict[str, Any]:
    """PagerDuty needs only the key to resolve; the summary and how long it lasted are for its log."""
    return {
        "routing_key": routing_key,
        "event_action": "resolve",
        "dedup_key": dedup_key(event),
        "payload": {
            "summary": messages.one_line(messages.headline(event), PAGERDUTY_SUMMARY_LIMIT),
            "custom_details": {"event_id": event["id"], "cause": event.get("cause"), "incident": event.get("incident")},
        },
    }


def pagerduty_body(event: Event, routing_key: str) -> dict[str, Any]:
    if closes(event):
        return pagerduty_resolve(event, routing_key)
    source = event.get("source") or {}
    details = {key: event.get(key) for key in ("cause", "change", "run", "findings", "overdue", "problem", "channel")}
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": dedup_key(event),
        "client": CLIENT,
        "payload": {
            "summary": messages.one_line(messages.headline(event), PAGERDUTY_SUMMARY_LIMIT),
            "source": source.get("slug") or CLIENT,
            "severity": pagerduty_severity(event),
            "timestamp": event.get("at"),
            "component": source.get("slug"),
            "group": source.get("region") or None,
            "class": event["kind"],
            "custom_details": {"event_id": event["id"], **{k: v for k, v in details.items() if v}},
        },
    }
    if source.get("url"):
        body["links"] = [{"href": source["url"], "text": f"Open {source.get('slug')}"}]
    return body


def opsgenie_priority(event: Event) -> str:
    if messages.data_loss(event):
        return "P1"
    return {Alert.TEST: "P5", Alert.CHANNEL_BROKEN: "P3"}.get(event["kind"], "P2")


def opsgenie_create(event: Event) -> dict[str, Any]:
    source = event.get("source") or {}
    # Opsgenie's details are a map of strings.
    details = {"event_id": event["id"], "kind": event["kind"], "cause": event.get("cause") or ""}
    if source.get("url"):
        details["source_page"] = source["url"]
    if event.get("run"):
        details["run_id"] = str(event["run"].get("run_id"))
    return {
        "message": messages.one_line(messages.headline(event), OPSGENIE_MESSAGE_LIMIT),
        "alias": dedup_key(event),
        "description": messages.text_body(event)[:OPSGENIE_DESCRIPTION_LIMIT],
        "source": CLIENT,
        "entity": source.get("slug") or CLIENT,
        "priority": opsgenie_priority(event),
        "tags": [*source.get("tags", []), event["kind"]],
        "details": details,
    }


def opsgenie_close(event: Event) -> dict[str, Any]:
    return {"source": CLIENT, "note": messages.one_line(messages.headline(event), 1000)}


def apprise_type(kinds: list[str]) -> str:
    """Apprise's notify_type (its chat services colour or mark a message by it)."""
    if all(kind in (Alert.RESOLVED, Alert.CHANNEL_HEALED) for kind in kinds):
        return "success"
    if all(kind == Alert.TEST for kind in kinds):
        return "info"
    if any(kind in (Alert.FAILING, Alert.OVERDUE, Alert.SNAPSHOT_OVERWRITTEN) for kind in kinds):
        return "failure"
    return "warning"


def apprise_message(event: Event) -> tuple[str, str, str]:
    """(title, body, notify_type): the headline as the title, the rest of the text body as the body."""
    title = messages.headline(event)
    body = messages.text_body(event).split("\n", 2)[-1]
    return title, body, apprise_type([event["kind"]])


def apprise_group_message(events: list[Event]) -> tuple[str, str, str]:
    title = groups.headline(events)
    body = groups.text_body(events).split("\n", 2)[-1]
    return title, body, apprise_type([e["kind"] for e in events])
