"""The source page's field coverage chart: a line per field over time, its floor dashed beside it.

A source may count up to 200 fields; forty lines are a tangle nobody reads. The chart draws the
MAX_LINES fields that came closest to their floor (or fell furthest below it), worst first, and its
title says which were left out; the table under the charts lists every field of the latest run.
Floors come from each run's stored field_floors: the floor it was judged against, not today's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from completeness.verdicts import Verdict
from completeness.verdicts.fields import PRECISION
from sources.charts import COLORS, Figure, _blank, _layout, _x, decimate

MAX_LINES = 8
# Eight colours told apart at a glance and from the red of "below its floor" (Tableau 10 less its red).
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7")


@dataclass
class FieldStats:
    name: str
    lowest_margin: float | None = None  # the least (coverage - floor) over the runs that had a floor
    lowest_coverage: float = 1.0
    below: int = 0  # runs on which it was below its floor

    def rank(self) -> tuple:
        # Fields that were judged first, the closest to (or furthest below) their floor first.
        if self.lowest_margin is None:
            return (1, self.lowest_coverage, self.name)
        return (0, self.lowest_margin, self.name)


def coverage_points(runs: Sequence[dict]) -> list[dict]:
    """The runs that counted fields, each with `coverage` and `floors` {field: share} added.

    A field the run was judged on but did not report had coverage 0 (verdicts.md); a field neither
    reported nor judged has no point on that run.
    """
    points = []
    for run in runs:
        counts, collected = run.get("field_counts"), run["collected"]
        if counts is None or collected <= 0 or run["verdict"] == Verdict.PAUSED:
            continue
        floors = run.get("field_floors") or {}
        coverage = {name: count / collected for name, count in counts.items()}
        coverage.update({name: 0.0 for name in floors if name not in counts})
        points.append({**run, "coverage": coverage, "floors": floors})
    return points


def field_stats(points: Sequence[dict]) -> list[FieldStats]:
    """Every field seen, worst first."""
    stats: dict[str, FieldStats] = {}
    for point in points:
        for name, coverage in point["coverage"].items():
            field = stats.setdefault(name, FieldStats(name))
            field.lowest_coverage = min(field.lowest_coverage, coverage)
            floor = point["floors"].get(name)
            if floor is None:
                continue
            margin = coverage - floor
            field.lowest_margin = margin if field.lowest_margin is None else min(field.lowest_margin, margin)
            if round(coverage, PRECISION) < round(floor, PRECISION):
                field.below += 1
    return sorted(stats.values(), key=FieldStats.rank)


def _left_out_note(left_out: Sequence[FieldStats]) -> str:
    if not left_out:
        return ""
    names = ", ".join(sorted(f.name for f in left_out)[:6]) + (f" and {len(left_out) - 6} more" if len(left_out) > 6 else "")
    below = sum(1 for f in left_out if f.below)
    why = f"{below} of them also fell below their floor" if below else "none ever below its floor"
    return f"not drawn ({why}): {names}"


def coverage_figure(runs: Sequence[dict]) -> Figure:
    points = coverage_points(runs)
    ranked = field_stats(points)
    shown, left_out = ranked[:MAX_LINES], ranked[MAX_LINES:]
    data: list[dict] = []
    below_points: list[tuple[str, float, str, int]] = []
    for colour, field in zip(PALETTE, shown, strict=False):
        name = field.name
        with_field = [
            {**p, "y": p["coverage"].get(name), "floor": p["floors"].get(name)} for p in points if name in p["coverage"]
        ]
        line = decimate(with_field, key=lambda p: p["y"])
        data.append({
            "type": "scatter", "mode": "lines", "name": name, "legendgroup": name,
            "x": [_x(p) for p in line], "y": [p["y"] for p in line],
            "line": {"color": colour, "width": 1.8},
            "hovertemplate": f"{name} %{{y:.1%}}<br>%{{x}}<extra></extra>",
        })
        if any(p["floor"] is not None for p in line):
            data.append({
                "type": "scatter", "mode": "lines", "name": f"{name} floor", "legendgroup": name,
                "showlegend": False, "x": [_x(p) for p in line], "y": [p["floor"] for p in line],
                "line": {"color": colour, "width": 1.2, "dash": "dash", "shape": "hv"}, "connectgaps": False,
                "hovertemplate": f"{name} floor %{{y:.1%}}<br>%{{x}}<extra></extra>",
            })
        below_points += [
            (_x(p), p["y"], name, p["id"]) for p in with_field
            if p["floor"] is not None and round(p["y"], PRECISION) < round(p["floor"], PRECISION)
        ]
    if below_points:
        data.append({
            "type": "scatter", "mode": "markers", "name": "below its floor",
            "x": [b[0] for b in below_points], "y": [b[1] for b in below_points],
            "text": [b[2] for b in below_points], "customdata": [b[3] for b in below_points],
            "marker": {"symbol": "x", "size": 9, "color": COLORS["incomplete"]},
            "hovertemplate": "%{text} %{y:.1%}: below its floor<br>%{x}<br>run %{customdata}<extra></extra>",
        })
    if data:
        # A visible legend entry for the dashed floors, which have none of their own.
        data.append({"type": "scatter", "mode": "lines", "name": "floor (dashed, same colour)", "x": [None],
                     "y": [None], "line": {"color": COLORS["declared"], "dash": "dash", "width": 1.2}})
    title = "Field coverage: share of records with the field filled"
    note = _left_out_note(left_out)
    if left_out:
        title += f"<br><sup>{len(shown)} of {len(ranked)} fields, worst first; {note}</sup>"
    layout = _layout(title, {"tickformat": ".0%", "range": [0, 1.05]}, height=380)
    layout["margin"] = {**layout["margin"], "t": 60 if left_out else 40}
    if not points:
        _blank(layout, "this source reports no field counts (`fields` in its reports)")
    return {"data": data, "layout": layout}
