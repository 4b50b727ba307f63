"""On-call channels against local receivers speaking their protocols: PagerDuty's Events API v2 and
Opsgenie's Alert API (their URLs pointed at 127.0.0.1), and Apprise with its Mattermost and JSON services."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from sources.alerts import channels
from sources.models import Channel, Notification, Run, Source, Tag
from tests.alerts.conftest import deliver_all
from tests.alerts.sinks import Reply
from tests.conftest import post_declared, report
from tests.test_baseline import day

pytestmark = pytest.mark.django_db

PD_KEY = "0123456789abcdef0123456789abcdef"
GENIE_KEY = "e3c8b1a0-1111-4222-8333-944455556666"
PD_ACCEPTED = Reply(202, b'{"status":"success","message":"Event processed","dedup_key":"x"}')
GENIE_ACCEPTED = Reply(202, b'{"result":"Request will be processed","took":0.1,"requestId":"r"}')


def fail_and_recover(api, slug: str = "shop"):
    post_declared(api, 1, 1000, slug)
    post_declared(api, 2, 400, slug)
    assert deliver_all() == ["sent"]
    post_declared(api, 3, 1000, slug)
    assert deliver_all() == ["sent"]


@pytest.fixture
def pagerduty(db, http_sink, settings):
    settings.ALERTS_PAGERDUTY_EVENTS_URL = http_sink.url("/v2/enqueue")
    return channels.create_channel(kind="pagerduty", target=PD_KEY)


@pytest.fixture
def opsgenie(db, http_sink, settings):
    settings.ALERTS_OPSGENIE_API_URL = http_sink.url("")
    return channels.create_channel(kind="opsgenie", target=GENIE_KEY)


def test_pagerduty_is_triggered_by_a_failure_and_resolved_by_the_recovery_with_one_dedup_key(
    api, http_sink, pagerduty, settings
):
    settings.SITE_URL = "https://monitor.example"
    http_sink.reply(PD_ACCEPTED, PD_ACCEPTED)
    fail_and_recover(api)
    trigger, resolve = (request.json() for request in http_sink.received("/v2/enqueue"))
    assert trigger["event_action"] == "trigger" and resolve["event_action"] == "resolve"
    assert trigger["routing_key"] == resolve["routing_key"] == PD_KEY
    assert trigger["dedup_key"] == resolve["dedup_key"] == "completeness/shop"
    payload = trigger["payload"]
    assert payload["summary"] == "shop is failing silently (was ok)"
    assert payload["severity"] == "error" and payload["source"] == "shop" and payload["class"] == "failing"
    assert [f["rule"] for f in payload["custom_details"]["findings"]] == ["declared_total"]
    assert trigger["links"] == [
        {"href": "https://monitor.example/sources/shop/", "text": "Open shop"},
        {"href": f"https://monitor.example/runs/{Run.objects.get(run_id='shop-2').pk}/", "text": "Open the run"},
        {"href": "https://monitor.example/alerts/?ack=shop#ack-shop", "text": "Acknowledge"},
    ]
    assert set(resolve) == {"routing_key", "event_action", "dedup_key", "payload"}
    # The resolve says how long the incident lasted (for PagerDuty's log; the key alone resolves it).
    assert resolve["payload"]["summary"].startswith("shop is ok again (was failing), after ")
    incident = resolve["payload"]["custom_details"]["incident"]
    assert incident["opened_at"] == payload["timestamp"] and incident["duration_seconds"] >= 0


def test_pagerduty_gets_one_incident_for_sources_failing_at_once_never_held(api, http_sink, pagerduty, settings):
    settings.ALERTS_GROUP_SECONDS = 30
    for slug in ("a", "b", "c"):
        post_declared(api, 1, 1000, slug)
    for slug in ("a", "b", "c"):
        post_declared(api, 2, 400, slug)
    assert deliver_all() == ["sent", "sent", "sent"]  # never held for a grouping window
    keys = [request.json()["dedup_key"] for request in http_sink.received("/v2/enqueue")]
    assert keys == ["completeness/a"] * 3  # one storm, one incident (tests/alerts/test_paging_storms.py)


def test_a_pagerduty_refusal_breaks_the_channel_and_its_rate_limit_is_retried(api, http_sink, pagerduty):
    http_sink.reply(Reply(429, b'{"status":"throttle event"}'), Reply(400, b'{"status":"invalid event"}'))
    post_declared(api, 1, 1000, "shop")
    post_declared(api, 2, 400, "shop")
    assert deliver_all() == ["retrying"]
    assert not Channel.objects.get().broken
    assert deliver_all(now=timezone.now() + timedelta(hours=1)) == ["failed"]
    assert Channel.objects.get().broken


def test_opsgenie_opens_an_alert_per_source_and_closes_it_by_its_alias(api, http_sink, opsgenie):
    http_sink.reply(GENIE_ACCEPTED, GENIE_ACCEPTED)
    source = Source.objects.create(slug="shop", region="eu")
    source.tags.add(Tag.objects.create(name="proxy-eu"))
    fail_and_recover(api)
    create, close = http_sink.received()
    assert create.path == "/v2/alerts"
    assert close.path == "/v2/alerts/completeness%2Fshop/close?identifierType=alias"
    assert create.headers["Authorization"] == close.headers["Authorization"] == f"GenieKey {GENIE_KEY}"
    alert = create.json()
    assert alert["alias"] == "completeness/shop" and alert["entity"] == "shop"
    assert alert["message"] == "shop is failing silently (was ok)" and alert["priority"] == "P2"
    assert alert["tags"] == ["proxy-eu", "failing"]
    assert "declared_total" in alert["description"]
    assert all(isinstance(value, str) for value in alert["details"].values())
    assert close.json()["source"] == "completeness-monitor"
    assert close.json()["note"].startswith("shop is ok again (was failing), after ")


def test_apprise_speaks_mattermost_to_a_local_server(api, http_sink):
    channels.create_channel(kind="apprise", target=f"mmost://127.0.0.1:{http_sink.port}/hooktoken")
    post_declared(api, 1, 1000, "shop")
    post_declared(api, 2, 400, "shop")
    assert deliver_all() == ["sent"]
    [request] = http_sink.received()
    assert request.path == "/hooks/hooktoken"
    text = request.json()["text"]
    assert text.startswith("shop is failing silently (was ok)")
    assert "declared_total" in text and "Source page: " in text


def test_a_crawlers_text_calls_nobody_in_a_chat_service(api, http_sink):
    # Mattermost (and Discord, Teams...) read "@channel" or "@all" as a call to everyone; a run_id is
    # the crawler's own text. A zero-width space after the "@" reads the same and calls nobody.
    channels.create_channel(kind="apprise", target=f"mmost://127.0.0.1:{http_sink.port}/hooktoken")
    post_declared(api, 1, 1000, "shop")
    api.post_run(report(run_id="@channel @all", declared_total=1000, collected=400, **day(2)))
    assert deliver_all() == ["sent"]
    text = http_sink.received()[0].json()["text"]
    assert "@channel" not in text and "@all" not in text
    assert "@\u200bchannel @\u200ball" in text


def test_apprise_chat_channels_are_grouped_like_slack(api, http_sink, settings):
    settings.ALERTS_GROUP_SECONDS = 30
    channels.create_channel(kind="apprise", target=f"json://127.0.0.1:{http_sink.port}/chat")
    for slug in ("a", "b", "c"):
        post_declared(api, 1, 1000, slug)
    for slug in ("a", "b", "c"):
        post_declared(api, 2, 400, slug)
    assert deliver_all() == ["sent", "skipped", "skipped"]  # whoever takes the channel's turn sends all three
    [request] = http_sink.received("/chat")
    storm = request.json()
    assert storm["title"] == "3 sources failing (3 silently)" and storm["type"] == "failure"
    assert all(f"- {slug} is failing" in storm["message"] for slug in ("a", "b", "c"))


def test_an_apprise_service_answering_404_breaks_the_channel_and_one_answering_500_is_retried(api, http_sink):
    channels.create_channel(kind="apprise", target=f"json://127.0.0.1:{http_sink.port}/chat")
    http_sink.reply(Reply(500), Reply(404))
    post_declared(api, 1, 1000, "shop")
    post_declared(api, 2, 400, "shop")
    assert deliver_all() == ["retrying"]
    assert "error=500" in Notification.objects.get().last_error
    assert deliver_all(now=timezone.now() + timedelta(hours=1)) == ["failed"]
    channel = Channel.objects.get()
    assert channel.broken and "error=404" in channel.last_error


def test_an_apprise_service_that_does_not_answer_is_retried(api):
    channels.create_channel(kind="apprise", target="json://127.0.0.1:9/nobody")  # the discard port: closed
    post_declared(api, 1, 1000, "shop")
    post_declared(api, 2, 400, "shop")
    assert deliver_all() == ["retrying"]
    assert not Channel.objects.get().broken


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("pagerduty", "https://events.pagerduty.com/v2/enqueue"),
        ("opsgenie", "key with spaces"),
        ("apprise", "nonsense://example"),
        ("apprise", ""),
    ],
)
def test_a_target_that_could_never_be_delivered_is_refused(db, kind, target):
    with pytest.raises(ValidationError) as refused:
        channels.validate_channel(kind, target)
    assert "target" in refused.value.message_dict


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("pagerduty", PD_KEY),
        ("opsgenie", GENIE_KEY),
        ("apprise", "mmost://chat.example/abc"),
        ("apprise", "tgram://123456789:ABCdefGH/987654"),
        ("apprise", "discord://1234/abcdef"),
    ],
)
def test_an_on_call_target_is_accepted(db, kind, target):
    channels.validate_channel(kind, target)


def test_apprise_targets_are_masked_to_their_scheme_and_tail(db):
    channel = channels.create_channel(kind="apprise", target="tgram://123456789:ABCdefGHIjklm/987654")
    assert channel.masked_target == "tgram://…7654"
