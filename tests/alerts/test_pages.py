"""The alert pages: login for the alerts page, staff (enforced on the server) for channels."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sources.alerts import channels, outbox
from sources.alerts.outbox import channels_for
from sources.episodes import failures_started
from sources.models import Channel, Health, Notification, Run, Source
from tests.conftest import post_declared_at, report, unwrapped

pytestmark = pytest.mark.django_db

SECRET_URL = "https://hooks.slack.com/services/T000/B000/XXXXsecretYYYY"


@pytest.fixture
def staff(client):
    client.force_login(User.objects.create_user("ops", password="x", is_staff=True))
    return client


def _failing_shop(api):
    api.post_run(report(declared_total=100, collected=100))
    api.post_run(
        report(
            run_id="r2",
            started_at="2026-09-16T03:00:00Z",
            finished_at="2026-09-16T04:00:00Z",
            declared_total=100,
            collected=10,
        )
    )


def test_the_alerts_page_needs_a_login(client):
    response = client.get("/alerts/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_alerts_page_lists_flips_and_every_notification_with_its_state(api, member):
    slack = channels.create_channel(kind="slack", target=SECRET_URL)
    _failing_shop(api)
    Notification.objects.filter(channel=slack).update(status="retrying", last_error="HTTP 503: upstream down")
    page = member.get("/alerts/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "shop" in html and "failing" in html
    # The run that caused the change is a link to its page.
    run = Run.objects.get(run_id="r2")
    assert f'run <a href="/runs/{run.pk}/">r2</a>' in html
    assert "retrying" in html and "HTTP 503: upstream down" in html
    assert "XXXXsecretYYYY" not in html
    # Two channels of one kind are told apart by number and name (a link to its page for staff, whose
    # page it is).
    slack.name = "ops-room"
    slack.save()
    html = member.get("/alerts/").content.decode()
    assert f"#{slack.pk} ops-room slack" in html and f'href="/alerts/channels/{slack.pk}/"' not in html
    User.objects.filter(username="member").update(is_staff=True)
    html = member.get("/alerts/").content.decode()
    assert f'<a href="/alerts/channels/{slack.pk}/">#{slack.pk} ops-room</a> slack' in html


def test_the_channel_pages_are_for_staff_only(api, client, member):
    channel = channels.create_channel(kind="slack", target=SECRET_URL)
    for url in ("/alerts/channels/", f"/alerts/channels/{channel.pk}/"):
        assert member.get(url).status_code == 403
    assert member.post("/alerts/channels/", {"kind": "slack", "target": SECRET_URL}).status_code == 403
    assert member.post(f"/alerts/channels/{channel.pk}/test/").status_code == 403
    assert Channel.objects.count() == 1 and not Notification.objects.exists()
    client.logout()
    assert client.get("/alerts/channels/").status_code == 302


def test_staff_create_list_and_test_a_channel(staff):
    Source.objects.create(slug="shop")
    response = staff.post(
        "/alerts/channels/",
        {
            "kind": "webhook",
            "target": "https://example.com/hook/abcdef123456",
            "secret": "s",
            "method": "GET",
            "sources": ["shop"],
        },
    )
    assert response.status_code == 302
    channel = Channel.objects.get()
    assert list(channel.sources.values_list("slug", flat=True)) == ["shop"] and not channel.all_sources
    listing = staff.get("/alerts/channels/").content.decode()
    assert "https://example.com/…3456" in listing and "abcdef123456" not in listing
    assert staff.post(f"/alerts/channels/{channel.pk}/test/").status_code == 302
    assert Notification.objects.get().kind == "test"
    detail = staff.get(f"/alerts/channels/{channel.pk}/").content.decode()
    assert "pending" in detail
    # The channel is named once, above its notifications, not again on each (a card each on a phone).
    assert 'data-label="kind">test<' in detail and 'data-label="channel"' not in detail
    assert 'data-label="channel"' in staff.get("/alerts/").content.decode()  # many channels there
    # While deliveries are being retried, the list says so; "ok" read as healthy until it was broken.
    assert 'data-label="state">ok<' in listing
    Notification.objects.update(status="retrying", last_error="connection refused")
    retrying = staff.get("/alerts/channels/").content.decode()
    assert "1 notification waiting for a retry" in retrying and 'data-label="state">ok<' not in retrying


def test_the_channel_form_names_the_methods_as_http_does(staff):
    form = staff.get("/alerts/channels/").content.decode()
    assert '<option value="GET" selected>GET</option>' in form and '<option value="POST">POST</option>' in form
    assert ">Get<" not in form and ">Post<" not in form


def test_a_bad_channel_is_refused_with_the_reason_not_a_500(staff):
    response = staff.post("/alerts/channels/", {"kind": "email", "target": "not-an-address", "method": "GET"})
    assert response.status_code == 200 and "email addresses" in response.content.decode()
    response = staff.post("/alerts/channels/", {"kind": "pager", "target": "x", "method": "PUT"})
    assert response.status_code == 200
    assert staff.get("/alerts/channels/999/").status_code == 404
    assert not Channel.objects.exists()


def test_a_broken_channel_says_so_on_its_page(staff):
    channel = channels.create_channel(kind="webhook", target="https://example.com/gone")
    Channel.objects.filter(pk=channel.pk).update(broken=True, last_error="HTTP 410: gone")
    assert "Broken" in staff.get(f"/alerts/channels/{channel.pk}/").content.decode()
    assert "broken: HTTP 410" in staff.get("/alerts/channels/").content.decode()


def test_the_channels_covering_a_source_are_those_for_all_and_those_naming_it(api):
    everything = channels.create_channel(kind="slack", target=SECRET_URL)
    mine = channels.create_channel(kind="webhook", target="https://example.com/a", source_slugs=["shop"])
    channels.create_channel(kind="webhook", target="https://example.com/b", source_slugs=["other"])
    _failing_shop(api)
    shop = Source.objects.get(slug="shop")
    assert sorted(channels_for(shop).values_list("pk", flat=True)) == sorted([everything.pk, mine.pk])


def test_the_source_page_says_what_each_channel_covering_it_hears(api, member):
    """Listed as "changes of health go to each", a pager that hears data loss only read as one that is
    told of every failure; and each was a link to a page only staff may open."""
    channels.create_channel(kind="slack", target=SECRET_URL, name="chat")
    channels.create_channel(kind="webhook", target="https://example.com/a", name="pager", min_severity="data_loss")
    _failing_shop(api)
    html = member.get("/sources/shop/").content.decode()
    listed = html.split('id="channels"')[1].split("</section>")[0]
    assert "pager <span" in listed and "webhook: data loss only" in listed, listed
    assert "slack: everything (also channel breakages)" in listed and "/alerts/channels/" not in listed


def test_the_alerts_page_reads_a_fixed_number_of_queries(api, member, django_assert_max_num_queries):
    channels.create_channel(kind="slack", target=SECRET_URL)
    channels.create_channel(kind="webhook", target="https://example.com/x")
    for n in range(1, 7):
        api.post_run(
            report(
                run_id=f"r{n}",
                started_at=f"2026-09-{n:02d}T03:00:00Z",
                finished_at=f"2026-09-{n:02d}T04:00:00Z",
                declared_total=100,
                collected=100 if n % 2 else 10,
            )
        )
    assert Notification.objects.count() >= 10
    # 8, plus the broken-channel banner, the oldest undelivered notification, the job runs and when
    # the failures began.
    with django_assert_max_num_queries(12):
        assert member.get("/alerts/").status_code == 200


def _stored_and_shown(api, member, target: str) -> tuple[str, str, str]:
    from tests.alerts.conftest import deliver_all

    slack = channels.create_channel(kind="slack", target=target)
    _failing_shop(api)
    deliver_all()
    notification = Notification.objects.get(channel=slack)
    return notification.last_error, Channel.objects.get(pk=slack.pk).last_error, member.get("/alerts/").content.decode()


def test_a_delivery_error_is_stored_and_shown_without_the_webhooks_path_or_query(api, member, http_sink):
    # The receiver answers 404 quoting the path and query it was sent to, as some do.
    from tests.alerts.sinks import Reply

    http_sink.reply(Reply(status=404, body=b"no hook at /services/T000/B000/SLACKSECRET?token=QUERYSECRET"))
    target = http_sink.url("/services/T000/B000/SLACKSECRET?token=QUERYSECRET")
    stored, on_channel, page = _stored_and_shown(api, member, target)
    assert stored.startswith("HTTP 404") and on_channel == stored
    for text in (stored, page):
        assert "SLACKSECRET" not in text and "QUERYSECRET" not in text and "/services/T000" not in text


def test_a_connection_error_is_stored_and_shown_without_the_url_the_client_quotes(api, member):
    from tests.alerts.sinks import free_port

    target = f"http://hookuser:HOOKPASSWORD@127.0.0.1:{free_port()}/services/T000/B000/SLACKSECRET?token=QUERYSECRET"
    stored, _, page = _stored_and_shown(api, member, target)
    assert stored.startswith("ConnectionError"), stored  # the kind of failure stays readable
    for text in (stored, page):
        assert "SLACKSECRET" not in text and "QUERYSECRET" not in text and "HOOKPASSWORD" not in text
        assert "/services/T000" not in text and "hookuser" not in text


def test_an_error_stored_before_errors_were_redacted_is_shown_without_its_secrets(api, member):
    slack = channels.create_channel(kind="slack", target=SECRET_URL)
    _failing_shop(api)
    old = (
        "ConnectionError: HTTPSConnectionPool(host='hooks.slack.com', port=443): Max retries exceeded with "
        "url: /services/T000/B000/XXXXsecretYYYY?token=abc123def (Caused by timeout)"
    )
    Notification.objects.filter(channel=slack).update(status="retrying", last_error=old)
    html = member.get("/alerts/").content.decode()
    assert "hooks.slack.com" in html and "Max retries exceeded" in html
    assert "XXXXsecretYYYY" not in html and "abc123def" not in html and "/services/T000" not in html


def _problem_row(page: str, slug: str) -> str:
    row = page[page.index(f'id="ack-{slug}"') :]
    return row[: row.index("</tr>")]


def test_a_failing_problem_is_dated_from_its_first_bad_run_as_the_source_page_dates_it(api, member):
    # /alerts/ gave a failure's "since" as the time its report arrived, the source page as the time its
    # first bad run started: two times for one failure, an hour apart for an hour's crawl.
    now = timezone.now().replace(second=0, microsecond=0)

    def run(slug: str, n: int, collected: int, started: timedelta) -> None:
        post_declared_at(api, slug, now - started, now, collected * 10, run_id=f"{slug}-{n}")

    run("slow", 1, 100, timedelta(days=1, hours=3))
    run("slow", 2, 10, timedelta(hours=3))  # a three-hour crawl that came up short
    run("slow", 3, 20, timedelta(hours=1))  # still failing: the failure began with run 2
    run("quick", 1, 100, timedelta(days=1, minutes=2))
    run("quick", 2, 10, timedelta(minutes=2))
    assert set(Source.objects.values_list("health", flat=True)) == {Health.FAILING}
    page = unwrapped(member.get("/alerts/").content.decode())

    slow = _problem_row(page, "slow")
    first_bad = now - timedelta(hours=3)
    reported = Source.objects.get(slug="slow").health_since
    assert f"{first_bad:%Y-%m-%d %H:%M} UTC <small" in slow, slow
    assert f"(noticed {reported:%Y-%m-%d %H:%M} UTC, the time alerts give)" in slow, slow
    source_page = member.get("/sources/slow/").content.decode()
    assert f"{first_bad:%Y-%m-%d %H:%M}" in source_page[source_page.index('id="headline"') :]
    # Each time kept on one line: a phone broke "noticed 2026-11-\n26 22:42".
    raw = member.get("/alerts/").content.decode()
    assert f'(noticed <span class="nowrap">{reported:%Y-%m-%d}</span>' in _problem_row(raw, "slow")
    # A run of two minutes: the run's start and its report are one time, said once.
    quick = _problem_row(page, "quick")
    assert "(noticed" not in quick, quick
    assert f"{Source.objects.get(slug='quick').health_since:%Y-%m-%d %H:%M} UTC" in quick, quick


def test_dating_failing_problems_reads_one_query_however_many(api, member, django_assert_num_queries):
    for n in range(12):
        for day, collected in ((15, 100), (16, 10)):
            api.post_run(
                report(
                    source=f"s{n}",
                    run_id=f"s{n}-{day}",
                    started_at=f"2026-09-{day}T03:00:00Z",
                    finished_at=f"2026-09-{day}T04:00:00Z",
                    declared_total=100,
                    collected=collected,
                )
            )
    failing = list(Source.objects.all())
    with django_assert_num_queries(1):
        started = failures_started(failing)
    assert {when.isoformat() for when in started.values()} == {"2026-09-16T03:00:00+00:00"}
    assert len(started) == 12


def _notice(page: str) -> str:
    if 'data-part="acknowledge-target"' not in page:
        return ""
    notice = page[page.index('data-part="acknowledge-target"') :]
    return notice[: notice.index("</p>")]


def test_an_acknowledge_link_followed_after_the_problem_ended_says_so(api, member):
    # The link in last night's alert: the source is ok again, and the table has no row for it.
    _failing_shop(api)
    link = outbox.acknowledge_url(Source.objects.get(slug="shop"))
    assert link.endswith("/alerts/?ack=shop#ack-shop")
    api.post_run(
        report(run_id="r3", started_at="2026-09-17T03:00:00Z", finished_at="2026-09-17T04:00:00Z", collected=100)
    )
    assert Source.objects.get(slug="shop").health == Health.OK
    notice = unwrapped(_notice(member.get("/alerts/?ack=shop").content.decode()))
    # Since its first good run started, as its page says it, not since the report arrived.
    assert "has no open problem now: it is ok since 2026-09-17 03:00 UTC" in notice, notice
    assert "Nothing to acknowledge" in notice
    assert _notice(member.get("/alerts/?ack=nosuch").content.decode()).endswith(
        "No source is named “nosuch”: nothing to acknowledge."
    )


@pytest.mark.parametrize("named", ["a\x00b", "UPPER", "x" * 300])
def test_an_acknowledge_link_naming_no_possible_source_says_so_without_a_lookup(member, named):
    # A NUL made PostgreSQL refuse the lookup (500).
    page = member.get("/alerts/", {"ack": named})
    assert page.status_code == 200
    assert "No source is named" in _notice(page.content.decode())


def test_an_acknowledge_link_to_a_listed_problem_says_nothing_more(api, member):
    _failing_shop(api)
    page = member.get("/alerts/?ack=shop").content.decode()
    assert 'id="ack-shop"' in page and _notice(page) == ""
    assert _notice(member.get("/alerts/").content.decode()) == ""


def test_an_acknowledge_link_to_a_paused_source_says_it_is_paused(api, member):
    _failing_shop(api)
    assert api.post("/sources/shop/pause", {"reason": "site migration", "until": None}).status_code == 200
    notice = unwrapped(_notice(member.get("/alerts/?ack=shop").content.decode()))
    assert "is paused since" in notice and "nothing to acknowledge" in notice, notice


def test_the_notification_lists_say_what_each_told_its_channel(api, member, client):
    slack = channels.create_channel(kind="slack", target=SECRET_URL)
    _failing_shop(api)
    api.post_run(
        report(run_id="r3", started_at="2026-09-17T03:00:00Z", finished_at="2026-09-17T04:00:00Z", collected=100)
    )
    kinds = set(Notification.objects.filter(channel=slack).values_list("kind", flat=True))
    assert {"failing", "resolved"} <= kinds
    html = unwrapped(member.get("/alerts/").content.decode())
    listed = html[html.index('id="notifications"') :] if 'id="notifications"' in html else html
    assert "shop is failing silently (was ok)" in listed and "shop is ok again (was failing)" in listed, listed
    # An event of another shape (an older release's) keeps its kind and costs the page nothing.
    Notification.objects.filter(channel=slack, kind="resolved").update(
        event={"kind": "resolved", "at": "not a time", "incident": {"began_at": "x"}}
    )
    page = member.get("/alerts/")
    assert page.status_code == 200 and "shop is ok again" not in unwrapped(page.content.decode())
    client.force_login(User.objects.create_user("ops2", password="x", is_staff=True))
    assert "shop is failing silently" in unwrapped(client.get(f"/alerts/channels/{slack.pk}/").content.decode())
