"""Every kind of bad report gets 422 naming the field, stores nothing, and never makes the server answer 500."""

import copy
import functools
import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from sources.ingest.errors import format_path
from sources.models import FailureWindowEvent, PauseEvent, ProxyTransition, Run, Source
from tests.conftest import assert_error_body, report
from tests.test_ingest_api import FULL


def set_path(body: dict, path: tuple, value) -> dict:
    body = copy.deepcopy(body)
    target = body
    for part in path[:-1]:
        target = target[part]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


DELETE = object()

# (path in the body, bad value, the error path the answer must name)
CASES = [
    (("source",), "Has Capitals", "source"),
    (("source",), "", "source"),
    (("source",), "-leading-dash", "source"),
    (("source",), "x" * 101, "source"),
    (("source",), 42, "source"),
    (("source",), DELETE, "source"),
    (("run_id",), "", "run_id"),
    (("run_id",), "r" * 201, "run_id"),
    (("run_id",), None, "run_id"),
    (("started_at",), "2026-09-15T03:00:00", "started_at"),
    (("started_at",), "yesterday", "started_at"),
    (("started_at",), 1726369200, "started_at"),
    (("started_at",), "0001-01-01T00:00:00+14:00", "started_at"),
    (("finished_at",), "9999-12-31T23:59:59-14:00", "finished_at"),
    (("finished_at",), "2026-09-15T02:59:59Z", "finished_at"),
    (("finished_at",), DELETE, "finished_at"),
    (("exit_code",), "0", "exit_code"),
    (("exit_code",), True, "exit_code"),
    (("exit_code",), 1.5, "exit_code"),
    (("exit_code",), 2**40, "exit_code"),
    (("crawler_verdict",), "partial", "crawler_verdict"),
    (("paused",), "yes", "paused"),
    (("paused",), 1, "paused"),
    (("declared_total",), -1, "declared_total"),
    (("declared_total",), "1000", "declared_total"),
    (("collected",), -5, "collected"),
    (("collected",), 10.0, "collected"),
    (("collected",), 10**30, "collected"),
    (("collected",), DELETE, "collected"),
    (("written",), -1, "written"),
    (("removed",), None, "removed"),
    (("requests",), [], "requests"),
    (("requests", "total"), -1, "requests.total"),
    (("requests", "by_class"), {"teapot": 1}, "requests.by_class.teapot"),
    (("requests", "by_class", "ok"), "many", "requests.by_class.ok"),
    (("pages", "lost"), -1, "pages.lost"),
    (("pages", "fetched"), "20", "pages.fetched"),
    (("pages", "lost_urls"), "https://one.example", "pages.lost_urls"),
    (("pages", "lost_urls"), [1, 2], "pages.lost_urls[0]"),
    (("pages", "lost_urls"), ["https://shop.example/list?page=7"], "pages.lost_urls"),  # lost is 0
    (("pages", "surprise"), 1, "pages.surprise"),
    (("failed_batches",), [{"rows": 1, "error": "x"}], "failed_batches[0].name"),
    (("failed_batches",), [{"name": "a", "rows": -1, "error": "x"}], "failed_batches[0].rows"),
    (("failed_batches",), {"name": "a"}, "failed_batches"),
    (("delivery", "delivered"), 991, "delivery.delivered"),
    (("delivery", "attempted"), DELETE, "delivery.attempted"),
    (("delivery", "errors"), {"timeout": -1}, "delivery.errors.timeout"),
    (("snapshot", "action"), "overwritten", "snapshot.action"),
    (("snapshot", "rows"), -1, "snapshot.rows"),
    (("failure_window", "threshold"), 1.5, "failure_window.threshold"),
    (("failure_window", "threshold"), 0, "failure_window.threshold"),
    (("failure_window", "size"), 0, "failure_window.size"),
    (("failure_window", "bad_classes"), ["gremlins"], "failure_window.bad_classes[0]"),
    (("failure_window", "events", 0, "kind"), "exploded", "failure_window.events[0].kind"),
    (("failure_window", "events", 0, "at"), "2026-09-15 03:10", "failure_window.events[0].at"),
    (("failure_window", "events", 0, "ratio"), 1.2, "failure_window.events[0].ratio"),
    (("failure_window", "series"), [[0, 0.0, 1]], "failure_window.series[0]"),
    (("failure_window", "series"), [[-1, 0.0]], "failure_window.series[0][0]"),
    (("proxy_transitions", 0, "from"), "dead", "proxy_transitions[0].from"),
    (("proxy_transitions", 0, "to"), DELETE, "proxy_transitions[0].to"),
    (("proxy_transitions", 0, "reason"), "bad_vibes", "proxy_transitions[0].reason"),
    (("proxy_transitions", 0, "stage"), "dns", "proxy_transitions[0].stage"),
    (("proxy_transitions", 0, "proxy"), "http://user:secret@10.0.0.1:8080", "proxy_transitions[0].proxy"),
    (("proxy_transitions", 0, "proxy"), "user:pw@exit-1", "proxy_transitions[0].proxy"),
    (("proxy_transitions", 0, "until"), "soon", "proxy_transitions[0].until"),
    (("pacing", "backoff"), 1.0, "pacing.backoff"),
    (("pacing", "recovery"), 1.0, "pacing.recovery"),
    (("pacing", "recovery"), 0, "pacing.recovery"),
    (("outcomes",), {"generated": -1}, "outcomes.generated"),
    (("outcomes",), {"generated": 1.5}, "outcomes.generated"),
    (("outcomes",), [1, 2], "outcomes"),
    (("counters",), {"hosts": "3"}, "counters.hosts"),
    (("meta",), {"nested": {"a": 1}}, "meta.nested"),
    (("meta",), {"flag": True}, "meta.flag"),
    (("meta",), {f"k{i}": i for i in range(51)}, "meta"),
    (("meta",), {"note": "nul\u0000byte"}, "meta.note"),
    (("pause_reason",), "lone \ud800 surrogate", "pause_reason"),
]


