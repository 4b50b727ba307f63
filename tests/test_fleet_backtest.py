"""The fleet backtest (bench/fleet.py) on a small fleet, through the real API, with bounds on the service's figures.

The fleet is simulated with a fixed seed (bench/fleet_sim.py), every report is posted in time order
through POST /api/v1/runs with an all-sources token from the management command, and the service's
verdicts are scored with the bench's own scorer (bench/fleet_score.py): the same code path as
`python bench/fleet.py`, on a quarter of its size.
"""

from datetime import UTC, datetime, timedelta

import pytest

from bench.fleet import SERVICE, create_token, run_backtest
from bench.fleet_score import _ideal_alarm as ideal_judge_alarm
from bench.fleet_score import caught, contract_ideal_judge, false_alarm_episodes, score
from bench.fleet_sim import LEARNING_DAYS, Fleet, Run, Spec, simulate

SOURCES, DAYS, SEED = 24, 56, 11

# With each source judged against its own normal the service scores 1 false-alarm episode, 1
# false-alarm run per 1,000 healthy, 24/25 caught and 21 on their first run on this fleet (before the
# normal: 81, 298, 22/25, 20; before its small-sample fixes, leave-one-out rhythm and counting noise:
# 6, 5, 24/25, 21). The bounds hold that with a little room; the best peer here (the z-score on the
# last 14 runs) raises 45 episodes and catches 23. The one loss missed on its first run is a Sunday of
# a feed expected to bring 11 items that brought 4: within counting noise.
MAX_FALSE_ALARM_EPISODES = 3
MAX_FALSE_ALARM_RUNS_PER_1000 = 3
MIN_LOSSES_CAUGHT = 24
MIN_CAUGHT_ON_FIRST_RUN = 21


def test_a_small_fleet_through_the_api(db, client, unthrottled):
    fleet = simulate(SOURCES, DAYS, SEED, tag="ci-fleet")
    assert len(fleet.losses) == 25
    assert all(run.report["exit_code"] == 0 for run in fleet.runs)  # silent: only the numbers tell

    backtest = run_backtest(client, create_token("fleet-backtest"), fleet)

    assert len(backtest.answers) == len(fleet.runs)
    service = backtest.service
    assert service.losses == 25
    figures = service.as_dict()
    assert len(service.episodes) <= MAX_FALSE_ALARM_EPISODES, figures
    assert service.per_thousand <= MAX_FALSE_ALARM_RUNS_PER_1000, figures
    assert service.caught >= MIN_LOSSES_CAUGHT, figures
    assert service.first >= MIN_CAUGHT_ON_FIRST_RUN, figures
    # The exit-code watchdog sees nothing: the losses are silent.
    watchdog = backtest.scores["exit-code watchdog (healthchecks-style)"]
    assert (watchdog.caught, len(watchdog.episodes)) == (0, 0)
    assert set(backtest.scores) >= {SERVICE}


# -- the simulator ------------------------------------------------------------------------------------


def test_the_simulation_is_deterministic_by_seed():
    one, again, other = simulate(8, 28, 5, tag="a"), simulate(8, 28, 5, tag="b"), simulate(8, 28, 6, tag="a")
    numbers = lambda fleet: [(run.day, run.collected, run.loss) for run in fleet.runs]  # noqa: E731
    assert numbers(one) == numbers(again)
    assert numbers(one) != numbers(other)
    assert one.first_day.weekday() == 0  # weekday rhythms fall on the same days whatever today is


def test_the_wide_variant_draws_wider_sources_and_the_default_is_the_bench_as_it_was():
    default, wide = simulate(72, 28, 3, tag="d"), simulate(72, 28, 3, tag="d", variant="wide")
    assert [run.collected for run in simulate(72, 28, 3, tag="d", variant="default").runs] == [
        run.collected for run in default.runs
    ]
    noisy = lambda fleet: [spec.spread for spec in fleet.specs if spec.kind == "noisy"]  # noqa: E731
    saturdays = lambda fleet: {spec.weekend[0] for spec in fleet.specs if spec.kind == "feed"}  # noqa: E731
    assert all(0.07 <= s <= 0.09 for s in noisy(default)) and saturdays(default) == {0.40}
    assert any(not 0.07 <= s <= 0.09 for s in noisy(wide)) and len(saturdays(wide)) > 1


def test_no_loss_in_the_first_two_weeks_and_healthy_runs_between_losses():
    fleet = simulate(24, 56, 11, tag="t")
    runs = fleet.by_source()
    for loss in fleet.losses:
        assert runs[loss.slug][loss.runs[0]].day >= LEARNING_DAYS
        assert all(runs[loss.slug][index].loss == loss.id for index in loss.runs)
    loss_runs = sum(len(loss.runs) for loss in fleet.losses)
    assert sum(run.loss is not None for run in fleet.runs) == loss_runs


# -- the scorer ---------------------------------------------------------------------------------------

H, L = True, False  # healthy run, loss run


def test_a_streak_of_alarmed_healthy_runs_is_one_episode():
    assert false_alarm_episodes([(H, True), (H, True), (H, True)]) == [[0, 1, 2]]
    assert false_alarm_episodes([(H, False), (H, False)]) == []


