"""Each channel kind, delivered to a real receiver on 127.0.0.1: SMTP (aiosmtpd) and HTTP (http.server)."""

import email
import hashlib
import hmac
import json

import pytest

from sources.alerts import channels, delivery
from sources.models import Notification
from tests.alerts.conftest import deliver_all
from tests.alerts.sinks import Reply
from tests.conftest import report

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=1000, collected=1000)


def fail_shop(api):
    """A healthy run, then an incomplete one with an enforced and an observed finding."""
    assert api.post_run(report(run_id="r1", **GOOD)).status_code == 201
    bad = report(
        run_id="r2",
        started_at="2026-09-16T03:00:00Z",
        finished_at="2026-09-16T04:00:00Z",
        declared_total=1000,
        collected=400,
        delivery={"attempted": 10, "delivered": 3},
    )
    assert api.post_run(bad).status_code == 201


def test_slack_gets_source_change_findings_and_link(api, http_sink, settings):
    settings.SITE_URL = "https://monitor.example"
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    fail_shop(api)
    assert deliver_all() == ["sent"]
    [request] = http_sink.received()
    assert request.method == "POST" and request.headers["Content-Type"] == "application/json"
    text = request.json()["text"]
    assert "shop is failing silently (was ok)" in text and "ok → failing" in text
    assert "declared_total:" in text and "(expected 1,000, actual 400)" in text
    assert "delivery" not in text  # observed: never in an alert
    assert "<https://monitor.example/sources/shop/|Open shop>" in text
    assert Notification.objects.get().status == "sent"


def test_webhook_is_signed_when_a_secret_is_set(api, http_sink):
    channels.create_channel(kind="webhook", target=http_sink.url("/signed"), secret="s3cret")
    channels.create_channel(kind="webhook", target=http_sink.url("/plain"))
    fail_shop(api)
    assert sorted(deliver_all()) == ["sent", "sent"]
    [signed] = http_sink.received("/signed")
    expected = "sha256=" + hmac.new(b"s3cret", signed.body, hashlib.sha256).hexdigest()
    assert signed.headers["X-Completeness-Signature"] == expected
    payload = signed.json()
    assert payload["kind"] == "failing" and payload["source"]["slug"] == "shop"
    assert [f["rule"] for f in payload["findings"]] == ["declared_total"]
    [plain] = http_sink.received("/plain")
    assert "X-Completeness-Signature" not in plain.headers
    assert json.loads(plain.body) == payload


def test_email_goes_out_over_smtp(api, smtp_sink, settings):
    settings.DEFAULT_FROM_EMAIL = "monitor@example.com"
    channels.create_channel(kind="email", target="ops@example.com, oncall@example.com")
    fail_shop(api)
    assert deliver_all() == ["sent"]
    [envelope] = smtp_sink.messages
    assert sorted(envelope.rcpt_tos) == ["oncall@example.com", "ops@example.com"]
    message = email.message_from_bytes(envelope.content)
    assert message["Subject"] == "[completeness] shop is failing silently (was ok)"
    body, html = (part.get_payload(decode=True).decode() for part in message.get_payload())
    assert "declared_total:" in body and "/sources/shop/" in body and "delivery" not in body


def test_a_refused_recipient_marks_the_email_channel_broken(api, smtp_sink):
    smtp_sink.refuse.add("nobody")
    channel = channels.create_channel(kind="email", target="nobody@example.com")
    fail_shop(api)
    assert deliver_all() == ["failed"]
    channel.refresh_from_db()
    assert channel.broken and "refused" in channel.last_error
    assert smtp_sink.messages == []


def test_heartbeat_is_called_after_complete_runs_only(api, http_sink):
    channels.create_channel(kind="heartbeat", target=http_sink.url("/ping"))
    channels.create_channel(kind="heartbeat", target=http_sink.url("/ping-post"), method="POST")
    assert api.post_run(report(run_id="r1", **GOOD)).status_code == 201
    assert deliver_all() == ["sent", "sent"]
    bad = report(run_id="r2", started_at="2026-09-16T03:00:00Z", finished_at="2026-09-16T04:00:00Z", collected=400)
    assert api.post_run({**bad, "declared_total": 1000}).status_code == 201
    assert deliver_all() == []  # an incomplete run calls no heartbeat
    assert [r.method for r in http_sink.received("/ping")] == ["GET"]
    [posted] = http_sink.received("/ping-post")
    assert posted.method == "POST" and posted.json()["run"]["run_id"] == "r1"


def test_the_test_message_reaches_the_receiver(db, http_sink):
    channel = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    notification = channels.send_test_message(channel, requested_by="ada")
    assert delivery.deliver(notification.pk) == "sent"
    [request] = http_sink.received()
    assert "this channel works" in request.json()["text"]


def test_an_unreachable_receiver_is_transient(db, no_backoff):
    channel = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/closed")
    notification = channels.send_test_message(channel)
    assert delivery.deliver(notification.pk) == "retrying"
    channel.refresh_from_db()
    assert not channel.broken and "ConnectionError" in channel.last_error


def test_a_slow_receiver_times_out_and_is_retried(db, http_sink, settings):
    settings.ALERTS_HTTP_TIMEOUT = (1, 0.3)
    http_sink.reply(Reply(delay=1.0))
    channel = channels.create_channel(kind="webhook", target=http_sink.url("/slow"))
    notification = channels.send_test_message(channel)
    assert delivery.deliver(notification.pk) == "retrying"
    assert "Timeout" in Notification.objects.get().last_error


def test_a_line_break_in_a_source_name_does_not_break_the_mail(db, smtp_sink):
    from sources.models import Source

    source = Source.objects.create(slug="shop", name="Shop\nBcc: victim@example.com")
    channel = channels.create_channel(kind="email", target="ops@example.com")
    from django.utils import timezone

    from completeness.alerts.policy import Alert
    from sources.alerts import outbox

    event = outbox.make_event(Alert.OVERDUE, source, at=timezone.now(), cause="clock")
    [notification] = outbox.write(Alert.OVERDUE, event, [channel.pk], source=source)
    assert delivery.deliver(notification.pk) == "sent"
    [envelope] = smtp_sink.messages
    assert envelope.rcpt_tos == ["ops@example.com"]
    assert email.message_from_bytes(envelope.content)["Bcc"] is None
