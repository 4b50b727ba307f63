"""Reminders and acknowledgements: a problem nobody has acknowledged is said again every N hours, and an
acknowledgement (API or the alerts page) stops that until the source's health changes. Real receivers on 127.0.0.1."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from completeness.alerts import groups, messages
from completeness.durations import human_duration
from sources import jobs
from sources.alerts import channels, reminders
from sources.models import Notification, PauseOrigin, Run, Source
from sources.services import pausing
from tests.alerts.conftest import deliver_all, post_day
from tests.conftest import unwrapped

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=300)
HOURS = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def post(api, n: int, source: str = "shop", **fields):
    post_day(api, source, n, **fields)


@pytest.fixture
def slack(db, http_sink):
    return channels.create_channel(kind="slack", target=http_sink.url("/slack"), remind_every=4 * HOURS)


@pytest.fixture
def failing(api, slack):
    post(api, 1, **GOOD)
    post(api, 2, **BAD)
    assert deliver_all() == ["sent"]  # the failing alert
    return Source.objects.get(slug="shop").health_since


def reminded_at(now) -> list[str]:
    return [line.split(" -> ")[0] for line in reminders.send_reminders(now=now)]


def texts(http_sink) -> list[str]:
    return [request.json()["text"] for request in http_sink.received("/slack")]


def test_a_source_still_failing_is_reminded_after_the_configured_time_and_not_before(failing, http_sink):
    assert reminded_at(failing + 4 * HOURS - MINUTE) == []
    assert reminded_at(failing + 4 * HOURS + MINUTE) == ["shop"]
    assert deliver_all(now=failing + 4 * HOURS + MINUTE) == ["sent"]
    reminder = texts(http_sink)[-1]
    # Counted from the bad run's start, as the pages count a failure, not from its report's arrival.
    began = Run.objects.get(run_id="shop-2").started_at
    lasted = human_duration(round((failing + 4 * HOURS + MINUTE - began).total_seconds()))
    assert f"Reminder: shop has been failing for {lasted} (since {began:%Y-%m-%d %H:%M} UTC)" in reminder
    assert "/alerts/?ack=shop#ack-shop (or POST /api/v1/sources/shop/acknowledge)" in reminder
    assert "declared_total:" in reminder  # what is still wrong, from the latest run


def test_reminders_repeat_every_interval_counted_from_the_last_word(failing):
    assert reminded_at(failing + 4 * HOURS + MINUTE) == ["shop"]
    assert reminded_at(failing + 5 * HOURS) == []
    assert reminded_at(failing + 8 * HOURS) == []
    assert reminded_at(failing + 8 * HOURS + 2 * MINUTE) == ["shop"]
    assert list(Notification.objects.values_list("kind", flat=True).order_by("id")) == [
        "failing",
        "reminder",
        "reminder",
    ]


def test_an_acknowledged_source_gets_no_reminders(api, failing, http_sink):
    response = api.post("/sources/shop/acknowledge", {"note": "proxy pool replaced, re-running"})
    assert response.status_code == 200, response.content
    ack = response.json()
    assert ack["by"] == "token:all-sources" and ack["health"] == "failing"
    assert ack["note"] == "proxy pool replaced, re-running"
    assert reminded_at(failing + 5 * HOURS) == []
    assert reminded_at(failing + 48 * HOURS) == []
    assert deliver_all(now=failing + 48 * HOURS) == [] and len(texts(http_sink)) == 1


def test_an_unsent_reminder_is_dropped_by_an_acknowledgement(api, failing):
    assert reminded_at(failing + 4 * HOURS + MINUTE) == ["shop"]
    assert api.post("/sources/shop/acknowledge", {}).status_code == 200
    assert Notification.objects.get(kind="reminder").status == "superseded"


def test_an_acknowledgement_lapses_when_the_health_changes(api, failing):
    assert api.post("/sources/shop/acknowledge", {"note": "on it"}).status_code == 200
    post(api, 3, **GOOD)  # recovered: the acknowledged problem is over
    post(api, 4, **BAD)  # a new one, which nobody has acknowledged
    again = Source.objects.get(slug="shop").health_since
    assert reminded_at(again + 4 * HOURS + MINUTE) == ["shop"]


def test_reminders_are_off_unless_the_channel_asks_for_them(api, http_sink):
    channels.create_channel(kind="slack", target=http_sink.url("/quiet"))
    post(api, 1, **GOOD)
    post(api, 2, **BAD)
    assert reminded_at(timezone.now() + 48 * HOURS) == []


def test_an_overdue_source_is_reminded_too_but_not_a_paused_or_healthy_one(api, slack):
    for source in ("late", "resting", "fine"):
        post(api, 1, source=source, **GOOD)
    long_ago = timezone.now() - 3 * HOURS
    Source.objects.filter(slug="late").update(
        expected_interval=HOURS, grace=HOURS, last_report_at=long_ago, health_since=long_ago
    )
    assert jobs.check_overdue()["overdue"] == ["late"]
    post(api, 2, source="resting", **BAD)
    pausing.pause_source(Source.objects.get(slug="resting"), origin=PauseOrigin.API, actor="ops", reason="x")
    assert reminded_at(timezone.now() + 5 * HOURS) == ["late"]
    event = Notification.objects.get(kind="reminder").event
    assert event["problem"]["health"] == "overdue"
    assert isinstance(event["problem"]["for_seconds"], int)  # whole seconds, as every time in an event


def test_the_periodic_job_writes_the_reminders(failing, slack):
    from sources.models import Source as S

    S.objects.filter(slug="shop").update(health_since=failing - 5 * HOURS)
    Notification.objects.update(created_at=failing - 5 * HOURS)
    assert jobs.check_overdue()["reminders"] == [f"shop -> {slack.pk}"]


def test_a_healthy_source_cannot_be_acknowledged(api, slack):
    post(api, 1, **GOOD)
    response = api.post("/sources/shop/acknowledge", {"note": "?"})
    assert response.status_code == 409
    assert "nothing to acknowledge" in response.json()["detail"]


def test_the_alerts_page_lists_open_problems_and_acknowledges_with_a_note(client, failing):
    client.force_login(User.objects.create_user("ada", password="x"))
    page = unwrapped(client.get("/alerts/").content.decode())
    assert "Open problems" in page and 'action="/alerts/acknowledge/shop/"' in page
    response = client.post("/alerts/acknowledge/shop/", {"note": "looking into the proxies"})
    assert response.status_code == 302
    page = unwrapped(client.get("/alerts/").content.decode())
    assert "acknowledged by user:ada at" in page and "looking into the proxies" in page
    assert 'action="/alerts/acknowledge/shop/"' not in page
    assert reminded_at(failing + 5 * HOURS) == []


def test_a_second_acknowledgement_without_a_note_keeps_the_first_ones_note_in_view(client, failing):
    # Bob takes over from Ada and acknowledges too, saying nothing: the page showed his empty one alone.
    for name, note in (("ada", "looking into the proxies"), ("bob", "")):
        client.force_login(User.objects.create_user(name, password="x"))
        assert client.post("/alerts/acknowledge/shop/", {"note": note}).status_code == 302
    for page in (client.get("/alerts/"), client.get("/")):
        text = unwrapped(page.content.decode())
        assert "acknowledged by user:bob at" in text, text
        assert "looking into the proxies (user:ada's note)" in text
    # A note of his own is his: shown without a name beside it.
    client.post("/alerts/acknowledge/shop/", {"note": "proxies replaced, watching the next run"})
    text = unwrapped(client.get("/alerts/").content.decode())
    assert "acknowledged by user:bob at" in text and "proxies replaced, watching the next run" in text
    assert "looking into the proxies" not in text and "'s note" not in text


def test_acknowledging_on_the_page_needs_a_login(client, failing):
    response = client.post("/alerts/acknowledge/shop/", {"note": "x"})
    assert response.status_code == 302 and "/login" in response["Location"]
    assert not Source.objects.get(slug="shop").acknowledgements.exists()


def test_a_reminder_interval_below_a_quarter_hour_is_refused(db):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        channels.create_channel(kind="slack", target="https://hooks.example/x", remind_every=timedelta(minutes=5))
    with pytest.raises(ValidationError):
        channels.create_channel(kind="heartbeat", target="https://hc.example/x", remind_every=4 * HOURS)


def test_reminders_are_set_with_add_channel_and_on_the_channels_page(db, django_user_model, client):
    from sources.models import Channel

    call_command("add_channel", "slack", "https://hooks.example/a", "--remind-hours", "6", stdout=StringIO())
    assert Channel.objects.get(target="https://hooks.example/a").remind_every == 6 * HOURS
    client.force_login(django_user_model.objects.create_user("boss", password="x", is_staff=True))
    response = client.post(
        "/alerts/channels/", {"kind": "email", "target": "ops@example.com", "method": "GET", "remind_hours": "24"}
    )
    assert response.status_code == 302
    assert Channel.objects.get(kind="email").remind_every == 24 * HOURS
    assert "every 1 day" in client.get("/alerts/channels/").content.decode()
    too_often = client.post(
        "/alerts/channels/", {"kind": "email", "target": "b@example.com", "method": "GET", "remind_hours": "0.1"}
    )
    assert too_often.status_code == 200 and "at least 0.25 hours (15 minutes)" in too_often.content.decode()
    assert not Channel.objects.filter(target="b@example.com").exists()


def test_the_alerts_page_shows_only_the_acknowledgement_of_the_present_problem(api, client, failing):
    assert api.post("/sources/shop/acknowledge", {"note": "old news"}).status_code == 200
    post(api, 3, **GOOD)
    post(api, 4, **BAD)
    client.force_login(User.objects.create_user("ada", password="x"))
    page = unwrapped(client.get("/alerts/").content.decode())
    assert "old news" not in page and 'action="/alerts/acknowledge/shop/"' in page


def test_a_channel_added_while_a_source_fails_is_told_at_once_and_then_of_its_recovery(api, failing, http_sink):
    post(api, 3, source="other", **GOOD)  # healthy: nothing to tell
    pager = channels.create_channel(kind="webhook", target=http_sink.url("/pager"))
    told = Notification.objects.filter(channel=pager)
    assert [(n.kind, n.source.slug) for n in told] == [("reminder", "shop")]
    assert "when this channel was added, not acknowledged" in told.get().event["cause"]
    assert deliver_all() == ["sent"]
    post(api, 4, **GOOD)
    deliver_all()
    # Its last word about the source was a problem: the recovery follows it there too.
    assert [n.kind for n in Notification.objects.filter(channel=pager).order_by("id")] == ["reminder", "resolved"]


def test_a_reminder_of_a_source_that_lost_data_says_so_and_comes_first_in_a_storm(api):
    # A storm of reminders headed "Data loss: 2 sources ..." listed the source that lost data in
    # arrival order, its line reading like any failure's.
    post(api, 1, source="alpha", **GOOD)
    post(api, 2, source="alpha", **BAD, snapshot={"action": "kept_previous", "rows": 1000})
    post(api, 1, source="zeta", **GOOD)
    post(api, 2, source="zeta", **BAD, snapshot={"action": "replaced", "rows": 300})
    mail = channels.create_channel(kind="email", target="ops@example.com")
    events = [n.event for n in Notification.objects.filter(channel=mail).order_by("id")]
    assert [e["kind"] for e in events] == ["reminder", "reminder"]
    assert [e["source"]["slug"] for e in events] == ["alpha", "zeta"]
    alpha, zeta = events
    assert messages.headline(zeta).startswith("Data loss: Reminder: zeta has been failing for ")
    assert messages.headline(alpha).startswith("Reminder: alpha has been failing for ")  # lost no data
    assert groups.headline(events).startswith("Data loss: 2 sources still failing or overdue (reminder)")
    assert [line.split(" — ")[0].split(" has been")[0] for _, line in groups.lines(events)] == [
        "Data loss: Reminder: zeta",
        "Reminder: alpha",
    ]


def test_a_channel_added_is_not_told_of_what_it_does_not_cover_or_is_acknowledged_or_healthy(api, failing, http_sink):
    elsewhere = channels.create_channel(kind="webhook", target=http_sink.url("/a"), source_slugs=["other"])
    heartbeat = channels.create_channel(kind="heartbeat", target=http_sink.url("/ping"))
    assert not Notification.objects.filter(channel__in=[elsewhere, heartbeat]).exists()
    assert api.post("/sources/shop/acknowledge", {"note": "on it"}).status_code == 200
    later = channels.create_channel(kind="webhook", target=http_sink.url("/b"))
    assert not Notification.objects.filter(channel=later).exists()
    post(api, 3, **GOOD)
    quiet = channels.create_channel(kind="webhook", target=http_sink.url("/c"))
    assert not Notification.objects.filter(channel=quiet).exists()


def test_a_channel_added_in_the_admin_is_told_too_once_its_sources_are_saved(api, failing, admin_client):
    form = {"name": "", "kind": "webhook", "target": "https://hooks.example/x", "method": "GET", "min_severity": "info"}
    assert admin_client.post("/admin/sources/channel/add/", {**form, "all_sources": "on"}).status_code == 302
    added = Notification.objects.filter(channel__target="https://hooks.example/x")
    assert [(n.kind, n.source.slug) for n in added] == [("reminder", "shop")]
    elsewhere = {**form, "target": "https://hooks.example/y", "tags": []}
    post(api, 3, source="other", **GOOD)
    other = Source.objects.get(slug="other")
    assert admin_client.post("/admin/sources/channel/add/", {**elsewhere, "sources": [other.pk]}).status_code == 302
    assert not Notification.objects.filter(channel__target="https://hooks.example/y").exists()


def test_an_overdue_source_is_reminded_since_the_deadline_it_missed_as_the_pages_say(api, http_sink):
    post(api, 1, source="late", **GOOD)
    three_days_ago = timezone.now() - 72 * HOURS
    Source.objects.filter(slug="late").update(
        expected_interval=HOURS, grace=HOURS, last_report_at=three_days_ago, health_since=three_days_ago
    )
    assert jobs.check_overdue()["overdue"] == ["late"]  # noticed only now (the job was not running)
    channels.create_channel(kind="webhook", target=http_sink.url("/new"))
    problem = Notification.objects.get(kind="reminder").event["problem"]
    missed = three_days_ago + 2 * HOURS
    assert problem["since"] == missed.replace(microsecond=0).isoformat()
    assert problem["for_seconds"] >= 69 * 3600, problem  # not "overdue for 29 s"


def test_whoever_adds_a_channel_is_told_what_it_was_told_at_once(api, failing, client, admin_client):
    # The reminder went out on its own; add_channel said "Created webhook channel #1 ..." and no more.
    post(api, 3, source="other", **GOOD)
    out = StringIO()
    call_command("add_channel", "webhook", "https://hooks.example/a", stdout=out)
    assert "Told it at once of 1 source(s) already failing or overdue, as a reminder each: shop." in out.getvalue()
    quiet = StringIO()  # nothing wrong in its scope: nothing more is said
    call_command("add_channel", "webhook", "https://hooks.example/b", "--source", "other", stdout=quiet)
    assert "Told it" not in quiet.getvalue()
    client.force_login(User.objects.create_user("boss", password="x", is_staff=True))
    form = {"kind": "webhook", "target": "https://hooks.example/c", "method": "GET", "min_severity": "info"}
    page = client.post("/alerts/channels/", form, follow=True).content.decode()
    assert "Told it at once of 1 source(s) already failing or overdue, as a reminder each: shop." in page
    admin = {
        "name": "",
        "kind": "webhook",
        "target": "https://hooks.example/d",
        "method": "GET",
        "min_severity": "info",
    }
    page = admin_client.post(
        "/admin/sources/channel/add/", {**admin, "all_sources": "on"}, follow=True
    ).content.decode()
    assert "Told it at once of 1 source(s)" in page
