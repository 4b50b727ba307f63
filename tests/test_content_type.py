"""A report is sent as application/json (parameters such as charset allowed); any other Content-Type is
415 with the JSON error body, and nothing is stored."""

import json

import pytest

from sources.models import Run
from tests.conftest import assert_error_body, report

BODY = json.dumps(report())


def post(api, content_type: str | None, body: str = BODY):
    extra = {"CONTENT_TYPE": content_type} if content_type is not None else {}
    return api.client.generic("POST", "/api/v1/runs", body, **extra, **api.headers())


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
        "application/json-seq",
        "application/vnd.api+json",
        "",
        None,
    ],
)
def test_a_report_of_another_content_type_is_415_with_a_json_body(api, content_type):
    response = post(api, content_type)
    assert response.status_code == 415, response.content
    body = response.json()
    assert body["errors"] == [] and "application/json" in body["detail"]
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON; charset=UTF-8",
        "application/json;charset=utf-8",
    ],
)
def test_a_report_sent_as_application_json_is_accepted(api, content_type):
    response = post(api, content_type)
    assert response.status_code == 201, response.content
    assert response.json()["verdict"] == "complete"
    stored = Run.objects.get()
    assert (stored.run_id, stored.collected) == (report()["run_id"], report()["collected"])


def test_a_caller_without_a_valid_token_gets_401_whatever_the_content_type(api):
    assert_error_body(post(api, "text/plain"), 415, naming="application/json")
    api.token = "wrong"
    # Who may post is told before how to post: a stranger learns nothing of the contract.
    body = assert_error_body(post(api, "text/plain"), 401)
    assert "application/json" not in body["detail"]
    assert not Run.objects.exists()


def test_a_report_without_a_content_type_is_told_so(api):
    """It read "a run report is sent as Content-Type: application/json, not none"."""
    detail = post(api, "").json()["detail"]
    assert detail == "a run report is sent as Content-Type: application/json; this one had no Content-Type"


BODIES = {
    ("POST", "/api/v1/sources/shop/pause"): {"reason": "migrating proxies"},
    ("PATCH", "/api/v1/sources/shop/settings"): {"drop_threshold": 0.3},
    ("POST", "/api/v1/sources/shop/acknowledge"): {"note": "on it"},
    ("POST", "/api/v1/windows"): {
        "name": "deploy",
        "starts_at": "2026-12-01T00:00:00Z",
        "ends_at": "2026-12-01T01:00:00Z",
    },
}


@pytest.mark.parametrize("endpoint", BODIES)
@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain", None])
def test_a_body_of_another_content_type_is_415_on_every_endpoint_that_takes_one(api, endpoint, content_type):
    api.post_run(report(source="shop"))
    extra = {"CONTENT_TYPE": content_type} if content_type is not None else {}
    before = api.client.get("/api/v1/sources/shop", **api.headers()).json()
    response = api.client.generic(*endpoint, json.dumps(BODIES[endpoint]), **extra, **api.headers())
    assert_error_body(response, 415, naming="application/json")
    assert "a request body is sent as Content-Type: application/json" in response.json()["detail"]
    assert api.client.get("/api/v1/sources/shop", **api.headers()).json() == before


@pytest.mark.parametrize("endpoint", list(BODIES)[:2])
def test_the_same_body_as_application_json_is_taken(api, endpoint):
    api.post_run(report(source="shop"))
    body = json.dumps(BODIES[endpoint])
    response = api.client.generic(*endpoint, body, content_type="application/json", **api.headers())
    assert response.status_code == 200, response.content
