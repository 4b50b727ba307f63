"""Plotly figures of the operator pages, built in Python and drawn by the project's own plotly.js.

Figures are plain Plotly figure dicts serialised with plotly's own JSON encoder. Building them as
`plotly.graph_objects.Figure` validates every property on the server and costs ~18 ms per figure,
more than the rest of a source page; tests/test_charts.py validates each builder's output with
graph_objects instead, so the shapes stay correct without paying for it on every request.

A chart is ~1,000 px wide: more than MAX_POINTS points per line draws nothing more, so long
histories are decimated (min/max per bucket, which keeps the dips an operator is looking for),
and the markers for incomplete or silent runs are kept separately so none of them is averaged away.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast, get_args

from plotly.io.json import to_json_plotly

from completeness import numbers
from completeness.numbers import PERCENT_DIGITS
from completeness.report import ProxyState
from completeness.verdicts import Verdict
from sources.pages.charts.ranges import fitted_range

if TYPE_CHECKING:
    from sources.models import FailureWindowEvent

T = TypeVar("T")
MAX_POINTS = 500
MAX_MARKERS = 400

PROXY_STATES = get_args(ProxyState)
COLORS = {
    "collected": "#2563eb",
    "declared": "#6b7280",
    "baseline": "#16a34a",
    "incomplete": "#dc2626",
    "silent": "#f59e0b",
    "accepted": "#7c3aed",
    "threshold": "#dc2626",
    "trend": "#0891b2",
    "expected": "#0d9488",
    "eligible": "#16a34a",
    "cooling": "#f59e0b",
    "probe_allowed": "#2563eb",
    "excluded": "#dc2626",
}
Figure = dict[str, Any]


# The same escapes as Django's json_script: the JSON is embedded in a <script> element of the page.
_SCRIPT_SAFE = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


def to_json(figure: Figure) -> str:
    """Figure JSON that is safe inside a <script type="application/json"> element."""
    text: str = to_json_plotly(figure)
    return text.translate(_SCRIPT_SAFE)


def summary(figure: Figure) -> str:
    """The figure in words, for whoever cannot see it (a screen reader, a page without JavaScript): its
    title, the span it covers, the latest value of each line in its legend and how many points each
    marker series marks. "Collected vs declared total and baseline, 2026-10-06 17:00 to 2026-12-04
    17:00 UTC. Latest: collected 1,200; declared total 9,000. Marked: 1 incomplete (crawler knew)." """
    layout, traces = figure["layout"], [t for t in figure["data"] if t.get("showlegend", True) and t.get("name")]
    share = "%" in str(layout.get("yaxis", {}).get("tickformat", ""))
    # The first line: the coverage chart's further lines say which fields are drawn, which the list below gives.
    title = _words(str((layout.get("title") or {}).get("text") or "").split("<br>")[0])
    xs = [
        x
        for t in traces
        for x, y in zip(t.get("x") or [], t.get("y") or [], strict=False)
        if x is not None and y is not None
    ]
    if not xs:
        span = ""
    elif all(isinstance(x, str) for x in xs):  # times, as _iso and run_x write them
        span = f", {_x_text(min(xs))} to {_x_text(max(xs))} UTC"
    else:
        axis = _words(str(layout["xaxis"].get("title", {}).get("text", "")))
        span = f", {axis} {numbers.count(min(xs))} to {numbers.count(max(xs))}".replace(",  ", ", ")
    latest, marked = [], []
    for trace in traces:
        ys = [y for y in trace.get("y") or [] if y is not None]
        if not ys:
            continue
        name = _words(trace["name"])
        if "lines" in str(trace.get("mode", "")):
            value = numbers.percent(ys[-1]) if share else numbers.count(round(ys[-1]))
            latest.append(f"{name} {value}")
        else:
            marked.append(f"{numbers.count(len(ys))} {name}")
    parts = [f"{title}{span}."]
    if latest:
        parts.append(f"Latest: {'; '.join(latest)}.")
    if marked:
        parts.append(f"Marked: {'; '.join(marked)}.")
    return " ".join(parts)


def _words(text: str) -> str:
    """Plotly rich text (a title's <br> and <span>s, plain_text's entities) as plain words."""
    words = re.sub(r"<[^>]*>", " ", text.replace("<br>", "; "))
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"\s*;(\s*;)*", ";", words))).strip(" ;")


