"""Messages that say the worst thing: data loss, silent runs, how late, run and time, to real receivers on 127.0.0.1."""

import email
import json
from datetime import timedelta
from email import policy

import pytest
from django.utils import timezone

from completeness.alerts import mail, messages, slack
from completeness.durations import human_duration
from sources.alerts import channels
from sources.models import Notification, Source
from sources.services import overdue
from tests.alerts.conftest import deliver_all
from tests.conftest import report

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=9000, collected=9000, snapshot={"action": "replaced", "rows": 9000})
HOUR = timedelta(hours=1)


def post(api, n: int, **fields) -> dict:
    body = report(
        run_id=f"run-{n}", started_at=f"2026-09-{n:02d}T03:00:00Z", finished_at=f"2026-09-{n:02d}T04:00:00Z", **fields
    )
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    return response.json()


def received_mail(smtp_sink) -> list[email.message.EmailMessage]:
    return [email.message_from_bytes(m.content, policy=policy.default) for m in smtp_sink.messages]


def parts(message) -> dict[str, str]:
    return {part.get_content_type(): part.get_content() for part in message.walk() if not part.is_multipart()}


def slack_texts(payload: dict) -> str:
    """Everything a person can read in a Block Kit message, blocks and fallback."""
    return json.dumps(payload, ensure_ascii=False)


# Data loss -------------------------------------------------------------------------------------


def test_a_failing_subject_says_data_loss_when_the_snapshot_was_overwritten(api, smtp_sink):
    channels.create_channel(kind="email", target="ops@example.com")
    post(api, 1, **GOOD)
    post(api, 2, declared_total=9000, collected=1200, snapshot={"action": "replaced", "rows": 1200})
    assert deliver_all() == ["sent"]
    [message] = received_mail(smtp_sink)
    assert message["Subject"].startswith("[completeness] Data loss: shop is failing")


def test_a_failing_subject_without_an_overwrite_says_no_data_loss(api, smtp_sink):
    channels.create_channel(kind="email", target="ops@example.com")
    post(api, 1, **GOOD)
    post(api, 2, declared_total=9000, collected=1200, snapshot={"action": "kept_previous", "rows": 9000})
    assert deliver_all() == ["sent"]
    [message] = received_mail(smtp_sink)
    assert "data loss" not in message["Subject"].lower()
    # "1,200 of 9,000" alone read as 7,800 records gone downstream: the run's line says they are not.
    assert "crawler exit code 0, previous snapshot kept)" in parts(message)["text/plain"]


def test_the_run_line_says_nothing_of_a_snapshot_the_report_did_not_mention(api, http_sink):
    channels.create_channel(kind="webhook", target=http_sink.url("/hook"))
    post(api, 1, **GOOD)
    post(api, 2, declared_total=9000, collected=1200, exit_code=3)
    assert deliver_all() == ["sent"]
    [hook] = http_sink.received("/hook")
    assert hook.json()["run"]["snapshot"] is None
    assert "snapshot" not in messages.run_text(hook.json()["run"])


def test_data_loss_while_already_failing_says_so_first(api, http_sink):
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    post(api, 1, **GOOD)
    post(api, 2, declared_total=9000, collected=1200, snapshot={"action": "kept_previous", "rows": 9000})
    post(api, 3, declared_total=9000, collected=1100, snapshot={"action": "replaced", "rows": 1100})
    Notification.objects.filter(kind="failing").update(status="sent")
    assert deliver_all() == ["sent"]
    [request] = http_sink.received("/slack")
    assert request.json()["blocks"][0]["text"]["text"].startswith("Data loss: a partial run of shop replaced")


# Silent ----------------------------------------------------------------------------------------


