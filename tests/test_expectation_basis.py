"""The basis sentence's range: what the source's complete runs collected, not its losses too.

A demo source that lost a tenth of its cards six runs in a row read "expected 550, normal from 522
(56 runs since ...: 492-550)": the 492 was one of the losses, judged incomplete, and the range said it
was normal. Pure: `learn` and the fit state, no database.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from completeness.verdicts.expectation import KnownRun, learn
from completeness.verdicts.fit_state import from_state, normal_state

START = datetime(2026, 9, 7, 6, 0, tzinfo=UTC)  # a Monday
STEADY = [548, 550, 549, 547, 550]  # no weekly rhythm: five days long


def history(lost_days: range) -> list[KnownRun]:
    runs = []
    for day in range(28):
        lost = day in lost_days
        runs.append(
            KnownRun(
                key=day,
                started_at=START + timedelta(days=day),
                collected=492 + day % 3 if lost else STEADY[day % 5],
                good=not lost,
            )
        )
    return runs


def basis(runs: list[KnownRun]) -> str:
    at = START + timedelta(days=28)
    normal = learn(runs, at, learn_days=56, learn_min_runs=10, min_margin=0.05)
    assert normal is not None
    return normal.at(at).basis


def test_the_range_is_the_complete_runs_and_says_so_where_some_were_not():
    assert basis(history(range(20, 24))) == "28 runs since 2026-09-07, the 24 complete 547-550"


def test_where_every_run_was_complete_the_sentence_is_as_before():
    assert basis(history(range(0))) == "28 runs since 2026-09-07: 547-550"


def test_one_value_reads_as_one_value_not_a_range():
    runs = [
        KnownRun(key=day, started_at=START + timedelta(days=day), collected=550 if day < 27 else 548, good=day < 27)
        for day in range(28)
    ]
    assert basis(runs) == "28 runs since 2026-09-07, the 27 complete 550"
    assert basis([*runs[:27], KnownRun(key=27, started_at=START + timedelta(days=27), collected=550)]) == (
        "28 runs since 2026-09-07: 550"
    )


def test_a_fit_kept_before_the_complete_runs_were_counted_still_reads():
    runs = history(range(20, 24))
    at = START + timedelta(days=28)
    normal = learn(runs, at, learn_days=56, learn_min_runs=10, min_margin=0.05)
    state = json.loads(json.dumps(normal_state(normal, None)))
    assert from_state(state) == (normal, None)
    state["normal"]["slots"] = [slot[:5] for slot in state["normal"]["slots"]]  # (day, hour, runs, least, most)
    old, _ = from_state(state)
    assert old is not None and old.at(at).basis == "28 runs since 2026-09-07: 547-550"


def test_a_growing_source_says_so_and_a_steady_one_does_not():
    # Up 0.5% a day for eight weeks: expected stands above every older run, and the basis says why.
    growing = [
        KnownRun(key=day, started_at=START + timedelta(days=day), collected=round(5000 * 1.005**day + day % 3 * 7))
        for day in range(56)
    ]
    at = START + timedelta(days=56)
    normal = learn(growing, at, learn_days=56, learn_min_runs=10, min_margin=0.05)
    assert normal is not None
    expectation = normal.at(at)
    assert expectation.basis.endswith("; growing 0.5% a day") and expectation.expected > max(
        r.collected for r in growing[:-7]
    )
    assert "growing" not in basis(history(range(0))) and "shrinking" not in basis(history(range(0)))
