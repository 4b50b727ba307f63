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
    """A source whose changes within the turn are told as a story (messages.story) counts as flapped;
    a flip into failing that lost data counts (and is listed) with the data losses. Counted as
    failing, a storm of 27 drops and 3 partial runs that replaced snapshots read "Data loss: 30
    sources failing", with the three listed last, where a cut list leaves them out."""
    if event.get("story"):
        return FLAPPED
    if event["kind"] == Alert.FAILING and messages.data_loss(event):
        return Alert.SNAPSHOT_OVERWRITTEN
    return str(event["kind"])


def sources_in(events: list[Event]) -> list[str]:
    return list(dict.fromkeys((e.get("source") or {}).get("slug", "?") for e in events))


def in_order(events: list[Event]) -> list[Event]:
    """Worst first (data loss, failing, ..., ok again), in arrival order within each: a recovery listed
    before the data loss beside it read as the news. Within reminders, those of a data loss first."""
    rank = {kind: position for position, kind in enumerate(ORDER)}
    return sorted(events, key=lambda e: (rank.get(kind_of(e), len(ORDER)), not messages.data_loss(e)))


def shared(events: list[Event]) -> list[str]:
    """What every event of the group has in common: tags, region, enforced rules (of those with findings)."""
    return _shared_by_all(events) + _rules_shared(events)


def _shared_by_all(events: list[Event]) -> list[str]:
    found = []
    sources = [e.get("source") or {} for e in events]
    tags = set.intersection(*(set(s.get("tags") or []) for s in sources)) if sources else set()
    found += [f"tag {tag}" for tag in sorted(tags)]
    regions = {s.get("region") or "" for s in sources}
    if len(regions) == 1 and "" not in regions:
        found.append(f"region {regions.pop()}")
    # Who to wake: thirty failures of one team's sources are that team's.
    found += [f"{key} {name}" for key, name in _oncall_shared(events).items()]
    return found


def _oncall_shared(events: list[Event]) -> dict[str, str]:
    """The team and the owner every source in trouble names, where all name the same one."""
    oncall = [e.get("oncall") or {} for e in _in_trouble(events)]
    shared_names = {}
    for key in ("team", "owner"):
        names = {o.get(key) or "" for o in oncall}
        if len(names) == 1 and "" not in names:
            shared_names[key] = names.pop()
    return shared_names


def _rules_shared(events: list[Event]) -> list[str]:
    """The enforced rules every source still in trouble failed (a recovery has none to share)."""
    rules, judged = _rules_of_the_judged(events)
    return rules if judged == len(_in_trouble(events)) else []


def _rules_of_the_judged(events: list[Event]) -> tuple[list[str], int]:
    """The enforced rules every source in trouble with findings failed, and how many those are: an
    overdue source has none (no run said anything), and twenty failures sharing `drop` beside it were
    said to share nothing."""
    with_findings = [set(messages.finding_rules(e)) for e in _in_trouble(events) if e.get("findings")]
    if not with_findings:
        return [], 0
    return [f"rule {rule}" for rule in sorted(set.intersection(*with_findings))], len(with_findings)


def _in_trouble(events: list[Event]) -> list[Event]:
    return [e for e in events if e["kind"] != Alert.RESOLVED]


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
    by_all = _shared_by_all(events)
    rules, judged = _rules_of_the_judged(events)
    if rules and judged < len(events):
        # Sources that recovered (or went overdue) share no rule: say whose the rules are. "All share:
        # rule snapshot_overwritten" stood over a source that had just recovered.
        who = "still in trouble" if judged == len(_in_trouble(events)) else "failing"
        whose = f"the one {who}: {', '.join(rules)}" if judged == 1 else f"the {judged} {who} share: {', '.join(rules)}"
        return f"All share: {', '.join(by_all)}; {whose}" if by_all else whose[0].upper() + whose[1:]
    found = by_all + rules
    return f"All share: {', '.join(found)}" if found else "They share no tag, region or rule."


def line(event: Event, said: dict[str, str] | None = None) -> str:
    """One event in a group: its own headline, the run, the rules, whose it is and the time. The team
    or owner the shared line names (`said`) is not repeated on every line."""
    parts = [messages.headline(event)]
    run = event.get("run")
    if run:
        parts.append(f"run {run.get('run_id')}")
    rules = messages.finding_rules(event)
    if rules:
        parts.append(", ".join(rules))
    whose = _whose(event.get("oncall") or {}, said or {})
    if whose:
        parts.append(whose)
    parts.append(messages.human_time(event.get("at")))
    return " — ".join(parts)


def lines(events: list[Event]) -> list[tuple[Event, str]]:
    """Every event of a storm with its line, worst first. Thirty lines gave no owner: whoever read
    the storm had to open each source to find whom to wake."""
    said = _oncall_shared(events)
    return [(event, line(event, said)) for event in in_order(events)]


def _whose(oncall: dict[str, Any], said: dict[str, str]) -> str:
    owner = oncall.get("owner") if "owner" not in said else None
    team = oncall.get("team") if "team" not in said else None
    if owner and team:
        return f"owner {owner} (team {team})"
    return f"owner {owner}" if owner else (f"team {team}" if team else "")


def runbook(event: Event) -> str:
    return str((event.get("oncall") or {}).get("runbook_url") or "")


def acknowledge(event: Event) -> str:
    """Where to acknowledge the source's problem (problems only): a storm of them on a phone had a
    link to each source and its runbook, and sent the reader to find the form on /alerts/."""
    return str((event.get("oncall") or {}).get("acknowledge_url") or "")


def text_body(events: list[Event]) -> str:
    body = [headline(events), "", shared_line(events), ""]
    for event, text in lines(events):
        source = event.get("source") or {}
        body.append(f"- {text}")
        if source.get("url"):
            body.append(f"  {source['url']}")
        if runbook(event):
            body.append(f"  runbook: {runbook(event)}")
        if acknowledge(event):
            body.append(f"  acknowledge: {acknowledge(event)}")
    return "\n".join(body)


def email_subject(events: list[Event]) -> str:
    return messages.one_line(f"[completeness] {headline(events)}")