def test_a_run_whose_crawler_exited_0_is_called_silent(api, smtp_sink, http_sink):
    channels.create_channel(kind="email", target="ops@example.com")
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    post(api, 1, **GOOD)
    assert post(api, 2, declared_total=9000, collected=1200, exit_code=0)["silent"] is True
    assert sorted(deliver_all()) == ["sent", "sent"]
    [message] = received_mail(smtp_sink)
    assert message["Subject"] == "[completeness] shop is failing silently (was ok)"
    body = parts(message)
    assert "Silent: the crawler exited 0 and claimed success" in body["text/plain"]
    assert "Silent: the crawler exited 0 and claimed success" in body["text/html"]
    payload = http_sink.received("/slack")[0].json()
    assert "Silent: the crawler exited 0" in payload["text"]
    assert "Silent: the crawler exited 0" in slack_texts(payload["blocks"])


def test_a_run_whose_crawler_said_it_failed_is_not_called_silent(api, smtp_sink):
    channels.create_channel(kind="email", target="ops@example.com")
    post(api, 1, **GOOD)
    assert post(api, 2, declared_total=9000, collected=1200, exit_code=2)["silent"] is False
    assert deliver_all() == ["sent"]
    [message] = received_mail(smtp_sink)
    assert message["Subject"] == "[completeness] shop is failing (was ok)"
    assert "silent" not in parts(message)["text/plain"].lower()
    assert "crawler exit code 2" in parts(message)["text/plain"]


# Overdue ---------------------------------------------------------------------------------------


def test_the_overdue_message_says_interval_grace_how_late_and_the_last_verdict(api, smtp_sink):
    channels.create_channel(kind="email", target="ops@example.com")
    post(api, 1, **GOOD)
    reported = timezone.now().replace(microsecond=0) - HOUR * 2 - timedelta(minutes=7)
    Source.objects.filter(slug="shop").update(
        expected_interval=HOUR, grace=HOUR, last_report_at=reported, health_since=reported
    )
    assert overdue.mark_overdue() == ["shop"]
    assert deliver_all() == ["sent"]
    [message] = received_mail(smtp_sink)
    assert message["Subject"] == (
        "[completeness] shop is overdue: no report for 2 h 7 min (expected every 1 h with 1 h grace)"
    )
    text = parts(message)["text/plain"]
    assert f"last report {reported:%Y-%m-%d %H:%M} UTC (verdict complete)" in text
    assert f"due by {reported + 2 * HOUR:%Y-%m-%d %H:%M} UTC; 7 min late" in text, text
    # The last run heard of, one tap away: an overdue alert linked nothing but the source page.
    last_run = Source.objects.get(slug="shop").last_run_id
    assert f"Last run: http://127.0.0.1:8000/runs/{last_run}/" in text
    assert f'href="http://127.0.0.1:8000/runs/{last_run}/"' in parts(message)["text/html"]
    event = Notification.objects.get().event
    assert event["overdue"]["last_run_url"] == f"http://127.0.0.1:8000/runs/{last_run}/"
    assert event["overdue"]["late_seconds"] >= 7 * 60 and event["overdue"]["expected_interval_seconds"] == 3600
    assert isinstance(event["overdue"]["late_seconds"], int)  # whole seconds, as every time in an event
    # docs/alerts.md: "in the event's JSON, seconds are whole"; the interval and the grace were
    # 3600.0 (a float a strictly typed receiver refuses for an integer), as the API's settings are not.
    overdue_facts = event["overdue"]
    assert isinstance(overdue_facts["expected_interval_seconds"], int), overdue_facts
    assert isinstance(overdue_facts["grace_seconds"], int), overdue_facts


def test_a_source_in_time_gets_no_overdue_message(api, smtp_sink):
    channels.create_channel(kind="email", target="ops@example.com")
    post(api, 1, **GOOD)
    reported = timezone.now() - HOUR * 2 + timedelta(minutes=7)
    Source.objects.filter(slug="shop").update(
        expected_interval=HOUR, grace=HOUR, last_report_at=reported, health_since=reported
    )
    assert overdue.mark_overdue() == []
    assert deliver_all() == [] and smtp_sink.messages == []


# Slack: Block Kit, run id and time -------------------------------------------------------------


