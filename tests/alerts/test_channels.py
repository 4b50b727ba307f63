"""Channels: add_channel, validation, masking in the admin, the admin's test-message and send-again actions."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from sources.alerts import channels, outbox
from sources.models import Channel, Notification, Source, Tag

pytestmark = pytest.mark.django_db

SECRET_URL = "https://hooks.slack.com/services/T000/B000/XXXXsecretYYYY"


def add_channel(*args) -> str:
    out = StringIO()
    call_command("add_channel", *args, stdout=out)
    return out.getvalue()


def test_add_channel_for_all_sources_prints_the_target_masked():
    out = add_channel("slack", SECRET_URL)
    channel = Channel.objects.get()
    assert channel.kind == "slack" and channel.all_sources and channel.target == SECRET_URL
    assert "for all sources" in out and "secret" not in out and "…YYYY" in out


def test_add_channel_for_sources_and_tags():
    Source.objects.create(slug="shop")
    add_channel(
        "webhook",
        "https://example.com/hook",
        "--source",
        "shop",
        "--source",
        "new-one",
        "--tag",
        "cars",
        "--secret",
        "s3cret",
    )
    channel = Channel.objects.get()
    assert not channel.all_sources and channel.secret == "s3cret"
    assert sorted(channel.sources.values_list("slug", flat=True)) == ["new-one", "shop"]
    assert list(channel.tags.values_list("name", flat=True)) == ["cars"]
    assert Tag.objects.filter(name="cars").exists()


@pytest.mark.parametrize(
    "args, complaint",
    [
        (["slack", "not-a-url"], "target"),
        (["webhook", "ftp://example.com/x"], "target"),
        (["email", "ops@example.com, nope"], "target"),
        (["email", "ops@example.com", "--secret", "x"], "secret"),
        (["webhook", "https://example.com/hook", "--secret", "whsec_not base64"], "secret.*whsec_"),
        (["slack", SECRET_URL, "--source", "Bad Slug"], "not a slug"),
    ],
)
def test_add_channel_refuses_what_could_never_be_delivered(args, complaint):
    with pytest.raises(CommandError, match=complaint):
        add_channel(*args)
    assert not Channel.objects.exists()


def test_add_channel_heartbeat_with_post():
    out = add_channel("heartbeat", "https://uptime.example/ping/abc", "--method", "POST")
    assert Channel.objects.get().method == "POST"
    # A heartbeat hears no alert: it read "hearing everything (also channel breakages)".
    assert "hearing a call after each complete run, no alerts." in out and "everything" not in out
    assert "hearing everything (also channel breakages)." in add_channel("slack", SECRET_URL)


def test_the_service_accepts_valid_channels_of_every_kind():
    for kind, target in [
        ("email", "a@example.com"),
        ("slack", SECRET_URL),
        ("webhook", "http://127.0.0.1:8/x"),
        ("heartbeat", "https://uptime.example/ping"),
        # Hosts without a dot: a receiver in the same compose network, an Uptime Kuma beside the service.
        ("webhook", "http://relay:9000/hook"),
        ("heartbeat", "http://uptime-kuma:3001/api/push/abc"),
    ]:
        channels.create_channel(kind=kind, target=target)
    assert Channel.objects.count() == 6
    with pytest.raises(ValidationError):
        channels.create_channel(kind="pager", target=SECRET_URL)


@pytest.fixture
def staff(admin_client):
    return admin_client


def test_the_admin_shows_targets_masked(staff):
    channel = channels.create_channel(kind="slack", target=SECRET_URL)
    for url in ("/admin/sources/channel/", f"/admin/sources/channel/{channel.pk}/change/"):
        page = staff.get(url)
        assert page.status_code == 200
        assert b"XXXXsecretYYYY" not in page.content and "…YYYY".encode() in page.content


def test_the_admin_keeps_the_target_when_left_empty_and_validates_a_new_one(staff):
    channel = channels.create_channel(kind="slack", target=SECRET_URL)
    form = {"name": "ops", "kind": "slack", "target": "", "secret": "", "method": "GET", "all_sources": "on"}
    response = staff.post(f"/admin/sources/channel/{channel.pk}/change/", form)
    assert response.status_code == 302
    channel.refresh_from_db()
    assert channel.target == SECRET_URL and channel.name == "ops"
    response = staff.post(f"/admin/sources/channel/{channel.pk}/change/", {**form, "target": "not a url"})
    assert response.status_code == 200 and b"an http:// or https:// URL" in response.content
    assert Channel.objects.get().target == SECRET_URL


def test_the_admin_refuses_picks_beside_all_sources_which_would_silently_ignore_them(staff):
    channel = channels.create_channel(kind="slack", target=SECRET_URL)
    shop = Source.objects.create(slug="shop")
    form = {"name": "ops", "kind": "slack", "target": "", "secret": "", "method": "GET", "sources": [shop.pk]}
    refused = staff.post(f"/admin/sources/channel/{channel.pk}/change/", {**form, "all_sources": "on"})
    assert refused.status_code == 200 and b"untick it to alert only the sources and tags picked" in refused.content
    assert Channel.objects.get().all_sources and not Channel.objects.get().sources.exists()
    assert staff.post(f"/admin/sources/channel/{channel.pk}/change/", form).status_code == 302
    channel = Channel.objects.get()
    assert not channel.all_sources and list(channel.sources.all()) == [shop]


def test_a_new_target_in_the_admin_clears_broken_and_an_unchanged_one_does_not(staff):
    channel = channels.create_channel(kind="slack", target=SECRET_URL)
    Channel.objects.filter(pk=channel.pk).update(broken=True, last_error="HTTP 404")
    form = {"name": "", "kind": "slack", "target": "", "secret": "", "method": "GET", "all_sources": "on"}
    assert staff.post(f"/admin/sources/channel/{channel.pk}/change/", form).status_code == 302
    assert Channel.objects.get().broken
    new_url = "https://hooks.slack.com/services/T000/B000/fixedfixed"
    assert staff.post(f"/admin/sources/channel/{channel.pk}/change/", {**form, "target": new_url}).status_code == 302
    channel = Channel.objects.get()
    assert channel.target == new_url and not channel.broken


def test_the_admin_action_queues_a_test_message(staff):
    channel = channels.create_channel(kind="slack", target=SECRET_URL)
    response = staff.post("/admin/sources/channel/", {"action": "send_test_message", "_selected_action": [channel.pk]})
    assert response.status_code == 302
    notification = Notification.objects.get()
    assert notification.kind == "test" and notification.channel == channel and notification.status == "pending"


def test_the_admin_lists_notifications_and_sends_failed_ones_again(staff):
    channel = channels.create_channel(kind="slack", target=SECRET_URL)
    failed = channels.send_test_message(channel)
    Notification.objects.filter(pk=failed.pk).update(status="failed", last_error="HTTP 404: no_service")
    page = staff.get("/admin/sources/notification/")
    assert page.status_code == 200 and b"HTTP 404: no_service" in page.content
    staff.post("/admin/sources/notification/", {"action": "send_again", "_selected_action": [failed.pk]})
    assert Notification.objects.get().status == "pending"


@pytest.mark.parametrize("field", ["target", "secret"])
def test_oversized_targets_and_secrets_are_refused_not_crashed_on(staff, field):
    huge = "https://example.com/" + "x" * 2100
    values = {
        "target": huge if field == "target" else "https://example.com/hook",
        "secret": "s" * 300 if field == "secret" else "",
    }
    with pytest.raises(CommandError, match=field):
        add_channel("webhook", values["target"], *(["--secret", values["secret"]] if values["secret"] else []))
    form = {"name": "", "kind": "webhook", "method": "GET", "all_sources": "on", **values}
    response = staff.post("/admin/sources/channel/add/", form)
    assert response.status_code == 200 and b"at most" in response.content
    assert not Channel.objects.exists()


def test_the_three_readings_of_a_channels_scope_agree():
    """Which sources a channel covers is read three ways, each where it is cheap: per source in plain
    SQL on the ingest path (channel_ids_for), per channel in the ORM for periodic jobs (covered), and
    set-wise for the overview's "nobody is told" warning (unwarned_problems). They must agree."""
    from sources.pages.selectors.overview import unwarned_problems

    both = channels.create_channel(
        kind="webhook", target="http://127.0.0.1:9/both", source_slugs=["cars-ae"], tag_names=["cars", "gulf"]
    )
    channels.create_channel(kind="slack", target="https://hooks.slack.com/services/T0/B0/x", source_slugs=["shop"])
    channels.create_channel(kind="email", target="ops@example.com", owners="ada, bob")
    channels.create_channel(kind="webhook", target="http://127.0.0.1:9/team", teams="listings")
    channels.create_channel(kind="heartbeat", target="http://127.0.0.1:9/beat", tag_names=["cars"])
    cars = Source.objects.get(slug="cars-ae")
    cars.tags.add(*Tag.objects.filter(name__in=["cars", "gulf"]))
    Source.objects.get_or_create(slug="ada-feed", defaults={"owner": "ada"})
    Source.objects.get_or_create(slug="team-feed", defaults={"team": "listings"})
    Source.objects.get_or_create(slug="nobodys", defaults={"owner": "carol", "team": "other"})
    everyone = list(Source.objects.order_by("slug"))
    for kinds in (outbox.ALERT_KINDS, [Channel.Kind.HEARTBEAT]):
        for source in everyone:
            by_source = outbox.channel_ids_for(source, kinds)
            by_channel = sorted(
                channel.pk
                for channel in Channel.objects.filter(kind__in=kinds)
                if outbox.covered(channel).filter(pk=source.pk).exists()
            )
            assert by_source == by_channel, (source.slug, kinds)
    assert outbox.channel_ids_for(cars, outbox.ALERT_KINDS).count(both.pk) == 1
    Source.objects.update(health="failing")
    unwarned = {source.slug for source in unwarned_problems(limit=100).items}
    assert unwarned == {s.slug for s in everyone if not outbox.channel_ids_for(s, outbox.ALERT_KINDS)} == {"nobodys"}


