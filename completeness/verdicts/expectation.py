"""Each source's own normal (verdicts.md, Expectation): what a healthy run collects at a given time.

Pure: the caller reads a bounded window of the source's stored runs and hands them in as `KnownRun`s;
`learn` fits the normal, `Normal.at` answers for one instant. Everything happens in logs of counts, so
a rhythm is a factor and a spread a share, whatever the source's size.

- Rhythm (`rhythm.py`): each run's log count less the median of its week (weeks counted back from
  the judged run, only whole weeks, without runs at half or twice their weekday's usual count), then
  the median of that per weekday, and per hour of day for sources that run more than once a day,
  measured from the slots without a factor of their own. Recognised only where every weekday seen has
  at least two such runs, and a factor counts only where it stands three standard errors out of its
  runs' noise (seven weekdays are tested at once).
- Level: the median of the rhythm-free logs of the last seven days, so a few bad runs (judged
  incomplete by drop while the source was new) do not move it and a drift is followed within days.
- Spread: the biweight scale of the errors of the same forecast made for each of the latest learning
  runs from the seven days before it, with the run's slot factor learned without it (out of sample
  both ways, so the level's lag and a young rhythm's own error are in it), times a quantile that
  widens with few runs. At a slot with fewer records it grows by the count's own noise (Poisson), up
  to all of it, and the lower bound follows a count's longer lower tail where that noise dominates;
  each error is read at the typical count's scale, so a weekend's wider errors do not widen the
  weekdays.
- A step down: where the latest runs all stood well below the level of the seven days before them,
  and their mean lies farther below it than their noise explains, the level stays where it was
  (`_level_before_step`). A median of seven days follows a branch lost from the site within four
  runs, each run inside the band; a healthy source steps down only at a promotion's end (a rise,
  which this never holds) and drifts by far less in a week. While it holds, the step's own runs are
  left out of the spread.
- A temporary rise: when the recent level stands more than the band above the lower quartile of the
  levels of the runs the level counts, a return to their lowest tenth is within normal (a promotion
  ending is no loss), and no stretch of runs above half a band over that quartile is a trend reference.

docs/decisions.md says why these and not a mean, a standard deviation or an exponentially weighted
level, with the fleet backtest (bench/fleet.py) that chose them.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

from completeness.verdicts.rhythm import DAY_SECONDS, WEEK_SECONDS, learn_rhythm

# The spread is measured on the forecasts of this many latest runs: eight weeks of a daily source,
# two of one that runs four times a day; forecasting all 224 of the latter cost a third of the fit.
SPREAD_RUNS = 56
# Two weeks of runs before a rhythm can be told from chance (verdicts.md, When).
MIN_SPAN = timedelta(days=14)
# One healthy run in about 1,000 falls below `low` (the normal's 0.1% quantile)...
Z_ONE_IN_1000 = 3.09
# ...widened where the spread was estimated from few runs, as a Student t quantile is (Cornish-Fisher).
SMALL_SAMPLE = (Z_ONE_IN_1000**3 + Z_ONE_IN_1000) / 4
# The least level a run counts with: a run that collected nothing is an outlier, not minus infinity.
FLOOR_COUNT = 0.5
# The least number of recent runs the level is the median of (a source that runs weekly, or resumed).
LEVEL_MIN_RUNS = 3
# A step down (`_level_before_step`): at least two runs, within the last seven days, each at least
# STEP_RUN_SPREADS spreads below the level of the seven days before the first of them, and their mean
# STEP_SPREADS standard errors (spread / sqrt(runs)) below it. Measured on the fleet backtest: 3.5
# caught one branch loss more on 20 fleets and raised one episode, a source drifting down 0.15% a day
# whose three runs stood 3.2% below the week before them; 1.0 and 3.0 raised two episodes more on the
# six seeds; fourteen days instead of seven, one more on wide 21 (docs/benchmarks.md).
STEP_RUN_SPREADS = 1.5
STEP_SPREADS = 4.0
STEP_MIN_RUNS = 2
STEP_DAYS = 7
# The biweight's tuning constant, in MADs: errors beyond it, about four standard deviations out, weigh
# nothing. The usual 9 (six standard deviations) is a little more precise (87% efficient against 76%),
# but a loss kept in the learning set (judged by below_expected, so still learned from) counted fully:
# a steady source of 0.8% whose earlier decline made a third of its errors read 3% (the MAD 2%, this 1.4%).
BIWEIGHT_TUNING = 6.0
# Rounds of reading each error at the typical count's scale with the spread the last round measured
# (`_spread`): on feeds of 20-400 items a third round moves it by under 1%.
SCALING_ROUNDS = 3
# The key of every run in Normal.slot_counts, beside the (weekday, hour) slots of the rhythm.
ANY_SLOT = (-1, -1)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class KnownRun:
    """One stored run of the source, as learning and the trend rule need it."""

    key: int  # arrival order
    started_at: datetime
    collected: int
    good: bool = True  # complete, or accepted as baseline
    confirms: bool = False  # complete against its own declared total, or accepted as baseline
    accepted: bool = False
    evidence: bool = False  # direct evidence of loss (lost pages, records lost, ...): never learned from
    expected: int | None = None  # the expectation it was judged against, if it had one
    share: float | None = None  # collected / (declared_total - removed) where the source declared one
    fields: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Expectation:
    expected: int
    low: int
    basis: str
    runs: int


@dataclass(frozen=True)
class Normal:
    level: float  # log of a rhythm-free count, over the last seven days
    long_level: float  # the same over the whole learning set
    # The level before a rise: the lower quartile, so that a rise of up to half the learning set
    # (a three-week promotion in eight) does not pass for the source's ordinary level.
    base_level: float
    # What a return after a rise may fall to: the lowest tenth of ordinary levels.
    before_level: float
    weekday: Mapping[int, float]
    hour: Mapping[int, float]
    sigma: float  # the forecast's spread at a typical slot, in logs
    typical_count: float  # the count that spread belongs to
    z: float
    runs: int
    since: datetime
    # slot -> (runs, least, most, complete): the least and most of its complete runs (of all where none was)
    slot_counts: Mapping[tuple[int | None, int | None], tuple[int, int, int, int]]
    min_margin: float
    # The part of the spread's variance that is a count's own (Poisson: 1 / count in logs), times the
    # count: it grows at a slot with fewer records, the rest does not. None: all of it (older fits).
    counting: float | None = None
    # The level's change per day, in logs, where it stands out of the noise of the weekly medians
    # (0 where it does not, and for older fits): base_level and before_level stand for the fit's time
    # where it grows.
    drift: float = 0.0
    # The lower quartile carried along a fall (`drift` < 0), for the trend's rise ceiling; None: base_level.
    ceiling_level: float | None = None
    # The latest runs the level did not follow, a step down (`_level_before_step`), and how far below
    # the level they stood on average (a share).
    step_runs: int = 0
    step_fall: float = 0.0

    def rhythm(self, when: datetime) -> float:
        """The log factor of the slot `when` falls in (0 without a rhythm)."""
        return self.weekday.get(when.weekday(), 0.0) + self.hour.get(when.hour, 0.0)

    def factor(self, when: datetime) -> float:
        return math.exp(self.rhythm(when))

    @property
    def band(self) -> float:
        """How far below its level (in logs) a typical run may fall and still be normal."""
        return max(self.z * self.sigma, -math.log(1 - self.min_margin))

    @property
    def rhythmic(self) -> bool:
        """The source has learned a weekly rhythm or one by hour of day."""
        return bool(self.weekday or self.hour)

    @property
    def risen(self) -> bool:
        """The recent level stands above the long one by more than the band: a temporary rise."""
        return self.level - self.base_level > self.band

    def spread_at(self, expected: float) -> float:
        return _spread_at(expected, self.sigma, self.typical_count, self.counting)

    def at(self, when: datetime) -> Expectation:
        seasonal = self.rhythm(when)
        expected = math.exp(self.level + seasonal)
        # A slot at a third of the typical count spreads up to sqrt(3) times as wide: as far as the
        # spread is the count's own noise (`_spread`).
        sigma = self.spread_at(expected)
        low = min(expected * _lower_bound(expected, sigma, self.z), expected * (1 - self.min_margin))
        notes = ""
        if self.risen:
            before = math.exp(self.before_level + seasonal)
            # Judged as a run expected at the level before: fewer records, a wider share of them.
            before_low = before * _lower_bound(before, self.spread_at(before), self.z)
            low = min(low, before_low, before * (1 - self.min_margin))
            notes = f"; back to the level before a rise ({round(before):,}) is normal"
        daily = math.expm1(self.drift)
        if round(abs(daily), 3) >= 0.001:
            # A source that grows stands above the range of its older runs: the basis says why.
            notes += f"; {'growing' if daily > 0 else 'shrinking'} {abs(daily):.1%} a day"
        if self.step_runs:
            notes += (
                f"; the last {self.step_runs} runs stood {self.step_fall:.1%} below the level before them,"
                " a step down, not followed"
            )
        return Expectation(
            # The margin's own product (1000 * 0.95) must not floor to one less than it is.
            expected=round(expected),
            low=math.floor(low + 1e-6),
            basis=self._basis(when) + notes,
            runs=self.runs,
        )

    def _basis(self, when: datetime) -> str:
        seen = self.slot_counts.get(_slot(when, weekly=bool(self.weekday), hourly=bool(self.hour)))
        if seen is not None and self.rhythmic:
            days = f"{WEEKDAYS[when.weekday()]}s" if self.weekday else "runs"
            hour = f" at {when.hour:02d}:00" if self.hour else ""
            return f"{days}{hour}, {seen[0]} of {self.runs} runs since {self.since:%Y-%m-%d}{_range(seen)}"
        seen = self.slot_counts[ANY_SLOT]
        return f"{seen[0]} runs since {self.since:%Y-%m-%d}{_range(seen)}"


def _range(seen: tuple[int, int, int, int]) -> str:
    """What a slot's runs collected: every run's range where all were complete, else the complete
    ones' range, named as theirs."""
    runs, least, most, complete = seen
    # One run, or runs that all collected the same: "140", not "140-140".
    span = f"{least:,}" if least == most else f"{least:,}-{most:,}"
    if complete == runs:
        return f": {span}"
    if complete == 0:
        return f": {span}, none complete"
    return f", the {complete} complete {span}"


