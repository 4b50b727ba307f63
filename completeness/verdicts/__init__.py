"""The verdict engine of docs/verdicts.md: plain data in, findings and a verdict out."""

from completeness.verdicts.engine import judge
from completeness.verdicts.fields import FieldCoverage, field_coverage
from completeness.verdicts.rates import outcome_rates
from completeness.verdicts.types import (
    DEFAULT_MODES,
    NO_HISTORY,
    RULES,
    Baseline,
    Finding,
    History,
    Judgement,
    Mode,
    RuleSettings,
    TrendReference,
    Verdict,
)

__all__ = [
    "DEFAULT_MODES",
    "NO_HISTORY",
    "RULES",
    "Baseline",
    "FieldCoverage",
    "Finding",
    "History",
    "Judgement",
    "Mode",
    "RuleSettings",
    "TrendReference",
    "Verdict",
    "field_coverage",
    "judge",
    "outcome_rates",
]