def test_slack_is_block_kit_with_run_id_time_and_a_button_and_keeps_a_text_fallback(api, http_sink, settings):
    settings.SITE_URL = "https://monitor.example"
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    post(api, 1, **GOOD)
    post(api, 2, declared_total=9000, collected=1200, exit_code=2)
    assert deliver_all() == ["sent"]
    payload = http_sink.received("/slack")[0].json()
    header, fields, findings, actions = payload["blocks"]
    assert header["type"] == "header"
    assert header["text"] == {"type": "plain_text", "text": "shop is failing (was ok)", "emoji": True}
    shown = {field["text"].split("\n")[0]: field["text"].split("\n", 1)[1] for field in fields["fields"]}
    assert shown["*Source*"] == "<https://monitor.example/sources/shop/|shop>"
    assert shown["*Health*"] == "ok → failing"
    assert shown["*Run*"].startswith("run-2 (started 2026-09-02 03:00 UTC, finished 2026-09-02 04:00 UTC")
    assert shown["*At*"].endswith(" UTC") and "." not in shown["*At*"]
    assert shown["*Cause*"] == "run run-2 incomplete: declared_total, crawler_reported"
    assert findings["text"]["text"].startswith("• declared_total:")
    [button] = actions["elements"]
    assert button["type"] == "button" and button["url"] == "https://monitor.example/sources/shop/"
    assert "run-2" in payload["text"] and " UTC" in payload["text"]


def test_no_message_shows_a_raw_iso_time_or_microseconds():
    event = {
        "id": "e1",
        "kind": "failing",
        "at": "2026-11-30T06:19:33.123456+00:00",
        "cause": "",
        "source": {"slug": "shop", "name": "shop", "url": "http://x/sources/shop/"},
        "change": {"from": "ok", "to": "failing"},
        "run": {
            "run_id": "r-1",
            "verdict": "incomplete",
            "started_at": "2026-11-30T05:00:00.5+00:00",
            "finished_at": None,
            "exit_code": None,
            "silent": False,
        },
        "findings": [],
    }
    for text in (messages.text_body(event), json.dumps(slack.payload(event)), mail.html_body(event)):
        assert "2026-11-30 06:19 UTC" in text and "2026-11-30 05:00 UTC" in text
        assert "T06:19" not in text and ".123456" not in text and "+00:00" not in text


def test_slack_blocks_stay_within_slack_limits_for_a_long_list_of_findings():
    finding = {"rule": "field_coverage", "message": "x" * 400, "expected": 1, "actual": 0}
    event = {
        "id": "e1",
        "kind": "failing",
        "at": "2026-11-30T06:19:00+00:00",
        "cause": "",
        "source": {"slug": "shop", "name": "S" * 300, "url": "http://x/sources/shop/"},
        "change": {"from": "ok", "to": "failing"},
        "run": None,
        "findings": [finding] * 20,
    }
    blocks = slack.payload(event)["blocks"]
    assert len(blocks[0]["text"]["text"]) <= 150
    assert all(len(b.get("text", {}).get("text", "")) <= 3000 for b in blocks)
    assert "more on the source page" in blocks[-2]["text"]["text"]


# Email: HTML, Auto-Submitted, threads -----------------------------------------------------------


def test_email_has_an_html_part_auto_submitted_and_failing_and_resolved_share_a_thread(api, smtp_sink, settings):
    settings.SITE_URL = "https://monitor.example"
    settings.ALERTS_GROUP_SECONDS = 0  # one message each, not a storm
    channels.create_channel(kind="email", target="ops@example.com")
    post(api, 1, **GOOD)
    post(api, 2, declared_total=9000, collected=1200, exit_code=2)
    assert deliver_all() == ["sent"]
    post(api, 3, **GOOD)
    assert deliver_all() == ["sent"]
    failing, resolved = received_mail(smtp_sink)
    for message in (failing, resolved):
        assert message["Auto-Submitted"] == "auto-generated"
        assert set(parts(message)) == {"text/plain", "text/html"}
        assert message["References"] == message["In-Reply-To"] == "<source.shop@monitor.example>"
    assert failing["Message-ID"] != resolved["Message-ID"]
    assert failing["Message-ID"] == f"<{Notification.objects.get(kind='failing').event['id']}@monitor.example>"
    html = parts(failing)["text/html"]
    assert "<h2>shop is failing (was ok)</h2>" in html and 'href="https://monitor.example/sources/shop/"' in html