def assert_nothing_stored():
    assert not Run.objects.exists()
    assert not Source.objects.exists()
    assert not FailureWindowEvent.objects.exists() and not ProxyTransition.objects.exists()
    assert not PauseEvent.objects.exists()


@pytest.mark.parametrize("path,value,error_path", CASES, ids=[c[2] + f"-{i}" for i, c in enumerate(CASES)])
def test_bad_field_is_422_naming_it(api, path, value, error_path):
    response = api.post_run(json.dumps(set_path(FULL, path, value)))
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["detail"] == "invalid run report"
    paths = [e["path"] for e in body["errors"]]
    assert error_path in paths, paths
    assert all(e["message"] for e in body["errors"])
    assert_nothing_stored()


def test_every_bad_field_is_named_at_once(api):
    body = set_path(set_path(FULL, ("collected",), -1), ("pages", "lost"), "x")
    body = set_path(body, ("started_at",), "2026-09-15T03:00:00")
    paths = {e["path"] for e in api.post_run(json.dumps(body)).json()["errors"]}
    assert {"collected", "pages.lost", "started_at"} <= paths


@pytest.mark.parametrize(
    "unstorable,path",
    [
        ('"pause_reason": "nul\\u0000byte"', "pause_reason"),
        ('"pause_reason": "lone \\ud800 surrogate"', "pause_reason"),
        ('"meta": {"workers": 1e400}', "meta.workers"),
    ],
)
def test_text_a_database_cannot_hold_hides_no_other_bad_field(api, unstorable, path):
    # The check for NUL, lone surrogates and 1e400 answered alone: the crawler fixed it and posted
    # again only to learn of a negative count that was there all along.
    body = {key: value for key, value in FULL.items() if key not in ("pause_reason", "meta")}
    text = json.dumps({**body, "collected": -1, "started_at": "2026-09-15T03:00:00"})[:-1] + ", " + unstorable + "}"
    paths = [e["path"] for e in api.post_run(text).json()["errors"]]
    assert sorted(paths) == sorted([path, "collected", "started_at"])
    assert_nothing_stored()