def _lower_bound(expected: float, sigma: float, z: float) -> float:
    """The share of `expected` a healthy run falls below one time in the z-quantile's, for a spread
    `sigma` in logs. A log-normal's where the count is large; where the spread is mostly a count's own
    (Poisson: a variance of 1 / count in logs, a feed of a few dozen new items) the lower tail is longer
    than a log-normal's, and the bound is a square root's (the count's variance-stabilising scale),
    weighed by the share of the spread the count explains."""
    lognormal = math.exp(-z * sigma)
    counting = min(1.0, 1.0 / max(expected, 1.0) / max(sigma * sigma, 1e-12))
    root = max(1 - z * sigma / 2, 0.0) ** 2
    return math.pow(lognormal, 1 - counting) * math.pow(root, counting)


@dataclass(frozen=True)
class LevelTrend:
    """The trend rule's numbers once the source has a normal: levels with the rhythm taken out."""

    reference: float  # the largest median of five consecutive good runs' levels in the window
    reference_at: datetime
    current: float  # the median level of the run and the two learning runs before it
    own: float  # the run's own level
    runs: int  # good runs in the window
    anchored_at: datetime | None


def learning_set(runs: Sequence[KnownRun], started_at: datetime, *, learn_days: int) -> list[KnownRun]:
    """The runs a normal learns from: the last `learn_days` before the run, none with direct evidence
    of loss, none before the latest run an operator accepted as baseline. `runs` hold no paused run."""
    since = started_at - timedelta(days=learn_days)
    members = [run for run in runs if since <= run.started_at <= started_at and not run.evidence]
    accepted = [run.started_at for run in members if run.accepted]
    if accepted:
        fresh = max(accepted)
        members = [run for run in members if run.started_at >= fresh]
    return sorted(members, key=lambda run: (run.started_at, run.key))


