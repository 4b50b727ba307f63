"""Incidents that close: whatever ends a problem (a complete run, a pause, a resume, a maintenance
window's end, a channel that heals, a test message), the incident a paging channel opened for it is
resolved, saying how long it lasted. PagerDuty's and Opsgenie's stand-ins are HTTP servers on 127.0.0.1."""

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from sources.alerts import channels, watch
from sources.models import Channel, Flip, Notification, Source
from sources.services import overdue, windows
from tests.alerts.conftest import deliver_all
from tests.alerts.sinks import HttpSink, Reply
from tests.conftest import post_declared, post_declared_at

pytestmark = pytest.mark.django_db

PD_KEY = "0123456789abcdef0123456789abcdef"
GENIE_KEY = "e3c8b1a0-1111-4222-8333-944455556666"


@pytest.fixture
def pagerduty(db, settings):
    with HttpSink() as sink:
        settings.ALERTS_PAGERDUTY_EVENTS_URL = sink.url("/v2/enqueue")
        channels.create_channel(kind="pagerduty", target=PD_KEY)
        yield sink


@pytest.fixture
def chat(db, settings):
    settings.ALERTS_GROUP_SECONDS = 0
    with HttpSink() as sink:
        channels.create_channel(kind="slack", target=sink.url("/slack"))
        yield sink


def incidents(sink: HttpSink) -> list[tuple[str, str]]:
    return [(r.json()["event_action"], r.json()["dedup_key"]) for r in sink.received()]


def failing(api):
    post_declared(api, 1, 1000)
    post_declared(api, 2, 400)
    deliver_all()


def health() -> str:
    return Source.objects.get(slug="shop").health


# A pause (an operator's, a crawler's, a window's) ends the problem as far as paging goes.


def test_a_pause_closes_the_incident_a_failure_opened_and_tells_chat_nothing(api, pagerduty, chat):
    failing(api)
    assert api.post("/sources/shop/pause", {"reason": "site migration"}).status_code == 200
    deliver_all()
    assert incidents(pagerduty) == [("trigger", "completeness/shop"), ("resolve", "completeness/shop")]
    summary = pagerduty.received()[1].json()["payload"]["summary"]
    assert summary.startswith("shop is paused (was failing), after ") and summary.endswith(": the incident is closed")
    assert len(chat.received()) == 1  # "failing" only: a pause is a decision, not news


def test_a_pause_of_a_healthy_source_closes_nothing(api, pagerduty):
    post_declared(api, 1, 1000)
    assert api.post("/sources/shop/pause", {"reason": "site migration"}).status_code == 200
    deliver_all()
    assert pagerduty.received() == []


def test_a_resume_after_an_incomplete_run_makes_the_source_failing_again_and_pages_again(api, pagerduty):
    failing(api)
    api.post("/sources/shop/pause", {"reason": "site migration"})
    deliver_all()
    assert post_declared(api, 3, 1000)["verdict"] == "paused"  # runs while paused are not judged
    assert health() == "paused"
    assert api.post("/sources/shop/resume", {}).status_code == 200
    assert health() == "failing"  # its last judged run was incomplete: never ok without a complete run
    deliver_all()
    assert [action for action, _ in incidents(pagerduty)] == ["trigger", "resolve", "trigger"]


def test_a_resume_after_a_complete_run_makes_the_source_ok_and_pages_nobody(api, pagerduty):
    post_declared(api, 1, 1000)
    api.post("/sources/shop/pause", {"reason": "site migration"})
    assert post_declared(api, 2, 100)["verdict"] == "paused"
    assert api.post("/sources/shop/resume", {}).status_code == 200
    assert health() == "ok"
    deliver_all()
    assert pagerduty.received() == []


def test_a_maintenance_window_closes_the_incident_and_its_end_leaves_the_source_as_its_runs_say(api, pagerduty):
    failing(api)
    now = timezone.now()
    windows.create_window(
        name="db upgrade", starts_at=now + timedelta(minutes=1), ends_at=now + timedelta(hours=2), source_slugs=["shop"]
    )
    windows.open_windows(now + timedelta(minutes=2))
    assert health() == "paused"
    deliver_all()
    assert [action for action, _ in incidents(pagerduty)] == ["trigger", "resolve"]
    overdue.lift_expired_pauses(now + timedelta(hours=3))
    assert health() == "failing"
    deliver_all()
    assert [action for action, _ in incidents(pagerduty)] == ["trigger", "resolve", "trigger"]


def test_a_maintenance_window_over_a_healthy_source_ends_ok_and_pages_nobody(api, pagerduty):
    post_declared(api, 1, 1000)
    now = timezone.now()
    windows.create_window(
        name="db upgrade", starts_at=now + timedelta(minutes=1), ends_at=now + timedelta(hours=2), source_slugs=["shop"]
    )
    windows.open_windows(now + timedelta(minutes=2))
    overdue.lift_expired_pauses(now + timedelta(hours=3))
    assert health() == "ok"
    deliver_all()
    assert pagerduty.received() == []


# How long it lasted.


def test_the_resolve_says_how_long_the_problem_lasted_from_its_first_bad_run(api, pagerduty):
    # The failure began when its bad run started, as the source page and reminders count it; the alert
    # went out when the report arrived. "ok again after 1 min" ended a failure the page called 50 min.
    now = timezone.now()
    post_declared_at(api, "shop", now - timedelta(hours=4), now - timedelta(hours=3), 1000)
    post_declared_at(api, "shop", now - timedelta(hours=2, minutes=7), now - timedelta(minutes=1), 400)
    deliver_all()
    post_declared_at(api, "shop", now - timedelta(minutes=30), now - timedelta(minutes=1), 1000, run_id="fixed")
    deliver_all()
    resolve = pagerduty.received()[1].json()
    assert resolve["event_action"] == "resolve"
    assert resolve["payload"]["summary"].startswith("shop is ok again (was failing), after 2 h 7 min")
    incident = resolve["payload"]["custom_details"]["incident"]
    # The incident itself (PagerDuty's) was open from the alert to the recovery: seconds.
    assert incident["duration_seconds"] <= 60
    assert incident["began_at"] == (now - timedelta(hours=2, minutes=7)).isoformat(timespec="seconds")


