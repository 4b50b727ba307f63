"""History: reports received long after their runs finished (a backfill, a spool emptied days later)
change a source's health without alerting; once the history settles, each channel hears where the
source stands against what it last heard (sources/alerts/history.py, docs/alerts.md "History")."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from completeness.alerts.policy import HISTORY_SETTLES
from completeness.settings import env_seconds_or_off
from sources import jobs
from sources.alerts import channels, history
from sources.models import Flip, Notification, Source
from tests.alerts.conftest import deliver_all, pending_kinds
from tests.conftest import post_declared_at

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def history_on(settings):
    settings.ALERTS_HISTORY_AFTER_SECONDS = 86400


@pytest.fixture
def hook(http_sink):
    return channels.create_channel(kind="webhook", target=http_sink.url("/hook"))


def _post(api, when: datetime, collected: int, source: str = "shop") -> None:
    """A run that started at `when` and finished 40 minutes later, against a declared 1,000."""
    post_declared_at(api, source, when, when + timedelta(minutes=40), collected)


def _backfill(api, counts: list[int], source: str = "shop") -> datetime:
    """Daily runs ending two days ago, oldest first; returns the last one's start."""
    today = timezone.now().astimezone(UTC).replace(hour=3, minute=0, second=0, microsecond=0)
    first = today - DAY * (len(counts) + 1)
    for day, collected in enumerate(counts):
        _post(api, first + DAY * day, collected, source)
    return first + DAY * (len(counts) - 1)


def _settled() -> datetime:
    return timezone.now() + HISTORY_SETTLES + timedelta(seconds=1)


def test_a_backfill_with_old_incidents_that_ends_healthy_tells_nobody(api, hook, http_sink):
    counts = [1000] * 30
    counts[5] = counts[18] = counts[19] = 400  # two incidents, long over
    _backfill(api, counts)
    # The incidents are on record, each change of health dated and caused by its run...
    flips = Flip.objects.filter(source__slug="shop").order_by("id")
    assert [(f.old_health, f.new_health) for f in flips if f.old_health != "unknown"][-4:] == [
        ("ok", "failing"),
        ("failing", "ok"),
        ("ok", "failing"),
        ("failing", "ok"),
    ]
    assert not any(f.announced for f in flips)
    # ...and none was sent: a month old, each would have been "failing" and "ok again after 0 s".
    assert pending_kinds() == []
    assert history.announce_history(now=_settled()) == 0
    assert not Flip.objects.filter(announced=False).exists()
    deliver_all()
    assert http_sink.received("/hook") == []


def test_a_backfill_that_ends_failing_is_told_once_when_it_settles(api, hook, http_sink):
    last = _backfill(api, [1000] * 20 + [400])
    assert Source.objects.get(slug="shop").health == "failing"
    assert pending_kinds() == []
    # While history may still be arriving, nothing.
    assert history.announce_history(now=timezone.now()) == 0
    assert history.announce_history(now=_settled()) == 1
    assert history.announce_history(now=_settled()) == 0  # told once
    deliver_all()
    (sent,) = http_sink.received("/hook")
    event = sent.json()
    assert event["kind"] == "failing" and event["change"] == {"from": "ok", "to": "failing"}
    assert event["run"]["started_at"] == last.isoformat(timespec="seconds")
    assert event["cause"] == f"after history posted late (runs up to {last:%Y-%m-%d %H:%M} UTC): shop is failing"


def test_the_minute_job_tells_it(api, hook, settings):
    settings.TASKS_SYNC = False  # the job writes; the test looks at the outbox
    _backfill(api, [1000] * 20 + [400])
    Flip.objects.update(at=timezone.now() - HISTORY_SETTLES - timedelta(seconds=1))
    assert jobs.check_overdue()["history_told"] == 1
    assert pending_kinds() == ["failing"]


def test_a_live_report_alerts_at_once_as_before(api, hook):
    _backfill(api, [1000] * 20)
    live = timezone.now().astimezone(UTC).replace(microsecond=0) - timedelta(hours=1)
    _post(api, live, 400)
    assert pending_kinds() == ["failing"]
    flip = Flip.objects.get(new_health="failing")
    assert flip.announced and Notification.objects.get().flip == flip
    assert history.announce_history(now=_settled()) == 0  # nothing of history left to tell


def test_history_that_ends_a_problem_the_channel_heard_resolves_it(api, hook):
    # A failure that one channel heard of (a channel added while the source fails is told of it at
    # once); the crawler's spool then delivers, two days late, the run that recovered.
    # Both runs come after the backfill's last and finished more than a day ago at any time of day
    # (counted from now, the failing run came before the backfill's last before 15:00 UTC).
    last = _backfill(api, [1000] * 20)
    _post(api, last + timedelta(hours=6), 400)
    assert Source.objects.get(slug="shop").health == "failing"
    told = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/told")
    assert pending_kinds() == ["reminder"]
    _post(api, last + timedelta(hours=16), 1000)
    assert pending_kinds() == ["reminder"]
    assert history.announce_history(now=_settled()) == 1
    resolved = Notification.objects.get(kind="resolved")
    # Only to the channel that heard of the failure: the other never did.
    assert resolved.channel == told and resolved.event["change"] == {"from": "failing", "to": "ok"}


def test_a_live_failure_right_after_a_failing_history_is_one_alert(api, hook):
    _backfill(api, [1000] * 20 + [400])
    live = timezone.now().astimezone(UTC).replace(microsecond=0) - timedelta(hours=1)
    _post(api, live, 300)  # failing before and after: no flip, nothing written
    assert pending_kinds() == []
    assert history.announce_history(now=_settled()) == 1
    assert pending_kinds() == ["failing"]
    assert Notification.objects.get().event["run"]["started_at"] == live.isoformat(timespec="seconds")


def test_history_calls_no_heartbeat(api, http_sink):
    beat = channels.create_channel(kind="heartbeat", target=http_sink.url("/beat"))
    _backfill(api, [1000] * 5)
    assert pending_kinds(channel=beat) == []
    live = timezone.now().astimezone(UTC).replace(microsecond=0) - timedelta(hours=1)
    _post(api, live, 1000)
    assert pending_kinds(channel=beat) == ["heartbeat"]


def test_off_alerts_on_every_report_as_it_did(api, hook, settings):
    settings.ALERTS_HISTORY_AFTER_SECONDS = None
    counts = [1000] * 10
    counts[5] = 400
    _backfill(api, counts)
    assert pending_kinds() == ["failing", "resolved"]
    assert all(flip.announced for flip in Flip.objects.all())


@pytest.mark.parametrize(("value", "seconds"), [("86400", 86400.0), ("3600.5", 3600.5), ("off", None), ("", None)])
def test_the_setting_reads_seconds_or_off(monkeypatch, value, seconds):
    monkeypatch.setenv("ALERTS_HISTORY_AFTER_SECONDS", value)
    assert env_seconds_or_off("ALERTS_HISTORY_AFTER_SECONDS", "86400") == seconds


@pytest.mark.parametrize("value", ["0", "-5", "a day", "nan"])
def test_the_setting_names_a_bad_value(monkeypatch, value):
    monkeypatch.setenv("ALERTS_HISTORY_AFTER_SECONDS", value)
    with pytest.raises(ImproperlyConfigured, match="ALERTS_HISTORY_AFTER_SECONDS"):
        env_seconds_or_off("ALERTS_HISTORY_AFTER_SECONDS", "86400")
