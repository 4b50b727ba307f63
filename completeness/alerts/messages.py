"""What each channel says about an event. An event is the JSON frozen in a notification when it was written:

    {"kind": "failing", "at": ISO time, "cause": str,
     "source": {"slug", "name", "url"} or null, "change": {"from", "to"} or null,
     "run": {"run_id", "verdict", "started_at"} or null,
     "findings": [{"rule", "message", "expected", "actual"}, ...]}   # enforced findings only
"""

from __future__ import annotations

import hashlib
import hmac
import json

from completeness.alerts.policy import Alert

SIGNATURE_HEADER = "X-Completeness-Signature"
ICONS = {
    Alert.FAILING: ":red_circle:",
    Alert.OVERDUE: ":hourglass:",
    Alert.RESOLVED: ":large_green_circle:",
    Alert.SNAPSHOT_OVERWRITTEN: ":rotating_light:",
    Alert.HEARTBEAT: ":heartbeat:",
    Alert.TEST: ":wave:",
}


def enforced_findings(findings: list[dict]) -> list[dict]:
    """Observed findings never alert, so no message mentions them."""
    return [
        {key: f.get(key) for key in ("rule", "message", "expected", "actual")}
        for f in findings
        if f.get("mode") == "enforce"
    ]


def headline(event: dict) -> str:
    kind = event["kind"]
    source = event.get("source") or {}
    name = source.get("name") or source.get("slug") or "?"
    was = (event.get("change") or {}).get("from")
    if kind == Alert.FAILING:
        return f"{name} is failing" + (f" (was {was})" if was else "")
    if kind == Alert.OVERDUE:
        return f"{name} is overdue: {event.get('cause') or 'no report in time'}"
    if kind == Alert.RESOLVED:
        return f"{name} is ok again" + (f" (was {was})" if was else "")
    if kind == Alert.SNAPSHOT_OVERWRITTEN:
        return f"{name}: a partial run replaced the full snapshot (the source was already failing)"
    if kind == Alert.HEARTBEAT:
        return f"{name}: complete run {(event.get('run') or {}).get('run_id', '')}".rstrip()
    return "Test message from the completeness monitor: this channel works"


def finding_line(finding: dict) -> str:
    return f"{finding['rule']}: {finding['message']} (expected {finding['expected']}, actual {finding['actual']})"


def text_body(event: dict) -> str:
    lines = [headline(event), ""]
    run = event.get("run")
    if run:
        lines.append(f"Run: {run['run_id']} (started {run['started_at']}, verdict {run['verdict']})")
    if event.get("findings"):
        lines.append("Findings:")
        lines += [f"- {finding_line(f)}" for f in event["findings"]]
    source = event.get("source")
    if source:
        lines += ["", f"Source page: {source['url']}"]
    lines += ["", f"At {event['at']}."]
    return "\n".join(lines)


def email_subject(event: dict) -> str:
    # A line break in a header is refused by Django's mail (header injection); names may carry one.
    return " ".join(f"[completeness] {headline(event)}".split())[:200]


def _slack_escape(text: str) -> str:
    # Slack's mrkdwn reads these three as markup; a source name must not become a link or a mention.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(event: dict) -> dict:
    """An incoming-webhook message: the source, the change, the findings and a link to the source page."""
    lines = [f"{ICONS.get(event['kind'], '')} *{_slack_escape(headline(event))}*".strip()]
    change = event.get("change")
    if change:
        lines.append(f"Health: {change['from']} → {change['to']}")
    for finding in event.get("findings") or []:
        lines.append(f"• {_slack_escape(finding_line(finding))}")
    source = event.get("source")
    if source:
        lines.append(f"<{source['url']}|Open {_slack_escape(source['slug'])}>")
    return {"text": "\n".join(lines)}


def webhook_body(event: dict) -> bytes:
    """The event itself, as canonical JSON: what the signature covers is exactly what is sent."""
    return json.dumps(event, sort_keys=True, separators=(",", ":")).encode()


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
