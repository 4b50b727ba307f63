"""PATCH /api/v1/sources/{slug}/settings: interval, grace and rule settings through the API."""

import json
from datetime import timedelta

import pytest

from sources.models import Source
from tests.conftest import make_token, report


@pytest.fixture
def shop(api):
    assert api.post_run(report()).status_code == 201
    return Source.objects.get(slug="shop")


def patch(client, path: str, payload, token: str | None = None, **headers):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.patch(f"/api/v1{path}", data=payload, content_type="application/json", **auth, **headers)


def test_a_token_sets_the_interval_and_grace_and_reads_them_back(client, api, shop):
    body = patch(
        client, "/sources/shop/settings", {"expected_interval_seconds": 21600, "grace_seconds": 1800}, api.token
    )
    assert body.status_code == 200, body.content
    assert body.json()["settings"]["expected_interval_seconds"] == 21600
    assert body.json()["settings"]["grace_seconds"] == 1800
    source = Source.objects.get(slug="shop")
    assert source.expected_interval == timedelta(hours=6) and source.grace == timedelta(minutes=30)
    # Only what was given changed.
    assert source.min_completeness == pytest.approx(0.99)


def test_null_removes_the_overdue_clock_and_rule_settings_change_too(client, api, shop):
    Source.objects.filter(slug="shop").update(expected_interval=timedelta(hours=1))
    payload = {"expected_interval_seconds": None, "field_minimums": {"price": 0.95}, "trend_days": 14}
    settings = patch(client, "/sources/shop/settings", payload, api.token).json()["settings"]
    assert settings["expected_interval_seconds"] is None
    assert settings["field_minimums"] == {"price": 0.95} and settings["trend_days"] == 14


