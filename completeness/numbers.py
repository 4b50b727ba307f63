"""Counts and shares, written one way on every page and in every alert (as completeness.durations
writes how long something lasted): 37,352 and 97.3%, never 37352 beside 0.973."""

from __future__ import annotations

from typing import Any

# Every share has this many decimals: one on one page and two on the next read as two different numbers.
PERCENT_DIGITS = 1

# Rules whose expected and actual are shares, not counts.
SHARE_RULES = frozenset({"field_coverage", "breaker_stopped", "pacing_equilibrium"})


def percent(value: float | None, digits: int = PERCENT_DIGITS) -> str:
    """A share as '97.3%'. Never '100.0%' while anything is missing (1,193 of 1,194 is 99.9%), never
    '0.0%' when something is there: the rounding must not say the opposite of the numbers."""
    if value is None:
        return "—"
    text = f"{value * 100:.{digits}f}%"
    step = 10**-digits
    if value < 1 and text == f"{100:.{digits}f}%":
        return f"{100 - step:.{digits}f}%"
    if value > 0 and text == f"{0:.{digits}f}%":
        return f"{step:.{digits}f}%"
    return text


def count(value: Any) -> str:
    """A count with thousands separators: 37,352."""
    if value is None or value == "":
        return "—"
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)


def finding_value(value: Any, rule: str) -> str:
    """A finding's expected or actual as a person reads it: 89.5% for a coverage, not 0.895."""
    if value is None:
        return "—"
    if rule == "layout" and value == 1:
        # layout expects records at all (1 stands for "some") and saw none: "1" read as one record.
        return "≥ 1"
    if rule in SHARE_RULES and isinstance(value, (int, float)) and not isinstance(value, bool):
        return percent(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return count(value)
    return str(value)
