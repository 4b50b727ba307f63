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

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from bench.fleet_sim import LEARNING_DAYS, Fleet, Run, Spec

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


# -- the ideal judge: the ceiling of judging runs one by one ---------------------------------------------

ONE_IN_1000 = 0.001
NORMAL = statistics.NormalDist()
# The grid a feed's log-normal day-to-day factor is integrated over (its Poisson count on top).
GRID = [step / 4 for step in range(-24, 25)]
GRID_WEIGHTS = [NORMAL.pdf(z) / sum(NORMAL.pdf(g) for g in GRID) for z in GRID]


def ideal_judge(fleet: Fleet) -> Alarms:
    """A judge that knows what no monitor can: every source's true parameters (its mean at each slot,
    its noise, its fields' shares, its declared share). It alarms where a run lies below what a healthy
    run falls below one time in 1,000, split evenly over the run's tests (its count or share, and each
    field). A loss it misses lies within the source's own noise at that rate of false alarms, and no
    method that judges runs one by one from the numbers alone can catch it without more false alarms:
    the ceiling of per-run judging, not a peer (a method that reads several runs, like `trend`, may
    still catch a slow decline it misses)."""
    specs = {spec.slug: spec for spec in fleet.specs}
    return {run.key: _ideal_alarm(run, specs[run.slug]) for run in fleet.runs}


def _ideal_alarm(run: Run, spec: Spec) -> bool:
    return _ideal_count_low(run, spec) or _ideal_field_low(run, spec)


def _judged_fields(run: Run) -> dict[str, int]:
    return (run.report.get("fields") or {}) if run.collected else {}


def _quantile(run: Run) -> tuple[float, float]:
    """The tail each of the run's tests gets (one in 1,000 split over its count and its fields), and its z."""
    alpha = ONE_IN_1000 / (1 + len(_judged_fields(run)))
    return alpha, NORMAL.inv_cdf(alpha)


def _ideal_count_low(run: Run, spec: Spec) -> bool:
    """The run's count (its share, where it declares a total) lies below what a healthy run falls below."""
    alpha, z = _quantile(run)
    if spec.declared:
        return _declared_share_low(run, spec, z)
    if spec.kind == "feed":
        return _feed_probability(run.collected, run.mean, spec.spread) < alpha
    return NORMAL.cdf((math.log(run.collected + 0.5) - math.log(run.mean)) / spec.spread) < alpha


def _ideal_field_low(run: Run, spec: Spec) -> bool:
    _, z = _quantile(run)
    return any(_field_low(run, spec, name, z) for name in _judged_fields(run))


# What the contract (docs/verdicts.md, Expectation) lets any judge of counts do: `low` never closer to
# `expected` than min_margin, and no expectation before the learning set spans two weeks (example s10:
# a daily source's day 14 has none), when the fixed drop against the last good snapshot judges instead.
CONTRACT_MIN_MARGIN = 0.05
CONTRACT_DROP = 0.25
CONTRACT_SPAN_DAYS = 14


def contract_ideal_judge(fleet: Fleet) -> Alarms:
    """The ideal judge held to the contract's two limits on counts: a run's count alarms only where it
    also lies min_margin below its true mean, and before the source has two weeks of runs only where it
    lies drop_threshold below it (the fixed drop, against a perfect snapshot). Declared shares and
    fields as the ideal judge reads them. The ceiling of a judge that keeps the contract, so what the
    service misses below it is its own to catch; what it misses between the two is the contract's."""
    specs = {spec.slug: spec for spec in fleet.specs}
    previous_day: dict[str, int] = {}
    alarms: Alarms = {}
    for run in sorted(fleet.runs, key=lambda run: (run.slug, run.index)):
        spec = specs[run.slug]
        learned = previous_day.get(run.slug, -1) >= CONTRACT_SPAN_DAYS
        previous_day[run.slug] = run.day
        count_low = _ideal_count_low(run, spec)
        if count_low and not spec.declared:
            count_low = run.collected < run.mean * (1 - (CONTRACT_MIN_MARGIN if learned else CONTRACT_DROP))
        alarms[run.key] = count_low or _ideal_field_low(run, spec)
    return alarms


def _declared_share_low(run: Run, spec: Spec, z: float) -> bool:
    total, removed = run.report["declared_total"], run.report.get("removed", 0)
    denominator = max(total - removed, 1)
    if spec.kind == "declared-exact":
        # Healthy: at most a thousandth of the total short.
        return run.collected < denominator - int(total * 0.001)
    # Healthy: a share drawn around share_mu, clipped to [0.975, 1.005], rounded to a record.
    return run.collected / denominator < max(0.975, spec.share_mu + z * spec.share_sd) - 0.5 / denominator


def _feed_probability(collected: int, mean: float, spread: float) -> float:
    """P(a healthy run collects at most `collected`): a Poisson count around a log-normal mean, its
    CDF by Wilson and Hilferty's approximation (close to a thousandth's precision at a few items)."""
    k = collected + 1
    total = 0.0
    for z, weight in zip(GRID, GRID_WEIGHTS, strict=True):
        rate = mean * math.exp(spread * z)
        total += weight * NORMAL.cdf(3 * math.sqrt(k) * (1 - 1 / (9 * k) - (rate / k) ** (1 / 3)))
    return total


def _field_low(run: Run, spec: Spec, name: str, z: float) -> bool:
    coverage, n = run.coverage(name), run.collected
    if name in spec.steady_fields:
        share = spec.steady_fields[name]
        return coverage < share + z * math.sqrt(share * (1 - share) / n + 0.003**2)
    # An optional field wanders between 10% and 45%: only its emptying is a loss.
    return coverage < 0.10 + z * math.sqrt(0.10 * 0.90 / n)


PEERS: dict[str, Callable[[Fleet], Alarms]] = {
    "exit-code watchdog (healthchecks-style)": exit_code_watchdog,
    "fixed minimum item count and field rules (careful Spidermon set-up)": fixed_rules,
    "z-score on the last 14 runs (Elementary-style volume and null-rate anomalies)": zscore_last,
    "z-score by weekday (and hour), last 8 of the same slot": zscore_by_weekday,
    "ideal judge (knows the simulator's parameters: the ceiling, not a peer)": ideal_judge,
    "the ideal judge held to the contract (5% margin, two weeks' wait)": contract_ideal_judge,
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
