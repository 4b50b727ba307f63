"""The collected chart's trend lines: the reference computed from the chart's own runs is, run for run,
the one sources.ingest.history.trend_reference reads from the database when the run is judged."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from completeness.verdicts.trend import PastRun, trend_references
from sources.ingest import history
from sources.ingest.baselines import accept_as_baseline
from sources.models import Run, Source
from sources.pages.selectors import quality
from sources.pages.selectors import source as selectors
from tests.conftest import EXAMPLES_DIR, report
from tests.test_source_page import figures


def s09_reports() -> list[dict]:
    return [step["report"] for step in json.loads((EXAMPLES_DIR / "s09-slow-decline.json").read_text())["steps"]]


def post_recording_references(api, reports, after=None) -> list:
    """Post each report; just before, ask the database for its trend reference, as ingest would."""
    expected = []
    for body in reports:
        source = Source.objects.filter(slug=body["source"]).first()
        started_at = datetime.fromisoformat(body["started_at"].replace("Z", "+00:00"))
        expected.append(history.trend_reference(source, started_at, source.trend_days) if source else None)
        assert api.post_run(body).status_code == 201, body
        if after is not None:
            after(body)
    return expected


# A week after the example's runs (September 2026), as the series is asked of them: counted from the
# real clock, CHART_HISTORY no longer reached back over the first runs' trend windows from about
# 2027-08-16 03:00 UTC, and their references read unknown.
AFTER_S09 = datetime(2026, 10, 1, tzinfo=UTC)


def series_of(slug: str) -> list:
    source = Source.objects.get(slug=slug)
    now = AFTER_S09
    runs = selectors.chart_runs(source, now)
    return quality.trend_series(runs, source.trend_days, known_from=now - selectors.CHART_HISTORY)


def test_on_the_slow_decline_example_the_series_equals_the_database_reference_at_every_run(api):
    expected = post_recording_references(api, s09_reports())
    assert series_of("ads-slow") == expected
    assert [r.best if r else None for r in expected] == [None] + [1000] * 9
    assert [r.runs if r else 0 for r in expected] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 8]


def test_they_agree_through_an_anchor_an_acceptance_a_rerun_of_one_slot_and_a_late_report(api, staff):
    bodies = s09_reports()
    # A run complete against its own declared total confirms the size: the window reopens there.
    bodies.insert(
        4,
        {
            **bodies[3],
            "run_id": "ads-slow-declared",
            "started_at": "2026-09-17T09:00:00Z",
            "finished_at": "2026-09-17T10:00:00Z",
            "collected": 880,
            "declared_total": 880,
        },
    )
    # A re-run of one slot under a new run_id, and a report that arrives two slots late.
    bodies.append({**bodies[-1], "run_id": "ads-slow-rerun", "collected": 700})
    bodies.append(
        {
            **bodies[2],
            "run_id": "ads-slow-late",
            "started_at": "2026-09-16T15:00:00Z",
            "finished_at": "2026-09-16T16:00:00Z",
            "collected": 930,
        }
    )
    # A dip that drop catches, which an operator accepts as the new size: the window reopens there too.
    bodies.insert(
        8,
        {
            **bodies[7],
            "run_id": "ads-slow-dip",
            "started_at": "2026-09-20T09:00:00Z",
            "finished_at": "2026-09-20T10:00:00Z",
            "collected": 600,
        },
    )
    bodies.append(
        {
            **bodies[-2],
            "run_id": "ads-slow-after",
            "started_at": "2026-09-24T03:00:00Z",
            "finished_at": "2026-09-24T04:00:00Z",
            "collected": 690,
        }
    )

    def accept_the_dip(body):
        if body["run_id"] == "ads-slow-dip":
            run = Run.objects.get(run_id=body["run_id"])
            assert run.verdict == "incomplete"
            accept_as_baseline(run, staff, note="the catalogue really shrank")

    expected = post_recording_references(api, bodies, after=accept_the_dip)
    # Compared in the chart's order (started_at, then arrival), not the order of posting.
    order = list(
        Run.objects.filter(source__slug="ads-slow").order_by("started_at", "id").values_list("run_id", flat=True)
    )
    by_run = dict(zip([b["run_id"] for b in bodies], expected, strict=True))
    assert series_of("ads-slow") == [by_run[run_id] for run_id in order]
    assert by_run["ads-slow-declared"] is not None and by_run["ads-slow-run-005"].anchored_at is not None
    assert by_run["ads-slow-after"].anchored_at == datetime(2026, 9, 20, 9, tzinfo=UTC)  # the accepted dip


def in_the_last_weeks(bodies: list[dict]) -> list[dict]:
    """The reports moved by whole weeks (each run keeps its weekday and hour) so that the last started
    between one and eight days ago: the page draws the default range, counted from now."""

    def at(stamp: str) -> datetime:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    last = max(at(body["started_at"]) for body in bodies)
    shift = timedelta(weeks=(timezone.now() - timedelta(days=1) - last) // timedelta(weeks=1))

    def moved(stamp: str) -> str:
        return (at(stamp) + shift).strftime("%Y-%m-%dT%H:%M:%SZ")

    return [
        {**body, "started_at": moved(body["started_at"]), "finished_at": moved(body["finished_at"])} for body in bodies
    ]


def test_the_collected_chart_draws_the_reference_and_where_the_trend_rule_fires(api, staff_client):
    # Posted as dated in the example (September 2026), the runs left the page's default range of 90
    # days one by one from 2026-12-13 03:00 UTC, and the test failed from then on.
    for body in in_the_last_weeks(s09_reports()):
        api.post_run(body)
    traces = {t["name"]: t for t in figures(staff_client.get("/sources/ads-slow/"))["collected"]["data"]}
    best, fires = traces["trend: best of 30 days"], traces["trend fires below (−25.0%)"]
    # Drawn once the window holds trend_min_runs (3) good runs.
    assert best["y"] == [None, None, None] + [1000] * 7
    assert fires["y"] == [None, None, None] + [750.0] * 7
    assert traces["collected"]["y"][-2:] == [721, 693]


def test_runs_judged_against_the_sources_normal_get_no_count_trend_lines(api, staff_client):
    # A weekday feed at 45% on weekends: its normal is learned after two weeks, and from then on trend
    # reads levels with the rhythm taken out, which a line on the counts does not show.
    month_ago = (timezone.now() - timedelta(days=35)).replace(hour=3, minute=0, second=0, microsecond=0)
    start = month_ago - timedelta(days=month_ago.weekday())  # a Monday, within the page's 90 days
    for day in range(28):
        started = start + timedelta(days=day)
        api.post_run(
            report(
                source="weekday-feed",
                run_id=f"d{day}",
                started_at=started.isoformat(),
                finished_at=(started + timedelta(hours=1)).isoformat(),
                collected=450 if started.weekday() >= 5 else 1000,
            )
        )
    figure = figures(staff_client.get("/sources/weekday-feed/"))["collected"]
    traces = {t["name"]: t for t in figure["data"]}
    learned = [expected is not None for expected in traces["expected"]["y"]]
    assert learned.index(True) == 15 and all(learned[15:])
    fires = traces["trend fires below (−25.0%)"]["y"]
    assert all(floor is not None for floor in fires[3:15]) and fires[15:] == [None] * 13
    assert figure["layout"]["title"]["text"] == "Collected vs baseline and its normal"


def test_a_source_that_declares_its_total_gets_no_trend_lines(api, staff_client):
    for n in range(5):
        api.post_run(
            report(
                run_id=f"r{n}",
                started_at=f"2026-09-1{n}T03:00:00Z",
                finished_at=f"2026-09-1{n}T04:00:00Z",
                declared_total=1000,
            )
        )
    names = {t["name"] for t in figures(staff_client.get("/sources/shop/"))["collected"]["data"]}
    assert not any(name.startswith("trend") for name in names)


def at(day: int) -> datetime:
    return datetime(2026, 9, 1, tzinfo=UTC) + timedelta(days=day)


def test_a_window_reaching_before_the_loaded_runs_draws_nothing_rather_than_a_wrong_line():
    runs = [PastRun(key=day, started_at=at(day), collected=1000 - day, good=True, confirms=False) for day in range(40)]
    references = trend_references(runs, 30, known_from=at(0))
    assert references[:30] == [None] * 30  # their 30 days begin before day 0
    assert references[30].best == 1000 and references[30].runs == 30
    assert references[31].best == 999


def test_a_confirming_run_inside_the_loaded_runs_makes_an_early_window_known():
    runs = [PastRun(key=day, started_at=at(day), collected=1000, good=True, confirms=day == 2) for day in range(6)]
    references = trend_references(runs, 30, known_from=at(0))
    assert references[:3] == [None, None, None]
    assert [r.runs for r in references[3:]] == [1, 2, 3] and references[5].anchored_at == at(2)


@pytest.mark.parametrize("good", [False, True])
def test_a_run_is_never_part_of_its_own_window(good):
    runs = [
        PastRun(key=1, started_at=at(0), collected=500, good=True, confirms=False),
        PastRun(key=2, started_at=at(1), collected=2000, good=good, confirms=False),
    ]
    assert trend_references(runs, 30)[1].best == 500


@pytest.mark.parametrize("seed", range(40))
def test_the_sliding_pass_agrees_with_walking_each_window(seed):
    """Random histories with re-runs of one slot, late reports, confirming runs and a partial load."""
    import random

    from completeness.verdicts.trend import _reference_among

    rng = random.Random(seed)
    arrivals = []
    for key in range(rng.randint(1, 120)):
        slot = key // 2 if rng.random() < 0.8 else max(0, key // 2 - rng.randint(1, 40))  # some arrive late
        arrivals.append(
            PastRun(
                key=key,
                started_at=at(0) + timedelta(hours=12 * slot),
                collected=rng.randint(500, 1500),
                good=rng.random() < 0.8,
                confirms=rng.random() < 0.05,
            )
        )
    runs = sorted(arrivals, key=lambda run: (run.started_at, run.key))
    days = rng.choice([1, 3, 10, 30])
    known_from = rng.choice([None, at(0), at(5)])
    expected = [_reference_among(runs, index, timedelta(days=days), known_from) for index in range(len(runs))]
    assert trend_references(runs, days, known_from=known_from) == expected
