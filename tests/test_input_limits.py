"""Bad input is refused by name, never a server error: nesting, numbers JSON cannot hold, page numbers
that are no page, text a database cannot hold in a pause reason, slugs with dots on every page."""

import json
import time

import pytest

from sources.ingest import jsonbody
from sources.models import Acknowledgement, Run, Source
from tests.conftest import assert_error_body, report, run_report, stored_rows
from tests.test_ingest_api import FULL


def nested(depth: int) -> list:
    """A JSON value of exactly `depth` levels (an array inside an array ...)."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def error_paths(response) -> list[str]:
    return [e["path"] for e in response.json()["errors"]]


# --- nesting -------------------------------------------------------------------------------------


def test_a_report_nested_33_levels_deep_is_422(api):
    # The report object is level 1; its field "extra" holds 32 more.
    body = json.dumps(report(extra=nested(32)))
    response = api.post_run(body)
    assert response.status_code == 422, response.content
    assert "nested deeper than 32 levels" in response.json()["errors"][0]["message"]
    assert not Run.objects.exists()


def test_a_report_nested_32_levels_deep_is_accepted(api):
    response = api.post_run(json.dumps(report(extra=nested(31))))
    assert response.status_code == 201, response.content
    assert response.json()["ignored_fields"] == ["extra"]


@pytest.mark.parametrize("depth", [950, 100_000])
def test_a_report_nested_thousands_of_levels_deep_is_422_not_a_recursion_error(api, depth):
    body = '{"source": "shop", "x": ' + "[" * depth + "]" * depth + "}"
    assert_error_body(api.post_run(body), 422, naming="deep")
    assert stored_rows() == dict.fromkeys(stored_rows(), 0)


def test_brackets_that_never_close_are_422(api):
    assert_error_body(api.post_run('{"x": ' + "[" * 5000), 422)
    assert_error_body(api.post_run('{"x": ' + "{" * 5000), 422)
    assert stored_rows() == dict.fromkeys(stored_rows(), 0)


def test_brackets_inside_strings_are_no_nesting(api):
    note = "[" * 100 + '\\"{' * 50
    response = api.post_run(json.dumps(report(meta={"note": note})))
    assert response.status_code == 201, response.content
    assert Run.objects.get().meta == {"note": note}


def test_the_depth_check_counts_levels_exactly():
    assert not jsonbody.too_deep(json.dumps(nested(32)).encode())
    assert jsonbody.too_deep(json.dumps(nested(33)).encode())
    assert not jsonbody.too_deep(json.dumps({"a": [{"b": [1, {"c": "]]]]"}]}]}).encode(), limit=5)
    assert jsonbody.too_deep(json.dumps({"a": [{"b": [1, {"c": [[]]}]}]}).encode(), limit=5)


def test_a_pause_body_nested_too_deeply_is_422(api):
    api.post_run(report())
    response = api.client.post(
        "/api/v1/sources/shop/pause",
        data='{"reason": "x", "y": ' + "[" * 2000 + "]" * 2000 + "}",
        content_type="application/json",
        **api.headers(),
    )
    assert response.status_code == 422
    assert not Source.objects.get().paused


# --- numbers JSON cannot hold ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,text,field",
    [
        ("meta", '"workers": 1e400', "meta.workers"),
        ("pacing", '"backoff": 1e400', "pacing.backoff"),
        ("pacing", '"recovery": -1e400', "pacing.recovery"),
    ],
)
def test_a_number_that_overflows_a_float_is_422_naming_the_field(api, path, text, field):
    key = text.split(":")[0]
    body = json.dumps(FULL).replace(key + ": " + json.dumps(FULL[path][key.strip('"')]), text, 1)
    assert text in body
    response = api.post_run(body)
    assert response.status_code == 422, response.content
    assert field in error_paths(response)
    assert not Run.objects.exists()


def test_an_unknown_field_that_overflows_is_422_naming_it(api):
    body = json.dumps(report()).replace("{", '{"future_field": 9e999, ', 1)
    response = api.post_run(body)
    assert response.status_code == 422
    assert error_paths(response) == ["future_field"]


def test_large_but_finite_numbers_are_accepted(api):
    body = json.dumps(FULL).replace('"workers": 4', '"workers": 1e300').replace('"backoff": 2.0', '"backoff": 1.5e308')
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    assert Run.objects.get().pacing_backoff == 1.5e308


# --- page numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/sources", "/sources/shop/runs"])
@pytest.mark.parametrize("page", [0, -1, 10**20, "1e3"])
def test_a_page_number_that_is_no_page_is_422_naming_page(api, path, page):
    api.post_run(report())
    response = api.get(path, page=page)
    assert response.status_code == 422, response.content
    assert "page" in error_paths(response)


@pytest.mark.parametrize("path", ["/sources", "/sources/shop/runs"])
def test_a_large_page_number_past_the_end_is_an_empty_page(api, path):
    api.post_run(report())
    assert api.get(path, page=1).json()["items"]
    response = api.get(path, page=1_000_000_000, per_page=200)
    assert response.status_code == 200, response.content
    assert response.json()["items"] == []


@pytest.mark.parametrize("url", ["/", "/sources/shop/", "/alerts/"])
@pytest.mark.parametrize("page", ["0", "-5", str(10**20), "99999999999999999999999999999", "x"])
def test_pages_show_a_sane_page_for_any_page_number(api, staff_client, url, page):
    api.post_run(report())
    response = staff_client.get(url, {"page": page})
    assert response.status_code == 200


def test_a_run_number_out_of_any_range_is_404(staff_client):
    assert staff_client.get(f"/runs/{10**20}/").status_code == 404


# --- pause reason ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["nul\u0000byte", "lone \ud800 surrogate", "", "r" * 501])
def test_a_pause_reason_a_database_cannot_hold_is_422_naming_reason(api, reason):
    api.post_run(report())
    response = api.post("/sources/shop/pause", {"reason": reason})
    assert response.status_code == 422, response.content
    assert error_paths(response) == ["reason"]
    assert not Source.objects.get().paused


@pytest.mark.parametrize("reason", ["r", "r" * 500, "Umbau — Wartung ✓"])
def test_a_pause_reason_of_1_to_500_characters_is_accepted(api, reason):
    api.post_run(report())
    response = api.post("/sources/shop/pause", {"reason": reason})
    assert response.status_code == 200, response.content
    assert Source.objects.get().paused_reason == reason


def test_the_pause_form_refuses_a_nul_in_the_reason(api, staff_client):
    api.post_run(report())
    staff_client.post("/sources/shop/pause", {"reason": "nul\x00byte"})
    assert not Source.objects.get().paused
    staff_client.post("/sources/shop/pause", {"reason": "no nul"})
    assert Source.objects.get().paused


# --- slugs with dots ------------------------------------------------------------------------------


def test_a_source_whose_slug_has_a_dot_has_every_page(api, staff_client):
    response = api.post_run(run_report("dot.src", 1, pages={"expected": 2, "fetched": 1, "lost": 1}))
    assert response.status_code == 201
    run = response.json()["run"]
    overview = staff_client.get("/").content.decode()
    assert 'href="/sources/dot.src/"' in overview
    page = staff_client.get("/sources/dot.src/")
    assert page.status_code == 200 and b'action="/sources/dot.src/pause"' in page.content
    assert staff_client.get(f"/runs/{run}/").status_code == 200
    assert staff_client.post("/sources/dot.src/pause", {"reason": "dots"}).status_code == 302
    assert Source.objects.get(slug="dot.src").paused
    assert staff_client.post("/sources/dot.src/resume").status_code == 302
    assert not Source.objects.get(slug="dot.src").paused
    switched = staff_client.post("/sources/dot.src/rules", {"rule": "drop", "mode": "observe"})
    assert switched.status_code == 302 and switched["Location"] == "/sources/dot.src/#rules"
    assert api.get("/sources/dot.src/runs").json()["count"] == 1


def test_a_slug_that_is_no_slug_still_has_no_page(staff_client, api):
    api.post_run(report())
    for slug in ("dot.src", "a%2Fb", "sp%20ace", "x" * 101):
        assert staff_client.get(f"/sources/{slug}/").status_code == 404, slug


# --- acknowledgement note and maintenance window texts --------------------------------------------


@pytest.mark.parametrize("note", ["nul\u0000byte", "lone \ud800 surrogate"])
def test_an_acknowledgement_note_a_database_cannot_hold_is_422_naming_note(api, note):
    api.post_run(report(declared_total=1000, collected=100))
    response = api.post("/sources/shop/acknowledge", {"note": note})
    assert response.status_code == 422, response.content
    assert error_paths(response) == ["note"]
    assert api.post("/sources/shop/acknowledge", {"note": "on it"}).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        '""',
        "[]",
        "123",
        "null",
        "true",
        '"note"',
        '{"note": 5}',
        '{"note": null}',
        '{"note": "on it", "by": "someone else"}',
    ],
)
def test_an_acknowledgement_body_that_is_no_object_of_a_note_is_422_and_nothing_is_acknowledged(api, body):
    api.post_run(report(declared_total=1000, collected=100))
    response = api.client.post(
        "/api/v1/sources/shop/acknowledge", data=body, content_type="application/json", **api.headers()
    )
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == "invalid request" and response.json()["errors"], response.json()
    assert not Acknowledgement.objects.exists()
    assert api.post("/sources/shop/acknowledge", {}).status_code == 200
    assert Acknowledgement.objects.get().note == ""


def test_a_maintenance_window_name_a_database_cannot_hold_is_422_naming_name(api):
    api.post_run(report())
    window = {
        "name": "db\u0000upgrade",
        "starts_at": "2030-01-01T00:00:00Z",
        "ends_at": "2030-01-01T02:00:00Z",
        "sources": ["shop"],
    }
    response = api.post("/windows", window)
    assert response.status_code == 422, response.content
    assert error_paths(response) == ["name"]


# --- the nesting check is linear in the body's length ----------------------------------------------

MIB = 1 << 20
PATHOLOGICAL = {
    "escaped quotes": b'\\"' * (MIB // 2),
    "escaped quotes after a quote": b'"' + b'\\"' * (MIB // 2),
    "escaped quotes and a lone backslash": b'["' + b'\\"' * (MIB // 2) + b"\\",
    "quotes": b'"' * MIB,
    "quoted brackets": b'"[' * (MIB // 2),
    "open brackets": b"[" * MIB,
    "bracket pairs": b"[]" * (MIB // 2),
    "backslashes": b"\\" * MIB,
    "308-digit numbers": (b"9" * 308 + b",") * (MIB // 309),
    "short strings": b'["a",' * (MIB // 5),
}


@pytest.mark.parametrize("name", PATHOLOGICAL)
def test_the_depth_and_overflow_checks_take_a_mebibyte_of_anything_in_well_under_a_second(name):
    # Linear work: about 20 ms a mebibyte on a busy CI machine. The backtracking expression this
    # replaced took 30 s for 128 KB of escaped quotes, so the bound only has to tell minutes from
    # milliseconds, and the best of three keeps a busy neighbour out of it.
    body = PATHOLOGICAL[name]
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        jsonbody.too_deep(body)
        jsonbody.loads_could_overflow(body)
        timings.append(time.perf_counter() - start)
    assert min(timings) < 0.25, (name, timings)


def test_a_mebibyte_of_escaped_quotes_is_answered_422_quickly_and_nothing_is_stored(api):
    body = b'{"source": "shop", "run_id": "' + b'\\"' * (MIB // 2 - 64)
    start = time.perf_counter()
    response = api.post_run(body)
    assert time.perf_counter() - start < 2
    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["path"] == "(body)"
    assert not Run.objects.exists() and not Source.objects.exists()


@pytest.mark.parametrize(
    "body, deep",
    [
        (b'["\\\\"' + b"[" * 40, True),  # an escaped backslash ends the string: the brackets are outside
        (b'["\\"' + b"[" * 40 + b'"]', False),  # an escaped quote does not: they are inside it
        (b'["x[", "y"' + b"[" * 40, True),  # two strings side by side, one holding a bracket
        (b'[{"a": "]}"' + b"}]" * 20, False),  # closing brackets to spare: the parser stops at the first
        (b"]" * 40 + b"[" * 33, True),
        (b'"' + b"[" * 40, False),  # a string that never closes holds everything after it
        (b"[" * 33 + b'"' + b"]" * 33, True),
        (b"[{" * 16 + b"}]" * 16, False),
        (b"[{" * 16 + b"[]" + b"}]" * 16, True),
    ],
)
def test_the_depth_check_reads_strings_and_escapes_as_a_parser_does(body, deep):
    assert jsonbody.too_deep(body) is deep
