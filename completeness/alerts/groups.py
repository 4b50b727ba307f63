"""One message for many events (a storm): what happened to how many sources, what they share, one line each.

What they share is the likely cause: thirty sources failing at once that all carry the tag
`proxy-pool-eu`, or all fail `drop`, point at one thing to fix rather than thirty.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from completeness.alerts import messages
from completeness.alerts.messages import Event
from completeness.alerts.policy import Alert

FLAPPED = "flapped"
LABELS = {
    Alert.FAILING: "failing",
    Alert.OVERDUE: "overdue",
    Alert.RESOLVED: "ok again",
    Alert.SNAPSHOT_OVERWRITTEN: "lost data (a partial run replaced the snapshot)",
    Alert.REMINDER: "still failing or overdue (reminder)",
    FLAPPED: "flapped (changed and changed back within minutes)",
}
ORDER = [Alert.SNAPSHOT_OVERWRITTEN, Alert.FAILING, Alert.OVERDUE, Alert.REMINDER, FLAPPED, Alert.RESOLVED]


def kind_of(event: dict[str, Any]) -> str:
    """A source whose changes within the turn are told as a story (messages.story) counts as flapped."""
    return FLAPPED if event.get("story") else event["kind"]


def sources_in(events: list[Event]) -> list[str]:
    return list(dict.fromkeys((e.get("source") or {}).get("slug", "?") for e in events))


def shared(events: list[Event]) -> list[str]:
    """What every event of the group has in common: tags, region, enforced rules (of those with findings)."""
    found = []
    sources = [e.get("source") or {} for e in events]
    tags = set.intersection(*(set(s.get("tags") or []) for s in sources)) if sources else set()
    found += [f"tag {tag}" for tag in sorted(tags)]
    regions = {s.get("region") or "" for s in sources}
    if len(regions) == 1 and "" not in regions:
        found.append(f"region {regions.pop()}")
    with_findings = [set(messages.finding_rules(e)) for e in events if e.get("findings")]
    if with_findings and len(with_findings) == len([e for e in events if e["kind"] != Alert.RESOLVED]):
        found += [f"rule {rule}" for rule in sorted(set.intersection(*with_findings))]
    return found


def headline(events: list[Event]) -> str:
    """ "Data loss: 30 sources: 2 lost data (...), 28 failing (12 silently)"; one kind reads "30 sources failing"."""
    count = len(sources_in(events))
    kinds = Counter(kind_of(e) for e in events)
    silent = sum(1 for e in events if messages.silent(e))
    silently = f" ({silent} silently)" if silent else ""
    loss = "Data loss: " if any(messages.data_loss(e) for e in events) else ""
    noun = "source" if count == 1 else "sources"
    if len(kinds) == 1:
        [kind] = kinds
        return f"{loss}{count} {noun} {LABELS.get(kind, kind)}{silently}"
    parts = [f"{kinds[k]} {LABELS[k]}" for k in ORDER if kinds.get(k)]
    return f"{loss}{count} {noun}: {', '.join(parts)}{silently}"


def shared_line(events: list[Event]) -> str:
    found = shared(events)
    return f"All share: {', '.join(found)}" if found else "They share no tag, region or rule."


def line(event: Event) -> str:
    """One event in a group: its own headline, the run and the time, the rules."""
    parts = [messages.headline(event)]
    run = event.get("run")
    if run:
        parts.append(f"run {run.get('run_id')}")
    rules = messages.finding_rules(event)
    if rules:
        parts.append(", ".join(rules))
    parts.append(messages.human_time(event.get("at")))
    return " — ".join(parts)


def text_body(events: list[Event]) -> str:
    lines = [headline(events), "", shared_line(events), ""]
    for event in events:
        source = event.get("source") or {}
        lines.append(f"- {line(event)}")
        if source.get("url"):
            lines.append(f"  {source['url']}")
    return "\n".join(lines)


def email_subject(events: list[Event]) -> str:
    return messages.one_line(f"[completeness] {headline(events)}")
