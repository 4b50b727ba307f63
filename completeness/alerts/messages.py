"""What each channel says about an event. An event is the JSON frozen in a notification when it was written:

    {"id": str (unique: receivers deduplicate with it, delivery being at least once),
     "kind": "failing", "at": ISO time, "cause": str,
     "source": {"slug", "name", "url", "region", "tags"} or null, "change": {"from", "to"} or null,
     "run": {"run_id", "verdict", "started_at", "finished_at", "exit_code", "silent", "url", "snapshot"} or null,
     "findings": [{"rule", "message", "expected", "actual"}, ...],   # enforced findings only
     "overdue": {"last_report_at", "last_verdict", "last_run_url", "expected_interval_seconds",
                 "grace_seconds", "due_at", "late_seconds"} or null,  # overdue alerts only
     "problem": {"health", "since", "for_seconds"} or null,         # reminders only
     "channel": {"id", "name", "kind", "target", "error", "url"} or null,  # channel_broken only (target masked)
     "severity": "data_loss|failing|overdue|info",                  # completeness.alerts.severity
     "oncall": {"owner", "team", "runbook_url", "next_step", "acknowledge_url"} or null,  # problems only
     "page": {"key", "opened_at", "sources", "count", "closes"} or null,  # paging channels (paging.facts)
     "story": [{"kind", "at"}, ...] or absent}  # chat: changes it never heard, added when sent (story())

Events written before a key existed lack it, so every reader here uses .get. Messages lead with the
worst thing the event holds: data loss, then a run whose crawler claimed success (silent).
Slack (completeness.alerts.slack) and the email's HTML part (completeness.alerts.mail) are rendered
from the same facts as the text here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

from completeness.alerts.policy import OVERWRITE_BY_OLDER_RUN_CAUSE, Alert
from completeness.alerts.redact import redact_finding
from completeness.durations import human_duration
from completeness.numbers import finding_value
from completeness.text import one_line as text_one_line

# The event above as Python sees it: JSON whose keys depend on its kind and its age, read with .get.
Event = dict[str, Any]

SIGNATURE_HEADER = "X-Completeness-Signature"
# The report's snapshot.action, said in the run's line ("none": the crawler keeps no snapshot, nothing to say).
SNAPSHOT_WORDS = {
    "kept_previous": "previous snapshot kept",
    "replaced": "snapshot replaced",
    "appended": "appended to the snapshot",
}
DATA_LOSS_RULE = "snapshot_overwritten"


def enforced_findings(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Observed findings never alert, so no message mentions them. A finding's text may quote what the
    crawler sent (lost URLs with their tokens): alerts reach chat rooms and inboxes, so they quote it
    as the pages show it to non-staff (completeness/alerts/redact.py)."""
    return [
        redact_finding({key: f.get(key) for key in ("rule", "message", "expected", "actual")})
        for f in findings
        if f.get("mode") == "enforce"
    ]


def human_time(value: str | None) -> str:
    """An ISO time as people read it on call: minutes, the zone said, no microseconds."""
    if not value:
        return "never"
    at = datetime.fromisoformat(value)
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def source_name(event: Event) -> str:
    source = event.get("source") or {}
    return source.get("name") or source.get("slug") or "?"


def finding_rules(event: Event) -> list[str]:
    return [f.get("rule") for f in event.get("findings") or []]


def data_loss(event: Event) -> bool:
    return event["kind"] == Alert.SNAPSHOT_OVERWRITTEN or DATA_LOSS_RULE in finding_rules(event)


def silent(event: Event) -> bool:
    return bool((event.get("run") or {}).get("silent"))


def silent_line(event: Event) -> str:
    exit_code = (event.get("run") or {}).get("exit_code")
    said = f"exited {exit_code}" if exit_code is not None else "reported no exit code"
    return (
        f"Silent: the crawler {said} and claimed success, but the run is incomplete;"
        " whatever trusts its exit code took partial data."
    )


def overdue_summary(overdue: dict[str, Any]) -> str:
    every = human_duration(overdue.get("expected_interval_seconds"))
    grace = human_duration(overdue.get("grace_seconds"))
    return f"expected every {every} with {grace} grace"


def overdue_line(event: Event) -> str:
    overdue = event.get("overdue") or {}
    last = overdue.get("last_report_at")
    since = f"last report {human_time(last)}" if last else "no report yet"
    verdict = overdue.get("last_verdict")
    return (
        f"{since}"
        + (f" (verdict {verdict})" if verdict else "")
        + f"; {overdue_summary(overdue)}, so due by {human_time(overdue.get('due_at'))};"
        + f" {human_duration(overdue.get('late_seconds'))} late"
    )


# A chat channel that never heard some changes of a source (superseded within one grouping turn, or
# by a retry) is told them with the one it hears: "shop flapped: failed 12:01, ok 12:01".
STORY_VERBS = {Alert.FAILING: "failed", Alert.OVERDUE: "overdue", Alert.RESOLVED: "ok"}
STORY_SHOWN = 6


