"""Peer methods on a simulated fleet's numbers, and the scoring every method gets (pure, no Django).

Each method gives one alarm flag per run (a dict keyed by Run.key). The peers:

- **exit-code watchdog** (healthchecks-style): alarms when exit_code is not 0.
- **fixed minimum item count and field rules** (a careful Spidermon set-up, set once after the first
  two weeks): minimum item count = 90% of the lowest `collected` of those two weeks; each field's
  minimum coverage = its lowest coverage in those two weeks minus 10 points; where the source declares
  a total, collected / (declared - removed) >= 0.99. No alarm during the two weeks themselves.
- **z-score on the last 14 runs** (Elementary-style volume and null-rate anomalies): alarms when the
  run's `collected`, any field's coverage, or the declared share lies more than 3 standard deviations
  below the mean of the source's previous 14 runs (sample std; a constant history alarms on any value
  below it). Every earlier run is in the window, losses too, as a monitor that does not know them.
- **z-score by weekday**: the same, against the previous 8 runs of the same weekday (and the same run
  of the day for sources that run several times a day). Until 3 such runs exist, it uses the previous
  14 runs like the method above.

Scoring counts runs from day `score_from` (14: week 3) on:

- a false-alarm episode is a maximal streak of consecutive alarmed healthy runs of one source (a loss
  run or an unalarmed healthy run ends it);
- false-alarm runs per 1,000 healthy runs;
- a loss is caught when the method alarmed on any of its runs, and caught on its first run when it
  alarmed on the loss's first run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from bench.fleet_sim import LEARNING_DAYS, Fleet, Run

Alarms = dict[tuple[str, int], bool]

Z = 3.0
WINDOW = 14
SAME_SLOT_WINDOW = 8
SAME_SLOT_MIN = 3


# -- peers --------------------------------------------------------------------------------------------


def exit_code_watchdog(fleet: Fleet) -> Alarms:
    return {run.key: run.report.get("exit_code") not in (0, None) for run in fleet.runs}


def fixed_rules(fleet: Fleet, learn_days: int = LEARNING_DAYS) -> Alarms:
    alarms: Alarms = {}
    for runs in fleet.by_source().values():
        learning = [run for run in runs if run.day < learn_days]
        min_count = 0.9 * min(run.collected for run in learning)
        names = sorted({name for run in learning for name in run.report.get("fields") or {}})
        min_coverage = {name: min(run.coverage(name) for run in learning) - 0.10 for name in names}
        for run in runs:
            if run.day < learn_days:
                alarms[run.key] = False
                continue
            share = run.share
            alarms[run.key] = (
                run.collected < min_count
                or (share is not None and share < 0.99)
                or any(run.coverage(name) < floor for name, floor in min_coverage.items())
            )
    return alarms


def zscore_last(fleet: Fleet) -> Alarms:
    return _zscore(fleet, lambda run, earlier: earlier[-WINDOW:])


def zscore_by_weekday(fleet: Fleet) -> Alarms:
    def window(run: Run, earlier: list[Run]) -> list[Run]:
        same = [past for past in earlier if past.weekday == run.weekday and past.slot == run.slot]
        return same[-SAME_SLOT_WINDOW:] if len(same) >= SAME_SLOT_MIN else earlier[-WINDOW:]

    return _zscore(fleet, window)


def _zscore(fleet: Fleet, window: Callable[[Run, list[Run]], list[Run]]) -> Alarms:
    alarms: Alarms = {}
    for runs in fleet.by_source().values():
        for position, run in enumerate(runs):
            training = window(run, runs[:position])
            if len(training) < SAME_SLOT_MIN:
                alarms[run.key] = False
                continue
            names = set(run.report.get("fields") or {}) | {
                name for past in training for name in past.report.get("fields") or {}
            }
            metrics: list[Callable[[Run], float | None]] = [lambda r: r.collected, lambda r: r.share]
            metrics += [lambda r, name=name: r.coverage(name) for name in sorted(names)]
            alarms[run.key] = any(_low(metric(run), [metric(past) for past in training]) for metric in metrics)
    return alarms


def _low(value: float | None, history: Sequence[float | None]) -> bool:
    values = [item for item in history if item is not None]
    if value is None or len(values) < 2:
        return False
    mean = statistics.fmean(values)
    std = statistics.stdev(values)
    if std == 0:
        return value < mean
    return (value - mean) / std < -Z


PEERS: dict[str, Callable[[Fleet], Alarms]] = {
    "exit-code watchdog (healthchecks-style)": exit_code_watchdog,
    "fixed minimum item count and field rules (careful Spidermon set-up)": fixed_rules,
    "z-score on the last 14 runs (Elementary-style volume and null-rate anomalies)": zscore_last,
    "z-score by weekday (and hour), last 8 of the same slot": zscore_by_weekday,
}


# -- scoring ------------------------------------------------------------------------------------------


def false_alarm_episodes(sequence: Iterable[tuple[bool, bool]]) -> list[list[int]]:
    """Episodes in one source's runs, in order, given as (healthy, alarmed): the positions of each streak."""
    episodes: list[list[int]] = []
    current: list[int] = []
    for position, (healthy, alarmed) in enumerate(sequence):
        if healthy and alarmed:
            current.append(position)
        elif current:
            episodes.append(current)
            current = []
    if current:
        episodes.append(current)
    return episodes


def caught(alarmed_runs: Sequence[bool]) -> tuple[bool, bool]:
    """A loss's alarms over its runs in order: (caught at all, caught on its first run)."""
    return any(alarmed_runs), bool(alarmed_runs) and alarmed_runs[0]


@dataclass
class Score:
    healthy_runs: int = 0
    false_runs: int = 0
    episodes: list[list[tuple[str, int]]] = field(default_factory=list)  # each a list of run keys
    losses: int = 0
    caught: int = 0
    first: int = 0
    by_loss: dict[str, tuple[bool, bool]] = field(default_factory=dict)  # loss id -> (caught, first)

    @property
    def per_thousand(self) -> float:
        return 1000 * self.false_runs / self.healthy_runs if self.healthy_runs else 0.0

    def as_dict(self) -> dict:
        return {
            "false_alarm_episodes": len(self.episodes),
            "false_alarm_runs": self.false_runs,
            "healthy_runs": self.healthy_runs,
            "false_alarm_runs_per_1000_healthy": round(self.per_thousand, 1),
            "losses": self.losses,
            "caught": self.caught,
            "caught_on_first_run": self.first,
        }


def score(fleet: Fleet, alarms: Alarms, score_from: int = LEARNING_DAYS) -> Score:
    result = Score()
    runs_of = fleet.by_source()
    for runs in runs_of.values():
        scored = [run for run in runs if run.day >= score_from]
        result.healthy_runs += sum(run.loss is None for run in scored)
        result.false_runs += sum(run.loss is None and alarms[run.key] for run in scored)
        for episode in false_alarm_episodes((run.loss is None, alarms[run.key]) for run in scored):
            result.episodes.append([scored[position].key for position in episode])
    for loss in fleet.losses:
        runs = runs_of[loss.slug]
        if runs[loss.runs[0]].day < score_from:
            continue
        result.losses += 1
        got, first = caught([alarms[runs[index].key] for index in loss.runs])
        result.caught += got
        result.first += first
        result.by_loss[loss.id] = (got, first)
    return result