def test_the_resolve_of_an_overdue_source_counts_from_the_deadline_it_missed(api, pagerduty):
    post_declared(api, 1, 1000)
    reported = timezone.now() - timedelta(hours=7)
    Source.objects.filter(slug="shop").update(
        expected_interval=timedelta(hours=1), grace=timedelta(hours=1), last_report_at=reported, health_since=reported
    )
    assert overdue.mark_overdue() == ["shop"]  # noticed now, five hours after its deadline
    post_declared_at(api, "shop", timezone.now() - timedelta(minutes=30), timezone.now(), 1000, run_id="back")
    deliver_all()
    summary = pagerduty.received()[-1].json()["payload"]["summary"]
    assert summary.startswith("shop is ok again (was overdue), after 5 h"), summary


def test_a_problem_that_changed_kind_is_one_incident_counted_from_its_start(api, pagerduty):
    now = timezone.now()
    post_declared_at(api, "shop", now - timedelta(hours=5), now - timedelta(hours=4), 1000)
    post_declared_at(api, "shop", now - timedelta(hours=3), now - timedelta(minutes=1), 400)
    deliver_all()
    source = Source.objects.get(slug="shop")
    Flip.objects.create(source=source, old_health="failing", new_health="overdue", at=timezone.now(), cause="clock")
    Source.objects.filter(pk=source.pk).update(health="overdue")
    post_declared_at(api, "shop", now - timedelta(minutes=30), now - timedelta(minutes=1), 1000, run_id="fixed")
    deliver_all()
    assert pagerduty.received()[-1].json()["payload"]["summary"].startswith("shop is ok again (was overdue), after 3 h")


def test_a_resolve_without_its_opening_alert_counts_from_the_flip(api, pagerduty):
    # Its alert does not tell when the problem began (one written by hand, or in the admin): the flip's time.
    failing(api)
    for told in Notification.objects.filter(kind="failing"):
        told.event["run"] = None
        told.save(update_fields=["event"])
    Flip.objects.filter(new_health="failing").update(at=F("at") - timedelta(hours=2, minutes=7))
    post_declared(api, 3, 1000)
    deliver_all()
    summary = pagerduty.received()[-1].json()["payload"]["summary"]
    assert summary.startswith("shop is ok again (was failing), after 2 h 7 min"), summary


# A channel that heals.


def test_a_channel_that_heals_closes_the_incident_its_breakage_opened_and_says_it_works_again(api, pagerduty, chat):
    with HttpSink() as hook:
        webhook = channels.create_channel(kind="webhook", target=hook.url("/hook"))
        hook.reply(Reply(404, b"no such hook"))
        failing(api)
        deliver_all()  # the announcement of the breakage, written while delivering
        assert Channel.objects.get(pk=webhook.pk).broken
        broken_key = f"completeness/channel/{webhook.pk}"
        assert ("trigger", broken_key) in incidents(pagerduty)

        watch.resend_failed(webhook)  # the receiver was fixed: an operator sends the failed alert again
        deliver_all()
        deliver_all()
        assert not Channel.objects.get(pk=webhook.pk).broken
        assert incidents(pagerduty)[-1] == ("resolve", broken_key)
        assert (
            pagerduty.received()[-1]
            .json()["payload"]["summary"]
            .startswith(f"Alert channel {webhook} works again after ")
        )
        assert "works again" in chat.received()[-1].json()["text"]


def test_a_channel_that_never_broke_announces_nothing_when_it_delivers(api, pagerduty, chat):
    with HttpSink() as hook:
        channels.create_channel(kind="webhook", target=hook.url("/hook"))
        failing(api)
        deliver_all()
        assert incidents(pagerduty) == [("trigger", "completeness/shop")]
        assert len(chat.received()) == 1 and len(hook.received()) == 1


# A test message.


def test_a_test_message_to_pagerduty_opens_an_incident_and_resolves_it_at_once(pagerduty):
    channels.send_test_message(Channel.objects.get(kind="pagerduty"))
    assert deliver_all() == ["sent"]
    (opened, key), (closed, same_key) = incidents(pagerduty)
    assert (opened, closed) == ("trigger", "resolve") and key == same_key
    assert pagerduty.received()[1].json()["payload"]["custom_details"]["incident"]["duration_seconds"] == 0


def test_a_refused_test_message_resolves_nothing_and_is_retried(pagerduty):
    pagerduty.reply(Reply(500))
    channels.send_test_message(Channel.objects.get(kind="pagerduty"))
    assert deliver_all() == ["retrying"]
    assert incidents(pagerduty) == [("trigger", incidents(pagerduty)[0][1])]


def test_a_test_message_to_opsgenie_creates_an_alert_and_closes_it(db, settings):
    with HttpSink() as genie:
        settings.ALERTS_OPSGENIE_API_URL = genie.url("")
        channel = channels.create_channel(kind="opsgenie", target=GENIE_KEY)
        channels.send_test_message(channel)
        assert deliver_all() == ["sent"]
        create, close = genie.received()
        assert create.path == "/v2/alerts"
        alias = f"completeness%2Ftest%2F{create.json()['details']['event_id']}"
        assert close.path == f"/v2/alerts/{alias}/close?identifierType=alias"
