"""The verdict engine of ../shared/spec/verdicts.md: plain data in, findings and a verdict out."""

from completeness.verdicts.engine import judge
from completeness.verdicts.rates import outcome_rates
from completeness.verdicts.types import (
    DEFAULT_MODES,
    RULES,
    Finding,
    Judgement,
    Mode,
    RuleSettings,
    Verdict,
)

__all__ = [
    "DEFAULT_MODES",
    "RULES",
    "Finding",
    "Judgement",
    "Mode",
    "RuleSettings",
    "Verdict",
    "judge",
    "outcome_rates",
]