def test_every_bad_meta_value_is_named(api):
    # Each bad key by its own path: stopping at the first named only "meta" and one key of three.
    body = set_path(
        FULL, ("meta",), {"flag": True, "host": "ok", "tags": ["a"], "gone": None, "deep": {}, "note": "x" * 1001}
    )
    errors = {e["path"]: e["message"] for e in api.post_run(json.dumps(body)).json()["errors"]}
    assert errors == {
        # In JSON's words: "got bool", "got list" and "got NoneType" were Python's, which a crawler
        # in Go or Java does not speak.
        "meta.flag": "must be a string or a number, not true",
        "meta.tags": "must be a string or a number, not an array",
        "meta.gone": "must be a string or a number, not null",
        "meta.deep": "must be a string or a number, not an object",
        "meta.note": "is longer than 1000 characters",
    }
    assert_nothing_stored()


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"{",
        b"[]",
        b"null",
        b"42",
        b'"a string"',
        b"\xff\xfe\x00",
        b'{"collected": NaN}',
        b'{"collected": Infinity}',
        b"{}",
    ],
)
def test_a_body_that_is_no_report_is_422(api, raw):
    response = api.post_run(raw)
    assert response.status_code == 422, response.content
    assert response.json()["errors"]
    assert_nothing_stored()


@pytest.mark.parametrize(
    "raw, kind",
    [(b"[]", "an array"), (b"null", "null"), (b"42", "a number"), (b'"a report"', "text"), (b"true", "true")],
)
def test_a_body_that_is_no_object_is_named_in_jsons_words(api, raw, kind):
    # "not list", "not NoneType", "not int", "not str": Python's names, for a client in any language.
    body = assert_error_body(api.post_run(raw), 422)
    assert body["errors"] == [{"path": "(body)", "message": f"a run report is a JSON object, not {kind}"}], body
    api.post_run(report())
    slug = Source.objects.get().slug
    pause = api.client.post(f"/api/v1/sources/{slug}/pause", data=raw, content_type="application/json", **api.headers())
    body = assert_error_body(pause, 422)
    assert body["errors"] == [{"path": "(body)", "message": f"must be a JSON object, not {kind}"}], body
    # The object beside them pauses.
    assert api.post(f"/sources/{slug}/pause", {"reason": "move"}).status_code == 200


def test_raw_surrogate_bytes_are_refused(api):
    body = json.dumps(FULL).encode().replace(b'"scrapy 2.19"', b'"scrapy \xed\xa0\x80"')
    response = api.post_run(body)
    assert response.status_code == 422
    assert "meta.crawler" in [e["path"] for e in response.json()["errors"]]
    assert_nothing_stored()


def test_utf16_body_is_refused(api):
    response = api.post_run(json.dumps(FULL).encode("utf-16"))
    assert_error_body(response, 422, naming="UTF-8")
    assert_nothing_stored()


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=iso-8859-1"])
def test_a_latin1_body_is_refused_naming_the_first_byte_that_is_not_utf8(api, content_type):
    # Python's "'utf-8' codec can't decode byte 0xfc in position 21" did not say the body was Latin-1,
    # nor that the charset it named changes nothing.
    text = json.dumps(set_path(FULL, ("meta", "city"), "München"), ensure_ascii=False)
    at = text.encode("latin-1").index(b"\xfc")
    message = (
        f"the body must be UTF-8: the byte 0xfc at position {at} is not UTF-8"
        " (text in another encoding, such as Latin-1, is encoded as UTF-8 before it is posted)"
    )
    # generic(): post() would re-encode the bytes to the charset the content type names.
    post = functools.partial(api.client.generic, "POST", content_type=content_type, **api.headers())
    refused = post("/api/v1/runs", text.encode("latin-1"))
    assert assert_error_body(refused, 422)["errors"] == [{"path": "(body)", "message": message}]
    assert_nothing_stored()
    # The other endpoints say the same.
    api.post_run(report())
    slug = Source.objects.get().slug
    pause = '{"reason": "moving to München"}'.encode("latin-1")
    refused = post(f"/api/v1/sources/{slug}/pause", pause)
    assert assert_error_body(refused, 422)["errors"][0]["message"].startswith("the body must be UTF-8: the byte 0xfc")
    # The same report in UTF-8 is taken.
    assert api.post_run(text.encode()).status_code == 201