def test_add_channel_help_names_every_kind_and_what_its_target_is():
    """`bin/manage add_channel --help` said "(email, slack, webhook or heartbeat)" and "email addresses
    or the URL to call", beside choices that offer pagerduty, opsgenie and apprise, whose target is a key."""
    from sources.management.commands.add_channel import Command

    text = " ".join(Command().create_parser("manage.py", "add_channel").format_help().split())
    kinds = text.split("Add an alert channel (", 1)[1].split(")", 1)[0]
    assert sorted(kinds.replace(" or ", ", ").split(", ")) == sorted(Channel.Kind.values), kinds
    assert "integration key" in text and "Apprise URL" in text
    assert "--owner NAME" in text and "--team NAME" in text


def test_the_admin_takes_a_reminder_interval_in_hours_as_the_channels_page_does(staff):
    # Its duration field took only "4:00:00"; "4" was read as four seconds and refused as too short.
    form = {"name": "ops", "kind": "slack", "target": SECRET_URL, "secret": "", "method": "GET", "all_sources": "on"}
    assert staff.post("/admin/sources/channel/add/", {**form, "remind_hours": "4"}).status_code == 302
    channel = Channel.objects.get()
    assert channel.remind_every == timedelta(hours=4)
    page = staff.get(f"/admin/sources/channel/{channel.pk}/change/").content.decode()
    assert 'name="remind_hours" value="4.0"' in page
    change = {**form, "target": "", "remind_hours": "0.1"}
    refused = staff.post(f"/admin/sources/channel/{channel.pk}/change/", change)
    assert refused.status_code == 200 and b"at least 0.25 hours (15 minutes)" in refused.content
    assert staff.post(f"/admin/sources/channel/{channel.pk}/change/", {**change, "remind_hours": ""}).status_code == 302
    # A heartbeat is never reminded of anything: said beside the field, not above the form.
    beat = {**form, "kind": "heartbeat", "target": "https://hb.example.com/ping", "remind_hours": "2"}
    refused = staff.post("/admin/sources/channel/add/", beat).content.decode()
    field = refused[refused.index('name="remind_hours"') - 600 : refused.index('name="remind_hours"')]
    assert "only for alert channels (not heartbeats)" in field, field
    assert Channel.objects.get().remind_every is None
