"""The repeat check compares reports as values: a retry that re-serialises its report (another key
order, whitespace, `+00:00` for `Z`, fractional zeros, defaults spelled out) is a 200 repeat; a report
that really differs is still 409."""

import json

import pytest

from sources.ingest.ingest import legacy_text_digest
from sources.models import Run
from tests.conftest import report
from tests.test_ingest_api import FULL


def reordered(value):
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


def respelled(text: str) -> str:
    return text.replace("03:00:00Z", "03:00:00.000+00:00").replace("04:00:00Z", "06:00:00+02:00")


RESERIALISED = {
    "keys in another order": json.dumps(reordered(FULL)),
    "other whitespace": json.dumps(FULL, indent=4, separators=(" ,", " : ")),
    "+00:00 and fractional zeros for Z": respelled(json.dumps(FULL)),
    "every instant with an offset": json.dumps(FULL)
    .replace('"2026-09-15T03:10:00Z"', '"2026-09-15T03:10:00.000000+00:00"')
    .replace('"2026-09-15T03:11:02Z"', '"2026-09-15T05:11:02+02:00"'),
    "escaped unicode": json.dumps(FULL, ensure_ascii=True).replace('"shop"', '"\\u0073hop"'),
    "defaults spelled out": json.dumps({**FULL, "paused": False, "fields": None}),
    # As a JavaScript or Go forwarder writes 4.0 back: one number.
    "a whole number in meta spelled with a fraction": json.dumps(FULL).replace('"workers": 4', '"workers": 4.0'),
    "a whole number in an unknown field spelled with a fraction": json.dumps({**FULL, "future": [1.0]})
    .replace("[1.0]", "[1]")
    .replace('"workers": 4', '"workers": 4.00'),
    "all of it at once": respelled(json.dumps(reordered(FULL), indent=2)),
}


@pytest.mark.parametrize("variant", RESERIALISED, ids=list(RESERIALISED))
def test_a_reserialised_report_is_a_repeat(api, variant):
    first = api.post_run({**FULL, "future": [1.0]} if "unknown field" in variant else FULL)
    assert first.status_code == 201
    again = api.post_run(RESERIALISED[variant])
    assert again.status_code == 200, again.content
    assert again.json()["run"] == first.json()["run"]
    assert Run.objects.count() == 1


DIFFERENT = {
    "another count": {**FULL, "collected": 989},
    "another instant": {**FULL, "finished_at": "2026-09-15T04:00:01Z"},
    "another meta value": {**FULL, "meta": {**FULL["meta"], "workers": 5}},
    "an extra unknown field": {**FULL, "future_field": 1},
    "events in another order": {
        **FULL,
        "failure_window": {**FULL["failure_window"], "events": FULL["failure_window"]["events"][::-1]},
    },
}


@pytest.mark.parametrize("variant", DIFFERENT, ids=list(DIFFERENT))
def test_a_really_different_report_of_the_same_run_is_409(api, variant):
    assert api.post_run(FULL).status_code == 201
    response = api.post_run(DIFFERENT[variant])
    assert response.status_code == 409, response.content
    assert Run.objects.count() == 1


def test_a_run_stored_before_repeats_were_compared_by_value_still_answers_its_retry(api):
    body = report(run_id="old", collected=900)
    assert api.post_run(body).status_code == 201
    # As stored by the earlier server: the digest of the JSON text with sorted keys.
    Run.objects.filter(run_id="old").update(report_digest=legacy_text_digest(body))
    repeat = api.post_run(body)
    assert repeat.status_code == 200 and repeat.json()["run_id"] == "old"
    conflict = api.post_run({**body, "collected": 901})
    assert conflict.status_code == 409 and "old" in conflict.json()["detail"]
    assert list(Run.objects.values_list("run_id", "collected")) == [("old", 900)]


def test_a_run_stored_before_meta_numbers_were_compared_as_numbers_still_answers_its_retry(api):
    from sources.ingest.ingest import parse_report, report_digest

    body = report(run_id="float", meta={"load": 1.0}, surprise={"share": 2.0})
    assert api.post_run(body).status_code == 201
    as_sent = report_digest(parse_report(json.dumps(body).encode()).report, numbers_as_sent=True)
    Run.objects.filter(run_id="float").update(report_digest=as_sent)
    assert api.post_run(body).status_code == 200
    assert api.post_run({**body, "meta": {"load": 1.5}}).status_code == 409


# The digest of tests.conftest.report() as the server computed it before records_lost and end_reason
# were part of the contract: runs stored then keep answering their retries as repeats.
DIGEST_BEFORE_LATER_FIELDS = "e4d88db80f2b71a15e19ac1a4093636add44a1e92fb4608f0a31ed3ddc51018f"


def test_fields_the_contract_gained_later_leave_an_older_reports_digest_alone():
    from sources.ingest.ingest import parse_report

    assert parse_report(json.dumps(report()).encode()).digest == DIGEST_BEFORE_LATER_FIELDS
    spelled_out = {**report(), "records_lost": None, "end_reason": None}
    assert parse_report(json.dumps(spelled_out).encode()).digest == DIGEST_BEFORE_LATER_FIELDS
    assert parse_report(json.dumps({**report(), "records_lost": 0}).encode()).digest != DIGEST_BEFORE_LATER_FIELDS


def test_records_lost_and_end_reason_are_stored_and_part_of_the_report_value(api):
    body = report(run_id="lost", collected=293, records_lost=3, end_reason="finished")
    answer = api.post_run(body).json()
    assert answer["verdict"] == "incomplete" and [f["rule"] for f in answer["findings"]] == ["records_lost"]
    run = Run.objects.get(run_id="lost")
    assert (run.records_lost, run.end_reason) == (3, "finished")
    assert api.post_run({**body, "end_reason": "shutdown"}).status_code == 409


def test_a_conflict_names_the_fields_that_differ_with_their_values(api):
    # A retry that rebuilt its report (a new finished_at) learns what differs, not only that it does.
    assert api.post_run(FULL).status_code == 201
    rebuilt = {**FULL, "finished_at": "2026-09-15T04:00:01Z", "meta": {**FULL["meta"], "workers": 5}, "future": 1}
    detail = api.post_run(rebuilt).json()["detail"]
    assert (
        '(it differs in finished_at: "2026-09-15T04:00:00Z" stored, "2026-09-15T04:00:01Z" now, future: absent'
        in detail
    )
    assert "stored, 1 now, meta);" in detail
    # Compared as values: an instant respelled with an offset is no difference.
    respelled_too = {**rebuilt, "started_at": FULL["started_at"].replace("Z", "+00:00")}
    assert api.post_run(respelled_too).json()["detail"] == detail


def test_a_conflict_names_at_most_five_fields_and_counts_the_rest(api):
    assert api.post_run(FULL).status_code == 201
    changed = {
        **FULL,
        "collected": 1,
        "exit_code": 9,
        "removed": 2,
        "paused": True,
        "written": 1,
        "crawler_verdict": None,
    }
    detail = api.post_run(changed).json()["detail"]
    assert detail.count(" stored, ") == 5 and detail.endswith(" and 1 more); a run_id identifies one report")


def test_a_conflict_with_a_report_retention_removed_says_only_that_it_differs(api):
    assert api.post_run(FULL).status_code == 201
    Run.objects.update(raw={"_pruned": "raw report removed 2026-10-15 after 30 days (RETAIN_DETAIL_DAYS)"})
    response = api.post_run({**FULL, "collected": 989})
    assert response.status_code == 409
    assert response.json()["detail"] == (
        "run 'full-1' of source 'shop' was already reported with a different body; a run_id identifies one report"
    )