def story(unheard: list[dict[str, Any]], event: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes a channel never heard (oldest first) and this event's, as [{"kind", "at"}]; empty
    when it missed none (then the event tells its own story)."""
    steps = [{"kind": e["kind"], "at": e.get("at")} for e in unheard if e["kind"] in STORY_VERBS]
    if not steps or event["kind"] not in STORY_VERBS:
        return []
    return [*steps, {"kind": event["kind"], "at": event.get("at")}]


def story_text(steps: list[dict[str, Any]]) -> str:
    """ "failed 12:01, ok 12:01"; a long flapping is summarised: its first two, how many, its last two."""
    parts = [f"{STORY_VERBS.get(step['kind'], step['kind'])} {clock(step.get('at'))}" for step in steps]
    if len(parts) > STORY_SHOWN:
        parts = [*parts[:2], f"… {len(parts) - 4} more …", *parts[-2:]]
    return ", ".join(parts)


def clock(value: str | None) -> str:
    """Hours and minutes (UTC): a story's changes happen within minutes of each other."""
    return human_time(value)[11:16] if value else "?"


def headline(event: Event) -> str:
    kind = event["kind"]
    name = source_name(event)
    steps = event.get("story")
    if steps:
        count = f" ({len(steps)} changes)" if len(steps) > 2 else ""
        return f"{name} flapped: {story_text(steps)}{count}"
    was = (event.get("change") or {}).get("from")
    was_text = f" (was {was})" if was else ""
    loss = "Data loss: " if data_loss(event) else ""
    if kind == Alert.FAILING:
        return f"{loss}{name} is failing" + (" silently" if silent(event) else "") + was_text
    if kind == Alert.OVERDUE:
        overdue = event.get("overdue")
        if not overdue:
            return f"{name} is overdue: {event.get('cause') or 'no report in time'}"
        at = event.get("at")
        last = overdue.get("last_report_at")
        gone = f"no report for {human_duration(_seconds_between(last, at))}" if last and at else "no report yet"
        return f"{name} is overdue: {gone} ({overdue_summary(overdue)})"
    if kind == Alert.RESOLVED:
        lasted = problem_lasted(event)
        after = f", after {human_duration(lasted)}" if lasted is not None else ""
        if (event.get("change") or {}).get("to") == "paused":
            return f"{name} is paused{was_text}{after}: the incident is closed"
        return f"{name} is ok again{was_text}{after}"
    if kind == Alert.SNAPSHOT_OVERWRITTEN:
        return (
            f"{loss}a partial run of {name} replaced the full snapshot"
            + (", silently" if silent(event) else "")
            + (
                " (reported after a newer run)"
                if event.get("cause") == OVERWRITE_BY_OLDER_RUN_CAUSE
                else " (already failing)"
            )
        )
    if kind == Alert.REMINDER:
        problem = event.get("problem") or {}
        # Its severity is data loss when the run it fails for replaced the snapshot: said first, as the
        # failing alert said it; "Reminder: ..." alone read as any failure in a storm headed "Data loss".
        return (
            f"{loss}Reminder: {name} has been {problem.get('health', 'failing')} for"
            f" {human_duration(problem.get('for_seconds'))} (since {human_time(problem.get('since'))})"
        )
    if kind == Alert.CHANNEL_BROKEN:
        channel = event.get("channel") or {}
        return f"Alert channel {channel.get('name') or '?'} is broken: alerts to it are not delivered"
    if kind == Alert.CHANNEL_HEALED:
        channel = event.get("channel") or {}
        lasted = (event.get("incident") or {}).get("duration_seconds")
        after = f" after {human_duration(lasted)} broken" if lasted is not None else ""
        return f"Alert channel {channel.get('name') or '?'} works again{after}: alerts to it are delivered"
    if kind == Alert.DIGEST:
        rows = (event.get("digest") or {}).get("sources") or []
        return f"Weekly digest of {len(rows)} source{'s' if len(rows) != 1 else ''}"
    if kind == Alert.HEARTBEAT:
        return f"{name}: complete run {(event.get('run') or {}).get('run_id', '')}".rstrip()
    if kind == Alert.TEST:
        return "Test message from the completeness monitor: this channel works"
    # A kind this release does not know (an outbox row of a later one, read after a rollback): named,
    # not passed off as a test message.
    return f"{name}: {kind}" if event.get("source") else str(kind)


def problem_lasted(event: Event) -> float | None:
    """How long the problem a recovery ends lasted: from when it began (its first bad run's start, the
    deadline missed), as the pages count it, where the event knows; else from its first alert."""
    incident = event.get("incident") or {}
    if incident.get("began_at") and event.get("at"):
        return round(_seconds_between(incident["began_at"], event["at"]))
    return incident.get("duration_seconds")


def _seconds_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


def run_text(run: dict[str, Any]) -> str:
    parts = [f"started {human_time(run.get('started_at'))}"]
    if run.get("finished_at"):
        parts.append(f"finished {human_time(run['finished_at'])}")
    parts.append(f"verdict {run.get('verdict')}")
    if run.get("exit_code") is not None:
        parts.append(f"crawler exit code {run['exit_code']}")
    if run.get("snapshot") in SNAPSHOT_WORDS:
        parts.append(SNAPSHOT_WORDS[run["snapshot"]])
    # Its page (absent from events written before runs carried one): the findings are one tap away.
    page = f" {run['url']}" if run.get("url") else ""
    return f"{run.get('run_id')} ({', '.join(parts)}){page}"


def facts(event: Event) -> list[tuple[str, str]]:
    """(label, text) pairs every channel shows, in this order; plain text, each channel escapes."""
    rows = []
    source = event.get("source")
    if source:
        name = source_name(event)
        rows.append(("Source", name if name == source["slug"] else f"{name} ({source['slug']})"))
    change = event.get("change")
    if change:
        rows.append(("Health", f"{change['from']} → {change['to']}"))
    run = event.get("run")
    if run:
        rows.append(("Run", run_text(run)))
    if event.get("overdue"):
        rows.append(("Overdue", overdue_line(event)))
        if event["overdue"].get("last_run_url"):
            rows.append(("Last run", event["overdue"]["last_run_url"]))
    channel = event.get("channel")
    if channel:
        rows.append(("Channel", f"#{channel.get('id')} {channel.get('kind')} {channel.get('target')}"))
        # "Failed", not "refused": a channel is also broken when its alerts were given up after a day
        # of retries against a receiver that answered 500 or nothing.
        if event["kind"] == Alert.CHANNEL_HEALED:
            rows.append(("Had failed with", channel.get("error") or "?"))
            rows.append(("Failed meanwhile", f"{channel.get('url')} (can be sent again there)"))
        else:
            rows.append(("Failed with", channel.get("error") or "?"))
            rows.append(("Fix it", f"{channel.get('url')} (change the target; failed alerts can be sent again there)"))
    rows += oncall_rows(event)
    if event.get("problem") and not event.get("oncall"):
        rows.append(("Acknowledge", f"to stop reminders: {acknowledge_where(event)}"))
    if event.get("cause"):
        rows.append(("Cause", event["cause"]))
    rows.append(("At", human_time(event.get("at"))))
    return rows


def owner_text(oncall: dict[str, Any]) -> str:
    owner, team = oncall.get("owner"), oncall.get("team")
    if owner and team:
        return f"{owner} (team {team})"
    return owner or (f"team {team}" if team else "nobody named: set the source's owner or team")


def oncall_rows(event: Event) -> list[tuple[str, str]]:
    """Who owns it, its runbook, the next step and where to acknowledge (completeness.alerts.triage)."""
    oncall = event.get("oncall")
    if not oncall:
        return []
    rows = [("Owner", owner_text(oncall))]
    if oncall.get("runbook_url"):
        rows.append(("Runbook", oncall["runbook_url"]))
    rows.append(("Next step", oncall.get("next_step") or ""))
    source = event.get("source") or {}
    api = f"POST /api/v1/sources/{source.get('slug')}/acknowledge"
    rows.append(("Acknowledge", f"{oncall.get('acknowledge_url') or ''} (or {api})"))
    return rows


def acknowledge_where(event: Event) -> str:
    source = event.get("source") or {}
    site = (source.get("url") or "").rsplit("/sources/", 1)[0]
    return f"{site}/alerts/ or POST /api/v1/sources/{source.get('slug')}/acknowledge"


def finding_line(finding: dict[str, Any]) -> str:
    """As the pages write a finding: 'expected 9,000, actual 1,200', a coverage '89.5%', not 0.895."""
    rule = finding["rule"]
    expected, actual = finding_value(finding["expected"], rule), finding_value(finding["actual"], rule)
    return f"{rule}: {finding['message']} (expected {expected}, actual {actual})"


def text_body(event: Event) -> str:
    lines = [headline(event), ""]
    if silent(event):
        lines += [silent_line(event), ""]
    lines += [f"{label}: {text}" for label, text in facts(event)]
    if event.get("findings"):
        lines += ["", "Findings:"]
        lines += [f"- {finding_line(f)}" for f in event["findings"]]
    source = event.get("source")
    if source:
        lines += ["", f"Source page: {source['url']}"]
    return "\n".join(lines)


def one_line(text: str, limit: int = 200) -> str:
    return text_one_line(text, limit)


def email_subject(event: Event) -> str:
    return one_line(f"[completeness] {headline(event)}")


def webhook_body(event: Event) -> bytes:
    """The event itself, as canonical JSON: what the signature covers is exactly what is sent."""
    return json.dumps(event, sort_keys=True, separators=(",", ":")).encode()


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