def _x_text(x: Any) -> str:
    """An x of a time axis ('2026-10-06 17:00:00' or ISO with its offset) to the minute."""
    return str(x).replace("T", " ")[:16]


def _iso(value: datetime) -> str:
    return value.isoformat()


def decimate(items: Sequence[Any], key: Callable[[Any], float | None], limit: int = MAX_POINTS) -> list[Any]:
    """At most `limit` items, in order: each bucket keeps its lowest and its highest by `key`."""
    if len(items) <= limit:
        return list(items)
    keys = [key(item) for item in items]
    buckets = max(1, limit // 2)
    size = len(items) / buckets
    keep: list[int] = []
    for b in range(buckets):
        lo, hi = int(b * size), min(len(items), int((b + 1) * size))
        indices = [i for i in range(lo, hi) if keys[i] is not None]
        if not indices:
            if lo < hi:
                keep.append(lo)
            continue
        present = cast(list[float], keys)  # read only at the indices just filtered for a key
        low = min(indices, key=present.__getitem__)
        high = max(indices, key=present.__getitem__)
        keep.extend((low, high) if low < high else (high, low) if high < low else (low,))
    return [items[i] for i in keep]


def run_x(run: dict[str, Any]) -> str:
    # Each run's timestamp is formatted once, however many traces show it.
    x = run.get("x")
    if x is None:
        x = run["x"] = _iso(run["started_at"])
    return x


def plain_text(text: str) -> str:
    """`text` as Plotly draws it literally: legends, titles and hover labels are Plotly rich text, where
    `<a href=...>` is a clickable link and `<b>` bold. A crawler names its fields, so a field named
    `<a href="https://evil.example">PRICE</a>` would be a link on an operator's page. Plotly decodes
    these three entities back to the characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def base_layout(title: str, yaxis: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    layout = {
        # A little in from the edge: flush left it touched the panel's border.
        "title": {"text": title, "font": {"size": 14}, "x": 0, "xanchor": "left", "pad": {"l": 8}},
        "height": 340,
        # The legend sits below the axis inside the figure's own height, so nothing under the chart is covered.
        "margin": {"l": 60, "r": 20, "t": 40, "b": 100},
        "hovermode": "closest",
        "legend": {"orientation": "h", "x": 0, "y": -0.2, "yanchor": "top"},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        # The dates stand a little below the axis: the lowest count's label, centred on the bottom edge,
        # reached into the first date's label wherever a tick fell on that edge ("Nov 23 2026" over
        # "37,000" on a phone, on the days the first date tick sat at the left edge).
        "xaxis": {"gridcolor": "#e5e7eb", "zeroline": False, "ticklabelstandoff": 6},
        "yaxis": {"gridcolor": "#e5e7eb", "zeroline": False, **(yaxis or {})},
    }
    layout.update(extra)
    return layout


def _hline(y: float, color: str, dash: str = "dash") -> dict[str, Any]:
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": "y",
        "y0": y,
        "y1": y,
        "line": {"color": color, "width": 1.5, "dash": dash},
    }


def _markers(
    runs: Sequence[dict[str, Any]], name: str, y_key: str, color: str, symbol: str, size: int = 9
) -> dict[str, Any]:
    shown = decimate(runs, key=lambda r: r.get(y_key), limit=MAX_MARKERS)
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": [run_x(r) for r in shown],
        "y": [r.get(y_key) for r in shown],
        "customdata": [r["id"] for r in shown],
        "marker": {"color": color, "symbol": symbol, "size": size, "line": {"width": 1, "color": "#111827"}},
        "hovertemplate": "%{y:,}",
        # Drawn whole at the axis's edge: the y range starts at 0 at the lowest, and a run that collected
        # nothing (the worst case, a silent diamond) was cut in half by the x axis.
        "cliponaxis": False,
    }


def _run_line(runs: Sequence[dict[str, Any]], name: str, y_key: str, color: str, y_format: str) -> dict[str, Any]:
    """A series with a small marker per run: a click on one opens the run (static/completeness/charts.js)."""
    return _line(
        runs,
        name,
        y_key,
        color,
        mode="lines+markers",
        marker={"size": 5, "color": color},
        customdata=[r["id"] for r in runs],
        # One line each in the unified hover box, under the time it shows once.
        hovertemplate=f"%{{y:{y_format}}} · run %{{customdata}}, click to open",
    )


def _line(runs: Sequence[dict[str, Any]], name: str, y_key: str, color: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": [run_x(r) for r in runs],
        "y": [r.get(y_key) for r in runs],
        "line": {"color": color, "width": 1.5, **extra.pop("line", {})},
        "connectgaps": False,
        **extra,
    }


def _split_by_verdict(runs: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    loud = [r for r in runs if r["verdict"] == Verdict.INCOMPLETE and not r["silent"]]
    silent = [r for r in runs if r["verdict"] == Verdict.INCOMPLETE and r["silent"]]
    return loud, silent


def collected_figure(runs: Sequence[dict[str, Any]], trend: TrendLines | None = None) -> Figure:
    """Collected against the declared total and the baseline it was judged against; with `trend`, the
    trend rule's reference (the best good run of its window) and the line below which it fires."""
    if trend is not None:
        trend.attach(runs)
    for r in runs:
        # A paused run collects nothing on purpose: a gap in the line (its period is shaded), not a
        # plunge to 0 that reads as an outage and squashes the y axis.
        r["collected_line"] = None if r["verdict"] == Verdict.PAUSED else r["collected"]
    line_runs = decimate(runs, key=lambda r: r["collected"])
    loud, silent = _split_by_verdict(runs)
    accepted = [r for r in runs if r["accepted_as_baseline"]]
    declares = any(r["declared_total"] is not None for r in runs)
    data = [
        _run_line(line_runs, "collected", "collected_line", COLORS["collected"], ","),
        # Only where some run declared one: an empty entry in the legend named a line that is not there.
        *(
            [_line(line_runs, "declared total", "declared_total", COLORS["declared"], line={"dash": "dot"})]
            if declares
            else []
        ),
        _line(
            line_runs,
            "baseline (last complete)",
            "baseline_collected",
            COLORS["baseline"],
            line={"shape": "hv", "dash": "dash"},
        ),
        _markers(loud, "incomplete (crawler knew)", "collected", COLORS["incomplete"], "x"),
        _markers(silent, "incomplete, silent (crawler said ok)", "collected", COLORS["silent"], "diamond", 11),
    ]
    if accepted:
        data.append(_markers(accepted, "accepted as baseline", "collected", COLORS["accepted"], "star", 12))
    band = expected_band(line_runs)
    # Only where a run was judged by it: a legend entry with nothing drawn read as a normal lost.
    normal_drawn = any(r["band_expected"] is not None for r in line_runs)
    if normal_drawn:
        data += band
    if trend is not None and any(r.get("trend_best") is not None for r in runs):
        data += [
            _line(
                line_runs,
                f"trend: best of {trend.days} days",
                "trend_best",
                COLORS["trend"],
                line={"shape": "hv", "dash": "dot"},
            ),
            _line(
                line_runs,
                f"trend fires below (−{trend.drop_threshold:.{PERCENT_DIGITS}%})",
                "trend_floor",
                COLORS["threshold"],
                line={"shape": "hv", "dash": "dot", "width": 1},
            ),
        ]
    values = [y for trace in data for y in trace["y"]]
    yaxis: dict[str, Any] = {"title": {"text": "records"}, "tickformat": ","}
    fitted = fitted_range(values, min_span=max(10.0, 0.02 * max((v for v in values if v is not None), default=0)))
    if fitted:
        yaxis["range"] = fitted
    # One hover box for the time under the pointer: collected, declared and baseline of one run side by
    # side, and a click anywhere on that time opens the run (charts.js), not only a 5 px marker.
    references = [
        *(["declared total"] if declares else []),
        "baseline",
        *(["its normal"] if normal_drawn else []),
    ]
    title = "Collected vs " + (", ".join(references[:-1]) + " and " if len(references) > 1 else "") + references[-1]
    return {"data": data, "layout": base_layout(title, yaxis, hovermode="x unified")}


def expected_band(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The source's own normal as each run was judged against it: `expected`, and the band down to
    `low` shaded (a run below the band is below_expected or a drop) and up to its upper edge, lighter.
    Gaps where there was none yet.

    The upper edge is not stored (no rule judges a rise): it is the floor mirrored around `expected` in
    logs, expected² / low, as the band is made (expected × e^(±z·spread), docs/verdicts.md). Where the
    floor was widened (`min_margin`, a promotion's return allowed) the mirror is as wide: an edge drawn
    too high rather than a normal run drawn outside its band.

    Gaps where the count was not judged by the normal: a paused run is not judged, and a run that
    declared a total is judged against that total (the declared line), never its normal. Drawn there,
    the band stood over the shaded pause as if the normal rose, and a run that failed on its declared
    total sat inside a band that never judged it.

    The shading is two shapes closed on themselves, one polygon per stretch between gaps: plotly.js
    fills `tonexty` across a gap (plotly.js#2736), which drew a wedge from one side of a pause to the
    other. The three edges are lines of their own, for the hover box."""
    for run in runs:
        judged = run.get("verdict") != Verdict.PAUSED and run.get("declared_total") is None
        expected, floor = (run.get("expected"), run.get("expected_low")) if judged else (None, None)
        high = round(expected * expected / floor) if expected and floor else None
        run["band_low"], run["band_expected"], run["band_high"] = floor, expected, high
    colour = COLORS["expected"]
    edges = {"legendgroup": "normal", "showlegend": False}
    low = _line(runs, "normal from (low)", "band_low", colour, line={"width": 0.5}, **edges)
    low["hovertemplate"] = "normal from %{y:,}"
    high = _line(runs, "normal up to (high)", "band_high", colour, line={"width": 0.5}, **edges)
    high["hovertemplate"] = "normal up to %{y:,}"
    # One legend entry for the band: a click on it hides or shows the shading and the edges with it
    # (on a phone eight entries, one a row, stood taller than the plot).
    expected = _line(
        runs,
        "expected",
        "band_expected",
        colour,
        line={"dash": "dash", "width": 1},
        hovertemplate="expected %{y:,}",
        legendgroup="normal",
    )
    banded = stretches(runs, lambda r: r["band_low"] is not None and r["band_high"] is not None)
    below = _shading("normal, low to expected", banded, "band_low", "band_expected", "rgba(13, 148, 136, 0.12)")
    above = _shading("normal, expected to high", banded, "band_expected", "band_high", "rgba(13, 148, 136, 0.06)")
    return [below, above, low, expected, high]


def stretches(items: Sequence[T], keep: Callable[[T], bool]) -> list[list[T]]:
    """The items in maximal stretches of those `keep` keeps: where a filled area must stop at each gap."""
    found: list[list[T]] = []
    current: list[T] = []
    for item in items:
        if keep(item):
            current.append(item)
        elif current:
            found.append(current)
            current = []
    if current:
        found.append(current)
    return found


def _shading(
    name: str, stretches: Sequence[Sequence[dict[str, Any]]], lower: str, upper: str, fill: str
) -> dict[str, Any]:
    """The area between two edges, one closed polygon per stretch: along the lower edge, back along
    the upper one; a None between two polygons (`toself` closes each stretch on its own)."""
    x: list[str | None] = []
    y: list[float | None] = []
    for stretch in stretches:
        if x:
            x.append(None)
            y.append(None)
        x += [run_x(r) for r in stretch] + [run_x(r) for r in reversed(stretch)]
        y += [r[lower] for r in stretch] + [r[upper] for r in reversed(stretch)]
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y,
        "fill": "toself",
        "fillcolor": fill,
        "line": {"width": 0},
        "hoverinfo": "skip",
        "legendgroup": "normal",
        "showlegend": False,
    }


@dataclass(frozen=True)
class TrendLines:
    """The trend rule's reference per run (aligned with the chart's runs) and the settings to draw it."""

    references: Sequence[Any]  # TrendReference | None per run
    drop_threshold: float
    days: int
    min_runs: int

    def attach(self, runs: Sequence[dict[str, Any]]) -> None:
        # Drawn only where the rule speaks so: no declared total (that is the better judge), not paused,
        # a window holding min_runs good runs, and no normal yet. Once the source has its normal, trend
        # compares levels with the weekly rhythm taken out (verdicts.md): a line at 75% of the best count
        # stood over every ordinary Saturday of a weekday feed, none of them a trend. Elsewhere a gap.
        for run, reference in zip(runs, self.references, strict=True):
            armed = (
                reference is not None
                and reference.runs >= self.min_runs
                and run["declared_total"] is None
                and run["verdict"] != Verdict.PAUSED
                and run.get("expected") is None
            )
            run["trend_best"] = reference.best if armed else None
            run["trend_floor"] = round((1 - self.drop_threshold) * reference.best, 1) if armed else None


def _ratio_point(run: dict[str, Any], min_completeness: float) -> dict[str, Any]:
    """A run's point on the ratio chart: its ratio and the floor it was judged by; none for a paused run."""
    if run["verdict"] == Verdict.PAUSED:
        return {**run, "ratio_line": None, "floor": None}
    floor = run["completeness_floor"] if run.get("completeness_floor") is not None else min_completeness
    return {**run, "ratio_line": run["completeness"], "floor": floor}


def completeness_figure(runs: Sequence[dict[str, Any]], min_completeness: float) -> Figure:
    with_ratio = [r for r in runs if r["completeness"] is not None]
    # A paused run is not judged, and a crawler's paused report (0 of its declared total) has a ratio that
    # read as an outage: a gap in the line and the floor, as on the collected chart, and out of the y range.
    judged = [r for r in with_ratio if r["verdict"] != Verdict.PAUSED]
    line_runs = decimate(with_ratio, key=lambda r: None if r["verdict"] == Verdict.PAUSED else r["completeness"])
    loud, silent = _split_by_verdict(with_ratio)
    # Each run's own floor, as it was judged: a share that hovers at min_completeness is judged by its
    # own band ("normal from 98.8%"), and a flat line at 99% showed its complete runs below the line.
    # Runs stored before the floor was kept are drawn at min_completeness.
    floors = [_ratio_point(r, min_completeness) for r in line_runs]
    own = any(r["floor"] is not None and abs(r["floor"] - min_completeness) > 1e-9 for r in floors)
    data = [
        _run_line(floors, "collected / (declared - removed)", "ratio_line", COLORS["collected"], ".1%"),
        _markers(loud, "incomplete", "completeness", COLORS["incomplete"], "x"),
        _markers(silent, "incomplete, silent", "completeness", COLORS["silent"], "diamond", 11),
        _line(
            floors,
            f"complete from (own normal; min_completeness {min_completeness:.{PERCENT_DIGITS}%})"
            if own
            else f"min_completeness {min_completeness:.{PERCENT_DIGITS}%}",
            "floor",
            COLORS["threshold"],
            line={"dash": "dash", "shape": "hv"},
            hovertemplate="complete from %{y:.1%}",
        ),
    ]
    yaxis: dict[str, Any] = {"tickformat": ".1%", "title": {"text": "completeness"}}
    if judged:
        # Two points at least, so that 99.0% and 100.0% are told apart and not drawn as one tick.
        yaxis["range"] = fitted_range(
            [r["completeness"] for r in judged] + [r["floor"] for r in floors if r["floor"] is not None],
            min_span=0.02,
            ceiling=1.0,
        )
    layout = base_layout("Completeness ratio", yaxis, hovermode="x unified")
    if not with_ratio:
        blank_layout(layout, "this source declares no total: no ratio to draw")
    return {"data": data, "layout": layout}


def breaker_figure(runs: Sequence[dict[str, Any]]) -> Figure:
    with_peak = [r for r in runs if r["breaker_peak_ratio"] is not None]
    shown = decimate(with_peak, key=lambda r: r["breaker_peak_ratio"])
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "peak failure-window ratio",
            "x": [run_x(r) for r in shown],
            "y": [r["breaker_peak_ratio"] for r in shown],
            "customdata": [r["id"] for r in shown],
            "marker": {
                "size": 6,
                "color": [
                    COLORS["incomplete"]
                    if (r["breaker_threshold"] or 2) <= r["breaker_peak_ratio"]
                    else COLORS["collected"]
                    for r in shown
                ],
            },
            "hovertemplate": "peak %{y:.1%}<br>%{x} UTC<br>run %{customdata}: click to open<extra></extra>",
        },
        _line(
            shown, "breaker threshold", "breaker_threshold", COLORS["threshold"], line={"dash": "dash", "shape": "hv"}
        ),
    ]
    layout = base_layout(
        "Peak failure-window ratio per run",
        {"tickformat": ".0%", "range": [0, 1.05], "title": {"text": "bad / window"}},
    )
    if not with_peak:
        blank_layout(layout, "no failure window in these reports")
    return {"data": data, "layout": layout}


def state_steps(
    start: dict[str, int], changes: Sequence[tuple[datetime, dict[str, int]]], end: datetime | None = None
) -> tuple[list[datetime], dict[str, list[int]]]:
    """How many proxies were in each state: `start` before the first change, then after each bucket
    of `changes` (oldest first, per state the proxies that entered minus those that left), and
    still at `end` when given (a step line otherwise stops at the last change)."""
    tally = {state: start.get(state, 0) for state in PROXY_STATES}
    times: list[datetime] = []
    counts: dict[str, list[int]] = {state: [] for state in PROXY_STATES}

    def record(at: datetime) -> None:
        times.append(at)
        for state in PROXY_STATES:
            counts[state].append(tally[state])

    if changes:
        record(changes[0][0])
    for at, delta in changes:
        for state in PROXY_STATES:
            tally[state] += delta.get(state, 0)
        record(at)
    if changes and end is not None and end > times[-1]:
        record(end)
    return times, counts


def start_of(end: dict[str, int], changes: Sequence[tuple[datetime, dict[str, int]]]) -> dict[str, int]:
    """The counts before `changes`, from the counts after them."""
    return {state: end.get(state, 0) - sum(delta.get(state, 0) for _, delta in changes) for state in PROXY_STATES}


def _decimated_steps(
    times: list[datetime], counts: dict[str, list[int]]
) -> tuple[list[datetime], dict[str, list[int]]]:
    if len(times) <= MAX_POINTS:
        return times, counts
    keep = decimate(list(range(len(times))), key=lambda i: counts["eligible"][i])
    return [times[i] for i in keep], {s: [v[i] for i in keep] for s, v in counts.items()}


def _proxy_axis(counts: dict[str, list[int]]) -> dict[str, Any]:
    """A count axis from a little under 0: at 0 exactly, its "0" sat in the corner where the first
    date's label may fall (on a phone "Nov 23 2026" ran into it, on some days and not others)."""
    top = max((max(values, default=0) for values in counts.values()), default=0) or 1
    return {"range": [-0.06 * top, 1.05 * top], "title": {"text": "proxies"}}


def proxy_states_figure(
    steps: tuple[list[datetime], dict[str, list[int]]], title: str = "Proxy states (proxies this source used)"
) -> Figure:
    times, counts = _decimated_steps(*steps)
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": state.replace("_", " "),
            "x": [_iso(t) for t in times],
            "y": counts[state],
            "line": {"shape": "hv", "color": COLORS[state], "width": 1.5},
        }
        for state in PROXY_STATES
    ]
    layout = base_layout(title, _proxy_axis(counts))
    if not times:
        blank_layout(layout, "no proxy transitions reported")
    return {"data": data, "layout": layout}


