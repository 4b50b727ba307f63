"""The normals of a source's shares (verdicts.md, Expectation): each field's coverage and the share of
its declared total, and the floors the rules judge them by. Pure, like the expectation it learns beside:
a share's normal needs runs, not two weeks, and has no rhythm.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from statistics import NormalDist, median

from completeness.verdicts.expectation import SMALL_SAMPLE, Z_ONE_IN_1000, KnownRun, biweight_scale, learning_set

# A field usually filled in fewer records than this is optional: only its emptying is a loss.
OPTIONAL_BELOW = 0.8


@dataclass(frozen=True)
class ShareNormal:
    """A share's own normal (a field's coverage, the share of a declared total): robust centre and spread."""

    centre: float
    sigma: float
    low_quantile: float  # the 5th percentile seen: about the lowest, but not one outlier run
    runs: int
    # A field's: the share of all the records of its ordinary runs that had it. A run of six records
    # shows a coverage of 1 or 5/6, never 0.98: its median says 1 where the records say 0.98.
    pooled: float | None = None


def share_normal(values: Iterable[float]) -> ShareNormal:
    ordered = sorted(values)
    centre = median(ordered)
    sigma = biweight_scale([v - centre for v in ordered])
    return ShareNormal(centre, sigma, ordered[len(ordered) // 20], len(ordered))


# Good runs a field's lowest ordinary coverage is read from; with fewer, from all its runs.
LOWEST_FROM_GOOD_RUNS = 5


def field_normal(counts: Sequence[tuple[int, int]], good: Sequence[bool] | None = None) -> ShareNormal:
    """A field's normal from its runs' (records with the field, records): as `share_normal`, and the
    pooled share of the runs at or above the lowest twentieth and half the median (a run that lost the
    field is no normal: with fewer than twenty runs the lowest twentieth is the lowest run).

    `good` (complete or accepted, per run): the lowest twentieth is read from those runs. Runs judged
    incomplete stay in the centre and the spread, as in the count's normal, but a loss that persists
    does not become the floor: three runs of an optional field emptied were the lowest twentieth of
    fifty, its floor (a third of that) went to 0%, and the fourth empty run was complete."""
    normal = share_normal(count / collected for count, collected in counts)
    if good is not None:
        kept = sorted(count / collected for (count, collected), ok in zip(counts, good, strict=True) if ok)
        if len(kept) >= LOWEST_FROM_GOOD_RUNS:
            normal = replace(normal, low_quantile=kept[len(kept) // 20])
    least = max(normal.low_quantile, normal.centre / 2)
    ordinary = [(count, collected) for count, collected in counts if count / collected >= least]
    # Half a record either way: a field never seen missing is not certain never to be.
    pooled = (sum(count for count, _ in ordinary) + 0.5) / (sum(collected for _, collected in ordinary) + 1)
    return replace(normal, pooled=pooled)


@dataclass(frozen=True)
class Shares:
    """The learned normals of a source's shares: each field's coverage and the share of its declared
    total. They need runs, not two weeks: a share's rhythm is not learned."""

    fields: Mapping[str, ShareNormal]
    share: ShareNormal | None
    z: float

    @property
    def each_z(self) -> float:
        """The quantile each of them is judged at: a run is judged on all at once, so they share the tail
        of `z` and the run falls under some floor about as rarely as under its count's `low`."""
        return shared_z(self.z, len(self.fields) + (self.share is not None))


def learn_shares(
    runs: Sequence[KnownRun], started_at: datetime, *, learn_days: int, learn_min_runs: int
) -> Shares | None:
    members = learning_set(runs, started_at, learn_days=learn_days)
    if len(members) < max(learn_min_runs, 2):
        return None
    shares = [run.share for run in members if run.share is not None]
    return Shares(
        fields=_field_normals(members, learn_min_runs),
        share=share_normal(shares) if len(shares) >= learn_min_runs else None,
        z=Z_ONE_IN_1000 + SMALL_SAMPLE / (len(members) - 1),
    )


