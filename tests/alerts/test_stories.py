"""Chat tells whole stories: a source that fails and recovers within one grouping turn is told as both
("shop-01 flapped: failed 06:19, ok 06:19"), never as an "ok again" about a failure nobody heard of; a
source flapping many times is summarised, not dropped. Real receivers on 127.0.0.1, explicit times."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from completeness.alerts import groups, messages
from completeness.alerts.policy import Alert
from sources.alerts import channels, delivery, outbox
from sources.models import Channel, Notification, Source
from tests.alerts.conftest import deliver_all
from tests.alerts.sinks import Reply

pytestmark = pytest.mark.django_db

WINDOW = timedelta(seconds=30)
CHANGE = {Alert.FAILING: ("ok", "failing"), Alert.RESOLVED: ("failing", "ok")}


@pytest.fixture(autouse=True)
def window(settings):
    settings.ALERTS_GROUP_SECONDS = WINDOW.total_seconds()


def alert(kind: Alert, source: Source, channel: Channel) -> Notification:
    event = outbox.make_event(kind, source, at=timezone.now(), change=CHANGE[kind])
    return outbox.write(kind, event, [channel.pk], source=source)[0]


def sources(count: int) -> list[Source]:
    return [Source.objects.create(slug=f"shop-{n:02d}") for n in range(count)]


def slack_texts(http_sink) -> list[str]:
    return [request.json()["text"] for request in http_sink.received("/slack")]


def test_a_failure_and_recovery_within_one_turn_are_told_together(http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    first, flapper, steady = sources(3)
    t0 = timezone.now() + timedelta(seconds=1)
    assert delivery.deliver(alert(Alert.FAILING, first, slack).pk, now=t0) == "sent"  # takes the turn
    assert delivery.deliver(alert(Alert.FAILING, flapper, slack).pk, now=t0) == "held"
    assert delivery.deliver(alert(Alert.FAILING, steady, slack).pk, now=t0) == "held"
    assert delivery.deliver(alert(Alert.RESOLVED, flapper, slack).pk, now=t0) == "held"  # the failing is superseded
    deliver_all(now=t0 + WINDOW)
    storm = slack_texts(http_sink)[-1]
    assert "2 sources: 1 failing, 1 flapped" in storm
    assert re.search(r"shop-01 flapped: failed \d\d:\d\d, ok \d\d:\d\d", storm)
    assert "shop-01 is ok again" not in storm  # never an "ok" about a failure it did not hear
    assert "shop-02 is failing" in storm and "shop-02 flapped" not in storm  # the one beside it: as it was


def test_a_recovery_of_a_failure_the_channel_heard_is_plain_ok_again(http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    [source] = sources(1)
    t0 = timezone.now() + timedelta(seconds=1)
    assert delivery.deliver(alert(Alert.FAILING, source, slack).pk, now=t0) == "sent"
    assert delivery.deliver(alert(Alert.RESOLVED, source, slack).pk, now=t0 + WINDOW) == "sent"
    assert [text.split("\n")[0] for text in slack_texts(http_sink)] == [
        ":red_circle: *shop-00 is failing (was ok)*",
        ":large_green_circle: *shop-00 is ok again (was failing)*",
    ]


def test_a_source_flapping_many_times_in_a_turn_is_summarised_in_one_line(http_sink, smtp_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    mail = channels.create_channel(kind="email", target="ops@example.com")
    first, flapper = sources(2)
    t0 = timezone.now() + timedelta(seconds=1)
    for channel in (slack, mail):
        assert delivery.deliver(alert(Alert.FAILING, first, channel).pk, now=t0) == "sent"
    for _ in range(4):
        alert(Alert.FAILING, flapper, slack), alert(Alert.RESOLVED, flapper, slack)
        alert(Alert.FAILING, flapper, mail), alert(Alert.RESOLVED, flapper, mail)
    deliver_all(now=t0 + WINDOW)
    text = slack_texts(http_sink)[-1]
    assert re.search(
        r"shop-01 flapped: failed \d\d:\d\d, ok \d\d:\d\d, … 4 more …, failed \d\d:\d\d, ok \d\d:\d\d", text
    )
    assert "(8 changes)" in text
    subject = smtp_sink.messages[-1].content.decode()
    assert "shop-01 flapped: failed" in subject


def test_a_webhook_still_gets_every_change(http_sink):
    hook = channels.create_channel(kind="webhook", target=http_sink.url("/hook"))
    [source] = sources(1)
    for kind in (Alert.FAILING, Alert.RESOLVED):
        assert delivery.deliver(alert(kind, source, hook).pk) == "sent"
    assert [r.json()["kind"] for r in http_sink.received("/hook")] == ["failing", "resolved"]
    assert "story" not in http_sink.received("/hook")[1].json()


def test_a_failure_superseded_behind_a_retry_is_told_with_the_recovery(http_sink, settings):
    settings.ALERTS_GROUP_SECONDS = 0  # no turns: the retry alone hides the failure
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    [source] = sources(1)
    http_sink.reply(Reply(500))
    failing = alert(Alert.FAILING, source, slack)
    assert delivery.deliver(failing.pk) == "retrying"
    resolved = alert(Alert.RESOLVED, source, slack)
    deliver_all(now=timezone.now() + timedelta(hours=1))
    assert Notification.objects.get(pk=failing.pk).status == "superseded"
    assert Notification.objects.get(pk=resolved.pk).status == "sent"
    assert "shop-00 flapped: failed" in slack_texts(http_sink)[-1]


def test_the_story_is_told_only_of_changes_missed():
    event = {"kind": "resolved", "at": "2026-11-30T12:01:30+00:00", "source": {"slug": "shop"}}
    missed = [{"kind": "failing", "at": "2026-11-30T12:01:05+00:00"}, {"kind": "reminder", "at": None}]
    steps = messages.story(missed, event)
    assert messages.headline({**event, "story": steps}) == "shop flapped: failed 12:01, ok 12:01"
    assert messages.story([], event) == []
    assert groups.headline([{**event, "story": steps}]) == "1 source flapped (changed and changed back within minutes)"