def test_an_unalarmed_or_loss_run_ends_an_episode():
    assert false_alarm_episodes([(H, True), (H, False), (H, True)]) == [[0], [2]]
    assert false_alarm_episodes([(H, True), (L, True), (H, True)]) == [[0], [2]]


def test_an_alarm_on_a_loss_run_is_no_false_alarm():
    assert false_alarm_episodes([(L, True), (L, True)]) == []
    assert false_alarm_episodes([(L, True), (H, True)]) == [[1]]


def test_caught_on_any_run_and_first_only_on_the_first():
    assert caught([True, False, False]) == (True, True)
    assert caught([False, False, True]) == (True, False)
    assert caught([False, False]) == (False, False)


def test_score_counts_from_week_three_and_keeps_alarms_before_a_loss_out_of_it():
    fleet = simulate(8, 28, 5, tag="s")
    runs_of = fleet.by_source()
    # A loss of several runs whose source's run before it is healthy and scored.
    loss = next(
        loss
        for loss in fleet.losses
        if len(loss.runs) >= 2
        and runs_of[loss.slug][loss.runs[0] - 1].day >= LEARNING_DAYS
        and runs_of[loss.slug][loss.runs[0] - 1].loss is None
    )
    runs = runs_of[loss.slug]
    first = runs[loss.runs[0]]
    quiet = {run.key: False for run in fleet.runs}

    # An alarm on the healthy run just before the loss: a false alarm, and the loss is not caught.
    before = dict(quiet)
    before[runs[loss.runs[0] - 1].key] = True
    result = score(fleet, before)
    assert (result.caught, result.first, len(result.episodes), result.false_runs) == (0, 0, 1, 1)

    # An alarm on the loss's last run: caught, but not on its first run; and no false alarm.
    on_loss = dict(quiet)
    on_loss[runs[loss.runs[-1]].key] = True
    result = score(fleet, on_loss)
    assert (result.caught, result.first, result.false_runs) == (1, 0, 0)
    on_first = dict(quiet)
    on_first[first.key] = True
    assert (score(fleet, on_first).caught, score(fleet, on_first).first) == (1, 1)

    # Alarms before week 3 are not scored at all.
    early = dict(quiet)
    early.update({run.key: True for run in fleet.runs if run.day < LEARNING_DAYS})
    assert score(fleet, early).false_runs == 0
    everything = {run.key: True for run in fleet.runs}
    healthy_scored = sum(run.loss is None and run.day >= LEARNING_DAYS for run in fleet.runs)
    assert score(fleet, everything).false_runs == healthy_scored


def _run(spec: Spec, collected: int, mean: float, **report) -> Run:
    when = datetime(2026, 9, 7, tzinfo=UTC)
    return Run(spec.slug, spec.kind, 0, 20, 0, 0, when, {"collected": collected, **report}, mean=mean)


@pytest.mark.parametrize(
    ("kind", "spread", "mean", "healthy", "lost"),
    [
        ("steady", 0.01, 1000, 975, 940),  # 2.5 and 6 of its spreads down
        ("noisy", 0.08, 1000, 820, 700),
        ("feed", 0.05, 40, 24, 19),  # counting noise: 24 of 40 is 1 in 170, 19 is 1 in 3,300
    ],
)
def test_the_ideal_judge_alarms_below_one_in_1000_and_not_above(kind, spread, mean, healthy, lost):
    spec = Spec(0, f"s-{kind}", kind, 1, 8, 0, 30, mean, spread, 0.0)
    assert not ideal_judge_alarm(_run(spec, healthy, mean), spec)
    assert ideal_judge_alarm(_run(spec, lost, mean), spec)


def test_the_ideal_judge_reads_a_field_against_its_own_share():
    spec = Spec(0, "s-fields", "steady", 1, 8, 0, 30, 1000, 0.01, 0.0, steady_fields={"price": 0.98})
    assert not ideal_judge_alarm(_run(spec, 1000, 1000, fields={"price": 972}), spec)
    assert ideal_judge_alarm(_run(spec, 1000, 1000, fields={"price": 930}), spec)


def test_the_ideal_judge_held_to_the_contract_keeps_its_margin_and_its_two_weeks():
    spec = Spec(0, "s-steady", "steady", 1, 8, 0, 30, 1000, 0.005, 0.0)
    start = datetime(2026, 9, 7, tzinfo=UTC)
    counts = [1000] * 13 + [700, 940] + [1000] * 6 + [970, 940]  # days 13-14 young, 21-22 learned
    runs = [
        Run(spec.slug, spec.kind, day, day, 0, 0, start + timedelta(days=day), {"collected": count}, mean=1000)
        for day, count in enumerate(counts)
    ]
    fleet = Fleet(1, len(counts), start, [spec], runs, [])
    held = contract_ideal_judge(fleet)
    ideal = {run.key: ideal_judge_alarm(run, spec) for run in runs}
    by_day = {run.day: (ideal[run.key], held[run.key]) for run in runs}
    # Until day 15 no expectation (example s10): 6% down is the ideal judge's alone, 30% the fixed drop's too.
    assert by_day[14] == (True, False) and by_day[13] == (True, True)
    # Once learned: 3% down is twelve of its spreads, but inside min_margin; 6% is outside both.
    assert by_day[21] == (True, False) and by_day[22] == (True, True)
    assert not any(held[run.key] for run in runs if run.collected == 1000)
