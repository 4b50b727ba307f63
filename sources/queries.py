"""Query helpers under every layer of the app: rows looked up by name, a query's first rows with how
many it has, and what a run was short of. The services, the alerts and the pages use them; they import
nothing of the app."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Case, ExpressionWrapper, F, FloatField, IntegerField, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce, Greatest
from django.db.models.lookups import GreaterThan

from completeness.verdicts.rules import MASS_REMOVAL_SHARE


def by_name(model, field: str, names: list[str]) -> tuple[list, list[str]]:
    """The rows of `model` whose `field` is one of `names`, in the order named, and the names no row has."""
    found = {getattr(row, field): row for row in model.objects.filter(**{f"{field}__in": names})}
    return [found[name] for name in names if name in found], [name for name in names if name not in found]


@dataclass(frozen=True)
class Capped:
    items: list
    total: int

    @property
    def more(self) -> int:
        return self.total - len(self.items)


def capped_query(queryset: QuerySet, limit: int) -> Capped:
    """The first `limit` rows of a query, and how many it has: counted only when there are more."""
    rows = list(queryset[: limit + 1])
    if len(rows) <= limit:
        return Capped(rows, len(rows))
    return Capped(rows[:limit], queryset.count())


def expected_records() -> Coalesce:
    """What a run was expected to bring: its declared total less the records removed during the run
    (the `declared_total` rule's denominator, completeness.verdicts.rules.net_declared in SQL: the more
    precise judge where a source announces one),
    else its `expected` (its own normal), else the last complete snapshot it was judged against (a new
    source's `drop`: its loss read "none, other losses"); null when it had none of them. The normal
    came first once, and a run's finding said "collected 2,480 of 7,358" while the overview counted
    what it lost against the normal, or against the total with the removed records in it.

    A run that reported more than MASS_REMOVAL_SHARE of its total removed is measured against the whole
    total, as its `mass_removal` finding is: 7,800 "removed" of 9,000 are the loss, not attrition."""
    # Never below 0 (more removed than announced: nothing left to miss); null without a declared total,
    # so the others are asked (PostgreSQL's GREATEST skips nulls, and would read such a run as 0).
    net = ExpressionWrapper(F("declared_total") - F("removed"), output_field=IntegerField())
    mass_removal = GreaterThan(
        F("removed"), ExpressionWrapper(F("declared_total") * Value(MASS_REMOVAL_SHARE), output_field=FloatField())
    )
    declared = Case(
        When(mass_removal, then=F("declared_total")),
        When(declared_total__isnull=False, then=Greatest(net, Value(0))),
        output_field=IntegerField(),
    )
    return Coalesce(declared, F("expected"), F("baseline_collected"), output_field=IntegerField())


def records_short() -> Case:
    """How many records a run was short of expected_records(), never below 0; null without a target.
    One definition for the source headline, the overview's fleet losses and the weekly digest, so
    their numbers agree.

    A run judged against its own normal that collected at least its `low` lost no records: its count
    lies in the source's ordinary range, and its `expected` is a forecast, not a total. A run that
    failed only on a field was counted "1 of 4,001 records missing", and a crawler's own "incomplete"
    run within the range 8 records; a below_expected run is counted against `expected`, as its
    finding says."""
    within_normal = Q(declared_total__isnull=True, expected_low__isnull=False, collected__gte=F("expected_low"))
    return Case(
        When(within_normal, then=Value(0)),
        default=Greatest(expected_records() - F("collected"), Value(0)),
        output_field=IntegerField(),
    )


# Runs that had a number to be short of.
HAS_TARGET = Q(expected__isnull=False) | Q(declared_total__isnull=False) | Q(baseline_collected__isnull=False)
