from __future__ import annotations

import random

from reports import minimal_report

from completeness_client import FieldCoverage, RunReport, is_filled, validate_report
from completeness_client.clock import ManualClock


def test_filled_means_present_not_none_not_empty():
    assert all(is_filled(v) for v in ("x", 0, False, 0.0, [0], {"a": None}, b"x"))
    assert not any(is_filled(v) for v in (None, "", [], {}, (), set(), b""))


def test_counts_filled_fields_and_shows_never_filled_ones_as_zero():
    coverage = FieldCoverage()
    coverage.observe({"title": "Car 1", "price": 1000, "photos": []})
    coverage.observe({"title": "Car 2", "price": None})
    coverage.observe([("title", ""), ("title", "again")])  # a name counts once per record
    assert coverage.to_report() == {"photos": 0, "price": 1, "title": 2}
    assert coverage.to_report(collected=1) == {"photos": 0, "price": 1, "title": 1}


def test_at_most_200_names_the_same_ones_whatever_the_order():
    names = [f"f{i:03d}" for i in range(300)] + ["x" * 101]
    records = [{name: 1 for name in random.Random(seed).sample(names, 60)} for seed in range(400)]
    first, second = FieldCoverage(), FieldCoverage()
    for record in records:
        first.observe(record)
    for record in reversed(records):
        second.observe(record)
    report = first.to_report()
    assert report == second.to_report()
    assert list(report) == sorted(names)[:200]
    expected = {name: sum(name in record for record in records) for name in report}
    assert report == expected  # every kept count covers every record
    assert first.dropped_names == 101


def test_validation_of_fields():
    assert validate_report(minimal_report(collected=10, fields={"price": 10, "title": 0})) == []
    errors = validate_report(minimal_report(collected=10, fields={"price": 11, "": 1, "y" * 101: 1}))
    assert {e.path for e in errors} == {"fields.price", "fields.", "fields." + "y" * 101}
    too_many = {f"f{i}": 1 for i in range(201)}
    assert [e.path for e in validate_report(minimal_report(collected=10, fields=too_many))] == ["fields"]


def test_report_carries_fields_only_when_counted_and_never_above_collected():
    report = RunReport("s", "r", clock=ManualClock())
    report.declared_total, report.collected = None, 1
    assert "fields" not in report.build()
    report.observe_record({"title": "a"})
    report.observe_record({"title": "b"})
    assert report.build()["fields"] == {"title": 1}  # two items, one distinct record
