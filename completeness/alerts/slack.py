"""Slack: Block Kit (a header, the facts as fields, the findings, a button to the source page), with
a plain `text` that Slack shows in notifications and that clients without blocks show instead."""

from __future__ import annotations

from typing import Any

from completeness.alerts import groups, messages
from completeness.alerts.messages import Event
from completeness.alerts.policy import Alert

ICONS = {
    Alert.FAILING: ":red_circle:",
    Alert.OVERDUE: ":hourglass:",
    Alert.RESOLVED: ":large_green_circle:",
    Alert.SNAPSHOT_OVERWRITTEN: ":rotating_light:",
    Alert.HEARTBEAT: ":heartbeat:",
    Alert.TEST: ":wave:",
    Alert.REMINDER: ":bell:",
    Alert.CHANNEL_BROKEN: ":warning:",
    Alert.CHANNEL_HEALED: ":white_check_mark:",
}
# Slack refuses a message whose blocks break its limits (header 150 characters, a section's text
# 3,000, a field 2,000, ten fields, fifty blocks); cut below them, saying so.
HEADER_LIMIT, TEXT_LIMIT, FIELD_LIMIT = 150, 2900, 1900


def escape(text: str) -> str:
    # Slack's mrkdwn reads these three as markup; a source name must not become a link or a mention.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def link(url: str, label: str) -> str:
    return f"<{url}|{escape(label)}>"


def lines_within(lines: list[str], limit: int, more: str) -> str:
    """As many whole lines as fit, then how many were left out."""
    kept: list[str] = []
    size = 0
    for n, line in enumerate(lines):
        if size + len(line) + 1 > limit - len(more) - 12:
            return "\n".join(kept + [f"… {len(lines) - n} more {more}"])
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)


def button(url: str, label: str) -> dict[str, Any]:
    return {
        "type": "actions",
        "elements": [
            {"type": "button", "text": plain(cut(label, 75)), "url": url, "action_id": "open_source"},
        ],
    }


def payload(event: Event) -> dict[str, Any]:
    """One event: the message for an incoming webhook."""
    title = messages.headline(event)
    facts = messages.facts(event)
    findings = [f"• {escape(messages.finding_line(f))}" for f in event.get("findings") or []]
    source = event.get("source")
    text = [f"{ICONS.get(event['kind'], '')} *{escape(title)}*".strip()]
    if messages.silent(event):
        text.append(escape(messages.silent_line(event)))
    text += [f"{label}: {escape(value)}" for label, value in facts if label != "Source"]
    text += findings
    if source:
        text.append(link(source["url"], f"Open {source['slug']}"))

    blocks: list[dict[str, Any]] = [{"type": "header", "text": plain(cut(f"{title}", HEADER_LIMIT))}]
    if messages.silent(event):
        blocks.append({"type": "section", "text": mrkdwn(f"*{escape(messages.silent_line(event))}*")})
    fields = []
    for label, value in facts:
        shown = link(source["url"], value) if label == "Source" and source else escape(value)
        fields.append(mrkdwn(cut(f"*{label}*\n{shown}", FIELD_LIMIT)))
    blocks.append({"type": "section", "fields": fields[:10]})
    if findings:
        blocks.append({"type": "section", "text": mrkdwn(lines_within(findings, TEXT_LIMIT, "on the source page"))})
    if source:
        blocks.append(button(source["url"], f"Open {source['slug']}"))
    return {"text": cut("\n".join(text), 3 * TEXT_LIMIT), "blocks": blocks}


MOST_BLOCKS = 50


def group_payload(events: list[Event]) -> dict[str, Any]:
    """A storm: one message naming every source, a line each, in as many sections as Slack allows."""
    title = groups.headline(events)
    lines = []
    for event, text in groups.lines(events):
        source = event.get("source") or {}
        opened = f" {link(source['url'], 'open')}" if source.get("url") else ""
        # As text, as in a single alert's rows: Slack links it, and an operator's URL holding `|` or
        # `>` cannot reshape the message.
        runbook = f" runbook: {escape(groups.runbook(event))}" if groups.runbook(event) else ""
        # Ours (SITE_URL and a slug), so a link like "open".
        ack = f" {link(groups.acknowledge(event), 'acknowledge')}" if groups.acknowledge(event) else ""
        lines.append(f"• {escape(text)}{opened}{runbook}{ack}")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": plain(cut(title, HEADER_LIMIT))},
        {"type": "section", "text": mrkdwn(cut(escape(groups.shared_line(events)), TEXT_LIMIT))},
    ]
    chunk: list[str] = []
    for n, text in enumerate(lines):
        if len(blocks) == MOST_BLOCKS - 1:
            blocks.append({"type": "context", "elements": [mrkdwn(f"… and {len(lines) - n} more")]})
            break
        if chunk and len("\n".join(chunk + [text])) > TEXT_LIMIT:
            blocks.append({"type": "section", "text": mrkdwn("\n".join(chunk))})
            chunk = []
        chunk.append(cut(text, TEXT_LIMIT))
        if n == len(lines) - 1:
            blocks.append({"type": "section", "text": mrkdwn("\n".join(chunk))})
    kinds = {e["kind"] for e in events}
    if any(messages.data_loss(e) for e in events):
        kinds.add(Alert.SNAPSHOT_OVERWRITTEN)  # the icon of the "Data loss:" its title starts with
    worst = next((kind for kind in groups.ORDER if kind in kinds), Alert.FAILING)
    fallback = [f"{ICONS.get(Alert(worst), '')} *{escape(title)}*", escape(groups.shared_line(events)), *lines]
    return {"text": lines_within(fallback, 3 * TEXT_LIMIT, "sources"), "blocks": blocks}
