"""trend: the slow decline that never loses more than drop_threshold between two runs."""

import json
from datetime import UTC, datetime

from completeness.report import RunReport
from completeness.verdicts import Baseline, History, RuleSettings, TrendReference, judge
from sources.ingest.baselines import accept_as_baseline
from sources.models import Run, Source
from tests.conftest import report

DEFAULTS = RuleSettings()
BEST_DAY = datetime(2026, 9, 14, 3, tzinfo=UTC)


def make(**fields) -> RunReport:
    return RunReport.model_validate_json(json.dumps(report(**fields)))


def trend_finding(collected, *, best=1000, runs=3, baseline=None, settings=DEFAULTS, anchored_at=None, **fields):
    history = History(
        baseline=Baseline(baseline if baseline is not None else collected),
        trend=TrendReference(runs=runs, best=best, best_started_at=BEST_DAY, anchored_at=anchored_at),
    )
    judgement = judge(make(collected=collected, **fields), settings, history)
    return next((f for f in judgement.findings if f.rule == "trend"), None)


# --- the pure rule, at its boundary --------------------------------------------------------------


def test_fires_just_below_the_threshold_of_the_best_and_not_at_it():
    assert trend_finding(750) is None
    finding = trend_finding(749)
    assert finding is not None and finding.mode == "enforce"
    assert (finding.expected, finding.actual) == (1000, 749)


def test_the_message_names_the_fall_the_window_and_the_best_run():
    finding = trend_finding(721)
    assert finding.message.startswith("collected 721, 27.9% below the best of the last 30 days (1,000 on 2026-09-14)")
    assert finding.message.endswith(
        "good runs marks a run incomplete while the source has no normal yet (10 runs over 14 days)"
    )


def test_a_window_cut_short_by_a_confirmed_size_says_since_when():
    finding = trend_finding(700, anchored_at=datetime(2026, 9, 10, 3, tzinfo=UTC))
    assert "below the best since 2026-09-10" in finding.message


def test_needs_trend_min_runs_good_runs():
    assert trend_finding(500, runs=2) is None
    assert trend_finding(500, runs=3) is not None
    assert trend_finding(500, runs=3, settings=RuleSettings(trend_min_runs=4)) is None


def test_keeps_quiet_where_a_declared_total_judges_or_drop_fired():
    assert trend_finding(500, declared_total=500) is None
    # Against a baseline of 1,000, 500 is a drop: one finding says it, not two.
    judgement_rules = {
        f.rule
        for f in judge(
            make(collected=500),
            DEFAULTS,
            History(baseline=Baseline(1000), trend=TrendReference(3, 1000, BEST_DAY)),
        ).findings
    }
    assert judgement_rules == {"drop"}


def test_the_threshold_is_drop_threshold():
    settings = RuleSettings(drop_threshold=0.1)
    assert trend_finding(900, settings=settings) is None
    assert trend_finding(899, settings=settings) is not None


def test_silent_without_a_window():
    assert next((f for f in judge(make(collected=1), DEFAULTS, History()).findings if f.rule == "trend"), None) is None


# --- through the API -----------------------------------------------------------------------------


def at(day: int, month: int = 9) -> dict:
    return {
        "started_at": f"2026-{month:02d}-{day:02d}T03:00:00Z",
        "finished_at": f"2026-{month:02d}-{day:02d}T04:00:00Z",
    }


def post(api, run_id: str, when: dict, **fields) -> dict:
    response = api.post_run(report(run_id=run_id, **when, **fields))
    assert response.status_code == 201, response.content
    return response.json()


def rules(body: dict) -> list[str]:
    return [f["rule"] for f in body["findings"] if f["mode"] == "enforce"]


def decline(api, start: int, counts: list[int], prefix: str = "d") -> list[dict]:
    return [post(api, f"{prefix}{start + i}", at(start + i), collected=n) for i, n in enumerate(counts)]


def test_a_slow_decline_fires_and_the_run_before_it_does_not(api):
    answers = decline(api, 1, [1000, 960, 922, 885, 849, 815, 783, 751, 721])
    assert [rules(a) for a in answers[:-1]] == [[]] * 8
    assert rules(answers[-1]) == ["trend"] and answers[-1]["silent"] is True