def capacity_figure(steps: tuple[list[datetime], dict[str, list[int]]]) -> Figure:
    """Eligible proxies over time, all pools: the capacity the crawlers really had."""
    times, counts = _decimated_steps(*steps)
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "eligible",
            "x": [_iso(t) for t in times],
            "y": counts["eligible"],
            "fill": "tozeroy",
            "line": {"shape": "hv", "color": COLORS["eligible"], "width": 1.5},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "excluded",
            "x": [_iso(t) for t in times],
            "y": counts["excluded"],
            "line": {"shape": "hv", "color": COLORS["excluded"], "width": 1.5},
        },
    ]
    layout = base_layout("Eligible capacity over time", _proxy_axis(counts))
    if not times:
        blank_layout(layout, "no proxy transitions in this period")
    return {"data": data, "layout": layout}


def window_has_drawing(raw_window: Any, events: Sequence[FailureWindowEvent]) -> bool:
    """Whether a run's failure window has anything to draw: a ratio series or an event. A window of
    settings alone drew empty axes, "request sequence 0 to 0", with only the threshold across them."""
    if not isinstance(raw_window, dict):
        return False
    points = [p for p in raw_window.get("series") or [] if isinstance(p, (list, tuple)) and len(p) == 2]
    return bool(points or events)


