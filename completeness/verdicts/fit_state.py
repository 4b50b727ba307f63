"""A source's fit as plain JSON, kept on its row between refits (sources.ingest.history), and back."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from completeness.verdicts.expectation import Normal
from completeness.verdicts.shares import ShareNormal, Shares


def normal_state(normal: Normal | None, shares: Shares | None) -> dict[str, Any]:
    """A fit as plain JSON, to keep on the source's row between refits."""
    return {
        "normal": None
        if normal is None
        else {
            "level": normal.level,
            "long_level": normal.long_level,
            "base_level": normal.base_level,
            "before_level": normal.before_level,
            "weekday": {str(day): factor for day, factor in normal.weekday.items()},
            "hour": {str(hour): factor for hour, factor in normal.hour.items()},
            "sigma": normal.sigma,
            "typical_count": normal.typical_count,
            "counting": normal.counting,
            "z": normal.z,
            "runs": normal.runs,
            "since": normal.since.isoformat(),
            "min_margin": normal.min_margin,
            "drift": normal.drift,
            "ceiling_level": normal.ceiling_level,
            "step_runs": normal.step_runs,
            "step_fall": normal.step_fall,
            "slots": [[day, hour, *seen] for (day, hour), seen in normal.slot_counts.items()],
        },
        "shares": None
        if shares is None
        else {
            "fields": {name: _share_state(n) for name, n in shares.fields.items()},
            "share": _share_state(shares.share) if shares.share is not None else None,
            "z": shares.z,
        },
    }


def from_state(state: Mapping[str, Any]) -> tuple[Normal | None, Shares | None]:
    saved, shared = state.get("normal"), state.get("shares")
    normal = (
        None
        if saved is None
        else Normal(
            level=saved["level"],
            long_level=saved["long_level"],
            base_level=saved["base_level"],
            before_level=saved["before_level"],
            weekday={int(day): factor for day, factor in saved["weekday"].items()},
            hour={int(hour): factor for hour, factor in saved["hour"].items()},
            sigma=saved["sigma"],
            typical_count=saved["typical_count"],
            counting=saved.get("counting"),
            z=saved["z"],
            runs=saved["runs"],
            since=datetime.fromisoformat(saved["since"]),
            min_margin=saved["min_margin"],
            drift=saved.get("drift", 0.0),
            ceiling_level=saved.get("ceiling_level"),
            step_runs=saved.get("step_runs", 0),
            step_fall=saved.get("step_fall", 0.0),
            slot_counts={(day, hour): _slot_seen(*seen) for day, hour, *seen in saved["slots"]},
        )
    )
    shares = (
        None
        if shared is None
        else Shares(
            fields={name: ShareNormal(*values) for name, values in shared["fields"].items()},
            share=ShareNormal(*shared["share"]) if shared["share"] is not None else None,
            z=shared["z"],
        )
    )
    return normal, shares


def _share_state(normal: ShareNormal) -> list[float | None]:
    return [normal.centre, normal.sigma, normal.low_quantile, normal.runs, normal.pooled]


def _slot_seen(runs: int, least: int, most: int, complete: int | None = None) -> tuple[int, int, int, int]:
    # A fit kept before the complete runs were counted read every run as complete: its range stays as
    # it was shown.
    return runs, least, most, runs if complete is None else complete
