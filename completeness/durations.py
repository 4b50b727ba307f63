"""How long something lasted, written one way on every page, in the admin and in every message."""

from __future__ import annotations

# Days are spelled out: "2 d 4 h" reads as a typo to someone woken at night.
UNITS = ((86400, "day"), (3600, "h"), (60, "min"))


def human_duration(seconds: float | None, missing: str = "?") -> str:
    """'2 days 4 h', '3 h 20 min', '45 min', '45 s': at most two units, and only neighbouring ones ('2
    days 20 min' would read as a typo), seconds only under a minute, never '4:00:00' or '86400 s'."""
    if seconds is None:
        return missing
    left = max(0, round(seconds))
    if left < 60:
        return f"{left} s"
    parts: list[str] = []
    for size, unit in UNITS:
        amount, left = divmod(left, size)
        if amount and len(parts) < 2:
            parts.append(f"{amount} {unit}{'s' if unit == 'day' and amount != 1 else ''}")
        elif parts:
            break
    return " ".join(parts)
