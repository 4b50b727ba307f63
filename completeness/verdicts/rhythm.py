"""A source's weekly rhythm (and by hour of day), and its drift, from whole weeks of its learning set
(verdicts.md, Expectation: What); `expectation.learn` takes each run's rhythm out before it fits the
level and the spread. Pure: plain numbers in, factors in logs out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from statistics import median

DAY_SECONDS = 86_400
WEEK_SECONDS = 7 * DAY_SECONDS
HALF_DAY_SECONDS = DAY_SECONDS / 2
# A median absolute deviation times this is a standard deviation where the noise is normal.
MAD_TO_SIGMA = 1.4826
# A weekday's (or hour's) factor is learned where it stands this many standard errors from 0: three,
# not two, because seven weekdays are tested at once (at two, a source without a rhythm learned one
# for some weekday one time in four, and its expectation on that day stood off by its noise).
SIGNIFICANT = 3.0
# Steps between consecutive whole weeks needed before the rhythm is measured net of the drift.
DRIFT_MIN_STEPS = 2
# A run this far off its weekday's usual count (in logs: at half or twice it, or six MADs of the source's
# own distances where those are wider) says nothing about its week's level: a stall, a partial run.
OUTLIER_MADS = 6.0
OUTLIER_FLOOR = math.log(2)
# A week's centre is the median of at least this many runs left in it (else of all its runs).
WEEK_MIN_RUNS = 3


def learn_rhythm(
    times: Sequence[float],
    weekdays: Sequence[int],
    hours: Sequence[int],
    logs: Sequence[float],
    now: float,
    *,
    hourly: bool,
) -> tuple[dict[int, float], dict[int, float], dict[int, float], float]:
    """Weekday (and hour) factors in logs from whole weeks counted back from `now`; empty where the
    history shows none (some weekday seen fewer than twice). Third: for each run the factors were
    learned from, its slot's factor learned without it (see `learn`, spread). Fourth: the drift per
    second where it stands out of the weeks' noise, else 0 (see `_stands_out`)."""
    first = times[0]
    weeks: dict[int, list[int]] = defaultdict(list)
    for index, at in enumerate(times):
        # Week w holds the runs that started 7w + 0.5 to 7w + 7.5 days before the judged run: the
        # boundaries fall between a daily source's runs, whatever minutes they drift by.
        week = max(math.floor((now - at - HALF_DAY_SECONDS) / WEEK_SECONDS), 0)
        # Whole weeks only: one that the learning set covers from its start.
        if now - (week + 1) * WEEK_SECONDS >= first:
            weeks[week].append(index)
    centres = _week_centres(weeks, weekdays, logs)
    # A source that drifts is higher on the last day of each week than on the first, and the weeks are
    # counted back from the judged run, so its weekday would be learned as a peak (a dip where the source
    # shrinks) that it does not have: 13% of a steady fleet's runs were judged on such a factor. Each
    # run is measured from its week's median moved along the drift, the median change between weeks.
    # From three whole weeks on: one step between two weeks' medians is as much their noise as a drift.
    steps = [centres[week] - centres[week + 1] for week in centres if week + 1 in centres]
    step = median(steps) if len(steps) >= DRIFT_MIN_STEPS else 0.0
    drift = step / WEEK_SECONDS
    standing = drift if step and _stands_out(step, steps) else 0.0
    residual: dict[int, float] = {}
    for week, indices in weeks.items():
        middle = now - (7 * week + 4) * DAY_SECONDS
        residual.update((i, logs[i] - centres[week] - drift * (times[i] - middle)) for i in indices)
    by_weekday: dict[int, dict[int, float]] = defaultdict(dict)
    for i, value in residual.items():
        by_weekday[weekdays[i]][i] = value
    if len(by_weekday) < 2 or any(len(values) < 2 for values in by_weekday.values()):
        return {}, {}, {}, standing
    # A weekday's factor counts only where it stands out of the noise of its own few runs (a median's
    # standard error is about 1.25 sigma / sqrt(n)); otherwise a noisy source would learn a rhythm it
    # does not have, and its expectation would wander with it.
    # The noise is each run's distance from the other runs of its own weekday (around the whole week's
    # median the rhythm itself would count as noise and hide itself): from their median, scaled as a
    # distance from a mean of n - 1 runs is. A distance from a median that includes the run understates
    # the noise (with three runs a weekday one distance in three is 0), enough for a source without a
    # rhythm to learn one.
    others = {day: _medians_without(values) for day, values in by_weekday.items()}
    noise = MAD_TO_SIGMA * median(
        abs(value - others[day][i]) * math.sqrt((len(values) - 1) / len(values))
        for day, values in by_weekday.items()
        for i, value in values.items()
    )
    weekday = {day: _significant(list(values.values()), noise) for day, values in by_weekday.items()}
    if not any(weekday.values()):
        weekday = {}
    weekday, by_weekday = _against_ordinary(weekday, by_weekday)
    held_out = {i: 0.0 for values in by_weekday.values() for i in values}
    for day, values in by_weekday.items():
        if weekday.get(day):
            held_out.update(_medians_without(values))
    if not hourly:
        return weekday, {}, held_out, standing
    by_hour: dict[int, dict[int, float]] = defaultdict(dict)
    for values in by_weekday.values():
        for i, value in values.items():
            by_hour[hours[i]][i] = value - weekday.get(weekdays[i], 0.0)
    hour = {h: _significant(list(values.values()), noise) for h, values in by_hour.items() if len(values) >= 2}
    if len(hour) < 2 or not any(hour.values()):
        return weekday, {}, held_out, standing
    hour, by_hour = _against_ordinary(hour, {h: values for h, values in by_hour.items() if h in hour})
    for h, values in by_hour.items():
        if hour[h]:
            for i, factor in _medians_without(values).items():
                held_out[i] = held_out.get(i, 0.0) + factor
    return weekday, hour, held_out, standing


