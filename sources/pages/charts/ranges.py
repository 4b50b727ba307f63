"""The source page's time range (?range=7d|30d|90d|1y): what its charts load and show; and the y
range that fits what they draw.

The range decides what is loaded, not only what is shown: a week of runs is a week of rows, and the
y axes fit what is drawn (plotly fits them to every point of a trace, shown or not). The trend lines
need their own window before the first run shown, so runs are loaded from that far back, judged,
and then cut to the range (`visible`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

RANGES = {"7d": ("7 d", 7), "30d": ("30 d", 30), "90d": ("90 d", 90), "1y": ("1 y", 365)}
# The demo's 60 days fit; a quarter shows a slow decline and still answers in one screen.
DEFAULT_RANGE = "90d"
PAUSED_FILL = "#9ca3af"
# The x axis reaches this share of its span (at least an hour) past its first and last instant.
AXIS_MARGIN = 0.02
MIN_AXIS_MARGIN = timedelta(hours=1)


def _text(moment: datetime) -> str:
    # The form of the runs' `x` (selectors.chart_runs): UTC, compared as text.
    return moment.strftime("%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True)
class ChartRange:
    key: str
    start: datetime
    end: datetime

    @classmethod
    def of(cls, value: str | None, now: datetime) -> ChartRange:
        # An unknown value is the default, never an error (the pages never answer 500 on input).
        key = value if value in RANGES else DEFAULT_RANGE
        return cls(key=key, start=now - timedelta(days=RANGES[key][1]), end=now)

    def choices(self) -> list[dict[str, Any]]:
        return [{"key": key, "label": label, "current": key == self.key} for key, (label, _) in RANGES.items()]

    def visible(self, runs: Sequence[dict[str, Any]], *aligned: Sequence[Any]) -> tuple[list[Any], ...]:
        """The runs inside the range, and the same items of each sequence aligned with them."""
        start = _text(self.start)
        first = next((i for i, run in enumerate(runs) if run["x"] >= start), len(runs))
        return (list(runs[first:]), *(list(items[first:]) for items in aligned))

    def axis(self, first_run: str | None = None) -> tuple[datetime, datetime]:
        """The x axis: the range, or from the source's first run when it began inside the range (a
        week-old source's runs were squashed into one column of a 90-day axis), with a margin at both
        ends so that the first and the latest run's markers are drawn whole, not cut by the edge."""
        start = self.start
        if first_run is not None and first_run > _text(self.start):
            start = max(self.start, datetime.fromisoformat(first_run).replace(tzinfo=self.start.tzinfo))
        margin = max((self.end - start) * AXIS_MARGIN, MIN_AXIS_MARGIN)
        return start - margin, self.end + margin

    def apply(
        self, figure: dict[str, Any], paused: Sequence[tuple[datetime, datetime]], first_run: str | None = None
    ) -> dict[str, Any]:
        """The range as the figure's x axis (fitted to the source's runs, see `axis`), and the paused
        periods shaded grey behind the data. `first_run`: the x of the earliest run loaded, before the
        range cut it."""
        layout = figure["layout"]
        layout["xaxis"]["range"] = [_text(moment) for moment in self.axis(first_run)]
        if layout.get("annotations"):  # an empty chart says why; shading its blank area says nothing
            return figure
        layout["xaxis"].setdefault("title", {"text": "time (UTC)", "standoff": 4})
        # Below the axis title, which would otherwise be drawn over the legend's first row.
        layout["legend"]["y"] = min(layout["legend"].get("y", -0.2), -0.3)
        shaded = [(max(a, self.start), min(b, self.end)) for a, b in paused if b > self.start and a < self.end]
        if shaded:
            layout["shapes"] = [
                *layout.get("shapes", []),
                *(
                    {
                        "type": "rect",
                        "xref": "x",
                        "yref": "paper",
                        "x0": _text(a),
                        "x1": _text(b),
                        "y0": 0,
                        "y1": 1,
                        "fillcolor": PAUSED_FILL,
                        "opacity": 0.25,
                        "line": {"width": 0},
                        "layer": "below",
                    }
                    for a, b in shaded
                ),
            ]
            # A legend entry for the shading, which has none of its own.
            figure["data"].append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "paused",
                    "x": [None],
                    "y": [None],
                    "marker": {"symbol": "square", "size": 12, "color": PAUSED_FILL, "opacity": 0.5},
                }
            )
        return figure


def fitted_range(values: Sequence[float | None], min_span: float, ceiling: float | None = None) -> list[float] | None:
    """A y range around the values (the floors and baselines among them), not from zero: an 8% drop
    must not be a hairline. A span under `min_span` is widened to it around the middle, so that a
    flat line gets readable ticks (plotly's own ±1 around 37,403 labelled every tick 37,403), and
    not past `ceiling` where no value is (a share at 99-100% had a tick at "100.5%", which no run
    can read)."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    low, high = min(present), max(present)
    if high - low < min_span:
        middle = (low + high) / 2
        low, high = middle - min_span / 2, middle + min_span / 2
        if ceiling is not None and high > ceiling >= max(present):
            low, high = ceiling - min_span, ceiling
    pad = (high - low) * 0.08
    # Counts and shares go no further below 0 than the pad: at 0 exactly, the axis's "0" sat in the
    # corner where the first date's label falls on some days (on a phone, "Nov 23 2026" ran into it).
    return [low - pad, high + pad]
