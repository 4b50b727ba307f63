"""Field coverage and the trend reach ops in the alert's words, delivered to real receivers on 127.0.0.1."""

import email

import pytest

from sources.alerts import channels
from tests.alerts.conftest import deliver_all
from tests.conftest import report

pytestmark = pytest.mark.django_db


def post(api, n: int, **fields) -> dict:
    body = report(
        run_id=f"run-{n}", started_at=f"2026-09-{n:02d}T03:00:00Z", finished_at=f"2026-09-{n:02d}T04:00:00Z", **fields
    )
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    return response.json()


def test_an_email_names_the_field_that_went_empty(api, smtp_sink):
    channels.create_channel(kind="email", target="ops@example.com")
    post(api, 1, declared_total=1000, fields={"title": 1000, "price": 990, "phone": 620})
    post(api, 2, declared_total=1000, fields={"title": 1000, "price": 985, "phone": 610})
    assert deliver_all() == []  # healthy coverage beside it: nothing to say
    post(api, 3, declared_total=1000, fields={"title": 1000, "price": 480, "phone": 610})
    assert deliver_all() == ["sent"]
    [envelope] = smtp_sink.messages
    message = email.message_from_bytes(envelope.content)
    assert message["Subject"] == "[completeness] shop is failing silently (was ok)"
    body, html = (part.get_payload(decode=True).decode() for part in message.get_payload())
    line = "field_coverage: price filled in 48.0% of 1,000 records, floor 88.5% (baseline 98.5% minus 10 points)"
    for part in (body, html):  # the text and the HTML part
        assert line in part and "(expected 88.5%, actual 48.0%)" in part


def test_slack_names_the_slow_decline(api, http_sink):
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    for n, collected in enumerate([1000, 960, 922, 885, 849, 815, 783, 751], start=1):
        post(api, n, collected=collected)
    assert deliver_all() == []  # each run within the drop threshold of the one before, and of the best
    post(api, 9, collected=721)
    assert deliver_all() == ["sent"]
    [request] = http_sink.received("/slack")
    payload = request.json()
    assert payload["blocks"][0]["text"]["text"] == "shop is failing silently (was ok)"
    line = "trend: collected 721, 27.9% below the best of the last 30 days (1,000 on 2026-09-01)"
    texts = [block.get("text", {}).get("text", "") for block in payload["blocks"]]
    findings = [text for text in texts if text.startswith("•")]
    assert line in payload["text"] and line in findings[0]  # the fallback and the blocks
