from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType


class Verdict(StrEnum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    PAUSED = "paused"


class Mode(StrEnum):
    ENFORCE = "enforce"
    OBSERVE = "observe"


# In order of severity, most severe first: the order findings are listed in.
RULES: tuple[str, ...] = (
    "snapshot_overwritten",
    "declared_total",
    "drop",
    "layout",
    "lost_pages",
    "breaker_stopped",
    "failed_batches",
    "delivery",
    "pacing_equilibrium",
)

DEFAULT_MODES: Mapping[str, Mode] = MappingProxyType(
    {
        **{rule: Mode.ENFORCE for rule in RULES},
        "delivery": Mode.OBSERVE,
        "pacing_equilibrium": Mode.OBSERVE,
    }
)

# Data loss outranks any setting: an operator cannot observe this one away.
ALWAYS_ENFORCED = frozenset({"snapshot_overwritten"})

EXIT_OK = 0
EXIT_INCOMPLETE = 3


@dataclass(frozen=True)
class RuleSettings:
    """A source's per-rule configuration, as the engine needs it."""

    min_completeness: float = 0.99
    drop_threshold: float = 0.25
    modes: Mapping[str, Mode] = field(default_factory=dict)

    def mode_of(self, rule: str) -> Mode:
        if rule in ALWAYS_ENFORCED:
            return Mode.ENFORCE
        return Mode(self.modes.get(rule, DEFAULT_MODES[rule]))


@dataclass(frozen=True)
class Finding:
    rule: str
    mode: Mode
    message: str
    expected: float | int | None
    actual: float | int | None

    @property
    def enforced(self) -> bool:
        return self.mode is Mode.ENFORCE

    def as_dict(self) -> dict:
        return {
            "rule": self.rule,
            "mode": self.mode.value,
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
        }


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    silent: bool
    findings: tuple[Finding, ...]
    completeness: float | None

    @property
    def exit_code(self) -> int:
        return EXIT_INCOMPLETE if self.verdict is Verdict.INCOMPLETE else EXIT_OK

    @property
    def enforced_rules(self) -> list[str]:
        return [f.rule for f in self.findings if f.enforced]

    @property
    def observed_rules(self) -> list[str]:
        return [f.rule for f in self.findings if not f.enforced]
