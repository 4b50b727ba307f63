"""Order per source and channel: a receiver's last word about a source is the latest, and a stale one never arrives."""

from datetime import timedelta

import pytest
from django.utils import timezone

from completeness.alerts.policy import Alert
from sources.alerts import channels, delivery, outbox
from sources.models import Notification, Source
from tests.alerts.conftest import deliver_all
from tests.alerts.sinks import Reply
from tests.conftest import report

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=500)


@pytest.fixture
def after_commit(inline_jobs, django_capture_on_commit_callbacks):
    """What a block enqueues after commit runs when it ends, deliveries included (jobs run inline)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def post(api, n: int, **fields):
    body = report(
        run_id=f"run-{n}", started_at=f"2026-09-{n:02d}T03:00:00Z", finished_at=f"2026-09-{n:02d}T04:00:00Z", **fields
    )
    assert api.post_run(body).status_code == 201


def kinds_received(sink, path="/hook") -> list[str]:
    return [request.json()["kind"] for request in sink.received(path)]


def alert(kind: Alert, source: Source, channel) -> Notification:
    event = outbox.make_event(kind, source, at=timezone.now(), cause="test")
    return outbox.write(kind, event, [channel.pk], source=source)[0]


@pytest.fixture
def webhook(db, http_sink):
    return channels.create_channel(kind="webhook", target=http_sink.url("/hook"))


def test_a_receiver_that_fails_once_and_a_recovery_right_after_end_with_resolved(
    api, webhook, http_sink, after_commit, settings
):
    settings.ALERTS_RETRY_BASE_SECONDS = 60
    post(api, 1, **GOOD)
    http_sink.reply(Reply(500))
    with after_commit():
        post(api, 2, **BAD)  # "failing" is answered 500 and waits a minute for its retry
    assert Notification.objects.get(kind="failing").status == "retrying"
    with after_commit():
        post(api, 3, **GOOD)  # recovered five seconds later: "resolved" goes at once
    assert kinds_received(http_sink) == ["failing", "resolved"]
    assert dict(Notification.objects.values_list("kind", "status")) == {"failing": "superseded", "resolved": "sent"}
    # The stale "failing" never arrives, however long the sweep keeps running.
    later = timezone.now() + timedelta(hours=2)
    assert delivery.sweep(now=later) == []
    assert deliver_all(now=later) == []
    assert kinds_received(http_sink)[-1] == "resolved" and len(http_sink.received()) == 2


def test_a_receiver_that_works_gets_failing_then_resolved(api, webhook, http_sink, after_commit):
    post(api, 1, **GOOD)
    with after_commit():
        post(api, 2, **BAD)
    with after_commit():
        post(api, 3, **GOOD)
    assert kinds_received(http_sink) == ["failing", "resolved"]
    assert set(Notification.objects.values_list("status", flat=True)) == {"sent"}


def test_of_two_flips_written_before_either_is_sent_only_the_latest_goes(api, webhook, http_sink, after_commit):
    post(api, 1, **GOOD)
    with after_commit():  # both committed before the first delivery job runs
        post(api, 2, **BAD)
        post(api, 3, **GOOD)
    assert kinds_received(http_sink) == ["resolved"]


def test_a_notification_waits_while_an_older_one_for_its_source_is_on_its_way(webhook, http_sink):
    shop, books = Source.objects.create(slug="shop"), Source.objects.create(slug="books")
    failing = alert(Alert.FAILING, shop, webhook)
    Notification.objects.filter(pk=failing.pk).update(status="sending", claimed_at=timezone.now())
    data_loss = alert(Alert.SNAPSHOT_OVERWRITTEN, shop, webhook)
    other = alert(Alert.FAILING, books, webhook)
    assert delivery.deliver(data_loss.pk) == "waiting"
    assert delivery.sweep() == [other.pk]  # the sweep does not hand out what must wait
    # Another source is not behind it in order, only in the channel's lane (one send at a time: lanes.py).
    assert delivery.deliver(other.pk) == "busy"
    Notification.objects.filter(pk=failing.pk).update(status="sent")
    assert delivery.deliver(other.pk) == "sent"
    assert delivery.deliver(data_loss.pk) == "sent"


def test_the_next_in_line_is_handed_out_when_the_one_before_it_is_done(webhook, http_sink, after_commit):
    shop = Source.objects.create(slug="shop")
    failing = alert(Alert.FAILING, shop, webhook)
    Notification.objects.filter(pk=failing.pk).update(status="sending", claimed_at=timezone.now())
    with after_commit():
        data_loss = alert(Alert.SNAPSHOT_OVERWRITTEN, shop, webhook)  # its job finds it waiting
    assert Notification.objects.get(pk=data_loss.pk).status == "pending"
    Notification.objects.filter(pk=failing.pk).update(status="pending")
    assert delivery.deliver(failing.pk) == "sent"
    assert kinds_received(http_sink) == ["failing", "snapshot_overwritten"]


def test_a_retry_made_stale_while_it_was_being_sent_is_superseded(webhook, http_sink, after_commit, monkeypatch):
    shop = Source.objects.create(slug="shop")
    send = delivery.transports.SENDERS["webhook"]

    def recovery_arrives_while_sending(channel, event):
        if event["kind"] == "failing":
            alert(Alert.RESOLVED, shop, webhook)  # written while "failing" is claimed: not superseded yet
        return send(channel, event)

    monkeypatch.setitem(delivery.transports.SENDERS, "webhook", recovery_arrives_while_sending)
    http_sink.reply(Reply(503))
    with after_commit():
        failing = alert(Alert.FAILING, shop, webhook)
    assert Notification.objects.get(pk=failing.pk).status == "superseded"
    assert kinds_received(http_sink) == ["failing", "resolved"]
    assert Notification.objects.get(kind="resolved").status == "sent"


def test_data_loss_is_never_superseded_and_arrives_before_the_recovery(webhook, http_sink, settings):
    settings.ALERTS_RETRY_BASE_SECONDS = 60
    shop = Source.objects.create(slug="shop")
    http_sink.reply(Reply(500))
    failing = alert(Alert.FAILING, shop, webhook)
    assert delivery.deliver(failing.pk) == "retrying"
    data_loss = alert(Alert.SNAPSHOT_OVERWRITTEN, shop, webhook)
    assert delivery.deliver(data_loss.pk) == "waiting"  # behind the failing retry
    resolved = alert(Alert.RESOLVED, shop, webhook)
    assert Notification.objects.get(pk=failing.pk).status == "superseded"
    assert delivery.deliver(resolved.pk) == "waiting"  # behind the data loss
    assert deliver_all() == ["sent", "sent"]
    assert kinds_received(http_sink) == ["failing", "snapshot_overwritten", "resolved"]


def test_a_newer_heartbeat_supersedes_an_unsent_one_and_a_sent_one_stays(db, http_sink):
    beat = channels.create_channel(kind="heartbeat", target=http_sink.url("/beat"))
    shop = Source.objects.create(slug="shop")
    first = alert(Alert.HEARTBEAT, shop, beat)
    assert delivery.deliver(first.pk) == "sent"
    second = alert(Alert.HEARTBEAT, shop, beat)
    third = alert(Alert.HEARTBEAT, shop, beat)
    statuses = [Notification.objects.get(pk=n.pk).status for n in (first, second, third)]
    assert statuses == ["sent", "superseded", "pending"]
    assert delivery.deliver(second.pk) == "superseded"
    assert delivery.deliver(third.pk) == "sent"
    assert len(http_sink.received("/beat")) == 2


def test_notifications_for_other_channels_are_not_superseded(db, http_sink):
    one = channels.create_channel(kind="webhook", target=http_sink.url("/one"), source_slugs=["shop"])
    two = channels.create_channel(kind="webhook", target=http_sink.url("/two"), source_slugs=["shop"])
    shop = Source.objects.get(slug="shop")
    alert(Alert.FAILING, shop, one)
    alert(Alert.RESOLVED, shop, two)
    assert sorted(Notification.objects.values_list("status", flat=True)) == ["pending", "pending"]


def test_a_heartbeat_waiting_for_its_receiver_is_dropped_when_the_source_fails_and_one_before_recovery_is_not(
    api, http_sink, after_commit, settings
):
    # The receiver was down: the heartbeat of a complete run waited for its retry, and went out after
    # the source had failed with data loss, keeping the uptime monitor green.
    settings.ALERTS_RETRY_BASE_SECONDS = 60
    channels.create_channel(kind="heartbeat", target=http_sink.url("/beat"))
    http_sink.reply(Reply(500))
    with after_commit():
        post(api, 1, **GOOD)
    [waiting] = Notification.objects.filter(kind="heartbeat")
    assert waiting.status == "retrying"
    with after_commit():
        post(api, 2, **BAD)
    waiting.refresh_from_db()
    assert (
        waiting.status == "superseded"
        and waiting.last_error == "superseded: the source went failing before it was sent"
    )
    later = timezone.now() + timedelta(hours=2)
    delivery.sweep(now=later)
    deliver_all(now=later)
    assert len(http_sink.received("/beat")) == 1  # the first attempt, answered 500; no retry went
    # Back to complete: its own heartbeat goes.
    with after_commit():
        post(api, 3, **GOOD)
    deliver_all(now=timezone.now() + timedelta(hours=3))
    assert [n.status for n in Notification.objects.filter(kind="heartbeat").order_by("pk")] == ["superseded", "sent"]
    assert len(http_sink.received("/beat")) == 2
