"""What the on-call services and Apprise are sent: PagerDuty's Events API v2, Opsgenie's Alert API,
and a title and body for Apprise's chat services.

PagerDuty and Opsgenie are machines that keep state: one incident (alert) per source, keyed by
`dedup_key`, opened by a problem and closed by its "resolved". A later problem of the same source
(a reminder, data loss while failing) lands on the open incident instead of paging again.
"""

from __future__ import annotations

import re
from typing import Any

from completeness.alerts import groups, messages, paging
from completeness.alerts.messages import Event
from completeness.alerts.policy import Alert
from completeness.alerts.severity import Severity, severity_of
from completeness.durations import human_duration

CLIENT = "completeness-monitor"
# PagerDuty's summary and Opsgenie's message are cut by the services past these lengths.
PAGERDUTY_SUMMARY_LIMIT, OPSGENIE_MESSAGE_LIMIT, OPSGENIE_DESCRIPTION_LIMIT = 1024, 130, 15000


def dedup_key(event: Event) -> str:
    """The incident's (a storm's sources share one: completeness.alerts.paging), else one per source
    (so a recovery closes what its failure opened), per broken channel, per test."""
    key = (event.get("page") or {}).get("key")
    if key:
        return str(key)
    if event.get("source"):
        return f"completeness/{event['source']['slug']}"
    if event.get("channel"):
        return f"completeness/channel/{event['channel']['id']}"
    return f"completeness/{event['kind']}/{event['id']}"


def summary(event: Event) -> str:
    """The headline, or for an incident of many sources (a storm) what it holds."""
    lasted = (event.get("incident") or {}).get("duration_seconds")
    duration = human_duration(lasted) if lasted is not None else ""
    return paging.summary(messages.headline(event), event.get("page"), duration)


def closes(event: Event) -> bool:
    return event["kind"] in (Alert.RESOLVED, Alert.CHANNEL_HEALED)


def opens_and_closes(event: Event) -> bool:
    """A test message shows that the path to the on-call service works: the incident it opens is
    closed at once, so nobody is left to resolve it."""
    return bool(event["kind"] == Alert.TEST)


# completeness.alerts.severity's levels in the services' own words.
PAGERDUTY_SEVERITY = {Severity.DATA_LOSS: "critical", Severity.FAILING: "error", Severity.OVERDUE: "warning"}
OPSGENIE_PRIORITY = {Severity.DATA_LOSS: "P1", Severity.FAILING: "P2", Severity.OVERDUE: "P3"}


def pagerduty_severity(event: Event) -> str:
    found = PAGERDUTY_SEVERITY.get(severity_of(event))
    return found or {Alert.TEST: "info", Alert.CHANNEL_BROKEN: "warning"}.get(event["kind"], "error")


def pagerduty_resolve(event: Event, routing_key: str) -> dict[str, Any]:
    """PagerDuty needs only the key to resolve; the summary and how long it lasted are for its log."""
    return {
        "routing_key": routing_key,
        "event_action": "resolve",
        "dedup_key": dedup_key(event),
        "payload": {
            "summary": messages.one_line(summary(event), PAGERDUTY_SUMMARY_LIMIT),
            "custom_details": {
                "event_id": event["id"],
                "cause": event.get("cause"),
                "incident": event.get("incident"),
                "page": event.get("page"),
            },
        },
    }


