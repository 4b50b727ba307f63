"""A step down is not followed: a branch of the site lost for several runs, each run inside the band.

The level is the median of the last seven days, so a loss that stays under `low` on its first run
becomes that median by its fourth, and the source reads normal with a tenth of its records gone (the
watchdog that stays green while a feed loses 10% six runs in a row). Where the latest runs all stand
well below the week before them, by more than their noise explains, the level stays where it was.
"""

import json
import math
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from completeness.verdicts.expectation import KnownRun, learn
from tests.test_expectation import enforced, post

START = datetime(2026, 8, 3, 9, 0, tzinfo=UTC)  # a Monday
LOST_FROM, DAYS = 42, 48
SEEDS = range(40)


def counts(seed: int, *, kept: float, spread: float = 0.026, drift: float = 0.0, days: int = DAYS) -> list[int]:
    """Daily runs of a source of 3,400 varying by `spread` (logs) and changing by `drift` a day, that
    keeps `kept` of its records from day LOST_FROM on."""
    rng = random.Random(seed)
    return [
        round(3400 * math.exp(drift * day + rng.gauss(0, spread)) * (kept if day >= LOST_FROM else 1.0))
        for day in range(days)
    ]


def alarmed_days(collected: list[int]) -> list[int]:
    """The days from day 28 on whose run lies below `low`, each run judged as ingest judges it: one
    under `low` is learned as incomplete, the others as complete."""
    runs: list[KnownRun] = []
    alarmed = []
    for day, count in enumerate(collected):
        at = START + timedelta(days=day)
        normal = learn(runs, at, learn_days=56, learn_min_runs=10, min_margin=0.05)
        good = normal is None or count >= normal.at(at).low
        if not good and day >= 28:
            alarmed.append(day)
        runs.append(KnownRun(key=day, started_at=at, collected=count, good=good))
    return alarmed


def test_a_tenth_lost_six_runs_in_a_row_is_caught_and_the_healthy_twin_is_not():
    # A source of 2.6% losing 10% is about 3.5 of its spreads under its level: its first run of the
    # loss lies above `low` about half the time. Followed by the level, the loss went unseen on 11 of
    # these 40 sources; held, on 5; held without the step's own errors in the band, on 3. Of its 240
    # runs, 82 lay below `low`, then 105, now 117.
    lost = [[day for day in alarmed_days(counts(seed, kept=0.9)) if day >= LOST_FROM] for seed in SEEDS]
    assert sum(map(bool, lost)) >= 36
    assert sum(map(len, lost)) >= 112
    healthy = sum(len(alarmed_days(counts(seed, kept=1.0))) for seed in SEEDS)
    assert healthy <= 1  # of 800 healthy runs


def test_a_source_that_drifts_down_is_no_step():
    # 0.2% a day on a source of 1.1%: each week stands 1.4% below the one before, never the step's
    # 1.5 spreads on every run at once.
    drifting = [alarmed_days(counts(seed, kept=1.0, spread=0.011, drift=-0.002, days=70)) for seed in SEEDS]
    assert sum(map(len, drifting)) == 0


def test_the_expectation_says_the_step_was_not_followed(api):
    collected = counts(0, kept=0.9)
    answers = [post(api, "branch-step", day, count) for day, count in enumerate(collected)]
    lost = answers[LOST_FROM:]
    # Seed 0's loss: two runs inside the band, then below it against the level held from before.
    assert [enforced(answer) for answer in lost[:3]] == [[], [], ["below_expected"]]
    held = lost[2]["expectation"]
    assert held["expected"] > 3300
    assert "the last 2 runs stood" in held["basis"] and "a step down, not followed" in held["basis"]
    assert "a step down" not in answers[LOST_FROM - 1]["expectation"]["basis"]


def test_a_held_level_survives_its_round_trip_through_the_source_row():
    from completeness.verdicts.fit_state import from_state, normal_state

    collected = counts(0, kept=0.9)
    runs = [
        KnownRun(key=day, started_at=START + timedelta(days=day), collected=count)
        for day, count in enumerate(collected[: LOST_FROM + 2])
    ]
    at = START + timedelta(days=LOST_FROM + 2)
    normal = learn(runs, at, learn_days=56, learn_min_runs=10, min_margin=0.05)
    assert normal is not None and normal.step_runs == 2 and 0.05 < normal.step_fall < 0.15
    state = json.loads(json.dumps(normal_state(normal, None)))
    assert from_state(state) == (normal, None)
    del state["normal"]["step_runs"], state["normal"]["step_fall"]  # a fit kept before steps were held
    assert from_state(state)[0] == replace(normal, step_runs=0, step_fall=0.0)