def _stands_out(step: float, steps: Sequence[float]) -> bool:
    """Whether the median step between consecutive weeks' medians stands SIGNIFICANT standard errors
    out of the steps' own scatter. On a source varying by 8% the median step is noise that, carried
    over seven weeks, moves a level by about a sixth: carrying every drift raised seven more
    false-alarm episodes on the six seeded fleets and lost a catch on each wide one."""
    error = 1.25 * MAD_TO_SIGMA * median(abs(other - step) for other in steps) / math.sqrt(len(steps))
    return abs(step) > SIGNIFICANT * error


def _week_centres(
    weeks: Mapping[int, Sequence[int]], weekdays: Sequence[int], logs: Sequence[float]
) -> dict[int, float]:
    """Each whole week's median log count, without its runs far off their own weekday's usual count
    (OUTLIER_MADS, OUTLIER_FLOOR). A feed stalled for two days of a week with two low weekend days had
    that week's median at a weekend's count; its weekdays read as peaks, and its rhythm was lost for a
    week. Measured against the weekday, not the week, so a weekend dip is no outlier."""
    by_day: dict[int, list[float]] = defaultdict(list)
    for indices in weeks.values():
        for i in indices:
            by_day[weekdays[i]].append(logs[i])
    usual = {day: median(values) for day, values in by_day.items()}
    off = {i: abs(logs[i] - usual[weekdays[i]]) for indices in weeks.values() for i in indices}
    if not off:
        return {}
    reach = max(OUTLIER_MADS * median(off.values()), OUTLIER_FLOOR)
    centres = {}
    for week, indices in weeks.items():
        kept = [logs[i] for i in indices if off[i] <= reach]
        centres[week] = median(kept if len(kept) >= WEEK_MIN_RUNS else [logs[i] for i in indices])
    return centres


def _against_ordinary(
    factors: dict[int, float], slots: Mapping[int, dict[int, float]]
) -> tuple[dict[int, float], dict[int, dict[int, float]]]:
    """Factors and each slot's residuals measured from the slots without a factor of their own, not from
    the week's median: with two low weekend days the median of a week is its second-lowest weekday, and
    a Saturday at 40% of a weekday would be learned at 45%."""
    ordinary = [value for slot, values in slots.items() if not factors.get(slot) for value in values.values()]
    base = median(ordinary) if ordinary and factors else 0.0
    return (
        {slot: factor - base if factor else 0.0 for slot, factor in factors.items()},
        {slot: {i: value - base for i, value in values.items()} for slot, values in slots.items()},
    )


def _medians_without(values: Mapping[int, float]) -> dict[int, float]:
    """For every run of a slot, the median of the slot's other values: its slot's factor as if that run
    were new. From one sort, not one a run (a slot of a source that runs four times a day holds 56)."""
    ordered = sorted(values.items(), key=lambda item: item[1])
    rest = len(ordered) - 1
    medians = {}
    for position, (index, _) in enumerate(ordered):
        # The other values, in order, are `ordered` with `position` left out.
        def other(k: int, position: int = position) -> float:
            return ordered[k if k < position else k + 1][1]

        middle = rest // 2
        medians[index] = other(middle) if rest % 2 else (other(middle - 1) + other(middle)) / 2
    return medians


def _significant(values: Sequence[float], noise: float) -> float:
    centre = median(values)
    return centre if abs(centre) > SIGNIFICANT * 1.25 * noise / math.sqrt(len(values)) else 0.0
