"""Figures are valid Plotly and stay small however long the history is."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from sources import charts


def runs(n: int, silent_every: int = 0) -> list[dict]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        silent = bool(silent_every) and i % silent_every == 0
        out.append({
            "id": i + 1, "started_at": start + timedelta(hours=6 * i), "collected": 500 if silent else 1000 + i % 7,
            "declared_total": 1000, "removed": 0, "baseline_collected": 1000, "verdict": "incomplete" if silent else "complete",
            "silent": silent, "completeness": 0.5 if silent else 1.0, "breaker_peak_ratio": (i % 10) / 20,
            "breaker_threshold": 0.35, "accepted_as_baseline": False,
        })
    return out


def transitions() -> list[SimpleNamespace]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        SimpleNamespace(proxy="p1", at=at, from_state="eligible", to_state="cooling"),
        SimpleNamespace(proxy="p1", at=at + timedelta(minutes=5), from_state="cooling", to_state="probe_allowed"),
        SimpleNamespace(proxy="p2", at=at + timedelta(minutes=6), from_state="eligible", to_state="excluded"),
        SimpleNamespace(proxy="p1", at=at + timedelta(minutes=7), from_state="probe_allowed", to_state="eligible"),
    ]


ALL_FIGURES = [
    lambda: charts.collected_figure(runs(50, 7)),
    lambda: charts.completeness_figure(runs(50, 7), 0.99),
    lambda: charts.breaker_figure(runs(50)),
    lambda: charts.proxy_states_figure(transitions()),
    lambda: charts.capacity_figure(transitions(), {"p3": "eligible"}),
    lambda: charts.failure_window_figure({"threshold": 0.35, "min_samples": 50, "series": [[0, 0.1], [200, 0.4]]},
                                         [SimpleNamespace(kind="tripped", seq=200, ratio=0.4, sent=None, bad=None)]),
    lambda: charts.collected_figure([]),
    lambda: charts.completeness_figure([], 0.99),
    lambda: charts.breaker_figure([]),
    lambda: charts.proxy_states_figure([]),
]


@pytest.mark.parametrize("build", ALL_FIGURES)
def test_every_figure_is_valid_plotly(build):
    # graph_objects validates every property: a typo in a figure dict fails here, not in the browser.
    go.Figure(build())


def test_long_histories_are_downsampled_and_keep_every_dip():
    year = runs(4 * 365)
    year[700]["collected"] = 3  # one bad run in the middle of a year
    figure = charts.collected_figure(year)
    line = figure["data"][0]
    assert len(line["y"]) <= charts.MAX_POINTS
    assert 3 in line["y"]


def test_short_histories_are_not_downsampled():
    figure = charts.collected_figure(runs(40))
    assert len(figure["data"][0]["y"]) == 40


def test_silent_markers_are_all_kept_up_to_the_marker_limit():
    figure = charts.collected_figure(runs(600, silent_every=5))
    silent = next(t for t in figure["data"] if t["name"].startswith("incomplete, silent"))
    assert len(silent["y"]) == 120
    many = charts.collected_figure(runs(4000, silent_every=2))
    silent = next(t for t in many["data"] if t["name"].startswith("incomplete, silent"))
    assert len(silent["y"]) <= charts.MAX_MARKERS


def test_state_counts_follow_each_proxy():
    times, counts = charts.state_counts(transitions())
    assert counts["eligible"] == [2, 1, 1, 0, 1]
    assert counts["cooling"] == [0, 1, 0, 0, 0]
    assert counts["excluded"][-1] == 1


def test_decimate_keeps_order_and_extremes():
    values = list(range(1000)) + [-5] + list(range(1000))
    kept = charts.decimate(values, key=lambda v: v, limit=100)
    assert len(kept) <= 100 and -5 in kept and 999 in kept
    assert kept.index(-5) > kept.index(999) - 5  # order preserved around the dip


def test_figure_json_is_safe_inside_a_script_element():
    text = charts.to_json({"data": [], "layout": {"title": {"text": "</script><script>alert(1)</script>"}}})
    assert "</script>" not in text and "<" not in text