def test_a_utf8_body_with_a_byte_order_mark_is_read_as_without_one(api):
    # PowerShell 5's UTF8 encoding and some .NET writers put one first; RFC 8259 lets a parser skip
    # it, and the other endpoints' parser did, while a report was refused as "expected value at line 1".
    body = json.dumps(FULL).encode()
    response = api.post_run(b"\xef\xbb\xbf" + body)
    assert response.status_code == 201, response.content
    assert api.post_run(body).status_code == 200
    assert Run.objects.count() == 1


def test_nan_inside_a_valid_report_is_refused(api):
    text = json.dumps(FULL).replace('"threshold": 0.35', '"threshold": NaN')
    response = api.post_run(text)
    assert_error_body(response, 422, naming="NaN")
    assert_nothing_stored()


def test_random_mutations_never_answer_500(api):
    """Bounded fuzzing: thousands of reports with one value swapped for something odd."""
    rng = random.Random(20261129)
    odd_values = [
        None,
        -1,
        0,
        2**31,
        2**63,
        1e308,
        -0.0,
        "",
        "x" * 300,
        "\u0000",
        [],
        {},
        [None],
        {"": 1},
        True,
        "2026-13-45T99:99:99Z",
        "9999-12-31T23:59:59+14:00",
        "9999-12-31T23:59:59-14:00",
        "0001-01-01T00:00:00+14:00",
    ]
    paths = list(_leaf_paths(FULL))
    statuses = {}
    for index in range(400):
        body = set_path(FULL, rng.choice(paths), rng.choice(odd_values))
        body["run_id"] = f"fuzz-{index}" if rng.random() < 0.9 else body.get("run_id")
        response = api.post_run(json.dumps(body))
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code in (200, 201, 409, 422), (body, response.content)
    assert statuses.get(422, 0) > 100 and statuses.get(201, 0) > 10


