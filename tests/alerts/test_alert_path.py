"""Watching the alert path: a broken channel is announced on the others and shown on every page, a
channel that works again drops its old error and offers its failed messages for sending again, and
the age of the oldest undelivered notification and the periodic jobs' last runs are on /alerts/,
/readyz and /metrics. Real receivers on 127.0.0.1; minutes pass as explicit times, never as sleeps."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from sources import queue
from sources.alerts import channels, delivery, outbox
from sources.models import Channel, JobRun, Notification
from tests.alerts.conftest import deliver_all, pending_kinds
from tests.alerts.sinks import Reply
from tests.conftest import post_declared

pytestmark = pytest.mark.django_db

NOT_FOUND = Reply(404, b"no such hook")


def fail(api, slug: str = "shop"):
    post_declared(api, 1, 1000, slug)
    post_declared(api, 2, 400, slug)


@pytest.fixture
def hook(http_sink):
    return channels.create_channel(kind="webhook", target=http_sink.url("/hook"))


@pytest.fixture
def chat(http_sink):
    return channels.create_channel(kind="slack", target=http_sink.url("/slack"))


def slack_texts(sink) -> list[str]:
    return [request.json()["text"] for request in sink.received("/slack")]


# Announcing a broken channel


def test_a_channel_answering_404_is_announced_on_another_channel_by_the_next_sweep(api, http_sink, hook, chat):
    http_sink.reply(NOT_FOUND)
    fail(api)
    assert sorted(deliver_all()) == ["failed", "sent"]
    assert Channel.objects.get(pk=hook.pk).broken
    assert pending_kinds(channel=chat, status="pending") == ["channel_broken"]
    assert pending_kinds(channel=hook, kind="channel_broken") == []  # never told to itself

    a_minute_later = timezone.now() + timedelta(minutes=1)
    assert delivery.sweep(now=a_minute_later) != []
    assert deliver_all(now=a_minute_later) == ["sent"]
    announcement = slack_texts(http_sink)[-1]
    assert f"Alert channel webhook http://127.0.0.1:{http_sink.port}/… is broken" in announcement
    assert "HTTP 404: no such hook" in announcement and f"/alerts/channels/{hook.pk}/" in announcement


def test_a_channel_whose_alerts_are_given_up_after_retrying_is_broken_and_announced(
    api, http_sink, hook, chat, settings, staff_client
):
    # A receiver that answers 500 (or refuses connections) all day loses its alerts as surely as one
    # answering 404; it used to read "ok" once they had failed, and nobody else heard of it.
    settings.ALERTS_GIVE_UP_AFTER_SECONDS = 3600
    http_sink.reply(Reply(500, b"upstream down"))
    fail(api)
    assert sorted(deliver_all()) == ["retrying", "sent"]
    assert not Channel.objects.get(pk=hook.pk).broken  # one 500 is no breakage
    Notification.objects.filter(channel=hook).update(created_at=timezone.now() - timedelta(minutes=59, seconds=30))
    http_sink.reply(Reply(500, b"upstream down"))
    assert deliver_all(now=timezone.now() + timedelta(minutes=2)) == ["failed"]
    broken = Channel.objects.get(pk=hook.pk)
    assert broken.broken and broken.last_error == "alerts given up after 1 h of retries: HTTP 500: upstream down"
    assert pending_kinds(channel=chat, status="pending") == ["channel_broken"]
    assert "Alerts are not being delivered to 1 broken channel" in staff_client.get("/alerts/").content.decode()

    a_minute_later = timezone.now() + timedelta(minutes=1)
    delivery.sweep(now=a_minute_later)
    assert deliver_all(now=a_minute_later) == ["sent"]
    announcement = slack_texts(http_sink)[-1]
    assert f"Alert channel webhook http://127.0.0.1:{http_sink.port}/… is broken" in announcement
    assert "alerts given up after 1 h of retries: HTTP 500: upstream down" in announcement
    assert "Failed with" in announcement and "Refused" not in announcement


def test_a_channel_failing_every_delivery_for_an_hour_is_broken_and_announced_while_its_alerts_are_retried(
    api, http_sink, hook, chat
):
    # Before, nobody heard of it until the alerts were given up, a day later.
    http_sink.reply(Reply(503, b"upstream down"))
    fail(api)
    assert sorted(deliver_all()) == ["retrying", "sent"]
    # Five failed attempts span 15 minutes: retried, nothing said yet.
    Notification.objects.filter(channel=hook).update(attempts=4)
    http_sink.reply(Reply(503, b"upstream down"))
    later = timezone.now() + timedelta(hours=2)
    assert deliver_all(now=later) == ["retrying"]
    assert not Channel.objects.get(pk=hook.pk).broken
    assert pending_kinds(kind="channel_broken") == []
    # The seventh spans an hour: broken and announced, and still retried, not given up.
    Notification.objects.filter(channel=hook).update(attempts=6)
    http_sink.reply(Reply(503, b"upstream down"))
    assert deliver_all(now=later + timedelta(hours=1)) == ["retrying"]
    broken = Channel.objects.get(pk=hook.pk)
    assert broken.broken and broken.last_error == (
        "every delivery failed for 1 h 1 min, retried until its alerts are 1 day old: HTTP 503: upstream down"
    )
    assert pending_kinds(channel=chat, status="pending") == ["channel_broken"]
    # Once only, however many more fail.
    Notification.objects.filter(channel=hook).update(attempts=8)
    http_sink.reply(Reply(503, b"upstream down"))
    assert deliver_all(now=later + timedelta(hours=2)) == ["retrying", "sent"]
    assert pending_kinds(kind="channel_broken") == ["channel_broken"]
    # The retry that works heals it and says so.
    assert deliver_all(now=later + timedelta(hours=3)) == ["sent"]
    assert not Channel.objects.get(pk=hook.pk).broken
    assert pending_kinds(channel=chat, kind="channel_healed") == ["channel_healed"]


def test_with_broken_after_off_only_alerts_given_up_break_a_channel(api, http_sink, hook, chat, settings):
    settings.ALERTS_BROKEN_AFTER_SECONDS = 0
    http_sink.reply(Reply(503, b"upstream down"))
    fail(api)
    deliver_all()
    Notification.objects.filter(channel=hook).update(attempts=20)
    http_sink.reply(Reply(503, b"upstream down"))
    assert deliver_all(now=timezone.now() + timedelta(hours=3)) == ["retrying"]
    assert not Channel.objects.get(pk=hook.pk).broken


def test_a_channel_that_works_is_not_announced(api, http_sink, hook, chat):
    fail(api)
    assert deliver_all() == ["sent", "sent"]
    assert pending_kinds(kind="channel_broken") == []


def test_a_breakage_is_announced_once_however_many_alerts_the_channel_refuses(api, http_sink, hook, chat):
    http_sink.reply(NOT_FOUND, NOT_FOUND)
    fail(api, "shop")
    deliver_all()
    fail(api, "cars")
    deliver_all(now=timezone.now() + timedelta(minutes=1))
    assert pending_kinds(kind="channel_broken") == ["channel_broken"]


def test_a_channel_that_breaks_again_after_healing_is_announced_again(api, http_sink, hook, chat):
    http_sink.reply(NOT_FOUND)
    fail(api)
    deliver_all()
    channels.send_test_message(hook)  # the target was fixed: this one is accepted
    deliver_all(now=timezone.now() + timedelta(minutes=1))
    assert not Channel.objects.get(pk=hook.pk).broken
    http_sink.reply(NOT_FOUND)
    channels.send_test_message(hook)
    deliver_all(now=timezone.now() + timedelta(minutes=2))
    assert pending_kinds(kind="channel_broken") == ["channel_broken", "channel_broken"]


def test_a_broken_channel_is_not_announced_on_channels_that_are_broken_too(api, http_sink, hook, chat):
    Channel.objects.filter(pk=chat.pk).update(broken=True, last_error="HTTP 410")
    http_sink.reply(NOT_FOUND)
    fail(api)
    deliver_all()
    assert pending_kinds(kind="channel_broken") == []


# The banner


def test_every_page_shows_a_banner_while_a_channel_is_broken_and_none_once_it_works(api, http_sink, hook, staff_client):
    http_sink.reply(NOT_FOUND)
    fail(api)
    deliver_all()
    for page in ("/", "/alerts/", "/alerts/channels/", "/sources/shop/"):
        body = staff_client.get(page).content.decode()
        assert "Alerts are not being delivered to 1 broken channel" in body, page
        assert f'href="/alerts/channels/{hook.pk}/"' in body
    channels.send_test_message(hook)
    deliver_all(now=timezone.now() + timedelta(minutes=1))
    for page in ("/", "/alerts/"):
        assert "broken channel" not in staff_client.get(page).content.decode()


def test_the_banner_is_not_shown_to_visitors_who_are_not_logged_in(client, http_sink, hook):
    Channel.objects.filter(pk=hook.pk).update(broken=True, last_error="HTTP 404")
    assert "broken channel" not in client.get("/accounts/login/").content.decode()


# The last error


def test_a_channel_that_delivers_after_errors_no_longer_shows_its_last_error(api, http_sink, hook, staff_client):
    http_sink.reply(Reply(500, b"hiccup"))
    fail(api)
    assert deliver_all() == ["retrying"]
    page = f"/alerts/channels/{hook.pk}/"
    assert "Last error: HTTP 500: hiccup" in staff_client.get(page).content.decode()
    assert deliver_all(now=timezone.now() + timedelta(hours=1)) == ["sent"]
    assert "Last error" not in staff_client.get(page).content.decode()
    assert Channel.objects.get(pk=hook.pk).last_error == ""


# Sending again what failed


def break_and_heal(api, http_sink, hook) -> None:
    """The hook refuses the failing alert (broken), then its target is fixed and a test goes through."""
    http_sink.reply(NOT_FOUND)
    fail(api)
    assert deliver_all() == ["failed"]
    channels.send_test_message(hook)
    assert deliver_all(now=timezone.now() + timedelta(minutes=1)) == ["sent"]


def test_what_failed_is_offered_for_sending_again_once_the_channel_works_and_sent_when_asked(
    api, http_sink, hook, staff_client
):
    break_and_heal(api, http_sink, hook)
    assert "Send again the 1 that failed in the last 24 h" in staff_client.get("/alerts/channels/").content.decode()
    response = staff_client.post(f"/alerts/channels/{hook.pk}/resend/")
    assert response.status_code == 302
    assert deliver_all() == ["sent"]
    assert [r.json()["kind"] for r in http_sink.received("/hook")] == ["failing", "test", "failing"]
    assert "Send again" not in staff_client.get("/alerts/channels/").content.decode()


def test_nothing_is_offered_for_sending_again_while_the_channel_is_still_broken(api, http_sink, hook, staff_client):
    http_sink.reply(NOT_FOUND)
    fail(api)
    deliver_all()
    assert "Send again" not in staff_client.get("/alerts/channels/").content.decode()
    staff_client.post(f"/alerts/channels/{hook.pk}/resend/")
    assert Notification.objects.get(channel=hook, kind="failing").status == "failed"


def test_failures_older_than_a_day_are_not_offered_again(api, http_sink, hook, staff_client):
    break_and_heal(api, http_sink, hook)
    Notification.objects.filter(status="failed").update(created_at=timezone.now() - timedelta(hours=25))
    assert "Send again" not in staff_client.get("/alerts/channels/").content.decode()


def test_sending_again_sends_only_the_latest_word_about_each_source(api, http_sink, hook):
    http_sink.reply(NOT_FOUND, NOT_FOUND)
    fail(api)
    deliver_all()
    post_declared(api, 3, 1000)  # recovered while the hook was broken
    deliver_all()
    channels.send_test_message(hook)
    deliver_all(now=timezone.now() + timedelta(minutes=1))
    from sources.alerts import watch

    assert watch.resend_failed(hook) == 2
    deliver_all()
    assert [r.json()["kind"] for r in http_sink.received("/hook")][-1:] == ["resolved"]
    assert Notification.objects.get(channel=hook, kind="failing").status == "superseded"


# The oldest undelivered notification and the periodic jobs


def readyz(client) -> dict:
    response = client.get("/readyz")
    assert response.status_code == 200  # reported, never failing readiness
    return response.json()["alert_path"]


def metric_lines(client, name: str) -> list[str]:
    return [line for line in client.get("/metrics").content.decode().splitlines() if line.startswith(name)]


def test_jobs_that_never_ran_are_reported_late_everywhere_without_failing_readiness(client, staff_client):
    jobs = readyz(client)["jobs"]
    assert set(jobs) == {"sweep_outbox", "check_overdue", "prune", "send_digests"}
    assert jobs["sweep_outbox"]["late"] and jobs["sweep_outbox"]["seconds_since"] is None
    assert metric_lines(client, "completeness_job_seconds_since_last_run") == []
    assert "late: is the task cluster" in staff_client.get("/alerts/").content.decode()


def test_a_job_that_ran_reports_when_and_is_not_late_until_it_misses_three_intervals(client, staff_client):
    queue.run("sweep_outbox")
    queue.run("check_overdue")
    queue.run("prune")
    queue.run("send_digests")
    jobs = readyz(client)["jobs"]
    assert not jobs["sweep_outbox"]["late"] and 0 <= jobs["sweep_outbox"]["seconds_since"] < 60
    assert jobs["sweep_outbox"]["every_seconds"] == 60 and jobs["sweep_outbox"]["last_error"] is None
    [line] = metric_lines(client, 'completeness_job_seconds_since_last_run{job="sweep_outbox"}')
    assert 0 <= float(line.split()[-1]) < 60
    assert "late:" not in staff_client.get("/alerts/").content.decode()

    JobRun.objects.filter(name="sweep_outbox").update(started_at=timezone.now() - timedelta(minutes=4))
    jobs = readyz(client)["jobs"]
    assert jobs["sweep_outbox"]["late"] and not jobs["check_overdue"]["late"]
    assert "late: is the task cluster" in staff_client.get("/alerts/").content.decode()


def test_a_job_that_just_ran_reads_in_the_pages_duration_format_not_zero_minutes(staff_client):
    # Django's timesince said "(0\xa0minutes ago)" for a sweep 20 s ago, beside "runs every 1 min":
    # docs/dashboard.md promises one duration format on every page, /alerts/ included.
    queue.run("sweep_outbox")
    JobRun.objects.filter(name="sweep_outbox").update(started_at=timezone.now() - timedelta(seconds=20))
    page = staff_client.get("/alerts/").content.decode()
    assert "minutes ago" not in page and "minute ago" not in page
    assert re.search(r"\((20|21|22) s ago\)", page), page[page.index("sweep_outbox") :][:400]


def test_the_oldest_undelivered_notification_is_reported_until_it_is_delivered(client, staff_client, http_sink, hook):
    event = outbox.make_event("test", None, at=timezone.now())
    [written] = outbox.write("test", event, [hook.pk])
    Notification.objects.filter(pk=written.pk).update(created_at=timezone.now() - timedelta(minutes=10))
    assert readyz(client)["oldest_undelivered_seconds"] >= 600
    page = staff_client.get("/alerts/").content.decode()
    assert "10 min old" in page and "none waiting" not in page
    assert deliver_all() == ["sent"]
    assert readyz(client)["oldest_undelivered_seconds"] is None
    assert "none waiting" in staff_client.get("/alerts/").content.decode()


def test_broken_channels_are_counted_in_readyz_and_metrics(client, http_sink, hook):
    assert readyz(client)["broken_channels"] == 0
    assert metric_lines(client, "completeness_channels_broken ") == ["completeness_channels_broken 0.0"]
    Channel.objects.filter(pk=hook.pk).update(broken=True)
    assert readyz(client)["broken_channels"] == 1
    assert metric_lines(client, "completeness_channels_broken ") == ["completeness_channels_broken 1.0"]
