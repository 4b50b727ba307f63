"""field_coverage: every record present, half of them without a price, is data loss too."""

import json

import pytest

from completeness.report import RunReport
from completeness.verdicts import Baseline, History, RuleSettings, judge
from sources.models import Run, Source
from tests.conftest import report

DEFAULTS = RuleSettings()


def make(**fields) -> RunReport:
    return RunReport.model_validate_json(json.dumps(report(**fields)))


def coverage_finding(fields, baseline_fields=None, *, collected=1000, baseline_collected=1000, settings=DEFAULTS):
    baseline = Baseline(baseline_collected, baseline_fields) if baseline_fields is not None else None
    judgement = judge(make(collected=collected, fields=fields), settings, History(baseline=baseline))
    return next((f for f in judgement.findings if f.rule == "field_coverage"), None)


# --- the pure rule, at its boundary --------------------------------------------------------------


def test_fires_just_below_the_baseline_floor_and_not_at_it():
    # Baseline 99.0% minus 10 points: the floor is 89.0%, so 890 of 1,000 passes and 889 does not.
    assert coverage_finding({"price": 890}, {"price": 990}) is None
    finding = coverage_finding({"price": 889}, {"price": 990})
    assert finding is not None and finding.mode == "enforce"
    assert (finding.expected, finding.actual) == (0.89, 0.889)


def test_the_floor_stored_with_the_finding_prints_as_the_message_says_it():
    # 7,844 of 7,919 is 99.053%: the floor 89.053% was stored as 0.8905 and the run page printed
    # "89.0%" beside the message's "89.1%".
    from sources.templatetags.dashboard import percent

    finding = coverage_finding({"price": 4000}, {"price": 7844}, collected=7919, baseline_collected=7919)
    assert f"floor {percent(finding.expected)} (baseline" in finding.message
    assert percent(finding.actual) in finding.message


def test_the_message_says_field_share_records_and_floor_worst_first():
    finding = coverage_finding({"title": 1000, "price": 480, "phone": 500}, {"title": 1000, "price": 990, "phone": 620})
    assert finding.message.startswith(
        "price filled in 48.0% of 1,000 records, floor 89.0% (baseline 99.0% minus 10 points); also phone 50.0%"
    )
    assert "title" not in finding.message


def test_a_field_the_baseline_had_and_the_report_omits_counts_as_empty():
    finding = coverage_finding({"title": 1000}, {"title": 1000, "phone": 620})
    assert finding is not None
    assert finding.message.startswith("phone missing from the report (counted as 0.0% of 1,000 records), floor 52.0%")
    assert (finding.expected, finding.actual) == (0.52, 0.0)


def test_an_omitted_field_the_baseline_barely_had_is_no_loss():
    # 10% filled in the baseline, field_drop 10 points: its floor would be 0, nothing to lose.
    assert coverage_finding({"title": 1000}, {"title": 1000, "fax": 100}) is None
    assert coverage_finding({"title": 1000}, {"title": 1000, "fax": 101}) is not None


def test_a_field_reported_at_zero_is_judged_like_an_omitted_one():
    assert coverage_finding({"title": 1000, "phone": 0}, {"title": 1000, "phone": 620}) is not None
    assert coverage_finding({"title": 1000, "phone": 0}, {"title": 1000, "phone": 50}) is None


def test_the_operator_minimum_replaces_the_baseline_floor():
    strict = RuleSettings(field_minimums={"price": 0.95})
    finding = coverage_finding({"price": 949}, {"price": 990}, settings=strict)
    assert finding is not None and "floor 95.0% (operator minimum)" in finding.message
    assert coverage_finding({"price": 950}, {"price": 990}, settings=strict) is None
    # A lenient minimum forgives what the baseline floor would not.
    lenient = RuleSettings(field_minimums={"price": 0.5})
    assert coverage_finding({"price": 600}, {"price": 990}, settings=lenient) is None


def test_an_operator_minimum_needs_no_baseline_and_judges_an_omitted_field():
    settings = RuleSettings(field_minimums={"price": 0.9})
    assert coverage_finding({"title": 1000, "price": 899}, None, settings=settings) is not None
    assert coverage_finding({"title": 1000, "price": 900}, None, settings=settings) is None
    assert coverage_finding({"title": 1000}, None, settings=settings) is not None


def test_field_drop_is_a_setting():
    loose = RuleSettings(field_drop=0.5)
    assert coverage_finding({"price": 490}, {"price": 990}, settings=loose) is None
    assert coverage_finding({"price": 489}, {"price": 990}, settings=loose) is not None


def test_silent_without_fields_without_baseline_fields_or_with_nothing_collected():
    judgement = judge(make(collected=1000), DEFAULTS, History(baseline=Baseline(1000, {"price": 990})))
    assert "field_coverage" not in {f.rule for f in judgement.findings}
    assert coverage_finding({"price": 10}, None) is None
    # collected 0 is layout's or drop's business: no share of nothing is below a floor.
    assert coverage_finding({"price": 0}, {"price": 990}, collected=0) is None


def test_a_baseline_that_collected_nothing_gives_no_floor():
    assert coverage_finding({"price": 1}, {"price": 0}, baseline_collected=0) is None


