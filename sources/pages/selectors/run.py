"""What a run page tells apart: bad request classes from attrition, outcome counts behind their rates."""

from __future__ import annotations

from dataclasses import dataclass

from completeness.report import DEFAULT_BAD_CLASSES
from sources.models import Run

# 404/410 means the record is gone at the source: attrition, never a failure (verdicts.md).
ATTRITION_CLASSES = frozenset({"not_found"})


@dataclass(frozen=True)
class RequestClassRow:
    name: str
    count: int
    share: float
    kind: str  # "ok", "attrition", "bad" or "other"


def bad_classes(run: Run) -> frozenset[str]:
    window = run.raw.get("failure_window") if isinstance(run.raw, dict) else None
    configured = window.get("bad_classes") if isinstance(window, dict) else None
    return frozenset(configured or DEFAULT_BAD_CLASSES)


def request_classes(run: Run) -> list[RequestClassRow]:
    by_class = run.requests_by_class or {}
    total = sum(by_class.values()) or 0
    bad = bad_classes(run)

    def kind(name: str) -> str:
        if name == "ok":
            return "ok"
        if name in ATTRITION_CLASSES:
            return "attrition"
        return "bad" if name in bad else "other"

    rows = [
        RequestClassRow(name, count, count / total if total else 0.0, kind(name))
        for name, count in by_class.items()
    ]
    order = {"ok": 0, "bad": 1, "other": 2, "attrition": 3}
    return sorted(rows, key=lambda r: (order[r.kind], -r.count, r.name))


@dataclass(frozen=True)
class OutcomeRow:
    name: str
    count: int
    per_10k: int


def outcome_rows(run: Run) -> list[OutcomeRow]:
    rates = run.outcome_rates or {}
    rows = [OutcomeRow(name, count, int(rates.get(name, 0))) for name, count in (run.outcomes or {}).items()]
    return sorted(rows, key=lambda r: (-r.count, r.name))
