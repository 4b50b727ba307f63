"""Delivery that loses nothing: retries with backoff, permanent failures, the sweep, one send per claim."""

import os
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.db import OperationalError, close_old_connections, connection
from django.utils import timezone

from sources.alerts import channels, claimers, delivery, lanes
from sources.models import Notification
from tests.alerts.conftest import deliver_all, postgres_only
from tests.alerts.sinks import Reply

pytestmark = pytest.mark.django_db


def test_a_sink_that_answers_500_three_times_gets_the_message_in_the_end(slack, http_sink, no_backoff):
    http_sink.reply(Reply(500), Reply(502, b"bad gateway"), Reply(503))
    notification = channels.send_test_message(slack)
    statuses = [delivery.deliver(notification.pk) for _ in range(4)]
    assert statuses == ["retrying", "retrying", "retrying", "sent"]
    notification.refresh_from_db()
    assert notification.attempts == 4 and notification.sent_at is not None
    assert len(http_sink.received()) == 4
    slack.refresh_from_db()
    assert not slack.broken


def test_a_healthy_sink_is_sent_to_once(slack, http_sink):
    notification = channels.send_test_message(slack)
    assert delivery.deliver(notification.pk) == "sent"
    assert delivery.deliver(notification.pk) == "skipped"
    assert len(http_sink.received()) == 1


def test_backoff_waits_and_grows(slack, http_sink, settings):
    settings.ALERTS_RETRY_BASE_SECONDS = 60
    http_sink.reply(Reply(500), Reply(500))
    notification = channels.send_test_message(slack)
    before = timezone.now()
    assert delivery.deliver(notification.pk) == "retrying"
    notification.refresh_from_db()
    first_wait = notification.next_attempt_at - before
    assert timedelta(seconds=59) < first_wait < timedelta(seconds=62)
    # Not due yet: neither a redundant queue message nor the sweep may send it early.
    assert delivery.deliver(notification.pk) == "skipped"
    assert delivery.sweep() == []
    later = notification.next_attempt_at + timedelta(seconds=1)
    assert delivery.sweep(now=later) == [notification.pk]
    assert delivery.deliver(notification.pk, now=later) == "retrying"
    notification.refresh_from_db()
    assert notification.next_attempt_at - timezone.now() > timedelta(seconds=115)


def test_slack_429_retry_after_is_honoured(slack, http_sink, settings):
    settings.ALERTS_RETRY_BASE_SECONDS = 1
    http_sink.reply(Reply(429, b"rate_limited", {"Retry-After": "120"}))
    notification = channels.send_test_message(slack)
    assert delivery.deliver(notification.pk) == "retrying"
    notification.refresh_from_db()
    assert notification.next_attempt_at - timezone.now() > timedelta(seconds=115)
    assert "429" in notification.last_error


@pytest.mark.parametrize("status", [404, 410, 400])
def test_a_permanent_refusal_fails_the_notification_and_marks_the_channel_broken(slack, http_sink, status):
    http_sink.reply(Reply(status, b"no_service"))
    notification = channels.send_test_message(slack)
    assert delivery.deliver(notification.pk) == "failed"
    slack.refresh_from_db()
    assert slack.broken and f"HTTP {status}" in slack.last_error
    assert delivery.sweep() == []  # failed for good: the sweep does not resend it
    # A later success (the receiver was fixed) heals the channel.
    assert delivery.deliver(channels.send_test_message(slack).pk) == "sent"
    slack.refresh_from_db()
    assert not slack.broken


def test_a_transient_failure_does_not_mark_the_channel_broken(slack, http_sink, no_backoff):
    http_sink.reply(Reply(503))
    assert delivery.deliver(channels.send_test_message(slack).pk) == "retrying"
    slack.refresh_from_db()
    assert not slack.broken and "503" in slack.last_error


def test_retries_give_up_after_the_window(slack, http_sink, settings):
    settings.ALERTS_RETRY_BASE_SECONDS = 60
    settings.ALERTS_GIVE_UP_AFTER_SECONDS = 3600
    http_sink.reply(Reply(500))
    notification = channels.send_test_message(slack)
    Notification.objects.filter(pk=notification.pk).update(
        created_at=timezone.now() - timedelta(minutes=59, seconds=30)
    )
    assert delivery.deliver(notification.pk) == "failed"
    assert Notification.objects.get().last_error.startswith("gave up after 1 attempts")


