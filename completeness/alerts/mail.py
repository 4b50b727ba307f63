"""Email: an HTML part beside the text, marked as automatic, threaded per source.

Every message about a source refers to the same thread root, <source.SLUG@DOMAIN>, so failing and
resolved of one source read as one conversation in mail clients that thread by References
(Thunderbird, Apple Mail, Outlook). The root is never sent itself; clients thread on the reference.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from completeness.alerts import groups, messages
from completeness.alerts.messages import Event

AUTO_HEADERS = {
    # RFC 3834: no vacation replies or other automatic answers to an alert.
    "Auto-Submitted": "auto-generated",
    "X-Auto-Response-Suppress": "All",
}


def thread_root(slug: str, domain: str) -> str:
    return f"<source.{slug}@{domain}>"


def headers(event: Event, domain: str) -> dict[str, Any]:
    found = dict(AUTO_HEADERS)
    if event.get("id"):
        found["Message-ID"] = f"<{event['id']}@{domain}>"
    source = event.get("source")
    if source:
        root = thread_root(source["slug"], domain)
        found["In-Reply-To"] = root
        found["References"] = root
    return found


# A web address in a fact (where to acknowledge, the runbook): a link in the HTML part, as the text
# part's plain address is one in most mail clients.
WEB_ADDRESS = re.compile(r"https?://[^\s<>\"']+[^\s<>\"'.,;:)]")


def _linked(text: str) -> str:
    """The text escaped, its web addresses made links."""
    out, last = [], 0
    for found in WEB_ADDRESS.finditer(text):
        url = found.group(0)
        if "…" in url:
            # A channel's target, masked (https://hooks.slack.com/…YYYY): no address to open.
            continue
        out += [escape(text[last : found.start()]), f'<a href="{escape(url)}">{escape(url)}</a>']
        last = found.end()
    out.append(escape(text[last:]))
    return "".join(out)


def html_body(event: Event) -> str:
    parts = [f"<h2>{escape(messages.headline(event))}</h2>"]
    if messages.silent(event):
        parts.append(f"<p><strong>{escape(messages.silent_line(event))}</strong></p>")
    # An address has no place to break (the acknowledge link, the run's page): a phone's mail app drew
    # the table wider than its screen. "anywhere" lets a table cell's width give way, as break-word does not.
    rows = "".join(
        f'<tr><th align="left" valign="top">{escape(label)}</th>'
        f'<td style="overflow-wrap: anywhere; word-break: break-word">{_linked(value)}</td></tr>'
        for label, value in messages.facts(event)
    )
    parts.append(f'<table cellpadding="4">{rows}</table>')
    findings = event.get("findings") or []
    if findings:
        items = "".join(f"<li>{escape(messages.finding_line(f))}</li>" for f in findings)
        parts.append(f"<h3>Findings</h3><ul>{items}</ul>")
    source = event.get("source")
    if source:
        parts.append(f'<p><a href="{escape(source["url"])}">Open {escape(source["slug"])}</a></p>')
    return page("".join(parts))


def page(body: str) -> str:
    return f'<!doctype html><html><body style="font-family: sans-serif">{body}</body></html>'


def group_headers(events: list[Event], domain: str) -> dict[str, Any]:
    # A storm's message belongs to no single source's thread.
    found = dict(AUTO_HEADERS)
    if events and events[0].get("id"):
        found["Message-ID"] = f"<group.{events[0]['id']}@{domain}>"
    return found


def group_html_body(events: list[Event]) -> str:
    parts = [f"<h2>{escape(groups.headline(events))}</h2>", f"<p>{escape(groups.shared_line(events))}</p>"]
    items = []
    for event, text in groups.lines(events):
        source = event.get("source") or {}
        opened = f' <a href="{escape(source["url"])}">open</a>' if source.get("url") else ""
        runbook = f' <a href="{escape(groups.runbook(event))}">runbook</a>' if groups.runbook(event) else ""
        ack = f' <a href="{escape(groups.acknowledge(event))}">acknowledge</a>' if groups.acknowledge(event) else ""
        items.append(f"<li>{escape(text)}{opened}{runbook}{ack}</li>")
    parts.append(f"<ul>{''.join(items)}</ul>")
    return page("".join(parts))