def test_mail_about_different_sources_is_in_different_threads(api, smtp_sink, settings):
    settings.ALERTS_GROUP_SECONDS = 0  # one message each, not a storm
    channels.create_channel(kind="email", target="ops@example.com")
    for source in ("shop", "books"):
        api.post_run(report(source=source, run_id="r1", **GOOD))
        api.post_run(
            report(
                source=source,
                run_id="r2",
                started_at="2026-09-16T03:00:00Z",
                finished_at="2026-09-16T04:00:00Z",
                declared_total=9000,
                collected=10,
            )
        )
    assert deliver_all() == ["sent", "sent"]
    assert sorted(m["References"] for m in received_mail(smtp_sink)) == [
        "<source.books@127.0.0.1>",
        "<source.shop@127.0.0.1>",
    ]


def test_the_html_part_escapes_what_a_source_name_holds(db, smtp_sink):
    from completeness.alerts.policy import Alert
    from sources.alerts import outbox

    source = Source.objects.create(slug="shop", name="<script>alert(1)</script>")
    channel = channels.create_channel(kind="email", target="ops@example.com")
    event = outbox.make_event(Alert.FAILING, source, at=timezone.now(), change=("ok", "failing"))
    outbox.write(Alert.FAILING, event, [channel.pk], source=source)
    assert deliver_all() == ["sent"]
    html = parts(received_mail(smtp_sink)[0])["text/html"]
    assert "<script>" not in html and "&lt;script&gt;" in html


# Webhook: event id and cause -------------------------------------------------------------------


def test_webhook_events_carry_a_unique_id_and_the_cause(api, http_sink):
    channels.create_channel(kind="webhook", target=http_sink.url("/hook"))
    post(api, 1, **GOOD)
    post(api, 2, declared_total=9000, collected=1200, exit_code=0)
    assert deliver_all() == ["sent"]
    post(api, 3, **GOOD)
    assert deliver_all() == ["sent"]
    failing, resolved = (r.json() for r in http_sink.received("/hook"))
    assert failing["id"] and resolved["id"] and failing["id"] != resolved["id"]
    assert failing["cause"] == "run run-2 incomplete: declared_total (silent: the crawler claimed success)"
    assert resolved["cause"] == "run run-3 complete"
    assert failing["run"]["silent"] is True and failing["run"]["exit_code"] == 0
    assert "." not in failing["at"]  # no microseconds
    # Every key docs/alerts.md shows, null where it does not apply: "page" was missing off paging channels.
    documented = {"id", "kind", "at", "cause", "source", "change", "run", "findings", "overdue", "problem"}
    documented |= {"channel", "incident", "page", "severity", "oncall"}
    assert set(failing) == set(resolved) == documented
    assert failing["page"] is None


def test_every_message_about_a_run_links_the_run_page_it_names(api, smtp_sink, http_sink, settings, admin_client):
    # On call at night the first tap should open the run's findings, not the source page's history.
    settings.SITE_URL = "https://monitor.example"
    channels.create_channel(kind="email", target="ops@example.com")
    channels.create_channel(kind="webhook", target=http_sink.url("/hook"))
    post(api, 1, **GOOD)
    failing = post(api, 2, declared_total=9000, collected=1200, exit_code=0)
    assert sorted(deliver_all()) == ["sent", "sent"]
    page = f"/runs/{failing['run']}/"
    [message] = received_mail(smtp_sink)
    body = parts(message)
    assert "Run: run-2 (started 2026-09-02 03:00 UTC" in body["text/plain"]
    assert f"crawler exit code 0) https://monitor.example{page}\r\n" in body["text/plain"]
    assert f'<a href="https://monitor.example{page}">' in body["text/html"]
    [hook] = http_sink.received("/hook")
    assert hook.json()["run"]["url"] == f"https://monitor.example{page}"
    opened = admin_client.get(page)
    assert opened.status_code == 200 and "run-2" in opened.content.decode()


