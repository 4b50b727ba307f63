from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import TypedDict

from completeness.verdicts.expectation import Expectation, LevelTrend, Normal
from completeness.verdicts.shares import Shares


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
    "mass_removal",
    "drop",
    "layout",
    "below_expected",
    "field_coverage",
    "trend",
    "lost_pages",
    "records_lost",
    "breaker_stopped",
    "failed_batches",
    # Last of the enforced rules: where the crawler says why (lost pages, a breaker stop), that
    # finding is the more useful headline.
    "crawler_reported",
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
    field_drop: float = 0.10
    # field -> the least coverage (0..1) the operator accepts; replaces the baseline's floor for that field.
    field_minimums: Mapping[str, float] = field(default_factory=dict)
    trend_days: int = 30
    trend_min_runs: int = 3
    # The expectation (verdicts.md, Expectation): how far back a source's normal is learned, from how
    # many runs at the least, and the least margin between `expected` and `low`.
    learn_days: int = 56
    learn_min_runs: int = 10
    min_margin: float = 0.05
    modes: Mapping[str, Mode] = field(default_factory=dict)

    def mode_of(self, rule: str) -> Mode:
        if rule in ALWAYS_ENFORCED:
            return Mode.ENFORCE
        return Mode(self.modes.get(rule, DEFAULT_MODES[rule]))


@dataclass(frozen=True)
class Baseline:
    """The last good snapshot: the latest earlier complete run, or one an operator accepted."""

    collected: int
    # Its field counts; None when it reported none.
    fields: Mapping[str, int] | None = None

    def coverage(self) -> dict[str, float]:
        if not self.fields or self.collected <= 0:
            return {}
        return {name: count / self.collected for name, count in self.fields.items()}


@dataclass(frozen=True)
class TrendReference:
    """The good runs of the trend window before a run: how many, and the largest of them."""

    runs: int
    best: int
    best_started_at: datetime
    # The window opens at a run that said how large the source really is (complete against its own
    # declared total, or accepted as baseline) rather than trend_days back; its start then, else None.
    anchored_at: datetime | None = None


@dataclass(frozen=True)
class History:
    """What a verdict needs from the source's past: read by the caller, bounded, never walked."""

    baseline: Baseline | None = None
    trend: TrendReference | None = None
    # Once the source has learned its own normal: the fit, what it expects of this run, and the trend
    # rule's levels with the rhythm taken out (then `trend` is not read).
    normal: Normal | None = None
    expectation: Expectation | None = None
    level_trend: LevelTrend | None = None
    # The learned normals of field coverage and of the declared total's share (with enough runs).
    shares: Shares | None = None
    # Whether the caller refitted the normal for this run (and has a new one to keep).
    refitted: bool = False

    @property
    def baseline_collected(self) -> int | None:
        return self.baseline.collected if self.baseline is not None else None


NO_HISTORY = History()


class FindingJSON(TypedDict):
    """A finding as a run stores it and the API and alerts send it."""

    rule: str
    mode: str
    message: str
    expected: float | int | None
    actual: float | int | None


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

    def as_dict(self) -> FindingJSON:
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
    expectation: Expectation | None = None
    # The least share of its declared total the run counts as complete at (None without a ratio or
    # when paused): min_completeness, or the source's own band where its share hovers at it.
    completeness_floor: float | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_INCOMPLETE if self.verdict is Verdict.INCOMPLETE else EXIT_OK

    @property
    def enforced_rules(self) -> list[str]:
        return [f.rule for f in self.findings if f.enforced]

    @property
    def observed_rules(self) -> list[str]:
        return [f.rule for f in self.findings if not f.enforced]