def _field_normals(members: Sequence[KnownRun], min_runs: int) -> dict[str, ShareNormal]:
    counted = [run for run in members if run.fields is not None and run.collected > 0]
    if len(counted) < min_runs:
        return {}
    names = {name for run in counted for name in run.fields or {}}
    # A run that counted fields but not this one had it nowhere (coverage 0), as the rule reads it.
    good = [run.good for run in counted]
    return {
        name: field_normal([((run.fields or {}).get(name, 0), run.collected) for run in counted], good)
        for name in names
    }


def field_floor(normal: ShareNormal, *, field_drop: float, z: float, collected: int) -> float:
    """A field's floor from its own history: field_drop below its usual coverage, or its normal band
    where that is wider (a run of 20 records spreads wider than one of 20,000), but at least half its
    lowest ordinary coverage. A field usually filled in fewer than four records of five is optional:
    the data, not the crawler, sets how many have it, so only its emptying is a loss: below a third of
    its lowest ordinary coverage (a wandering field's history seldom shows all of its range), by more
    than a run of `collected` records at that share spreads."""
    if normal.centre < OPTIONAL_BELOW:
        return _least_coverage(normal.low_quantile / 3, collected, z)
    share = normal.pooled if normal.pooled is not None else normal.centre
    binomial = math.sqrt(share * (1 - share) / max(collected, 1))
    spread = math.hypot(normal.sigma, binomial)
    floor = normal.centre - max(field_drop, z * spread)
    if collected <= EXACT_BINOMIAL_UP_TO:
        floor = min(floor, _binomial_floor(collected, share, tail=_normal_tail(z)))
    return max(floor, normal.low_quantile / 2)


def _least_coverage(share: float, collected: int, z: float) -> float:
    """The least coverage a run of `collected` records shows where each has the field at chance `share`:
    the binomial's lower tail at the z-quantile (a run of 25 records with a field at 10% has it in none
    of them one time in 14)."""
    if collected <= EXACT_BINOMIAL_UP_TO:
        return _binomial_floor(collected, share, tail=_normal_tail(z))
    return max(share - z * math.sqrt(share * (1 - share) / collected), 0.0)


# Up to this many records a field's floor also takes the binomial's own lower tail: a normal band
# around 0.98 misreads a run of six, where one record missing is a coverage of 0.83 one run in nine.
EXACT_BINOMIAL_UP_TO = 400


def _binomial_floor(records: int, share: float, *, tail: float) -> float:
    """The least coverage of `records` records, each with the field at chance `share`, that is not
    rarer than `tail`: the coverage of the smallest count whose lower tail holds at least `tail`."""
    if records <= 0 or share <= 0:
        return 0.0
    if share >= 1:
        return 1.0
    ratio = (1 - share) / share
    probability = share**records  # of every record having the field
    above = 0.0  # of more than `count` records having it
    for count in range(records, 0, -1):
        above += probability
        if 1 - above < tail:  # `count - 1` or fewer is rarer than the tail: `count` is the floor
            return count / records
        probability *= count / (records - count + 1) * ratio
    return 0.0


def shared_z(z: float, tests: int) -> float:
    """The quantile of each of `tests` tests that share the tail of `z` (Bonferroni: the shares of one
    run are nearly independent, so the sharper corrections gain nothing)."""
    if tests <= 1:
        return z
    return -NormalDist().inv_cdf(_normal_tail(z) / tests)


def _normal_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def share_floor(normal: ShareNormal | None, *, min_completeness: float, min_margin: float, z: float) -> float:
    """The least share of a declared total that is complete. A source whose usual share hovers at
    min_completeness (a total the site only approximates) is judged against its own band instead, so
    it does not flip run after run; one whose share is usually far lower keeps min_completeness."""
    if normal is None or normal.centre < min_completeness - min_margin:
        return min_completeness
    return max(min(min_completeness, normal.centre - z * normal.sigma), min_completeness - min_margin)
