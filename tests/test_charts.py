"""Figures are valid Plotly and stay small however long the history is."""

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from completeness.verdicts import TrendReference
from sources.pages.charts import coverage as coverage_chart
from sources.pages.charts import figures as charts


def runs(n: int, silent_every: int = 0) -> list[dict]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        silent = bool(silent_every) and i % silent_every == 0
        out.append(
            {
                "id": i + 1,
                "started_at": start + timedelta(hours=6 * i),
                "collected": 500 if silent else 1000 + i % 7,
                "declared_total": 1000,
                "removed": 0,
                "baseline_collected": 1000,
                "verdict": "incomplete" if silent else "complete",
                "silent": silent,
                "completeness": 0.5 if silent else 1.0,
                "breaker_peak_ratio": (i % 10) / 20,
                "breaker_threshold": 0.35,
                "accepted_as_baseline": False,
            }
        )
    return out


def changes() -> list[tuple[datetime, dict[str, int]]]:
    """p1 eligible -> cooling -> probe allowed -> eligible, p2 eligible -> excluded, one bucket each."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        (at, {"eligible": -1, "cooling": 1}),
        (at + timedelta(minutes=5), {"cooling": -1, "probe_allowed": 1}),
        (at + timedelta(minutes=6), {"eligible": -1, "excluded": 1}),
        (at + timedelta(minutes=7), {"probe_allowed": -1, "eligible": 1}),
    ]


ALL_FIGURES = [
    lambda: charts.collected_figure(runs(50, 7)),
    lambda: charts.completeness_figure(runs(50, 7), 0.99),
    lambda: charts.breaker_figure(runs(50)),
    lambda: charts.proxy_states_figure(charts.state_steps({"eligible": 2}, changes())),
    lambda: charts.capacity_figure(
        charts.state_steps({"eligible": 3}, changes(), end=datetime(2026, 1, 2, tzinfo=UTC))
    ),
    lambda: charts.failure_window_figure(
        {"threshold": 0.35, "min_samples": 50, "series": [[0, 0.1], [200, 0.4]]},
        [SimpleNamespace(kind="tripped", seq=200, ratio=0.4, sent=None, bad=None)],
    ),
    lambda: charts.collected_figure([]),
    lambda: charts.completeness_figure([], 0.99),
    lambda: charts.breaker_figure([]),
    lambda: charts.proxy_states_figure(charts.state_steps({}, [])),
    lambda: coverage_chart.coverage_figure(with_fields(runs(50, 7))),
    lambda: coverage_chart.coverage_figure(runs(5)),
    lambda: charts.collected_figure(
        [{**r, "declared_total": None} for r in runs(50)],
        charts.TrendLines(
            [TrendReference(3, 1010, datetime(2026, 1, 1, tzinfo=UTC))] * 50, drop_threshold=0.25, days=30, min_runs=3
        ),
    ),
]


def with_fields(history: list[dict]) -> list[dict]:
    for i, run in enumerate(history):
        run["field_counts"] = {f"f{k}": run["collected"] * (10 - k) // 10 for k in range(11)}
        run["field_floors"] = {f"f{k}": 0.85 - k / 10 for k in range(11)} if i else None
    return history


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


def test_state_steps_add_up_each_bucket_of_changes():
    times, counts = charts.state_steps({"eligible": 2}, changes())
    assert counts["eligible"] == [2, 1, 1, 0, 1]
    assert counts["cooling"] == [0, 1, 0, 0, 0]
    assert counts["excluded"][-1] == 1
    assert len(times) == 5


def test_state_steps_reach_the_end_and_start_from_the_end_counts():
    end = datetime(2026, 1, 2, tzinfo=UTC)
    start = charts.start_of({"eligible": 1, "excluded": 1}, changes())
    assert start["eligible"] == 2 and start["excluded"] == 0
    times, counts = charts.state_steps(start, changes(), end=end)
    assert times[-1] == end and counts["eligible"][-1] == 1


def test_decimate_keeps_order_and_extremes():
    values = list(range(1000)) + [-5] + list(range(1000))
    kept = charts.decimate(values, key=lambda v: v, limit=100)
    assert len(kept) <= 100 and -5 in kept and 999 in kept
    assert kept.index(-5) > kept.index(999) - 5  # order preserved around the dip


def test_figure_json_is_safe_inside_a_script_element():
    text = charts.to_json({"data": [], "layout": {"title": {"text": "</script><script>alert(1)</script>"}}})
    assert "</script>" not in text and "<" not in text


def test_trend_lines_are_drawn_only_where_the_rule_speaks():
    history = [{**r, "declared_total": None if i % 2 else 1000} for i, r in enumerate(runs(6))]
    references = [None, TrendReference(1, 1000, datetime(2026, 1, 1, tzinfo=UTC))] + [
        TrendReference(3, 1000, datetime(2026, 1, 1, tzinfo=UTC))
    ] * 4
    figure = charts.collected_figure(history, charts.TrendLines(references, drop_threshold=0.25, days=30, min_runs=3))
    best = next(t for t in figure["data"] if t["name"] == "trend: best of 30 days")
    floor = next(t for t in figure["data"] if t["name"].startswith("trend fires below"))
    # Run 2 has too few good runs behind it; runs 3 and 5 declare a total.
    assert best["y"] == [None, None, None, 1000, None, 1000]
    assert floor["y"] == [None, None, None, 750.0, None, 750.0]


def test_the_coverage_chart_keeps_eight_fields_and_caps_its_markers():
    figure = coverage_chart.coverage_figure(with_fields(runs(2000)))
    lines = [t for t in figure["data"] if t.get("showlegend", True) and t["name"][1:].isdigit()]
    assert len(lines) == coverage_chart.MAX_LINES
    assert all(len(t["y"]) <= charts.MAX_POINTS for t in figure["data"])
    assert "left out" in figure["layout"]["title"]["text"]


def test_a_fields_band_is_shaded_only_over_the_runs_that_had_one():
    # Run 3 was judged against an operator's minimum (a floor, no usual coverage): no band there.
    # One pair of edges across that gap had plotly.js shade it all the same (it fills `tonexty` across gaps).
    history = runs(5)
    for i, run in enumerate(history):
        run["field_counts"] = {"price": 950}
        run["field_floors"] = {"price": 0.85}
        run["field_usual"] = {"price": 0.95} if i != 2 else {}
    data = coverage_chart.coverage_figure(history)["data"]
    price_x = next(t for t in data if t["name"] == "price")["x"]
    bands = [t for t in data if t["name"] == "price normal"]
    assert [t["x"] for t in bands] == [price_x[:2], price_x[3:]]
    assert all(t["fill"] == "tonexty" for t in bands)
    edges = [t for t in data if t["name"] == "price usually"]
    assert [t["x"] for t in edges] == [price_x[:2], price_x[3:]]
    assert all(data.index(band) == data.index(edge) + 1 for band, edge in zip(bands, edges, strict=True))
    go.Figure({"data": data})


def test_paused_runs_leave_a_gap_in_the_collected_line_not_a_drop_to_zero():
    runs = [
        {
            "id": n,
            "x": f"2026-11-{n:02} 03:00:00",
            "collected": 0 if n == 3 else 4000,
            "declared_total": None,
            "baseline_collected": 4000,
            "verdict": "paused" if n == 3 else "complete",
            "silent": False,
            "accepted_as_baseline": False,
        }
        for n in range(1, 6)
    ]
    figure = charts.collected_figure(runs)
    assert figure["data"][0]["y"] == [4000, 4000, None, 4000, 4000]
    low, high = figure["layout"]["yaxis"]["range"]
    assert 3000 < low < 4000 < high


def test_the_expected_band_is_drawn_where_runs_had_a_normal_and_absent_before():
    history = [{**run, "declared_total": None} for run in runs(40)]
    assert not any(
        trace["name"] in ("expected", "normal from (low)") for trace in charts.collected_figure(history)["data"]
    )
    for index, run in enumerate(history):
        run["expected"], run["expected_low"] = (1003, 952) if index >= 20 else (None, None)
    figure = charts.collected_figure(history)
    traces = {trace["name"]: trace for trace in figure["data"]}
    assert traces["expected"]["y"][:20] == [None] * 20 and traces["expected"]["y"][20:] == [1003] * 20
    assert traces["normal from (low)"]["y"][39] == 952
    # One legend entry for the band: its edges and shading are in the expected line's group.
    names = (
        "normal, low to expected",
        "normal, expected to high",
        "normal from (low)",
        "expected",
        "normal up to (high)",
    )
    band = [traces[name] for name in names]
    assert {t["legendgroup"] for t in band} == {"normal"}
    assert [t.get("showlegend", True) for t in band] == [False, False, False, True, False]
    # The upper edge: the floor mirrored in logs (1003² / 952), shaded from expected up.
    high = traces["normal up to (high)"]
    assert high["y"][:20] == [None] * 20 and high["y"][39] == round(1003 * 1003 / 952) == 1057
    # The shading: along the lower edge over the 20 runs with a normal, then back along the upper one.
    below, above = traces["normal, low to expected"], traces["normal, expected to high"]
    assert below["fill"] == above["fill"] == "toself" and below["hoverinfo"] == above["hoverinfo"] == "skip"
    assert below["y"] == [952] * 20 + [1003] * 20 and above["y"] == [1003] * 20 + [1057] * 20
    assert below["x"] == traces["expected"]["x"][20:] + traces["expected"]["x"][20:][::-1]
    go.Figure(figure)  # valid Plotly


def test_the_band_is_drawn_only_over_runs_the_normal_judged():
    """A run that declared a total is judged against it, never its normal, and a paused run is not
    judged: gaps there. The band once stood over a run that failed on its declared total, the run's
    marker inside it, and over the shaded pause as if the normal rose."""
    history = runs(4)
    for run in history:
        run.update(declared_total=None, expected=1003, expected_low=952)
    history[1].update(declared_total=1100)
    history[2].update(verdict="paused", collected=0)
    figure = charts.collected_figure(history)
    traces = {trace["name"]: trace for trace in figure["data"]}
    assert traces["expected"]["y"] == [1003, None, None, 1003]
    assert traces["normal from (low)"]["y"] == [952, None, None, 952]
    assert traces["normal up to (high)"]["y"] == [1057, None, None, 1057]
    assert traces["collected"]["y"][2] is None
    # The shading is closed on each side of the gap: plotly.js fills `tonexty` across a gap, and drew a
    # wedge from the band before a pause to the band after it.
    x = traces["expected"]["x"]
    below = traces["normal, low to expected"]
    assert below["fill"] == "toself"
    assert below["x"] == [x[0], x[0], None, x[3], x[3]] and below["y"] == [952, 1003, None, 952, 1003]
    assert all(trace.get("fill") in (None, "toself") for trace in figure["data"])
    assert figure["layout"]["title"]["text"].endswith("its normal")


def test_a_source_whose_every_run_declared_a_total_draws_no_normal():
    history = runs(3)
    for run in history:
        run.update(declared_total=1020, expected=1003, expected_low=952)
    figure = charts.collected_figure(history)
    names = {trace["name"] for trace in figure["data"]}
    assert "expected" not in names and "declared total" in names
    assert "its normal" not in figure["layout"]["title"]["text"]


def test_the_time_axis_fits_a_young_source_and_keeps_its_last_run_whole():
    from datetime import UTC, datetime, timedelta

    from sources.pages.charts.ranges import ChartRange

    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    span = ChartRange.of("90d", now)
    # A week-old source: the axis starts at its first run, less a margin, not 90 days back.
    start, end = span.axis("2026-11-24 12:00:00")
    assert timedelta(days=7) < end - start < timedelta(days=7.5)
    assert start < datetime(2026, 11, 24, 12, tzinfo=UTC) and end > now
    # A source older than the range (runs loaded before it): the whole range, and a margin past now.
    start, end = span.axis("2026-07-01 00:00:00")
    assert start < span.start and end - now == span.start - start >= timedelta(hours=1)
    assert span.axis(None) == span.axis("2026-07-01 00:00:00")


def test_field_names_are_drawn_as_text_never_as_plotly_links_or_markup():
    # A crawler names its fields; Plotly draws legends, titles and hover labels as rich text.
    evil = [f'<a href="https://evil.example/{k}">PRICE{k}</a>' for k in range(11)]
    history = with_fields(runs(20))
    for run in history:
        run["field_counts"] = {evil[k]: run["collected"] * (10 - k) // 10 for k in range(11)}
        # The first field below a floor above it: its name is also a marker's hover text.
        run["field_floors"] = {evil[k]: (0.85 - k / 10) + (0.5 if k == 0 else 0) for k in range(11)}
    figure = coverage_chart.coverage_figure(history)
    drawn = json.dumps(figure)
    assert "<a " not in drawn and "</a>" not in drawn and 'href=\\"https' not in drawn.replace("&lt;a href", "")
    names = [trace["name"] for trace in figure["data"]]
    assert '&lt;a href="https://evil.example/0"&gt;PRICE0&lt;/a&gt;' in names
    [below] = [trace for trace in figure["data"] if trace["name"] == "below its floor"]
    assert below["text"] and all(text.startswith("&lt;a href=") for text in below["text"])
    assert "left out" in figure["layout"]["title"]["text"] and "&lt;a href" in figure["layout"]["title"]["text"]
    # The names reach the hover through the trace, so a `%{...}` in one is not a template.
    assert all("%{fullData.name}" in t["hovertemplate"] for t in figure["data"][:2])
    go.Figure(figure)


def test_plain_field_names_are_drawn_unchanged():
    figure = coverage_chart.coverage_figure(with_fields(runs(20)))
    assert {"f1", "f1 floor"} <= {trace["name"] for trace in figure["data"]}


def test_breaker_events_name_themselves_on_hover_not_as_text_that_piles_up():
    probes = [SimpleNamespace(kind="probe", seq=2600 + n, ratio=None, sent=20, bad=16 + n) for n in range(3)]
    figure = charts.failure_window_figure({"threshold": 0.35, "series": [[0, 0.1], [2600, 0.6]]}, probes)
    [trace] = [t for t in figure["data"] if t["name"] == "probe"]
    assert trace["mode"] == "markers"
    assert trace["text"] == ["probe 16/20", "probe 17/20", "probe 18/20"]
    assert trace["hovertemplate"].startswith("%{text}")


def test_a_stop_at_the_request_of_a_trip_leaves_the_trip_visible():
    at_once = [SimpleNamespace(kind=kind, seq=4000, ratio=0.6, sent=None, bad=None) for kind in ("tripped", "stopped")]
    figure = charts.failure_window_figure({"threshold": 0.35, "series": [[0, 0.1], [4000, 0.6]]}, at_once)
    markers = {t["name"]: t["marker"]["symbol"] for t in figure["data"] if t["name"] in ("tripped", "stopped")}
    assert markers["stopped"].endswith("-open") and not markers["tripped"].endswith("-open")
    # The open square frames the cross with room to spare (at one size the cross filled it).
    sizes = {t["name"]: t["marker"]["size"] for t in figure["data"] if t["name"] in ("tripped", "stopped")}
    assert sizes["stopped"] >= 1.5 * sizes["tripped"], sizes


def test_a_run_that_collected_nothing_is_drawn_whole_on_the_axis():
    # Clipped at the axis, the silent diamond of a run that collected nothing (the worst case) was cut
    # in half by it. The range starts a pad under 0, no further: at 0 exactly, the axis's "0" sat in
    # the corner where the first date's label falls on some days.
    history = runs(3)
    history[2].update(collected=0, verdict="incomplete", silent=True)
    figure = charts.collected_figure(history)
    silent = next(t for t in figure["data"] if t["name"].startswith("incomplete, silent"))
    assert silent["y"] == [0] and silent["cliponaxis"] is False
    bottom, top = figure["layout"]["yaxis"]["range"]
    assert -0.1 * top < bottom < 0
    go.Figure(figure)  # valid Plotly


def test_paused_runs_leave_a_gap_in_the_completeness_ratio_not_a_drop_to_zero():
    # A crawler's paused report still carries its declared total, so it has a ratio (0 of 2,990): drawn,
    # it read as an outage on the ratio chart beside the collected chart's gap for the same run.
    history = runs(5)
    history[2].update(verdict="paused", collected=0, completeness=0.0, completeness_floor=None)
    figure = charts.completeness_figure(history, 0.99)
    ratio, floor = figure["data"][0], figure["data"][-1]
    assert ratio["y"] == [1.0, 1.0, None, 1.0, 1.0]
    assert floor["y"][2] is None
    low, high = figure["layout"]["yaxis"]["range"]
    assert 0.9 < low < 0.99 and high >= 1.0
    go.Figure(figure)  # valid Plotly


def test_a_ratio_at_its_top_has_no_axis_above_100_percent_and_one_over_it_is_drawn():
    # Runs at 99.4-100% against a 99% floor: the span was widened around its middle, to 100.5%, and the
    # axis labelled a tick "100.5%" that no run can read.
    history = runs(6)
    for run, ratio in zip(history, (1.0, 0.994, 1.0, 0.998, 1.0, 0.996), strict=True):
        run["completeness"] = ratio
    low, high = charts.completeness_figure(history, 0.99)["layout"]["yaxis"]["range"]
    assert low < 0.99 - 0.001 and 1.0 < high < 1.0025, (low, high)
    # A run over its declared total (collected more than declared less removed) stays on the chart.
    history[-1]["completeness"] = 1.004
    low, high = charts.completeness_figure(history, 0.99)["layout"]["yaxis"]["range"]
    assert high > 1.004 and low < 0.99, (low, high)