def test_the_sweep_sends_what_the_queue_lost(slack, http_sink, inline_jobs):
    # Written but never enqueued (as when the queue message is lost): the sweep delivers it.
    notification = channels.send_test_message(slack)
    assert http_sink.received() == []
    assert delivery.sweep() == [notification.pk]
    assert Notification.objects.get().status == "sent"
    assert len(http_sink.received()) == 1
    assert delivery.sweep() == []


def test_the_sweep_takes_back_claims_of_lost_workers_only(slack, http_sink, inline_jobs, settings):
    settings.ALERTS_CLAIM_TIMEOUT_SECONDS = 300
    lost = channels.send_test_message(slack)
    # On another channel: one of its own in flight would keep the lost one in its lane (lanes.py).
    busy = channels.send_test_message(channels.create_channel(kind="webhook", target=http_sink.url("/other")))
    now = timezone.now()
    Notification.objects.filter(pk=lost.pk).update(status="sending", claimed_at=now - timedelta(minutes=6))
    Notification.objects.filter(pk=busy.pk).update(status="sending", claimed_at=now - timedelta(seconds=30))
    assert delivery.sweep() == [lost.pk]
    assert Notification.objects.get(pk=lost.pk).status == "sent"
    assert Notification.objects.get(pk=busy.pk).status == "sending"


def test_the_sweep_takes_back_at_once_the_claims_of_a_worker_process_that_is_gone(http_sink, inline_jobs, settings):
    # SIGKILLed mid-send: its claim held the channel's lane for the whole claim timeout (5 minutes).
    settings.ALERTS_CLAIM_TIMEOUT_SECONDS = 300
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with open(f"/proc/{worker.pid}/stat") as stat:
            started = stat.read().rsplit(")", 1)[1].split()[19]
    finally:
        worker.kill()
        worker.wait()
    host, namespace = socket.gethostname(), claimers.identity().split(":")[1]
    dead = f"{host}:{namespace}:{worker.pid}@{started}:140"
    me = claimers.identity()
    reused = f"{host}:{namespace}:{os.getpid()}@{int(me.split('@')[1].split(':')[0]) - 1}:140"  # an earlier process
    elsewhere = f"other-host:{namespace}:{worker.pid}@{started}:140"
    other_namespace = f"{host}:1:{worker.pid}@{started}:140"
    now = timezone.now()
    rows = {}
    for name, claimed_by in [
        ("dead", dead),
        ("reused", reused),
        ("alive", me),
        ("elsewhere", elsewhere),
        ("other namespace", other_namespace),
        ("old format", f"{host}:{worker.pid}:140"),
    ]:
        # Each on a channel of its own: one in flight holds the others of its lane (lanes.py).
        channel = channels.create_channel(kind="webhook", target=http_sink.url(f"/hook-{len(rows)}"))
        rows[name] = channels.send_test_message(channel).pk
        Notification.objects.filter(pk=rows[name]).update(status="sending", claimed_at=now, claimed_by=claimed_by)
    assert sorted(delivery.sweep()) == sorted([rows["dead"], rows["reused"]])
    assert Notification.objects.get(pk=rows["dead"]).status == "sent"
    statuses = dict(Notification.objects.filter(pk__in=rows.values()).values_list("pk", "status"))
    assert [name for name, pk in rows.items() if statuses[pk] == "sending"] == [
        "alive",
        "elsewhere",
        "other namespace",
        "old format",
    ]


def test_a_claimer_names_its_host_namespace_process_and_start():
    host, namespace, process, thread = claimers.identity().split(":")
    pid, started = process.split("@")
    assert host == socket.gethostname() and namespace.isdigit() and int(pid) == os.getpid()
    assert started.isdigit() and thread == str(threading.get_ident())
    assert not claimers.gone(claimers.identity())


def test_a_second_claim_of_the_same_version_loses(slack):
    notification = channels.send_test_message(slack)
    now = timezone.now()
    assert delivery.claim(notification.pk, now, "worker-a") is not None
    assert delivery.claim(notification.pk, now, "worker-b") is None
    assert Notification.objects.get().claimed_by == "worker-a"


