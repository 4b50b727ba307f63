"""The source page's field coverage chart: a line per field over time, its floor dashed beside it and
the band from the floor up to its usual coverage shaded, the field's normal as each run was judged.

A source may count up to 200 fields; forty lines are a tangle nobody reads. The chart draws the
MAX_LINES fields that came closest to their floor (or fell furthest below it), worst first, and its
title says how many are drawn, how many a click in the legend draws, and which were left out; the table under the charts lists every field of the latest run.
Floors and bands come from each run's stored field_floors and field_usual: what it was judged
against, not today's. Runs stored before field_usual was kept have their floor and no band.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from completeness.verdicts import Verdict
from completeness.verdicts.fields import PRECISION
from sources.pages.charts.figures import (
    COLORS,
    MAX_MARKERS,
    Figure,
    base_layout,
    blank_layout,
    decimate,
    plain_text,
    run_x,
    stretches,
)
from sources.pages.charts.ranges import fitted_range

MAX_LINES = 8
# Drawn at first: every field that fell below its floor, and the worst few beside them; the rest of the
# MAX_LINES are in the legend, a click away (sixteen lines once hid a price drop).
FIRST_SHOWN = 3
# Eight colours told apart at a glance and from the red of "below its floor" (Tableau 10 less its red).
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7")


# Coverage and floor compared as the verdict compares them (fields.PRECISION), without a round() per
# point: 0.99 - 0.10 against 890 / 1000 differs in the last bits only.
TOLERANCE = 10**-PRECISION


@dataclass
class FieldStats:
    name: str
    lowest_margin: float | None  # the least (coverage - floor) over the runs that had a floor
    lowest_coverage: float
    below: int  # runs on which it was below its floor

    def rank(self) -> tuple[int, float, str]:
        # Fields that were judged first, the closest to (or furthest below) their floor first.
        if self.lowest_margin is None:
            return (1, self.lowest_coverage, self.name)
        return (0, self.lowest_margin, self.name)


# x, run id, {field: coverage}, {field: floor}, {field: the usual coverage its floor was set from}
Point = tuple[str, int, dict[str, float], dict[str, float], dict[str, float]]
# One field's: x, run id, coverage, floor, usual.
FieldPoint = tuple[str, int, float, float | None, float | None]


def coverage_points(runs: Sequence[dict[str, Any]]) -> list[Point]:
    """The runs that counted fields, with each field's coverage and floor.

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
        for name in floors.keys() - counts.keys():
            coverage[name] = 0.0
        points.append((run_x(run), run["id"], coverage, floors, run.get("field_usual") or {}))
    return points


def field_stats(points: Sequence[Point]) -> list[FieldStats]:
    """Every field seen, worst first. A year of runs times every field they count: kept to dict lookups."""
    lowest_margin: dict[str, float] = {}
    lowest_coverage: dict[str, float] = {}
    below: dict[str, int] = {}
    for _, _, coverage, floors, _ in points:
        for name, value in coverage.items():
            if value < lowest_coverage.get(name, 2.0):
                lowest_coverage[name] = value
            floor = floors.get(name)
            if floor is None:
                continue
            margin = value - floor
            if margin < lowest_margin.get(name, 2.0):
                lowest_margin[name] = margin
            if margin < -TOLERANCE:
                below[name] = below.get(name, 0) + 1
    stats = [
        FieldStats(name, lowest_margin.get(name), low, below.get(name, 0)) for name, low in lowest_coverage.items()
    ]
    return sorted(stats, key=FieldStats.rank)


def _left_out_lines(left_out: Sequence[FieldStats]) -> list[str]:
    """Which fields are not drawn, in lines short enough for a phone's chart: a title does not wrap,
    and on a phone a long subtitle ran off the chart's edge with its last names. A name is never split
    (each is already escaped text)."""
    if not left_out:
        return []
    names = [plain_text(name) for name in sorted(f.name for f in left_out)[:6]]
    if len(left_out) > 6:
        names.append(f"and {len(left_out) - 6} more")
    below = sum(1 for f in left_out if f.below)
    why = f"{below} of them also fell below their floor" if below else "none ever below its floor"
    lines, line = [f"left out ({why}):"], ""
    for name in names:
        if line and len(line) + len(name) + 2 > SUBTITLE_CHARS:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {name}" if line else name
    return [*lines, line]