@pytest.mark.parametrize(
    "payload, path",
    [
        ({"expected_interval_seconds": 59}, "expected_interval_seconds"),
        ({"grace_seconds": -1}, "grace_seconds"),
        ({"grace_seconds": None}, "grace_seconds"),
        ({"field_drop": 1.5}, "field_drop"),
        ({"field_minimums": {"price": 2}}, "field_minimums.price"),
        ({"trend_days": 0}, "trend_days"),
        ({"learn_days": 14}, "learn_days"),
        ({"learn_min_runs": 4}, "learn_min_runs"),
        ({"min_margin": 0.6}, "min_margin"),
        ({"min_margin": -0.01}, "min_margin"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_a_bad_setting_is_named_and_nothing_is_written(client, api, shop, payload, path):
    response = patch(client, "/sources/shop/settings", {"trend_days": 7, **payload}, api.token)
    assert response.status_code == 422, response.content
    assert path in [e["path"] for e in response.json()["errors"]], response.json()
    assert Source.objects.get(slug="shop").trend_days == 30


def test_the_expectation_settings_are_set_and_read_back(client, api, shop):
    payload = {"learn_days": 28, "learn_min_runs": 14, "min_margin": 0.1}
    settings = patch(client, "/sources/shop/settings", payload, api.token).json()["settings"]
    assert (settings["learn_days"], settings["learn_min_runs"], settings["min_margin"]) == (28, 14, 0.1)
    source = Source.objects.get(slug="shop")
    assert source.rule_settings().learn_days == 28 and source.rule_settings().min_margin == 0.1


def test_a_token_scoped_to_another_source_cannot_change_this_one(client, shop):
    other = make_token("other", sources=["other"], may_configure=True)
    assert patch(client, "/sources/shop/settings", {"trend_days": 7}, other).status_code == 404
    assert Source.objects.get(slug="shop").trend_days == 30


def test_a_logged_in_operator_who_is_not_staff_may_not_change_settings(client, shop, viewer, staff):
    client.force_login(viewer)
    assert patch(client, "/sources/shop/settings", {"trend_days": 7}).status_code == 403
    client.force_login(staff)
    assert patch(client, "/sources/shop/settings", {"trend_days": 7}).status_code == 200
    assert Source.objects.get(slug="shop").trend_days == 7


@pytest.mark.parametrize(
    "payload, path",
    [
        ({"field_minimums": {"pri\u0000ce": 0.9}}, "field_minimums.pri\u0000ce"),
        ({"field_minimums": {"price\ud800": 0.9}}, "field_minimums.price\ud800"),
        ({"colour\u0000": 1}, "colour\u0000"),
    ],
)
def test_a_key_a_database_cannot_hold_is_422_naming_it_and_nothing_is_written(client, api, shop, payload, path):
    response = patch(client, "/sources/shop/settings", json.dumps({"trend_days": 7, **payload}), api.token)
    assert response.status_code == 422, response.content
    [error] = response.json()["errors"]
    assert error["message"].startswith("key contains"), error
    assert error["path"].startswith(path.split("\\")[0][:14]), error
    source = Source.objects.get(slug="shop")
    assert source.trend_days == 30 and source.field_minimums in (None, {})


@pytest.mark.parametrize(
    "payload, path",
    [
        ({"min_completeness": False}, "min_completeness"),  # stored 0.0
        ({"min_completeness": "0.5"}, "min_completeness"),
        ({"field_minimums": {"price": True}}, "field_minimums.price"),
        ({"trend_days": 5.0}, "trend_days"),
        ({"trend_days": "5"}, "trend_days"),
        ({"grace_seconds": True}, "grace_seconds"),
        ({"expected_interval_seconds": 3600.0}, "expected_interval_seconds"),
    ],
)
def test_settings_are_typed_strictly_and_nothing_is_written(client, api, shop, payload, path):
    response = patch(client, "/sources/shop/settings", payload, api.token)
    assert response.status_code == 422, response.content
    assert [e["path"] for e in response.json()["errors"]] == [path], response.json()
    source = Source.objects.get(slug="shop")
    before = Source(slug="defaults")
    assert (
        source.min_completeness,
        source.trend_days,
        source.field_minimums,
        source.grace,
        source.expected_interval,
    ) == (before.min_completeness, before.trend_days, before.field_minimums, before.grace, before.expected_interval)


@pytest.mark.parametrize(
    "name, bad, good, message",
    [
        ("min_completeness", "0.5", 0.5, 'must be a number, not the text "0.5": send the number without quotes (0.5)'),
        ("trend_days", 5.0, 5, "must be an integer, not a decimal (5.0): write 5"),
        ("grace_seconds", True, 60, "must be an integer, not true"),
    ],
)
def test_a_setting_of_the_wrong_json_type_is_refused_saying_what_it_is(client, api, shop, name, bad, good, message):
    # pydantic's "Input should be a valid number" answered "0.5", a valid number to whoever reads it.
    response = patch(client, "/sources/shop/settings", {name: bad}, api.token)
    assert response.status_code == 422, response.content
    assert response.json()["errors"] == [{"path": name, "message": message}], response.json()
    # The healthy neighbour: the same setting as a JSON number is taken.
    assert patch(client, "/sources/shop/settings", {name: good}, api.token).status_code == 200


def test_a_misspelt_setting_is_refused_with_the_one_it_probably_meant(client, api, shop):
    response = patch(client, "/sources/shop/settings", {"trend_dayz": 14}, api.token)
    assert response.status_code == 422, response.content
    [error] = response.json()["errors"]
    assert error["path"] == "trend_dayz"
    assert error["message"].startswith("unknown field (did you mean trend_days?); the fields here: "), error
    assert "min_completeness" in error["message"] and "runbook_url" in error["message"], error
    assert Source.objects.get(slug="shop").trend_days == 30
    assert patch(client, "/sources/shop/settings", {"trend_days": 14}, api.token).status_code == 200


def test_an_integer_is_a_share(client, api, shop):
    response = patch(
        client, "/sources/shop/settings", {"min_completeness": 1, "field_minimums": {"price": 0}}, api.token
    )
    assert response.status_code == 200, response.content
    source = Source.objects.get(slug="shop")
    assert source.min_completeness == 1.0 and source.field_minimums == {"price": 0.0}


@pytest.mark.parametrize("name", ["pri\u200bce", "\u202eecirp", "price\t", "soft\u00adhyphen"])
def test_a_field_name_with_an_invisible_or_direction_character_is_422_saying_so(client, api, shop, name):
    response = patch(client, "/sources/shop/settings", {"field_minimums": {name: 0.9}}, api.token)
    assert response.status_code == 422, response.content
    [error] = response.json()["errors"]
    assert "invisible or direction-changing character (U+" in error["message"], error
    assert Source.objects.get(slug="shop").field_minimums == {}


@pytest.mark.parametrize("url", ["not a url", "ftp://x", "javascript:alert(1)"])
def test_a_bad_runbook_url_is_named_once(client, api, shop, url):
    """The model's URLField runs Django's own URL check beside the http(s) one, and both refused these:
    the answer listed `runbook_url: Enter a valid URL.` twice."""
    response = patch(client, "/sources/shop/settings", {"runbook_url": url}, api.token)
    assert response.status_code == 422, response.content
    assert [(error["path"], error["message"]) for error in response.json()["errors"]] == [
        ("runbook_url", "Enter a URL that starts with http:// or https:// and names a host.")
    ]
    assert Source.objects.get(slug="shop").runbook_url == ""


@pytest.mark.parametrize(
    "url", ["https://wiki/runbooks/shop", "http://runbooks:8080/shop", "https://wiki.corp/x", "http://10.0.0.7/rb"]
)
def test_a_runbook_on_an_intranet_host_is_taken(client, api, shop, url):
    # Django's check wants a top-level domain, and refused https://wiki/... as not starting with https://.
    response = patch(client, "/sources/shop/settings", {"runbook_url": url}, api.token)
    assert response.status_code == 200, response.content
    assert Source.objects.get(slug="shop").runbook_url == url


@pytest.mark.parametrize("url", ["https://", "https:///shop", "https://wi ki/shop", "https://-wiki/shop"])
def test_a_runbook_link_without_a_host_is_refused(client, api, shop, url):
    response = patch(client, "/sources/shop/settings", {"runbook_url": url}, api.token)
    assert response.status_code == 422, response.content
    assert Source.objects.get(slug="shop").runbook_url == ""


def test_every_bad_setting_is_named_in_one_answer_the_link_among_them(client, api, shop):
    # The link was checked at save only: it came back in a second 422, after the others were mended.
    body = {"min_completeness": 1.5, "trend_days": 0, "runbook_url": "javascript:alert(1)"}
    response = patch(client, "/sources/shop/settings", body, api.token)
    assert response.status_code == 422, response.content
    named = {error["path"]: error["message"] for error in response.json()["errors"]}
    assert set(named) == {"min_completeness", "trend_days", "runbook_url"}
    assert named["runbook_url"] == "Enter a URL that starts with http:// or https:// and names a host."
    assert Source.objects.get(slug="shop").runbook_url == ""