def test_an_event_written_before_runs_carried_a_page_still_reads():
    run = {"run_id": "r-1", "verdict": "incomplete", "started_at": "2026-09-02T03:00:00+00:00", "exit_code": 0}
    assert messages.run_text(run) == "r-1 (started 2026-09-02 03:00 UTC, verdict incomplete, crawler exit code 0)"


def test_a_retried_webhook_repeats_its_event_id(db, http_sink, no_backoff):
    from sources.alerts import delivery
    from tests.alerts.sinks import Reply

    channel = channels.create_channel(kind="webhook", target=http_sink.url("/hook"))
    http_sink.reply(Reply(500))
    notification = channels.send_test_message(channel)
    assert [delivery.deliver(notification.pk) for _ in range(2)] == ["retrying", "sent"]
    first, second = (r.json()["id"] for r in http_sink.received("/hook"))
    assert first == second


@pytest.mark.parametrize(
    "seconds, shown",
    [
        (0, "0 s"),
        (45, "45 s"),
        (3600, "1 h"),
        (7 * 60 + 1, "7 min"),
        (2 * 3600 + 7 * 60 + 30, "2 h 7 min"),
        (90061, "1 day 1 h"),
        (2 * 86400 + 20 * 60, "2 days"),
        (2 * 86400 + 3 * 3600, "2 days 3 h"),
        (None, "?"),
    ],
)
def test_durations_read_in_the_two_largest_units(seconds, shown):
    assert human_duration(seconds) == shown


def test_a_source_that_never_reported_is_overdue_with_no_report_yet():
    event = {
        "id": "e1",
        "kind": "overdue",
        "at": "2026-11-30T08:20:00+00:00",
        "cause": "",
        "source": {"slug": "new", "name": "new", "url": "http://x/sources/new/"},
        "change": {"from": "ok", "to": "overdue"},
        "run": None,
        "findings": [],
        "overdue": {
            "last_report_at": None,
            "last_verdict": "",
            "expected_interval_seconds": 3600,
            "grace_seconds": 600,
            "due_at": "2026-11-30T08:10:00+00:00",
            "late_seconds": 600,
        },
    }
    assert messages.headline(event) == "new is overdue: no report yet (expected every 1 h with 10 min grace)"
    assert "no report yet; expected every 1 h with 10 min grace, so due by 2026-11-30 08:10 UTC; 10 min late" in (
        messages.text_body(event)
    )
    # No run to link: neither this event nor one of a release before the link says "Last run".
    assert "Last run" not in messages.text_body({**event, "overdue": {**event["overdue"], "last_run_url": None}})
    assert "Last run" not in messages.text_body(event)


def test_the_html_part_makes_web_addresses_in_its_facts_links_and_nothing_else():
    from completeness.alerts.mail import _linked

    assert _linked("https://ops.example/alerts/?ack=shop#ack-shop (or POST /api/v1/sources/shop/acknowledge)") == (
        '<a href="https://ops.example/alerts/?ack=shop#ack-shop">https://ops.example/alerts/?ack=shop#ack-shop</a>'
        " (or POST /api/v1/sources/shop/acknowledge)"
    )
    assert _linked('see https://runbooks.example/shop. <b>"x"</b>') == (
        'see <a href="https://runbooks.example/shop">https://runbooks.example/shop</a>. '
        "&lt;b&gt;&quot;x&quot;&lt;/b&gt;"
    )
    assert _linked("javascript:alert(1)") == "javascript:alert(1)"
    # A broken channel's masked target was a link to nowhere.
    assert _linked("#6 webhook https://hooks.example/…hook") == "#6 webhook https://hooks.example/…hook"


def test_a_test_message_says_so_and_a_kind_this_release_does_not_know_is_named_not_taken_for_one():
    assert messages.headline({"kind": "test", "at": "2026-09-15T03:00:00+00:00"}).startswith("Test message")
    unknown = {"kind": "escalated", "at": "2026-09-15T03:00:00+00:00", "source": {"slug": "shop", "name": ""}}
    assert messages.headline(unknown) == "shop: escalated"
    assert messages.headline({"kind": "escalated"}) == "escalated"