def test_the_window_starts_trend_days_before_the_run(api):
    post(api, "old", at(1), collected=1000)
    decline(api, 2, [760, 760, 760])
    # On October 1st the run of September 1st is 30 days back: still in the window.
    assert rules(post(api, "in", at(1, 10), collected=740)) == ["trend"]
    # On October 2nd it has left it: the best of the window is 760.
    assert rules(post(api, "out", at(2, 10), collected=740)) == []


def test_a_run_complete_against_its_declared_total_resets_the_window(api):
    decline(api, 1, [1000, 1000, 1000])
    post(api, "shrunk", at(4), collected=700, declared_total=700)
    answers = decline(api, 5, [700, 690, 680])
    assert [rules(a) for a in answers] == [[], [], []]
    # Without the reset, 700 against 1,000 would have been a decline.
    assert Source.objects.get().trend_ceiling == 700


def test_a_run_accepted_as_baseline_resets_the_window(api, staff):
    decline(api, 1, [1000, 1000, 1000])
    assert rules(post(api, "cut", at(4), collected=600)) == ["drop"]
    accept_as_baseline(Run.objects.get(run_id="cut"), staff)
    assert Source.objects.get().trend_ceiling == 600
    assert [rules(a) for a in decline(api, 5, [600, 600, 590])] == [[], [], []]


def test_fewer_good_runs_than_trend_min_runs_is_no_trend(api):
    post(api, "a", at(1), collected=1000)
    post(api, "b", at(2), collected=760)
    # Two good runs in the window: not enough to call it a trend (drop compares with 760).
    assert rules(post(api, "c", at(3), collected=740)) == []
    assert rules(post(api, "d", at(4), collected=740)) == ["trend"]


def test_incomplete_and_paused_runs_are_not_the_best(api):
    decline(api, 1, [800, 800, 800])
    post(api, "paused", at(4), collected=5000, paused=True)
    post(api, "bad", at(5), collected=5000, pages={"fetched": 10, "lost": 3})
    assert rules(post(api, "next", at(6), collected=700)) == []


def test_a_late_report_is_judged_against_the_window_of_its_own_time(api):
    decline(api, 1, [1000, 900, 800])
    post(api, "confirmed", at(10), collected=700, declared_total=700)
    post(api, "after", at(11), collected=700)
    # September 5th arrives late: its window holds the run of 1,000, not the confirmed 700, and its
    # baseline is September 3rd's 800 (so drop keeps quiet).
    assert rules(post(api, "late", at(5), collected=740)) == ["trend"]
    assert rules(post(api, "late-ok", at(6), collected=760)) == []


def test_the_common_case_reads_one_window(api, django_assert_num_queries):
    decline(api, 1, [1000] * 10)
    # token, source lock, the source's recent runs (for its own normal), run, source update + the
    # test's savepoint pair: the ceiling spares the trend window's query.
    with django_assert_num_queries(7):
        assert rules(post(api, "steady", at(20), collected=990)) == []


def test_a_decline_of_a_young_source_reads_one_more_window_query(api, django_assert_num_queries):
    decline(api, 1, [1000] * 3)
    post(api, "low", at(26), collected=760)
    post(api, "failing", at(27), collected=740)
    # The source is failing already (no flip): token, source lock, recent runs, trend window, run,
    # source update + the test's savepoint pair.
    with django_assert_num_queries(8):
        assert rules(post(api, "lower", at(28), collected=740)) == ["trend"]


def test_a_source_with_its_own_normal_judges_a_decline_from_the_runs_it_read(api, django_assert_num_queries):
    decline(api, 1, [1000] * 25)
    # Below its normal (1,000, never off by more than the 5% margin), within drop_threshold: below_expected.
    assert rules(post(api, "low", at(26), collected=760)) == ["below_expected"]
    post(api, "failing", at(27), collected=740)
    # No trend window query: the recent runs it read for its normal hold the trend's levels too.
    with django_assert_num_queries(7):
        assert rules(post(api, "lower", at(28), collected=740)) == ["drop"]
