"""What a run page tells apart: bad request classes from attrition, outcome counts behind their rates;
and what it shows a user who is not staff of the crawler's own text (URLs, meta, errors) without the
credentials it may quote."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from completeness.alerts.redact import redact_error, redact_finding, redact_named, redact_text, redact_url
from completeness.report import DEFAULT_BAD_CLASSES, RunReport
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


IGNORED_SHOWN = 20


def ignored_fields(run: Run) -> list[str]:
    """Top-level keys of the report that are no field of it (the answer's `ignored_fields`): a
    `declared_totl` showed only inside the raw report, and the run was judged without a total."""
    if not isinstance(run.raw, dict):
        return []
    known = {field.alias or name for name, field in RunReport.model_fields.items()}
    return sorted(key for key in run.raw if key not in known)[:IGNORED_SHOWN]


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
        RequestClassRow(name, count, count / total if total else 0.0, kind(name)) for name, count in by_class.items()
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


def outcomes_considered(run: Run) -> int | None:
    """The units the rates are shares of (every outcome's count, those past the rows shown too): a
    generator's selection rate read without it is 7,778 per 10,000 of no number on the page."""
    return sum(run.outcomes.values()) if run.outcomes else None


def redact_report(value: Any, key: str = "") -> Any:
    """A report as received, every string in it redacted by what it is: a lost URL, a batch error, a
    meta entry, else free text. Keys are names the contract checked and stay."""
    if isinstance(value, dict):
        if key == "meta":
            return {name: redact_named(name, item) for name, item in value.items()}
        return {name: redact_report(item, name) for name, item in value.items()}
    if isinstance(value, list):
        if key == "lost_urls":
            return [redact_url(item) if isinstance(item, str) else redact_report(item) for item in value]
        return [redact_report(item, key) for item in value]
    if isinstance(value, str):
        return redact_error(value) if key == "error" else redact_text(value)
    return value


def shown(run: Run, detail: dict[str, Any], staff: bool) -> dict[str, Any]:
    """What the run page shows of the crawler's own text: all of it to staff; to anyone else, lost URLs,
    meta, batch names and errors, findings, end and pause reasons and the raw report without credentials, URL
    userinfo, query values or token-like path segments (the host and path that help diagnose stay)."""
    if staff:
        return {
            "findings": run.findings,
            "meta": run.meta,
            "end_reason": run.end_reason,
            "pause_reason": run.pause_reason,
            "raw": run.raw,
        }
    lost, batches = detail["lost_urls"], detail["failed_batches"]
    return {
        "findings": [redact_finding(f) for f in run.findings or []],
        "meta": {name: redact_named(name, value) for name, value in (run.meta or {}).items()},
        "end_reason": redact_text(run.end_reason or ""),
        "pause_reason": redact_text(run.pause_reason or ""),
        "raw": redact_report(run.raw),
        "lost_urls": replace(lost, items=[redact_url(u) if isinstance(u, str) else u for u in lost.items]),
        "failed_batches": replace(
            batches,
            items=[
                # A feed's batch is named by its URI, which may carry a login (ftp://user:password@…).
                {**b, "name": redact_text(str(b.get("name", ""))), "error": redact_error(str(b.get("error", "")))}
                if isinstance(b, dict)
                else b
                for b in batches.items
            ],
        ),
    }