def _leaf_paths(value, prefix=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _leaf_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from _leaf_paths(item, (*prefix, index))


@pytest.mark.parametrize(
    "requests, message",
    [
        # Left out, the total is the classes' sum: past 2**31 no count column holds it (PostgreSQL: 500).
        ({"by_class": {"ok": 2**31 - 1, "http_5xx": 2**31 - 1}}, "more than a count holds"),
        ({"by_class": {"ok": 2**31 - 1, "timeout": 1}}, "more than a count holds"),
        # Told, it was stored as told however far the classes summed past it.
        ({"total": 5, "by_class": {"ok": 2**31 - 1, "http_5xx": 2**31 - 1}}, "more than total (5)"),
        ({"total": 5, "by_class": {"ok": 6}}, "more than total (5)"),
    ],
)
def test_request_classes_that_sum_past_the_total_or_a_count_are_422_and_nothing_is_stored(api, requests, message):
    response = api.post_run(report(requests=requests))
    assert response.status_code == 422, response.content
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == ["requests"], errors
    assert message in errors[0]["message"]
    assert_nothing_stored()


@pytest.mark.parametrize(
    "requests, total",
    [
        ({"by_class": {"ok": 2**31 - 2, "http_5xx": 1}}, 2**31 - 1),
        ({"total": 2**31 - 1, "by_class": {"ok": 2**31 - 2, "http_5xx": 1}}, 2**31 - 1),
        ({"total": 10, "by_class": {"ok": 6}}, 10),
    ],
)
def test_request_counts_up_to_the_largest_count_are_stored_exactly(api, requests, total):
    response = api.post_run(report(requests=requests))
    assert response.status_code == 201, response.content
    assert Run.objects.get().requests_total == total


def test_a_pacing_recovery_of_the_least_float_is_judged_and_stored_with_finite_numbers(api):
    body = report(
        pacing={"backoff": 2.0, "recovery": 5e-324}, requests={"total": 1000, "by_class": {"ok": 1, "http_5xx": 999}}
    )
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert run.pacing_recovery == 5e-324
    # p* = ln(1/5e-324) / (ln 2 + ln(1/5e-324)) = 0.99907, and 999 of 1000 requests failed: told.
    [finding] = [f for f in run.findings if f["rule"] == "pacing_equilibrium"]
    assert finding["expected"] == pytest.approx(0.9991) and finding["actual"] == pytest.approx(0.999)
    assert response.json()["findings"] == run.findings


@pytest.mark.parametrize(
    "path, value, error_path",
    [
        (("run_id",), "run\u200b1", "run_id"),  # zero-width space: looks like run1
        (("run_id",), "run\u202e1-fdp", "run_id"),  # right-to-left override
        (("run_id",), "run\n1", "run_id"),
        (("run_id",), "\ufeffrun1", "run_id"),
        (("failed_batches",), [{"name": "batch\u2066-1", "rows": 1}], "failed_batches[0].name"),
        (("outcomes",), {"ok\u200d": 1}, "outcomes.ok\u200d"),
        (("fields",), {"pri\u200bce": 1}, "fields.pri\u200bce"),
        (
            ("proxy_transitions",),
            [
                {
                    "proxy": "exit\u200b1",
                    "at": "2026-09-15T03:10:00Z",
                    "from": "eligible",
                    "to": "cooling",
                    "reason": "connect_timeout",
                    "stage": "connect",
                }
            ],
            "proxy_transitions[0].proxy",
        ),
    ],
)
def test_an_identifier_with_an_invisible_or_direction_character_is_422_saying_so(api, path, value, error_path):
    response = api.post_run(set_path(report(), path, value))
    assert response.status_code == 422, response.content
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == [error_path], errors
    assert "invisible or direction-changing character (U+" in errors[0]["message"], errors
    assert_nothing_stored()


def test_identifiers_in_any_script_are_visible_text(api):
    body = report(run_id="ежедневный 価格 run", outcomes={"ürün_yok": 3}, fields={"prix_€": 10})
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    assert Run.objects.get().run_id == "ежедневный 価格 run"


def test_a_time_without_its_zone_is_refused_saying_how_to_write_one(api):
    # pydantic's own words, "Input should have timezone info", left the spelling to guess.
    response = api.post_run(json.dumps(set_path(FULL, ("started_at",), "2026-09-14T03:00:00")))
    body = assert_error_body(response, 422, naming="started_at")
    (error,) = [e for e in body["errors"] if e["path"] == "started_at"]
    assert "2026-09-14T03:00:00Z" in error["message"] and "+02:00" in error["message"]
    assert_nothing_stored()
    # A pause's end is read the same way; a time with its zone is taken (the healthy twin).
    api.post_run(report())
    slug = Source.objects.get().slug
    until = (datetime.now(UTC) + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S")
    refused = api.post(f"/sources/{slug}/pause", {"reason": "move", "until": until})
    assert "2026-09-14T03:00:00Z" in assert_error_body(refused, 422, naming="until")["errors"][0]["message"]
    assert api.post(f"/sources/{slug}/pause", {"reason": "move", "until": until + "Z"}).status_code == 200


@pytest.mark.parametrize(
    "path, value, said",
    [
        # "Input should be a valid integer" answered "48", which is a valid integer to whoever reads it.
        (("collected",), "48", 'must be an integer, not the text "48": send the number without quotes (48)'),
        (("declared_total",), "9,000", 'must be an integer, not the text "9,000"'),
        (("collected",), 48.0, "must be an integer, not a decimal (48.0): write 48"),
        (("pages", "lost"), 0.5, "must be an integer, not a decimal (0.5)"),
        (("exit_code",), True, "must be an integer, not true"),
        (("removed",), None, "must be an integer, not null"),
        (("paused",), "true", 'must be true or false, not the text "true": send it without quotes (true)'),
        (("paused",), 1, "must be true or false, not the number 1"),
        (("pacing", "backoff"), "2.0", 'must be a number, not the text "2.0": send the number without quotes (2.0)'),
        (
            ("started_at",),
            1726369200,
            "must be a timestamp, ISO 8601 text with its offset (2026-09-14T03:00:00Z), not the number 1726369200",
        ),
        (("run_id",), 7, "must be text (a JSON string), not the number 7"),
        (("source",), ["shop"], "must be text (a JSON string), not an array"),
    ],
)
def test_a_value_of_the_wrong_json_type_is_refused_saying_what_it_is(api, path, value, said):
    response = api.post_run(set_path(FULL, path, value))
    body = assert_error_body(response, 422)
    assert body["errors"] == [{"path": ".".join(path), "message": said}], body
    assert_nothing_stored()


@pytest.mark.parametrize(
    "source, meant",
    [("AcmeBooks", "acmebooks"), ("acme books", "acme-books"), ("-acme", "acme"), ("", None), ("магазин", None)],
)
def test_a_source_that_is_no_slug_is_told_what_a_slug_is(api, source, meant):
    # pydantic's "String should match pattern '^[a-z0-9][a-z0-9._-]{0,99}$'" left "AcmeBooks" to be worked out.
    body = assert_error_body(api.post_run(set_path(FULL, ("source",), source)), 422)
    [error] = body["errors"]
    assert error["path"] == "source"
    assert error["message"].startswith("must be a slug: 1-100 lower-case letters, digits, '.', '_' or '-'"), error
    assert error["message"].endswith(f'(such as "{meant}")' if meant else "starting with a letter or digit"), error
    assert_nothing_stored()
    # The slug it suggests is one.
    if meant:
        assert api.post_run(set_path(FULL, ("source",), meant)).status_code == 201


@pytest.mark.parametrize(
    "path, meant, fields",
    [
        (("pages", "lsot"), "lost", "expected, fetched, lost, lost_urls"),
        (("snapshot", "rowz"), "rows", "action, rows"),
        (("proxy_transitions", 0, "form"), "from", "proxy, at, from, to, reason, stage, until"),
        (("failure_window", "events", 0, "snet"), "sent", "at, seq, kind, ratio, samples, sent, bad"),
        (("pacing", "speed"), None, "backoff, recovery"),
    ],
)
def test_a_misspelt_field_inside_an_object_is_refused_with_the_fields_it_takes(api, path, meant, fields):
    # pydantic's "Extra inputs are not permitted" left the spelling to be looked up in the docs.
    body = assert_error_body(api.post_run(set_path(FULL, path, 1)), 422)
    guess = f" (did you mean {meant}?)" if meant else ""
    shown = format_path(path)
    assert body["errors"] == [{"path": shown, "message": f"unknown field{guess}; the fields here: {fields}"}], body
    assert_nothing_stored()
    # Spelt right, the same value is a report (a top-level typo is taken and named back: docs/api.md).
    if meant and path[0] in ("pages", "snapshot"):
        assert api.post_run(set_path(FULL, (*path[:-1], meant), 1)).status_code == 201


def test_a_required_field_sent_misspelt_is_named_with_the_spelling_sent(api):
    # A top-level typo is taken as an unknown field, so "colected" answered only "collected: Field required".
    body = {key: value for key, value in FULL.items() if key not in ("collected", "run_id")}
    response = api.post_run({**body, "colected": 990, "runId": "full-1"})
    assert assert_error_body(response, 422)["errors"] == [
        {"path": "run_id", "message": 'Field required: the report has "runId", not run_id'},
        {"path": "collected", "message": 'Field required: the report has "colected", not collected'},
    ]
    nested = set_path(FULL, ("delivery",), {"atempted": 3, "delivered": 1})
    errors = assert_error_body(api.post_run(nested), 422)["errors"]
    assert errors[0] == {
        "path": "delivery.attempted",
        "message": 'Field required: delivery has "atempted", not attempted',
    }
    # Nothing near the name: the plain word.
    bare = assert_error_body(api.post_run({**body, "run_id": "full-1"}), 422)["errors"]
    assert bare == [{"path": "collected", "message": "Field required"}]
    assert_nothing_stored()


@pytest.mark.parametrize(
    "value, reason",
    [
        ("2026-09-15T07:00:00+04", "invalid timezone minute"),  # an offset needs its minutes: +04:00
        ("2026-09-15T03:00:00Z[UTC]", "unexpected extra characters at the end of the input"),  # Java's zone id
        ("15/09/2026 03:00", "invalid character in year"),
    ],
)
def test_a_timestamp_that_is_no_iso_8601_is_refused_saying_how_to_write_one(api, value, reason):
    body = assert_error_body(api.post_run(set_path(FULL, ("started_at",), value)), 422)
    message = (
        f"not an ISO 8601 timestamp ({reason}): write it in UTC as 2026-09-14T03:00:00Z, or with its offset (+02:00)"
    )
    assert body["errors"] == [{"path": "started_at", "message": message}], body
    assert_nothing_stored()
    # The same instant spelt with its offset's minutes is taken.
    assert api.post_run(set_path(FULL, ("started_at",), "2026-09-15T07:00:00+04:00")).status_code == 201
    # A pause's end is read the same way (pydantic's words there were "a valid datetime or date").
    slug = Source.objects.get().slug
    refused = api.post(f"/sources/{slug}/pause", {"reason": "move", "until": value})
    assert assert_error_body(refused, 422)["errors"][0]["message"].startswith("not an ISO 8601 timestamp ("), refused


@pytest.mark.parametrize(
    "path, shown",
    [
        (("started_at",), "started_at"),
        (("finished_at",), "finished_at"),
        (("failure_window", "events", 0, "at"), "failure_window.events[0].at"),
        (("proxy_transitions", 0, "at"), "proxy_transitions[0].at"),
    ],
)
@pytest.mark.parametrize("digits", ["1789000000", "20260915030000", " 1789000000.5 "])
def test_a_timestamp_of_digits_alone_is_refused_not_read_as_seconds_since_1970(api, path, shown, digits):
    # pydantic took "1789000000" as 2026-09-09 and "20260915030000" (meant as 2026-09-15 03:00) as 2612.
    body = assert_error_body(api.post_run(set_path(FULL, path, digits)), 422)
    message = (
        "a timestamp, not a number of seconds: write it in UTC as 2026-09-14T03:00:00Z, or with its offset (+02:00)"
    )
    assert {"path": shown, "message": message} in body["errors"], body
    assert_nothing_stored()


def test_a_value_of_the_right_json_type_beside_them_is_taken(api):
    # The healthy neighbour: the same fields as numbers, booleans and text are a report.
    body = set_path(set_path(FULL, ("collected",), 48), ("paused",), False)
    assert api.post_run(body).status_code == 201


# docs/api.md, "Types used above": where null is the same as leaving a field out, and where it is
# refused. A Go crawler's nil slice or map arrives as null.
NULL_TAKEN = [
    ("pause_reason",),
    ("requests",),
    ("pages",),
    ("delivery",),
    ("snapshot",),
    ("failure_window",),
    ("pacing",),
    ("fields",),
    ("requests", "total"),
    ("failure_window", "bad_classes"),
    ("failure_window", "events", 0, "ratio"),
    ("proxy_transitions", 0, "until"),
]
NULL_REFUSED = [
    ("failed_batches",),
    ("proxy_transitions",),
    ("outcomes",),
    ("counters",),
    ("meta",),
    ("removed",),
    ("paused",),
    ("requests", "by_class"),
    ("pages", "lost_urls"),
    ("failure_window", "events"),
]


@pytest.mark.parametrize("path", NULL_TAKEN, ids=[".".join(map(str, p)) for p in NULL_TAKEN])
def test_null_is_taken_as_left_out_where_the_contract_says(api, path):
    assert api.post_run(set_path(FULL, path, None)).status_code == 201


@pytest.mark.parametrize("path", NULL_REFUSED, ids=[".".join(map(str, p)) for p in NULL_REFUSED])
def test_null_is_refused_naming_the_field_elsewhere(api, path):
    body = assert_error_body(api.post_run(set_path(FULL, path, None)), 422)
    assert [e["path"] for e in body["errors"]] == [".".join(map(str, path))], body
    assert_nothing_stored()