def pagerduty_body(event: Event, routing_key: str) -> dict[str, Any]:
    if closes(event):
        return pagerduty_resolve(event, routing_key)
    source = event.get("source") or {}
    keys = ("severity", "cause", "change", "run", "findings", "overdue", "problem", "channel", "oncall", "page")
    details = {key: event.get(key) for key in keys}
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": dedup_key(event),
        "client": CLIENT,
        "payload": {
            "summary": messages.one_line(summary(event), PAGERDUTY_SUMMARY_LIMIT),
            "source": source.get("slug") or CLIENT,
            "severity": pagerduty_severity(event),
            "timestamp": event.get("at"),
            "component": source.get("slug"),
            "group": source.get("region") or None,
            "class": event["kind"],
            "custom_details": {"event_id": event["id"], **{k: v for k, v in details.items() if v}},
        },
    }
    links = []
    if source.get("url"):
        links.append({"href": source["url"], "text": f"Open {source.get('slug')}"})
    run_url = (event.get("run") or {}).get("url")
    if run_url:
        links.append({"href": run_url, "text": "Open the run"})
    oncall = event.get("oncall") or {}
    if oncall.get("runbook_url"):
        links.append({"href": oncall["runbook_url"], "text": "Runbook"})
    if oncall.get("acknowledge_url"):
        links.append({"href": oncall["acknowledge_url"], "text": "Acknowledge"})
    if links:
        body["links"] = links
    return body


def opsgenie_priority(event: Event) -> str:
    found = OPSGENIE_PRIORITY.get(severity_of(event))
    return found or {Alert.TEST: "P5", Alert.CHANNEL_BROKEN: "P3"}.get(event["kind"], "P2")


def opsgenie_create(event: Event) -> dict[str, Any]:
    source = event.get("source") or {}
    # Opsgenie's details are a map of strings.
    details = {"event_id": event["id"], "kind": event["kind"], "cause": event.get("cause") or ""}
    if source.get("url"):
        details["source_page"] = source["url"]
    if event.get("run"):
        details["run_id"] = str(event["run"].get("run_id"))
        if event["run"].get("url"):
            details["run_page"] = str(event["run"]["url"])
    details["severity"] = str(event.get("severity") or severity_of(event))
    page = event.get("page") or {}
    if page.get("count", 1) > 1:
        details["sources"] = ", ".join(page.get("sources") or [])
    oncall = event.get("oncall") or {}
    details.update({key: str(value) for key, value in oncall.items() if value})
    return {
        "message": messages.one_line(summary(event), OPSGENIE_MESSAGE_LIMIT),
        "alias": dedup_key(event),
        "description": messages.text_body(event)[:OPSGENIE_DESCRIPTION_LIMIT],
        "source": CLIENT,
        "entity": source.get("slug") or CLIENT,
        "priority": opsgenie_priority(event),
        "tags": [*source.get("tags", []), event["kind"]],
        "details": details,
    }


def opsgenie_close(event: Event) -> dict[str, Any]:
    return {"source": CLIENT, "note": messages.one_line(summary(event), 1000)}


def apprise_type(kinds: list[str]) -> str:
    """Apprise's notify_type (its chat services colour or mark a message by it)."""
    if all(kind in (Alert.RESOLVED, Alert.CHANNEL_HEALED) for kind in kinds):
        return "success"
    if all(kind == Alert.TEST for kind in kinds):
        return "info"
    if any(kind in (Alert.FAILING, Alert.OVERDUE, Alert.SNAPSHOT_OVERWRITTEN) for kind in kinds):
        return "failure"
    return "warning"


# "@" before a name: Mattermost, Discord, Teams and others read "@channel", "@everyone" or "@all" in a
# message as a call to everyone, and a run_id or end_reason is the crawler's text. A zero-width space
# after the "@" reads the same and calls nobody (Slack's own messages escape its "<!channel>").
MENTION = re.compile(r"@(?=\w)")


def unmentioned(text: str) -> str:
    return MENTION.sub("@\u200b", text)


def apprise_message(event: Event) -> tuple[str, str, str]:
    """(title, body, notify_type): the headline as the title, the rest of the text body as the body."""
    title = messages.headline(event)
    body = messages.text_body(event).split("\n", 2)[-1]
    return unmentioned(title), unmentioned(body), apprise_type([event["kind"]])


def apprise_group_message(events: list[Event]) -> tuple[str, str, str]:
    title = groups.headline(events)
    body = groups.text_body(events).split("\n", 2)[-1]
    return unmentioned(title), unmentioned(body), apprise_type([e["kind"] for e in events])
