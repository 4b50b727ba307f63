from collections.abc import Mapping
from fractions import Fraction


def outcome_rates(outcomes: Mapping[str, int]) -> dict[str, int]:
    """Each outcome in parts per 10,000 of all outcomes, as the spec writes it: round(10000 * count / considered).

    Exact arithmetic, so a count on a .5 boundary rounds the same on every machine.
    """
    considered = sum(outcomes.values())
    if considered == 0:
        return {name: 0 for name in outcomes}
    return {name: round(Fraction(10_000 * count, considered)) for name, count in outcomes.items()}
