"""A run's problem in one line: what the overview, a source's headline and the alerts page's open
problems say beside a failing source, read from its run's stored findings."""

from __future__ import annotations

from typing import Any

from completeness.alerts.redact import redact_text

WHY_LENGTH = 160


def first_clause(message: str) -> str:
    """A message up to its first ';' outside parentheses: "collected 1,657, 14.6% below expected (1,940;
    normal from 1,800)" was cut to "... expected (1,940", the number's meaning left behind."""
    depth = 0
    for index, char in enumerate(message):
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == ";" and depth == 0:
            return message[:index].strip()
    return message.strip()


def why_of(findings: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The worst enforced finding's message up to its first ';' outside parentheses (findings are stored most severe
    first, and a message's later clauses add detail), and the ids of every enforced rule."""
    enforced = [f for f in findings or [] if f.get("mode") == "enforce"]
    if not enforced:
        return {"why": "", "why_rules": []}
    # Redacted for everyone (the overview and headlines have no reader to ask; the run page shows staff
    # the whole message), before the cut so no part of a secret is left.
    why = first_clause(redact_text(str(enforced[0].get("message") or "")))
    # A lost-pages message lists URLs: the row stays one or two lines, the run page has the rest.
    if len(why) > WHY_LENGTH:
        why = why[: WHY_LENGTH - 1].rstrip() + "…"
    return {"why": why, "why_rules": [f["rule"] for f in enforced]}
