"""Every API error body, whatever the status, is JSON {"detail": string, "errors": [...]}: the ones our
handlers raise, and the ones Django or ninja give on their own (unknown paths, wrong methods)."""

import json

from django.test import override_settings

from tests.conftest import assert_error_body, make_token, report


def test_401_without_a_token_or_with_a_wrong_one(api):
    assert_error_body(api.post_run(report(), token=""), 401)
    assert_error_body(api.post_run(report(), token="not-a-token"), 401)
    assert_error_body(api.get("/sources", token="not-a-token"), 401)


def test_401_says_whether_the_token_is_missing_or_not_accepted(api):
    """Both used to answer {"detail": "Unauthorized"}: a crawler's log did not say which to fix."""
    missing = api.post_run(report(), token="").json()["detail"]
    assert "no token" in missing and "Authorization: Bearer" in missing and "create_token" in missing
    for token in ("not-a-token", "cmpl_0123456789ab_" + "x" * 43):
        refused = api.post_run(report(), token=token).json()["detail"]
        assert "unknown, malformed or revoked" in refused, refused
    basic = api.client.post(
        "/api/v1/runs", data="{}", content_type="application/json", HTTP_AUTHORIZATION="Basic Zm9vOmJhcg=="
    )
    assert "Bearer" in basic.json()["detail"]


def test_a_token_after_more_than_one_space_is_read(api):
    # RFC 7235 allows 1*SP after the scheme; "Bearer  <token>" was answered "unknown, malformed or revoked".
    wide = api.client.post(
        "/api/v1/runs",
        data=json.dumps(report()),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer   {api.token}",
    )
    assert wide.status_code == 201, wide.content
    # A token that is wrong stays wrong however it is spaced.
    wrong = api.client.post(
        "/api/v1/runs",
        data=json.dumps(report()),
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer   cmpl_nope",
    )
    assert "unknown, malformed or revoked" in assert_error_body(wrong, 401)["detail"]


def test_403_for_a_scoped_token_posting_for_another_source(api):
    scoped = make_token("scoped", sources=["other"])
    api.post_run(report(source="other"))
    body = assert_error_body(api.post_run(report(), token=scoped), 403)
    # Which token, and what it covers: a slug one letter off the token's shows beside it.
    assert body["detail"].startswith("token 'scoped' may not post for source 'shop': it covers other."), body
    assert "create_token NAME --source SLUG" in body["detail"]
    # The source it covers beside it is taken.
    assert api.post_run(report(source="other", run_id="other-2"), token=scoped).status_code == 201


def test_404_for_an_unknown_source_and_an_unknown_api_path(api):
    assert_error_body(api.get("/sources/nope"), 404)
    assert_error_body(api.get("/no-such-endpoint"), 404)
    assert_error_body(api.client.get("/api/v2/runs"), 404)


def test_405_for_a_method_an_endpoint_does_not_take(api):
    body = assert_error_body(api.get("/runs"), 405)
    assert "method" in body["detail"].lower()
    assert "POST" in api.get("/runs")["Allow"]
    assert_error_body(api.client.delete("/api/v1/sources", **api.headers()), 405)


def test_a_report_posted_to_a_wrong_path_is_told_which_path_is_right(api):
    # Both answered {"detail": "Not Found"}, and a crawler's log said no more.
    slash = assert_error_body(_post(api, "/api/v1/runs/"), 404)["detail"]
    assert "no API endpoint at /api/v1/runs/" in slash and "without the trailing slash: /api/v1/runs" in slash
    twice = assert_error_body(_post(api, "/api/v1/api/v1/runs"), 404)["detail"]
    assert "/api/v1 twice: the service's URL is its root" in twice
    # A path that is no endpoint with or without its slash gets neither hint, and the list of endpoints.
    other = assert_error_body(_post(api, "/api/v1/run/"), 404)["detail"]
    assert other == "no API endpoint at /api/v1/run/; the endpoints are listed at /api/v1/docs"
    # The right path beside them takes the report.
    assert _post(api, "/api/v1/runs").status_code == 201


def test_a_wrong_method_is_told_which_the_path_takes(api):
    assert api.get("/runs").json()["detail"] == "the method GET is not taken at /api/v1/runs, which takes POST"


def _post(api, path):
    return api.client.post(path, data=json.dumps(report()), content_type="application/json", **api.headers())


def test_409_for_the_same_run_id_with_another_report(api):
    api.post_run(report())
    assert_error_body(api.post_run(report(collected=1)), 409)


@override_settings(REPORT_MAX_BYTES=100)
def test_413_for_a_report_over_the_size_limit(api):
    detail = assert_error_body(api.post_run(report()), 413)["detail"]
    # What to send less of, and who raises the limit.
    assert detail.startswith("the report is larger than 100 bytes, this service's limit (REPORT_MAX_BYTES)"), detail
    assert "proxy_transitions" in detail and "pages.lost_urls" in detail and "raise the limit" in detail
    with override_settings(REPORT_MAX_BYTES=1000):
        assert api.post_run(report()).status_code == 201


def test_415_for_a_report_that_is_no_json(api):
    response = api.client.post("/api/v1/runs", data=json.dumps(report()), content_type="text/plain", **api.headers())
    assert_error_body(response, 415)


def test_422_for_a_bad_report_a_bad_query_and_a_body_that_is_no_json(api):
    body = assert_error_body(api.post_run(report(collected=-1)), 422)
    assert body["errors"][0]["path"] == "collected"
    assert_error_body(api.get("/sources", page="x"), 422)
    api.post_run(report())
    response = api.client.post(
        "/api/v1/sources/shop/pause", data="{not json", content_type="application/json", **api.headers()
    )
    assert assert_error_body(response, 422)["errors"][0]["path"] == "(body)"


def test_a_successful_answer_keeps_its_own_shape(api):
    created = api.post_run(report())
    assert created.status_code == 201 and "verdict" in created.json() and "errors" not in created.json()
    listing = api.get("/sources")
    assert listing.status_code == 200 and listing.json()["count"] == 1


def test_error_pages_outside_the_api_stay_html(staff_client):
    response = staff_client.get("/sources/nope/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_missing_body_is_named_as_missing(api):
    """An acknowledgement or a pause posted without a body (`curl -X POST .../acknowledge`) was
    answered `(body): Field required`, which reads like a field called "(body)"."""
    api.post_run(report(collected=0))  # a source to acknowledge
    for path in ("/sources/shop/acknowledge", "/sources/shop/pause"):
        response = api.client.generic("POST", f"/api/v1{path}", b"", "application/json", **api.headers())
        body = assert_error_body(response, 422, "(body)")
        assert body["errors"] == [{"path": "(body)", "message": "no body: send a JSON object"}], body