def test_observed_it_is_stored_but_does_not_fail_the_run():
    settings = RuleSettings(modes={"field_coverage": "observe"})
    baseline = History(baseline=Baseline(1000, {"price": 990}))
    judgement = judge(make(fields={"price": 100}), settings, baseline)
    assert judgement.verdict == "complete" and judgement.observed_rules == ["field_coverage"]


# --- through the API -----------------------------------------------------------------------------


def day(n: int) -> dict:
    return {
        "run_id": f"run-{n}",
        "started_at": f"2026-09-{n:02d}T03:00:00Z",
        "finished_at": f"2026-09-{n:02d}T04:00:00Z",
    }


def post(api, n: int, **fields) -> dict:
    response = api.post_run(report(**day(n), **fields))
    assert response.status_code == 201, response.content
    return response.json()


def rules(body: dict) -> list[str]:
    return [f["rule"] for f in body["findings"] if f["mode"] == "enforce"]


def test_the_baseline_run_keeps_its_field_counts_on_the_source(api):
    post(api, 1, fields={"price": 990, "phone": 620})
    source = Source.objects.get()
    assert source.baseline_field_counts == {"price": 990, "phone": 620}
    body = post(api, 2, fields={"price": 480, "phone": 620})
    assert rules(body) == ["field_coverage"] and body["silent"] is True
    run = Run.objects.get(run_id="run-2")
    assert run.field_counts == {"price": 480, "phone": 620}
    assert run.field_floors == {"price": 0.89, "phone": 0.52}
    # An incomplete run never becomes the baseline, its field counts neither.
    assert Source.objects.get().baseline_field_counts == {"price": 990, "phone": 620}


def test_a_floor_under_field_drop_is_zero_not_negative(api, staff_client):
    # A baseline filled 5% less field_drop's 10 points would be a floor of -5%: the pages printed it.
    post(api, 1, fields={"price": 990, "fax": 50})
    post(api, 2, fields={"price": 990, "fax": 0})
    run = Run.objects.get(run_id="run-2")
    assert run.field_floors == {"price": 0.89, "fax": 0.0}
    page = staff_client.get(f"/runs/{run.pk}/").content.decode()
    assert "-5.0%" not in page and "(<code>fax</code>)" in page


def test_a_report_without_fields_keeps_none_and_is_not_judged_on_them(api):
    post(api, 1, fields={"price": 990})
    body = post(api, 2)
    assert rules(body) == []
    run = Run.objects.get(run_id="run-2")
    assert run.field_counts is None and run.field_floors is None
    # The new baseline counted no fields: the next report's fields have no baseline floor.
    assert Source.objects.get().baseline_field_counts is None
    assert rules(post(api, 3, fields={"price": 10})) == []


def test_a_late_report_is_judged_against_the_field_counts_of_its_own_time(api):
    post(api, 1, fields={"price": 990})
    post(api, 5)  # a crawler version that counted no fields: the new baseline has none
    assert rules(post(api, 6, fields={"price": 300})) == []
    assert Source.objects.get().baseline_field_counts == {"price": 300}
    # Day 3 comes late: its baseline is day 1, read from history, whose price floor is 89%.
    assert rules(post(api, 3, fields={"price": 880})) == ["field_coverage"]
    assert rules(post(api, 4, fields={"price": 900})) == []


@pytest.mark.parametrize(
    "fields,path",
    [
        ({"price": 1001}, "fields.price"),
        ({"": 1}, "fields."),
        ({"x" * 101: 1}, "fields." + "x" * 101),
        ({"price": -1}, "fields.price"),
        ({"price": "900"}, "fields.price"),
    ],
)
def test_bad_field_counts_are_refused_naming_the_field(api, fields, path):
    response = api.post_run(report(collected=1000, fields=fields))
    assert response.status_code == 422
    assert path in [e["path"] for e in response.json()["errors"]], response.json()
    assert not Run.objects.exists()


def test_at_most_200_fields(api):
    assert api.post_run(report(run_id="ok", fields={f"f{i}": 1 for i in range(200)})).status_code == 201
    response = api.post_run(report(run_id="too-many", fields={f"f{i}": 1 for i in range(201)}))
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "fields"


def test_every_field_over_collected_is_named(api):
    response = api.post_run(report(collected=10, fields={"a": 11, "b": 5, "c": 12}))
    assert sorted(e["path"] for e in response.json()["errors"]) == ["fields.a", "fields.c"]


def test_a_missing_field_after_the_worst_one_is_named_missing():
    finding = coverage_finding({"title": 1000, "price": 100}, {"title": 1000, "price": 990, "phone": 620})
    assert finding.message == (
        "price filled in 10.0% of 1,000 records, floor 89.0% (baseline 99.0% minus 10 points); "
        "also phone missing, floor 52.0% (baseline 62.0% minus 10 points)"
    )


def test_a_share_and_its_floor_that_would_print_alike_get_two_decimals():
    finding = coverage_finding({"price": 8896}, {"price": 9900}, collected=10_000, baseline_collected=10_000)
    assert "filled in 88.96% of 10,000 records, floor 89.00%" in finding.message