def test_an_operator_can_send_failed_notifications_again(slack, http_sink):
    http_sink.reply(Reply(404))
    notification = channels.send_test_message(slack)
    assert delivery.deliver(notification.pk) == "failed"
    assert delivery.retry_now(Notification.objects.all()) == 1
    assert delivery.deliver(notification.pk) == "sent"


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_workers_send_a_claimed_notification_once(http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    notifications = [channels.send_test_message(slack) for _ in range(20)]
    http_sink.reply(*[Reply(delay=0.01) for _ in range(40)])
    start = threading.Barrier(2)
    results: list[str] = []

    def worker():
        try:
            start.wait()
            for notification in notifications:
                results.append(delivery.deliver(notification.pk))
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # What one worker found in the channel's lane (busy) is handed out when the lane is free: sent here.
    later = deliver_all()
    assert results.count("sent") + later.count("sent") == 20 and len(results) == 40
    assert len(http_sink.received()) == 20
    assert set(Notification.objects.values_list("status", flat=True)) == {"sent"}
    assert set(Notification.objects.values_list("attempts", flat=True)) == {1}


def test_an_unexpected_error_while_sending_is_retried_not_left_claimed(slack, monkeypatch, settings):
    settings.ALERTS_RETRY_BASE_SECONDS = 60

    def broken_sender(channel, event):
        raise RuntimeError("bug in a sender")

    monkeypatch.setitem(delivery.transports.SENDERS, "slack", broken_sender)
    notification = channels.send_test_message(slack)
    assert delivery.deliver(notification.pk) == "retrying"
    notification.refresh_from_db()
    assert "RuntimeError: bug in a sender" in notification.last_error
    slack.refresh_from_db()
    assert not slack.broken


def test_a_worker_killed_and_not_yet_reaped_is_gone():
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with open(f"/proc/{worker.pid}/stat") as stat:
            started = stat.read().rsplit(")", 1)[1].split()[19]
        token = f"{socket.gethostname()}:{claimers.identity().split(':')[1]}:{worker.pid}@{started}:1"
        assert not claimers.gone(token)
        worker.kill()
        deadline = time.monotonic() + 10
        while not claimers.gone(token) and time.monotonic() < deadline:  # a zombie until waited for
            time.sleep(0.01)
        assert claimers.gone(token)
    finally:
        worker.kill()
        worker.wait()


class _DatabaseGoneOnce:
    """An execute wrapper: the first query that `when()` allows fails as a database that went away does."""

    def __init__(self, when):
        self.when, self.failed = when, False

    def __call__(self, execute, sql, params, many, context):
        if not self.failed and self.when(sql):
            self.failed = True
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)


def test_a_database_gone_between_sending_and_recording_records_the_send_once_it_answers(slack, http_sink):
    """PostgreSQL stopped while a webhook was being sent (measured on the Procfile stack): the row stayed
    "sending", claimed by a live worker, so every other alert to the channel answered "busy" for the
    claim timeout (5 min), and then the message that had gone out was sent again."""
    notification = channels.send_test_message(slack)
    gone = _DatabaseGoneOnce(lambda sql: bool(http_sink.received()))
    with connection.execute_wrapper(gone):
        assert delivery.deliver(notification.pk) == "sent"
    assert gone.failed
    notification.refresh_from_db()
    assert notification.status == "sent" and notification.sent_at is not None
    assert not lanes.busy(slack.pk, timezone.now())
    assert delivery.sweep(now=timezone.now() + timedelta(hours=1)) == []
    assert len(http_sink.received()) == 1


def test_a_claim_whose_row_cannot_be_read_back_is_undone(slack, http_sink):
    """The database went away between the claim's UPDATE and reading the row: nothing was sent, and the
    claim must not hold the channel's lane until the claim timeout."""
    notification = channels.send_test_message(slack)
    gone = _DatabaseGoneOnce(lambda sql: sql.lstrip().startswith("SELECT") and "sources_channel" in sql)
    with connection.execute_wrapper(gone), pytest.raises(OperationalError):
        delivery.claim(notification.pk, timezone.now(), "worker")
    notification.refresh_from_db()
    assert notification.status == "pending" and notification.attempts == 0
    assert not lanes.busy(slack.pk, timezone.now())
    assert delivery.deliver(notification.pk) == "sent"
    assert len(http_sink.received()) == 1