def coverage_figure(runs: Sequence[dict[str, Any]]) -> Figure:
    points = coverage_points(runs)
    ranked = field_stats(points)
    shown, left_out = ranked[:MAX_LINES], ranked[MAX_LINES:]
    data: list[dict[str, Any]] = []
    below_points: list[tuple[str, float, str, int]] = []
    hidden = 0
    for index, (colour, field) in enumerate(zip(PALETTE, shown, strict=False)):
        name = field.name
        # Hidden traces stay in the legend ("legendonly"): a click on a name draws the line and its floor.
        visible = True if field.below or index < FIRST_SHOWN else "legendonly"
        hidden += visible == "legendonly"
        series: list[FieldPoint] = [
            (x, run_id, coverage[name], floors.get(name), usual.get(name))
            for x, run_id, coverage, floors, usual in points
            if name in coverage
        ]
        line = decimate(series, key=lambda point: point[2])
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": plain_text(name),
                "legendgroup": plain_text(name),
                "x": [p[0] for p in line],
                "y": [p[2] for p in line],
                "visible": visible,
                "line": {"color": colour, "width": 1.8},
                # The name through the trace, not into the template: a `%{...}` in it stays text.
                "hovertemplate": "%{fullData.name} %{y:.1%}<br>%{x}<extra></extra>",
            }
        )
        if field.lowest_margin is not None:
            data += _band(name, colour, visible, line)
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{plain_text(name)} floor",
                    "legendgroup": plain_text(name),
                    "showlegend": False,
                    "visible": visible,
                    "x": [p[0] for p in line],
                    "y": [p[3] for p in line],
                    "line": {"color": colour, "width": 1.2, "dash": "dash", "shape": "hv"},
                    "connectgaps": False,
                    "hovertemplate": "%{fullData.name} %{y:.1%}<br>%{x}<extra></extra>",
                }
            )
        if field.below:
            below_points += [
                (x, value, name, run_id)
                for x, run_id, value, floor, _ in series
                if floor is not None and value - floor < -TOLERANCE
            ]
    if below_points:
        below_points = decimate(below_points, key=lambda point: point[1], limit=MAX_MARKERS)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "below its floor",
                "x": [b[0] for b in below_points],
                "y": [b[1] for b in below_points],
                "text": [plain_text(b[2]) for b in below_points],
                "customdata": [b[3] for b in below_points],
                "marker": {"symbol": "x", "size": 9, "color": COLORS["incomplete"]},
                "hovertemplate": "%{text} %{y:.1%}: below its floor<br>%{x}<br>run %{customdata}<extra></extra>",
            }
        )
    if data:
        # A visible legend entry for the dashed floors and the bands, which have none of their own.
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "floor dashed, normal shaded",
                "x": [None],
                "y": [None],
                "line": {"color": COLORS["declared"], "dash": "dash", "width": 1.2},
            }
        )
    title = "Field coverage: share of records with the field filled"
    # What is drawn, what a click in the legend draws, and what is left out: "8 of 11 fields, worst first"
    # stood over three lines, the other five in the legend.
    lines: list[str] = []
    if hidden or left_out:
        lines = [f"{len(shown) - hidden} of {len(ranked)} fields drawn, nearest their floor;"]
    if hidden:
        lines.append(f"{hidden} more in the legend, a click away" + (";" if left_out else ""))
    lines += _left_out_lines(left_out)
    title += "".join(f"<br>{_subtitle(line)}" for line in lines)
    yaxis: dict[str, Any] = {"tickformat": ".0%", "title": {"text": "records with the field"}}
    # Fitted to what is drawn at first, so that a fall is not a sliver beside a field that is always low.
    fitted = fitted_range(
        [y for trace in data if trace.get("visible", True) is True for y in trace["y"]], min_span=0.05, ceiling=1.0
    )
    if fitted:
        yaxis["range"] = fitted
    # Taller by the subtitle's lines: the plot keeps its height (on a phone, squeezed, the y axis's
    # title stood higher than the plot and ran into the subtitle).
    layout = base_layout(title, yaxis, height=380 + TITLE_LINE * len(lines))
    if lines:
        # Hung from the top of the figure (a line down: plotly.js anchors a title of several lines by
        # its first), with room for every line and one more: placed by default, a title of four lines
        # reached down over the plot's top ticks and its first line.
        layout["title"].update(yref="container", y=1 - (TITLE_TOP + TITLE_LINE) / layout["height"], yanchor="top")
        layout["margin"] = {**layout["margin"], "t": TITLE_TOP + TITLE_LINE * (2 + len(lines))}
    if not points:
        blank_layout(layout, "this source reports no field counts (its reports carry no fields)")
    return {"data": data, "layout": layout}


def _band(name: str, colour: str, visible: bool | str, line: Sequence[FieldPoint]) -> list[dict[str, Any]]:
    """The field's normal as each run was judged: shaded from its floor up to its usual coverage, in
    its own colour, hidden and shown with its line. Drawn only where a run stored both, as a pair of
    edges per stretch of such runs: plotly.js fills `tonexty` across a gap (plotly.js#2736), so one
    pair with a gap in it shaded runs that had no band."""
    edge = {
        "type": "scatter",
        "mode": "lines",
        "legendgroup": plain_text(name),
        "showlegend": False,
        "visible": visible,
        "line": {"width": 0, "shape": "hv"},
    }
    traces = []
    for stretch in stretches(line, lambda point: point[3] is not None and point[4] is not None):
        x = [p[0] for p in stretch]
        usual = {
            **edge,
            "name": f"{plain_text(name)} usually",
            "x": x,
            "y": [p[4] for p in stretch],
            "hovertemplate": "%{fullData.name} %{y:.1%}<br>%{x}<extra></extra>",
        }
        floor = {
            **edge,
            "name": f"{plain_text(name)} normal",
            "x": x,
            "y": [p[3] for p in stretch],
            "fill": "tonexty",
            "fillcolor": _tint(colour, BAND_OPACITY),
            "hoverinfo": "skip",
        }
        traces += [usual, floor]
    return traces


# Light enough that eight bands overlapping still show the lines through them.
BAND_OPACITY = 0.12


def _tint(colour: str, opacity: float) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {opacity})"


# What fits a phone's chart (about 340 px) at 12 px.
SUBTITLE_CHARS = 48
# The title's gap above it and the height of each of its lines (14 px and 12 px text), in px.
TITLE_TOP, TITLE_LINE = 8, 18


def _subtitle(text: str) -> str:
    # 12 px, not <sup>: a superscript of the 14 px title came out at about 8 px, too small to read.
    return f'<span style="font-size:12px">{text}</span>'