def failure_window_figure(raw_window: dict[str, Any] | None, events: Sequence[FailureWindowEvent]) -> Figure:
    """A run's breaker: ratio over request sequence, the threshold, min_samples and its events."""
    window = raw_window if isinstance(raw_window, dict) else {}
    series = [p for p in window.get("series") or [] if isinstance(p, (list, tuple)) and len(p) == 2]
    series = decimate(series, key=lambda p: p[1], limit=MAX_POINTS * 2)
    threshold = window.get("threshold")
    min_samples = window.get("min_samples")
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "bad / window",
            "x": [p[0] for p in series],
            "y": [p[1] for p in series],
            "line": {"color": COLORS["collected"], "width": 1.5},
        },
    ]
    # kind: (symbol, color, size)
    symbols = {
        "tripped": ("x", COLORS["incomplete"], 12),
        "probe": ("circle-open", COLORS["probe_allowed"], 12),
        "resumed": ("triangle-up", COLORS["eligible"], 12),
        # A breaker that trips on its last probe stops at the same request: a filled square hid the trip's
        # cross, and an open one of the same 12 px read with it as one red square with a black edge. Open
        # and larger, it frames the cross.
        "stopped": ("square-open", "#111827", 20),
    }
    for kind, (symbol, color, size) in symbols.items():
        of_kind = [e for e in events if e.kind == kind]
        if not of_kind:
            continue
        data.append(
            {
                "type": "scatter",
                # Labels on hover, not drawn: probes a few requests apart piled their labels into one
                # smudge, and the event table under the chart gives every number.
                "mode": "markers",
                "name": kind,
                "hovertemplate": "%{text}<br>request %{x:,}<extra></extra>",
                "x": [e.seq for e in of_kind],
                "y": [e.ratio if e.ratio is not None else _probe_ratio(e, threshold) for e in of_kind],
                "text": [_event_label(e) for e in of_kind],
                "marker": {
                    "symbol": symbol,
                    "size": size,
                    "color": color,
                    "line": {"width": 2, "color": color},
                },
            }
        )
    shapes = []
    if threshold is not None:
        shapes.append(_hline(threshold, COLORS["threshold"]))
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"threshold {threshold:.{PERCENT_DIGITS}%}",
                "x": [None],
                "y": [None],
                "line": {"color": COLORS["threshold"], "dash": "dash"},
            }
        )
    if min_samples:
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "x0": min_samples,
                "x1": min_samples,
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "line": {"color": COLORS["declared"], "dash": "dot", "width": 1},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"min_samples {min_samples}",
                "x": [None],
                "y": [None],
                "line": {"color": COLORS["declared"], "dash": "dot"},
            }
        )
    # Not "Failure window" again: the panel's heading says that just above. The ratio's axis starts a
    # little under 0%, or its "0%" sat on the request axis's "0" in one corner and read as "0%0".
    layout = base_layout(
        "Bad share of the window, per request",
        {"tickformat": ".0%", "range": [-0.06, 1.05], "dtick": 0.2},
        shapes=shapes,
    )
    layout["xaxis"]["title"] = {"text": "request sequence", "standoff": 4}
    layout["legend"]["y"] = -0.28
    if not series and not events:
        blank_layout(layout, "the report carried no failure-window series or events")
    return {"data": data, "layout": layout}


def _probe_ratio(event: FailureWindowEvent, threshold: float | None) -> float | None:
    if event.sent:
        return (event.bad or 0) / event.sent
    return threshold


def _event_label(event: FailureWindowEvent) -> str:
    if event.kind == "probe" and event.sent:
        return f"probe {event.bad or 0}/{event.sent}"
    return event.kind


def blank_layout(layout: dict[str, Any], text: str) -> None:
    """An empty chart says why, instead of showing axes with made-up ranges. `meta.blank` lets a page
    collapse it into that one line of text instead (the source page does)."""
    layout["meta"] = {"blank": text}
    layout["annotations"] = [_empty_note(text)]
    layout["height"] = 160
    layout["xaxis"].update(showticklabels=False, showgrid=False)
    layout["yaxis"].update(showticklabels=False, showgrid=False, title={"text": ""})


def _empty_note(text: str) -> dict[str, Any]:
    return {
        "text": text,
        "xref": "paper",
        "yref": "paper",
        "x": 0.5,
        "y": 0.5,
        "showarrow": False,
        "font": {"color": "#6b7280"},
    }
