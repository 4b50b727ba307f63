"""parse_report over whatever a caller can send: arbitrary JSON, arbitrary bytes, and the contract's
own example reports with any part replaced by arbitrary JSON. It returns a parsed report or raises
ReportInvalid naming where (a path) and what; never any other exception, which would be a 500."""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sources.ingest.errors import ReportInvalid
from sources.ingest.ingest import ParsedReport, parse_report

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
REPORTS = [
    step["report"] for path in sorted(EXAMPLES_DIR.glob("*.json")) for step in json.loads(path.read_text())["steps"]
]

# The numbers and strings that have broken parsers before: huge and tiny floats, integers past
# 64 bits, NUL, lone surrogates, instants at the edges of what a database holds.
EDGE_NUMBERS = st.sampled_from([0, -1, 2**63, -(2**63) - 1, 10**400, 1e308, 5e-324, -0.0, 0.5, 1.0, 2.0])
EDGE_STRINGS = st.sampled_from(
    [
        "",
        "\x00",
        "\ud800",
        "a\udfffb",
        "9999-12-31T23:59:59-14:00",
        "0001-01-01T00:00:00Z",
        "2026-11-30T12:00:00Z",
        "2026-11-30T12:00:00",
        "complete",
        "../x",
        "a" * 2001,
        "é",
        "dot.src",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | EDGE_NUMBERS
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | EDGE_STRINGS
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12) | EDGE_STRINGS, children, max_size=5)
    ),
    max_leaves=25,
)
# PROPERTY_EXAMPLES=20000 for a long hunt.
PROPERTIES = settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def encode(value, ascii_only: bool) -> bytes:
    """As a client would send it: \\u escapes, or raw UTF-8 (surrogates passed through as the
    invalid bytes a careless encoder writes)."""
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


def assert_parses_or_names_paths(body: bytes) -> None:
    try:
        parsed = parse_report(body, now=NOW)
    except ReportInvalid as exc:
        assert exc.status == 422 and exc.errors, body[:200]
        for error in exc.errors:
            assert isinstance(error.path, str) and error.path, exc.errors
            assert isinstance(error.message, str) and error.message, exc.errors
        json.dumps(exc.body())  # the answer itself must be JSON
    else:
        assert isinstance(parsed, ParsedReport)
        assert len(parsed.digest) == 64


@PROPERTIES
@given(value=JSON, ascii_only=st.booleans())
def test_any_json_value_parses_or_is_refused_naming_paths(value, ascii_only):
    assert_parses_or_names_paths(encode(value, ascii_only))


@PROPERTIES
@given(body=st.binary(max_size=300))
@example(body=b"[" * 5000)
@example(body=b'{"a":' * 2000)
@example(body=b"\xff\xfe{}")
@example(body=b"")
def test_any_bytes_parse_or_are_refused_naming_paths(body):
    assert_parses_or_names_paths(body)


@PROPERTIES
@given(
    base=st.sampled_from(REPORTS),
    changes=st.dictionaries(
        st.sampled_from(
            [
                "source",
                "run_id",
                "started_at",
                "finished_at",
                "exit_code",
                "crawler_verdict",
                "paused",
                "pause_reason",
                "declared_total",
                "collected",
                "written",
                "removed",
                "requests",
                "pages",
                "failed_batches",
                "delivery",
                "snapshot",
                "failure_window",
                "proxy_transitions",
                "pacing",
                "outcomes",
                "counters",
                "meta",
                "fields",
            ]
        )
        | st.text(max_size=10),
        JSON,
        max_size=4,
    ),
    ascii_only=st.booleans(),
)
def test_a_valid_report_with_any_field_replaced_parses_or_is_refused_naming_paths(base, changes, ascii_only):
    assert_parses_or_names_paths(encode({**base, **changes}, ascii_only))


@PROPERTIES
@given(
    base=st.sampled_from(REPORTS),
    field=st.sampled_from(["pages", "requests", "delivery", "snapshot", "failure_window", "pacing", "meta", "fields"]),
    inner=st.dictionaries(
        st.text(max_size=12)
        | st.sampled_from(
            [
                "expected",
                "lost",
                "lost_urls",
                "attempted",
                "delivered",
                "errors",
                "action",
                "rows",
                "events",
                "series",
                "backoff",
                "recovery",
            ]
        ),
        JSON,
        max_size=4,
    ),
)
def test_a_valid_report_with_any_nested_object_parses_or_is_refused_naming_paths(base, field, inner):
    assert_parses_or_names_paths(encode({**base, field: inner}, True))


def test_the_example_reports_parse():
    for report in REPORTS:
        assert isinstance(parse_report(encode(report, True), now=NOW), ParsedReport)
