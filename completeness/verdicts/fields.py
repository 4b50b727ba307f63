"""Field coverage: which share of a run's records had each field filled, and the floor it must reach.

One function computes the floors, so the verdict, the run page and the source page's chart can never
disagree about where a field's floor lies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from completeness.verdicts.shares import ShareNormal, Shares, field_floor
from completeness.verdicts.types import Baseline, RuleSettings

# Coverage and floors are compared after rounding: 0.99 - 0.10 must equal 890 / 1000, not miss it by
# a float's last bit.
PRECISION = 10


@dataclass(frozen=True)
class FieldCoverage:
    name: str
    count: int | None  # None: the report omitted a field its baseline or the operator expects
    coverage: float
    floor: float | None
    minimum: bool  # the floor is the operator's minimum, not the baseline's coverage less field_drop
    baseline_coverage: float | None
    # The field's own normal where the source has learned one: then the floor respects its spread.
    learned: ShareNormal | None = None

    @property
    def omitted(self) -> bool:
        return self.count is None

    @property
    def below(self) -> bool:
        return self.floor is not None and round(self.coverage, PRECISION) < round(self.floor, PRECISION)

    @property
    def shortfall(self) -> float:
        return self.floor - self.coverage if self.floor is not None else 0.0

    @property
    def usual(self) -> float | None:
        """The coverage the floor was set from: the centre of the field's own normal, or the baseline
        run's coverage while the source has none. None under an operator's minimum, which has no usual."""
        if self.minimum or self.floor is None:
            return None
        return self.learned.centre if self.learned is not None else self.baseline_coverage


def field_coverage(
    fields: Mapping[str, int] | None,
    collected: int,
    settings: RuleSettings,
    baseline: Baseline | None,
    shares: Shares | None = None,
) -> list[FieldCoverage]:
    """Every field the report counted, the operator set a minimum for, or the baseline filled above
    field_drop; worst shortfall first, then by name. Empty when the report counted no fields.

    The floor is the operator's minimum where set; else, once the source has learned the field's own
    normal, a floor that respects its spread; else the baseline's coverage less field_drop."""
    if fields is None or collected <= 0:
        return []
    before = baseline.coverage() if baseline is not None else {}
    # A baseline field filled at or below field_drop would get a floor at or below 0: omitting it costs nothing.
    expected = {name for name, share in before.items() if share > settings.field_drop}
    # Each learned field's floor once: on a small run it sums a binomial's tail.
    learned_floors = {}
    if shares is not None:
        z = shares.each_z
        learned_floors = {
            name: field_floor(learned, field_drop=settings.field_drop, z=z, collected=collected)
            for name, learned in shares.fields.items()
        }
    expected |= {name for name, floor in learned_floors.items() if floor > 0}
    names = set(fields) | set(settings.field_minimums) | expected
    rows = []
    for name in names:
        count = fields.get(name)
        minimum = settings.field_minimums.get(name)
        learned = shares.fields.get(name) if shares is not None else None
        if minimum is not None:
            floor = minimum
        elif learned is not None:
            floor = learned_floors[name]
        elif name in before:
            # Coverage cannot fall under 0: a field the baseline filled in 5% has nothing to lose.
            floor = max(before[name] - settings.field_drop, 0.0)
        else:
            floor = None
        rows.append(
            FieldCoverage(
                name=name,
                count=count,
                coverage=(count or 0) / collected,
                floor=floor,
                minimum=minimum is not None,
                baseline_coverage=before.get(name),
                learned=learned if minimum is None else None,
            )
        )
    rows.sort(key=lambda row: (-row.shortfall if row.below else 1, row.name))
    return rows


@dataclass(frozen=True)
class JudgedField:
    """One field of a stored run, against the floor it was judged by (pages read these)."""

    name: str
    count: int | None  # None: not in the report
    coverage: float | None  # None: not reported and not judged, or nothing collected
    floor: float | None
    baseline_coverage: float | None
    # The coverage its floor was set from, as stored with the run (None: an operator's minimum, a field
    # not judged, or a run stored before it was kept).
    usual: float | None = None

    @property
    def below(self) -> bool:
        return (
            self.floor is not None
            and self.coverage is not None
            and round(self.coverage, PRECISION) < round(self.floor, PRECISION)
        )

    @property
    def margin(self) -> float | None:
        if self.floor is None or self.coverage is None:
            return None
        return self.coverage - self.floor


def judged_fields(
    counts: Mapping[str, int] | None,
    collected: int,
    floors: Mapping[str, float] | None,
    baseline: Baseline | None = None,
    usuals: Mapping[str, float] | None = None,
) -> list[JudgedField]:
    """A stored run's fields with the floors stored beside them (the settings may have changed since):
    every field it counted, was judged on, or its baseline had; furthest below first, then closest
    to its floor, then the unjudged by name. A judged field the report omitted has coverage 0."""
    counts, floors, usuals = counts or {}, floors or {}, usuals or {}
    before = baseline.coverage() if baseline is not None else {}
    rows = []
    for name in set(counts) | set(floors) | set(before):
        count = counts.get(name)
        if collected <= 0 or (count is None and name not in floors):
            coverage = None
        else:
            coverage = (count or 0) / collected
        rows.append(JudgedField(name, count, coverage, floors.get(name), before.get(name), usuals.get(name)))
    rows.sort(key=lambda row: (row.margin is None, row.margin if row.margin is not None else 0, row.name))
    return rows