def learn(
    runs: Sequence[KnownRun],
    started_at: datetime,
    *,
    learn_days: int,
    learn_min_runs: int,
    min_margin: float,
) -> Normal | None:
    """The source's normal for a run that starts at `started_at`, or None while it has too little history."""
    members = learning_set(runs, started_at, learn_days=learn_days)
    # Two weeks by the calendar: a schedule that drifts by minutes must not wait a day longer.
    if (
        len(members) < max(learn_min_runs, 2)
        or (members[-1].started_at.date() - members[0].started_at.date()) < MIN_SPAN
    ):
        return None
    # Plain numbers once: datetime arithmetic per run per step was most of the fit's cost.
    times = [run.started_at.timestamp() for run in members]
    weekdays = [run.started_at.weekday() for run in members]
    hours = [run.started_at.hour for run in members]
    logs = [math.log(max(run.collected, FLOOR_COUNT)) for run in members]
    hourly = len(members) / max((times[-1] - times[0]) / DAY_SECONDS, 1.0) > 1.5
    now = started_at.timestamp()

    weekday, hour, held_out, drift = learn_rhythm(times, weekdays, hours, logs, now, hourly=hourly)
    seasonal = [weekday.get(d, 0.0) + hour.get(h, 0.0) for d, h in zip(weekdays, hours, strict=True)]
    rhythm_free = [y - s for y, s in zip(logs, seasonal, strict=True)]

    # The spread of the forecast made for each of the latest runs from the seven days before it, with
    # its slot's factor learned without it: a factor learned from a run has absorbed part of that run's
    # noise (half of it with two runs a weekday), and a new run's forecast has no such help.
    errors, forecasts, forecast_of = [], [], []
    for index in range(max(len(members) - SPREAD_RUNS, 0), len(members)):
        prior = _recent(times, rhythm_free, times[index], upto=index)
        if prior is not None:
            own_slot = held_out.get(index, seasonal[index])
            errors.append(logs[index] - own_slot - prior)
            forecasts.append(math.exp(prior + own_slot))
            forecast_of.append(index)
    if len(errors) < 3:
        return None
    typical_count, sigma, counting, z = _fit_spread(errors, forecasts)
    # The level from the runs judged complete, and those a later complete run confirmed (one that
    # stood within the band above it: a promotion's end judged a drop before the return was learned).
    # A loss under `trend`'s threshold that persists would otherwise become the seven days' median
    # after four runs, and the source read normal again with the records still missing; now it stays
    # a loss until the records return, an operator accepts the new level (a fresh learning set), or
    # the learning set holds too few complete runs.
    band = max(z * sigma, -math.log(1 - min_margin))
    counted = _level_runs(members, rhythm_free, band)
    level = _recent([times[i] for i in counted], [rhythm_free[i] for i in counted], now, upto=len(counted))
    if level is None:
        level = _recent(times, rhythm_free, now, upto=len(members))
    assert level is not None  # members is not empty
    # What a rise is measured from, from the same runs as the level: a stall judged a drop is no level
    # the source held before a rise (a young feed's third day at one item read complete as "back to the
    # level before a rise (1)"). Carried along a drift that stands out: a source that grows by 0.2% a
    # day stood 10% lower seven weeks ago, counted as risen all the time, and a return to that level
    # (a 10% loss) passed for a promotion's end. Upward only: a fall read as drift (a slow decline
    # nobody caught) carried the quartile below any level the source ever held, and its ordinary level
    # then read as a rise, with "back to the level before a rise (4,236)" normal for a source that had
    # never collected under 7,490.
    chosen = counted or range(len(members))
    ordered = sorted(rhythm_free[i] - max(drift, 0.0) * (times[i] - now) for i in chosen)
    # The trend's rise ceiling from the quartile carried along the drift either way: where the source
    # fell, its older stretches stood higher and are still references for a decline.
    ceiling_level = None
    if drift < 0:
        carried = sorted(rhythm_free[i] - drift * (times[i] - now) for i in chosen)
        ceiling_level = carried[len(carried) // 4]
    base_level = ordered[len(ordered) // 4]
    # A step down keeps the level it stepped from, unless that level was a rise (a promotion's end is
    # a return, judged below by the level before the rise).
    step = _level_before_step([times[i] for i in counted], [rhythm_free[i] for i in counted], now, sigma)
    step_runs, step_fall = 0, 0.0
    if step is not None:
        before, runs_after, mean_after = step
        if before > level and before - base_level <= band / 2:
            level, step_runs, step_fall = before, runs_after, 1 - math.exp(mean_after - before)
            # The step's runs are a loss suspected, not yet the source's noise: with their errors in it
            # the band widened run by run, and a branch loss's later runs passed (a 2.7% source missing
            # 9% for six runs: `low` went from 11% to 15% under the held level).
            stepped = set(counted[-runs_after:])
            kept = [j for j, index in enumerate(forecast_of) if index not in stepped]
            if len(kept) >= 3:
                typical_count, sigma, counting, z = _fit_spread([errors[j] for j in kept], [forecasts[j] for j in kept])

    slot_counts: dict[tuple[int | None, int | None], list[KnownRun]] = defaultdict(list)
    for run in members:
        slot_counts[_slot(run.started_at, weekly=bool(weekday), hourly=bool(hour))].append(run)
        slot_counts[ANY_SLOT].append(run)
    return Normal(
        level=level,
        long_level=median(ordered),
        base_level=base_level,
        ceiling_level=ceiling_level,
        before_level=ordered[len(ordered) // 10],
        weekday=weekday,
        hour=hour,
        sigma=sigma,
        typical_count=typical_count,
        counting=counting,
        z=z,
        runs=len(members),
        since=members[0].started_at,
        slot_counts={slot: _seen(runs) for slot, runs in slot_counts.items()},
        min_margin=min_margin,
        drift=drift * DAY_SECONDS,
        step_runs=step_runs,
        step_fall=step_fall,
    )


def _seen(runs: Sequence[KnownRun]) -> tuple[int, int, int, int]:
    """A slot's runs, the least and most the complete ones collected (all of them where none was), and
    how many were complete: a range that held the runs judged incomplete read as if they were normal
    ("normal from 522 (56 runs: 492-550)", the 492 a run that lost a tenth)."""
    complete = [run.collected for run in runs if run.good] or [run.collected for run in runs]
    return len(runs), min(complete), max(complete), sum(run.good for run in runs)


def _fit_spread(errors: Sequence[float], forecasts: Sequence[float]) -> tuple[float, float, float, float]:
    """The typical forecast, the spread at it, its counting part and the quantile `low` is set at."""
    typical_count = median(forecasts)
    sigma, counting = _spread(errors, forecasts, typical_count)
    return typical_count, sigma, counting, Z_ONE_IN_1000 + SMALL_SAMPLE / max(len(errors) - 1, 1)


def _spread(errors: Sequence[float], forecasts: Sequence[float], typical: float) -> tuple[float, float]:
    """The forecast's spread at the typical count, and the part of its variance that is the count's own.

    A count of independent new items varies by 1 / count in logs (Poisson): a source of a few dozen
    items a day mostly by that, one of thousands hardly at all. That part grows at a slot with fewer
    records (a Sunday at a third of a weekday's count), the rest does not. It is at most the Poisson's
    1 / count and at most all of the variance: a steady inventory of 500 varying by 1% does not vary
    like 500 independent arrivals, and its whole spread scales with the count as before.

    So each error is read at the typical count's scale (a Sunday's error shrunk by how much wider its
    count spreads), with the spread and counting part the previous round measured: pooled as they
    are, a feed's weekend errors widened its weekdays' band by about a tenth (20-400 items a day)."""
    sigma = biweight_scale(errors)
    for _ in range(SCALING_ROUNDS):
        counting = _counting_part(sigma, typical)
        at_typical = _spread_at(typical, sigma, typical, counting)
        if at_typical == 0:
            break
        scaled = [
            e * at_typical / _spread_at(f, sigma, typical, counting) for e, f in zip(errors, forecasts, strict=True)
        ]
        sigma = biweight_scale(scaled)
    return sigma, _counting_part(sigma, typical)


def _counting_part(sigma: float, typical: float) -> float:
    """The count's own share of a spread `sigma` at the count `typical`, times that count (`_spread`)."""
    return min(1.0, sigma**2 * max(typical, 1.0))


def biweight_scale(deviations: Sequence[float]) -> float:
    """A standard deviation from deviations about a known centre, robust as a MAD and nearly as precise
    as the standard deviation itself: the biweight midvariance (Mosteller and Tukey; astropy's
    `biweight_scale`). A MAD uses about a third of the information in a sample (37% efficient at the
    normal): from 40 runs it reads a spread 18% off or more one time in three, and the band with it.
    The biweight at BIWEIGHT_TUNING is 76% efficient (13%; it reads a normal sample 4% wide).
    Deviations beyond BIWEIGHT_TUNING MADs weigh nothing."""
    mad = median(abs(d) for d in deviations)
    if mad == 0:
        return 0.0
    weighted = normaliser = 0.0
    for deviation in deviations:
        u2 = (deviation / (BIWEIGHT_TUNING * mad)) ** 2
        if u2 < 1:
            weighted += deviation * deviation * (1 - u2) ** 4
            normaliser += (1 - u2) * (1 - 5 * u2)
    return math.sqrt(len(deviations) * weighted) / abs(normaliser)


def _spread_at(expected: float, sigma: float, typical: float, counting: float | None) -> float:
    """The spread in logs of a run expected to collect `expected`, for a spread `sigma` at the count
    `typical` of which `counting` / count is the count's own (None: all of it)."""
    typical = max(typical, 1.0)
    own = sigma**2 * typical if counting is None else counting
    return math.sqrt(max(sigma**2 - own / typical, 0.0) + own / max(expected, 1.0))


def _level_runs(members: Sequence[KnownRun], rhythm_free: Sequence[float], band: float) -> list[int]:
    """The indices of the runs the level is taken from: complete ones, and incomplete ones that a later
    complete run stood no more than `band` (in logs) above."""
    counted, lowest_good_after = [], math.inf
    for index in range(len(members) - 1, -1, -1):
        if members[index].good or lowest_good_after <= rhythm_free[index] + band:
            counted.append(index)
        if members[index].good:
            lowest_good_after = min(lowest_good_after, rhythm_free[index])
    return counted[::-1]


def _level_before_step(
    times: Sequence[float], levels: Sequence[float], now: float, sigma: float
) -> tuple[float, int, float] | None:
    """Where the latest runs (`levels`, rhythm-free logs in time order) stepped down: the level of the
    seven days before the step, the runs after it and their mean level; None where they did not.

    The longest such stretch within STEP_DAYS, so the level is the one before its first run: by the
    fourth run, the seven days before the latest ones are mostly the step's own. A slow drift does not
    pass: its runs stand little below the week before them, and the first of them least."""
    found = None
    for runs in range(STEP_MIN_RUNS, len(levels)):
        first = len(levels) - runs
        if times[first] < now - STEP_DAYS * DAY_SECONDS:
            break
        before = _recent(times, levels, times[first], upto=first)
        if before is None:
            break
        after = levels[first:]
        mean_after = sum(after) / runs
        every_run_down = max(after) < before - STEP_RUN_SPREADS * sigma
        beyond_noise = before - mean_after >= STEP_SPREADS * sigma / math.sqrt(runs)
        if every_run_down and beyond_noise:
            found = (before, runs, mean_after)
    return found


def _slot(when: datetime, *, weekly: bool, hourly: bool) -> tuple[int | None, int | None]:
    return (when.weekday() if weekly else None, when.hour if hourly else None)


def _recent(times: Sequence[float], values: Sequence[float], at: float, *, upto: int) -> float | None:
    """The median of the values of the seven days before `at` (among the first `upto`), or of the last
    LEVEL_MIN_RUNS where those days hold fewer; None where not even those are there."""
    start = bisect_left(times, at - WEEK_SECONDS, 0, upto)
    if upto - start >= LEVEL_MIN_RUNS:
        return median(values[start:upto])
    if upto >= LEVEL_MIN_RUNS:
        return median(values[upto - LEVEL_MIN_RUNS : upto])
    return None


def level_trend(
    runs: Sequence[KnownRun],
    normal: Normal,
    *,
    key: int,
    started_at: datetime,
    collected: int,
    trend_days: int,
    drop_threshold: float,
) -> LevelTrend | None:
    """The trend rule's reference and the run's level, rhythm taken out (verdicts.md, trend).

    The window: good runs of the last `trend_days`, opening at the latest that confirmed the source's
    size, without runs that stood more than drop_threshold above their expectation when they ran or
    above the band of the long level (a rise, a promotion: no reference for a decline).
    """
    since = started_at - timedelta(days=trend_days)
    ordered = sorted(
        (run for run in runs if since <= run.started_at <= started_at and run.key != key),
        key=lambda run: (run.started_at, run.key),
    )
    good = [run for run in ordered if run.good]
    anchor = next((run.started_at for run in reversed(good) if run.confirms), None)
    if anchor is not None:
        good = [run for run in good if run.started_at >= anchor]
    window = [
        run for run in good if not (run.expected is not None and run.collected > (1 + drop_threshold) * run.expected)
    ]
    if not window:
        return None
    levels = [_level(run.collected, run.started_at, normal) for run in window]
    # A stretch of runs above the band of the long level is a rise (a promotion), no reference; the
    # long level carried back along the drift to the stretch's time.
    ceiling = (normal.base_level if normal.ceiling_level is None else normal.ceiling_level) + normal.band / 2
    best, best_at = None, window[0].started_at
    for start in range(max(len(levels) - 4, 1)):
        value = median(levels[start : start + 5])
        middle = window[min(start + 2, len(window) - 1)].started_at
        along = normal.drift * (middle - started_at).total_seconds() / DAY_SECONDS
        if value <= math.exp(ceiling + along) and (best is None or value > best):
            best, best_at = value, middle
    if best is None:
        return None
    recent = [run for run in ordered if not run.evidence][-2:]
    own = _level(collected, started_at, normal)
    current = median([own] + [_level(r.collected, r.started_at, normal) for r in recent])
    # The run speaks for itself too: a run back at its level after a decline is no decline.
    return LevelTrend(
        reference=best,
        reference_at=best_at,
        current=current,
        own=own,
        runs=len(window),
        anchored_at=anchor,
    )


def _level(collected: int, when: datetime, normal: Normal) -> float:
    return max(collected, FLOOR_COUNT) / normal.factor(when)


def lowest_factor(normal: Normal) -> float:
    """The smallest rhythm factor of any slot: a rhythm-free level is at most a count divided by it."""
    return math.exp(min(normal.weekday.values(), default=0.0) + min(normal.hour.values(), default=0.0))
