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
    "every instant with an offset": json.dumps(FULL).replace(
        '"2026-09-15T03:10:00Z"', '"2026-09-15T03:10:00.000000+00:00"'
    ).replace('"2026-09-15T03:11:02Z"', '"2026-09-15T05:11:02+02:00"'),
    "escaped unicode": json.dumps(FULL, ensure_ascii=True).replace('"shop"', '"\\u0073hop"'),
    "defaults spelled out": json.dumps({**FULL, "paused": False, "fields": None}),
    "all of it at once": respelled(json.dumps(reordered(FULL), indent=2)),
}


@pytest.mark.parametrize("variant", RESERIALISED, ids=list(RESERIALISED))
def test_a_reserialised_report_is_a_repeat(api, variant):
    first = api.post_run(FULL)
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
        **FULL, "failure_window": {**FULL["failure_window"], "events": FULL["failure_window"]["events"][::-1]},
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
    assert api.post_run(body).status_code == 200
    assert api.post_run({**body, "collected": 901}).status_code == 409
