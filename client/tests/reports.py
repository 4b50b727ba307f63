"""Report bodies for tests."""

from __future__ import annotations

from typing import Any


def minimal_report(**overrides: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "source": "dubizzle-ae",
        "run_id": "run-2026-09-14",
        "started_at": "2026-09-14T03:00:00Z",
        "finished_at": "2026-09-14T08:00:00+04:00",
        "collected": 9000,
    }
    report.update(overrides)
    return report
