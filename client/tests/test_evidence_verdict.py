"""The crawler's verdict is `incomplete` on evidence of loss, and only then:
a source that announces no total is no evidence."""

from __future__ import annotations

import pytest

from completeness_client import ManualClock, RunReport, validate_report


def _report(**numbers):
    report = RunReport("s", "r", clock=ManualClock())
    report.collected = numbers.pop("collected", 10)
    report.declared_total = numbers.pop("declared_total", None)
    report.finish_reason = numbers.pop("finish_reason", "finished")
    for name, value in numbers.items():
        setattr(report, name, value)
    return report


def test_a_healthy_run_without_a_declared_total_is_complete_exits_0_and_publishes():
    report = _report()
    built = report.build()
    assert (built["crawler_verdict"], built["exit_code"]) == ("complete", 0)
    assert (built["records_lost"], built["end_reason"]) == (0, "finished")
    assert report.guard_snapshot(lambda: 10) == {"action": "replaced", "rows": 10}


@pytest.mark.parametrize(
    ("numbers", "reason"),
    [
        (
            {"finish_reason": "closespider_itemcount"},
            "the run ended with reason 'closespider_itemcount', not 'finished'",
        ),
        ({"finish_reason": "shutdown"}, "the run ended with reason 'shutdown', not 'finished'"),
        ({"records_lost": 3}, "3 record(s) lost after retries"),
        ({"record_errors": 2}, "2 record callback(s) raised an exception"),
        ({"declared_total": 12}, "collected 10 of 12 declared"),
        ({"written": 9}, "written 9 < collected 10"),
    ],
)
def test_each_piece_of_evidence_makes_the_run_incomplete_and_exit_3(numbers, reason):
    report = _report(**numbers)
    built = report.build()
    assert reason in report.evidence_of_loss()
    assert (built["crawler_verdict"], built["exit_code"]) == ("incomplete", 3)
    assert report.guard_snapshot(lambda: 10)["action"] == "kept_previous"


def test_lost_pages_failed_batches_and_a_breaker_stop_are_evidence():
    report = _report()
    report.page_lost("https://site.example/list?page=4")
    report.add_failed_batch("feed:out.jsonl", 10, "disk full")
    assert report.evidence_of_loss() == ["1 listing page(s) lost", "10 row(s) not stored: feed:out.jsonl (disk full)"]


def test_an_empty_result_without_a_total_is_no_evidence_but_is_never_published():
    report = _report(collected=0)
    assert report.build()["crawler_verdict"] == "complete"  # the service's layout and drop rules judge it
    assert report.guard_snapshot(lambda: 0)["action"] == "kept_previous"
    assert "collected nothing and the source declared no total" in report.completeness().reasons


def test_a_total_nobody_assigned_is_no_evidence_but_the_plain_guard_still_waits_for_it():
    report = RunReport("s", "r", clock=ManualClock())
    report.collected = 10
    assert report.crawler_verdict() == "complete"
    assert not report.completeness().replace


def test_end_reason_is_in_every_report_and_valid():
    report = _report(finish_reason=None)
    built = report.build()
    assert built["end_reason"] is None and built["records_lost"] == 0
    report.finish_reason = "x" * 150
    assert len(report.build()["end_reason"]) == 100
    assert validate_report({**built, "end_reason": ""})[0].path == "end_reason"
    assert validate_report({**built, "records_lost": -1})[0].path == "records_lost"
