"""The pure half: which flips alert, what messages say, masking, retry classification and backoff."""

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta

import pytest

from completeness.alerts import messages, slack
from completeness.alerts.masking import mask_target
from completeness.alerts.policy import Alert, alert_for_flip, alerts_on_overwrite
from completeness.alerts.retry import OutcomeKind, RetryPolicy, classify_http, give_up_before, next_attempt, retried_for


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("ok", "failing", Alert.FAILING),
        ("ok", "overdue", Alert.OVERDUE),
        ("failing", "ok", Alert.RESOLVED),
        ("overdue", "ok", Alert.RESOLVED),
        ("paused", "failing", Alert.FAILING),
        ("paused", "overdue", Alert.OVERDUE),
        ("failing", "overdue", Alert.OVERDUE),
        ("overdue", "failing", Alert.FAILING),
        ("paused", "ok", None),
        ("ok", "paused", None),
        ("failing", "paused", None),
        ("overdue", "paused", None),
        ("failing", "failing", None),
        ("ok", "ok", None),
    ],
)
def test_which_flips_alert(old, new, expected):
    assert alert_for_flip(old, new) == expected


def test_an_overwritten_snapshot_alerts_only_while_already_failing():
    assert alerts_on_overwrite("failing", ["drop", "snapshot_overwritten"])
    assert not alerts_on_overwrite("failing", ["drop"])
    # From ok the run's own flip alerts (and names the finding): one message, not two.
    assert not alerts_on_overwrite("ok", ["drop", "snapshot_overwritten"])
    # A run older than the latest moves no health: no flip speaks for it.
    assert alerts_on_overwrite("ok", ["drop", "snapshot_overwritten"], moves_health=False)
    assert alerts_on_overwrite("overdue", ["drop", "snapshot_overwritten"], moves_health=False)
    assert not alerts_on_overwrite("paused", ["drop", "snapshot_overwritten"], moves_health=False)
    assert not alerts_on_overwrite("ok", ["drop"], moves_health=False)


FINDINGS = [
    {"rule": "drop", "mode": "enforce", "message": "collected 1200, 86.7% below", "expected": 9000, "actual": 1200},
    {"rule": "delivery", "mode": "observe", "message": "2 of 10 not delivered", "expected": 10, "actual": 8},
]


def _event(kind="failing", findings=FINDINGS):
    return {
        "kind": kind,
        "at": "2026-09-15T04:00:00+00:00",
        "cause": "",
        "source": {"slug": "cars-ae", "name": "Cars <AE> & co", "url": "http://x/sources/cars-ae/"},
        "change": {"from": "ok", "to": "failing"},
        "run": {"run_id": "r-3", "verdict": "incomplete", "started_at": "2026-09-15T03:00:00+00:00"},
        "findings": messages.enforced_findings(findings),
    }


def test_messages_list_enforced_findings_only():
    event = _event()
    assert [f["rule"] for f in event["findings"]] == ["drop"]
    for text in (messages.text_body(event), slack.payload(event)["text"]):
        assert "drop: collected 1200" in text and "expected 9,000, actual 1,200" in text
        assert "delivery" not in text


def test_slack_names_source_change_and_links_to_the_source_page_escaped():
    text = slack.payload(_event())["text"]
    assert "Cars &lt;AE&gt; &amp; co is failing" in text
    assert "ok → failing" in text
    assert "<http://x/sources/cars-ae/|Open cars-ae>" in text


def test_resolved_and_overdue_headlines():
    assert messages.headline(_event("resolved", [])) == "Cars <AE> & co is ok again (was ok)"
    # An event written before overdue details existed still reads.
    overdue = {**_event("overdue", []), "cause": "clock: no report since 2026-09-14 03:00 UTC"}
    assert "overdue: clock: no report since" in messages.headline(overdue)


def test_webhook_signature_is_hmac_sha256_of_the_exact_body():
    body = messages.webhook_body(_event())
    expected = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert messages.signature("s3cret", body) == f"sha256={expected}"
    assert messages.signature("other", body) != f"sha256={expected}"
    assert json.loads(body)["source"]["slug"] == "cars-ae"


@pytest.mark.parametrize(
    "target, shown, hidden",
    [
        ("https://hooks.slack.com/services/T000/B000/XXXXsecretYYYY", "https://hooks.slack.com/…YYYY", "secret"),
        ("https://user:pw@example.com:8443/hook?token=abcdefgh12345", "https://example.com:8443/…2345", "pw"),
        ("ops@example.com, oncall@example.org", "o…@example.com, o…@example.org", "ops@"),
        ("https://example.com/", "https://example.com/", "…"),
    ],
)
def test_targets_are_masked(target, shown, hidden):
    masked = mask_target(target)
    assert masked == shown
    assert hidden not in masked


@pytest.mark.parametrize(
    "status, kind",
    [
        (200, "sent"),
        (204, "sent"),
        (500, "transient"),
        (503, "transient"),
        (429, "transient"),
        (408, "transient"),
        (404, "permanent"),
        (410, "permanent"),
        (400, "permanent"),
        (403, "permanent"),
        (301, "permanent"),
    ],
)
def test_http_answers_are_classified(status, kind):
    assert classify_http(status).kind == OutcomeKind(kind)


def test_an_html_error_page_is_quoted_by_its_title_on_one_line():
    page = (
        '<!doctype html>\n<html lang="en">\n<head>\n  <meta charset="utf-8">\n  <title>Not found &middot; hooks</title>'
    )
    assert classify_http(404, page).error == "HTTP 404: Not found · hooks"
    assert classify_http(502, "<html><body><h1>502 Bad Gateway</h1>\n<hr>nginx</body></html>").error == (
        "HTTP 502: 502 Bad Gateway nginx"
    )
    assert classify_http(404, "no such hook\n").error == "HTTP 404: no such hook"
    assert classify_http(404, "  ").error == "HTTP 404"


def test_retry_after_is_read_from_429_only():
    assert classify_http(429, retry_after="30").retry_after == 30
    assert classify_http(429, retry_after="Wed, 21 Oct 2026 07:28:00 GMT").retry_after is None
    assert classify_http(503, retry_after="30").retry_after is None


POLICY = RetryPolicy(base_seconds=60, max_seconds=1800, give_up_after_seconds=24 * 3600)
T0 = datetime(2026, 9, 15, tzinfo=UTC)


def test_backoff_doubles_up_to_the_cap_and_retry_after_is_a_floor():
    delays = [(next_attempt(POLICY, n, T0) - T0).total_seconds() for n in range(1, 8)]
    assert delays == [60, 120, 240, 480, 960, 1800, 1800]
    assert next_attempt(POLICY, 1, T0, retry_after=300) == T0 + timedelta(seconds=300)
    assert next_attempt(POLICY, 3, T0, retry_after=5) == T0 + timedelta(seconds=240)


def test_the_time_failed_retries_span_is_the_backoff_between_them():
    assert [retried_for(POLICY, n) for n in range(1, 8)] == [0, 60, 180, 420, 900, 1860, 3660]
    # With the defaults, the seventh failed attempt is the first an hour after the first.
    assert retried_for(POLICY, 6) < 3600 <= retried_for(POLICY, 7)


def test_retries_last_at_least_an_hour_then_give_up():
    at, attempts = T0, 0
    while True:
        attempts += 1
        following = next_attempt(POLICY, attempts, at)
        if T0 < give_up_before(POLICY, following):
            break
        at = following
    assert at - T0 >= timedelta(hours=1)
    assert give_up_before(POLICY, T0 + timedelta(hours=23)) < T0
    assert give_up_before(POLICY, T0 + timedelta(hours=25)) > T0
