"""How the pages write numbers: what the template filters (sources/templatetags/dashboard.py) and the
charts' legends (sources/pages/charts/figures.py) share; counts and shares, which the alerts write too,
are in completeness.numbers. The formats an operator types back (shares,
durations, field minimums) are in sources/pages/forms.py, beside their parsers."""

from completeness.verdicts import Verdict


def change_against_baseline(collected: int | None, baseline: int | None, verdict: str | None = None) -> float | None:
    """A run's collected against the baseline it was judged with, as a ratio (-0.867 for -86.7%); None
    where there is nothing to compare, and for a paused run, which collects nothing by design."""
    if collected is None or not baseline or verdict == Verdict.PAUSED:
        return None
    return (collected - baseline) / baseline
