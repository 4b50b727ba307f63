"""What one fit of a source's normal costs (`completeness.verdicts.expectation.learn`), pure Python.

A source refits at most once every 20 hours of its own clock, at ingest, so this is the part of the
ingest cost that the expectation's statistics decide. Three shapes of 56 days' learning set: a daily
feed with low weekends, the same four times a day, and a daily steady source that grows 0.2% a day;
one run in twenty judged incomplete. Prints the best of `--repeat` timings of `--number` fits each.

    .venv/bin/python -m bench.fit
    .venv/bin/python -m bench.fit --number 20 --repeat 3
"""

from __future__ import annotations

import argparse
import math
import random
import timeit
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from completeness.verdicts.expectation import KnownRun, learn

START = datetime(2026, 9, 7, 4, tzinfo=UTC)  # a Monday
DAYS = 56


def learning_set(per_day: int, count: Callable[[datetime, random.Random], float], seed: int = 1) -> list[KnownRun]:
    rng = random.Random(seed)
    runs = []
    for key in range(DAYS * per_day):
        started = START + timedelta(hours=24 / per_day * key)
        runs.append(
            KnownRun(
                key=key,
                started_at=started,
                collected=max(1, round(count(started, rng))),
                good=rng.random() > 0.05,
            )
        )
    return runs


def feed(started: datetime, rng: random.Random) -> float:
    return 300 * (0.4 if started.weekday() >= 5 else 1) * math.exp(rng.gauss(0, 0.08))


def growing(started: datetime, rng: random.Random) -> float:
    return 5000 * math.exp(0.002 * (started - START).days + rng.gauss(0, 0.01))


SHAPES = {
    "daily feed, low weekends": (1, feed),
    "feed four times a day": (4, feed),
    "daily steady source, growing": (1, growing),
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--number", type=int, default=200, help="fits per timing")
    parser.add_argument("--repeat", type=int, default=5, help="timings; the best is printed")
    args = parser.parse_args(argv)
    costs = {}
    for name, (per_day, count) in SHAPES.items():
        runs = learning_set(per_day, count)
        at = runs[-1].started_at + timedelta(hours=24 / per_day)

        def fit(runs: list[KnownRun] = runs, at: datetime = at) -> None:
            assert learn(runs, at, learn_days=DAYS, learn_min_runs=10, min_margin=0.05) is not None

        best = min(timeit.repeat(fit, number=args.number, repeat=args.repeat)) / args.number
        costs[name] = best
        print(f"{name:<32} {len(runs):>4} runs  {best * 1000:.3f} ms a fit")
    return costs


if __name__ == "__main__":
    main()
