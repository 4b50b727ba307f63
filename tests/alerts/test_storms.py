"""Storms: flips within the grouping window reach email and Slack as one message naming every source and what
they share; webhooks keep one event per source. Real receivers on 127.0.0.1; the window is driven by explicit times."""

import email
import threading
from datetime import timedelta
from email import policy

import pytest
from django.db import close_old_connections, connection
from django.utils import timezone

from completeness.alerts import groups
from completeness.alerts.policy import Alert
from sources.alerts import channels, delivery, outbox
from sources.models import Channel, Notification, Source, Tag
from tests.alerts.conftest import deliver_all, postgres_only
from tests.alerts.conftest import post_day as post
from tests.alerts.sinks import Reply

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=300)
WINDOW = timedelta(seconds=30)


@pytest.fixture(autouse=True)
def window(settings):
    settings.ALERTS_GROUP_SECONDS = WINDOW.total_seconds()


@pytest.fixture
def after_commit(inline_jobs, django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def fleet(count: int, *, tag: str = "proxy-eu", region: str = "eu") -> list[str]:
    slugs = [f"shop-{n:02d}" for n in range(count)]
    pool = Tag.objects.create(name=tag)
    for n, slug in enumerate(slugs):
        source = Source.objects.create(slug=slug, region=region)
        source.tags.add(pool, Tag.objects.create(name=f"own-{n}"))
    return slugs


def alert(kind: Alert, source: Source, channel: Channel) -> Notification:
    event = outbox.make_event(kind, source, at=timezone.now(), change=("ok", str(kind)))
    return outbox.write(kind, event, [channel.pk], source=source)[0]


def named(texts: list[str], slugs: list[str]) -> set[str]:
    return {slug for slug in slugs if any(slug in text for text in texts)}


def test_thirty_sources_failing_within_a_second_reach_slack_as_at_most_3_messages_and_a_webhook_as_30_events(
    api, http_sink, after_commit
):
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    channels.create_channel(kind="webhook", target=http_sink.url("/hook"))
    slugs = fleet(30)
    for slug in slugs:
        post(api, slug, 1, **GOOD)
    for slug in slugs:  # the proxy pool goes down
        with after_commit():
            post(api, slug, 2, **BAD)
    assert len(http_sink.received("/slack")) == 1  # the first at once; the rest wait for the window
    assert deliver_all(now=timezone.now() + WINDOW)[0] == "sent"

    slack = [request.json() for request in http_sink.received("/slack")]
    assert len(slack) <= 3
    assert named([str(message) for message in slack], slugs) == set(slugs)
    storm = slack[-1]
    assert storm["blocks"][0]["text"]["text"] == "29 sources failing (29 silently)"
    assert "All share: tag proxy-eu, region eu, rule declared_total" in storm["text"]
    assert "own-" not in storm["text"]  # what only one source carries is no shared cause

    events = [request.json() for request in http_sink.received("/hook")]
    assert len(events) == 30 and len({event["id"] for event in events}) == 30
    assert sorted(event["source"]["slug"] for event in events) == slugs
    assert set(Notification.objects.values_list("status", flat=True)) == {"sent"}


def test_a_single_failure_on_a_quiet_channel_goes_at_once_and_alone(api, http_sink, after_commit):
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    [slug] = fleet(1)
    post(api, slug, 1, **GOOD)
    with after_commit():
        post(api, slug, 2, **BAD)
    [request] = http_sink.received("/slack")
    assert request.json()["blocks"][0]["text"]["text"] == "shop-00 is failing silently (was ok)"


def test_alerts_within_the_window_are_held_and_go_as_one_when_it_ends(db, http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    first, second, third = (Source.objects.get(slug=slug) for slug in fleet(3))
    t0 = timezone.now() + timedelta(seconds=1)  # after the alerts below are written
    assert delivery.deliver(alert(Alert.FAILING, first, slack).pk, now=t0) == "sent"
    assert delivery.deliver(alert(Alert.FAILING, second, slack).pk, now=t0 + timedelta(seconds=5)) == "held"
    assert delivery.deliver(alert(Alert.OVERDUE, third, slack).pk, now=t0 + timedelta(seconds=6)) == "held"
    assert deliver_all(now=t0 + WINDOW - timedelta(seconds=1)) == ["skipped", "skipped"]  # not yet
    assert len(http_sink.received("/slack")) == 1
    assert delivery.sweep(now=t0 + WINDOW) != []
    assert deliver_all(now=t0 + WINDOW) == ["sent", "skipped"]  # the second went with the first of them
    one, storm = (request.json() for request in http_sink.received("/slack"))
    assert storm["blocks"][0]["text"]["text"] == "2 sources: 1 failing, 1 overdue"
    assert named([storm["text"]], ["shop-01", "shop-02"]) == {"shop-01", "shop-02"}
    assert "shop-00" not in storm["text"]


def test_a_new_alert_after_the_window_goes_at_once(db, http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    first, second = (Source.objects.get(slug=slug) for slug in fleet(2))
    t0 = timezone.now() + timedelta(seconds=1)  # after the alerts below are written
    assert delivery.deliver(alert(Alert.FAILING, first, slack).pk, now=t0) == "sent"
    assert delivery.deliver(alert(Alert.FAILING, second, slack).pk, now=t0 + WINDOW) == "sent"
    assert len(http_sink.received("/slack")) == 2


def test_an_email_storm_is_one_mail_listing_the_sources_and_what_they_share(api, smtp_sink, after_commit):
    channels.create_channel(kind="email", target="ops@example.com")
    slugs = fleet(5, tag="pool-b", region="ae")
    for slug in slugs:
        post(api, slug, 1, **GOOD)
    for slug in slugs:
        with after_commit():
            post(api, slug, 2, **BAD, exit_code=2)
    deliver_all(now=timezone.now() + WINDOW)
    first, storm = (email.message_from_bytes(m.content, policy=policy.default) for m in smtp_sink.messages)
    assert first["Subject"] == "[completeness] shop-00 is failing (was ok)"
    assert storm["Subject"] == "[completeness] 4 sources failing"
    assert storm["Auto-Submitted"] == "auto-generated" and storm["References"] is None
    text = storm.get_body(("plain",)).get_content()
    html = storm.get_body(("html",)).get_content()
    for part in (text, html):
        assert "All share: tag pool-b, region ae, rule crawler_reported, rule declared_total" in part
        assert named([part], slugs[1:]) == set(slugs[1:])


def _storm_on_email_and_slack(api, smtp_sink, http_sink, after_commit, slugs):
    """Each source ok, then all failing at once, heard by an email and a Slack channel: the storm's
    last mail and the text of its last Slack message."""
    channels.create_channel(kind="email", target="ops@example.com")
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    for slug in slugs:
        post(api, slug, 1, **GOOD)
    for slug in slugs:
        with after_commit():
            post(api, slug, 2, **BAD)
    deliver_all(now=timezone.now() + WINDOW)
    storm = email.message_from_bytes(smtp_sink.messages[-1].content, policy=policy.default)
    return storm, http_sink.received("/slack")[-1].json()["text"]


def test_each_source_of_a_storm_has_its_acknowledge_link_and_its_recovery_none(api, smtp_sink, http_sink, after_commit):
    # Eight sources in one mail on a phone: a link to each source and runbook, but to acknowledge
    # one the reader had to find its form on /alerts/.
    slugs = fleet(3)
    storm, slack = _storm_on_email_and_slack(api, smtp_sink, http_sink, after_commit, slugs)
    assert storm["Subject"].startswith("[completeness] 2 sources failing")
    text, html = storm.get_body(("plain",)).get_content(), storm.get_body(("html",)).get_content()
    for slug in slugs[1:]:
        ack = f"http://127.0.0.1:8000/alerts/?ack={slug}#ack-{slug}"
        assert f"  acknowledge: {ack}" in text
        assert f'<a href="{ack}">acknowledge</a>' in html
        assert f"<{ack}|acknowledge>" in slack
    # Their recoveries, a storm too, have nothing to acknowledge.
    for slug in slugs:
        with after_commit():
            post(api, slug, 3, **GOOD)
    deliver_all(now=timezone.now() + 3 * WINDOW)
    recovered = email.message_from_bytes(smtp_sink.messages[-1].content, policy=policy.default)
    assert "ok again" in recovered["Subject"]
    assert "acknowledge" not in recovered.get_body(("plain",)).get_content().lower()
    assert "acknowledge" not in http_sink.received("/slack")[-1].json()["text"].lower()


def test_sources_that_share_nothing_are_said_to_share_nothing():
    def event(slug, region, tags, rules):
        return {
            "kind": "failing",
            "at": "2026-11-30T06:19:00+00:00",
            "source": {"slug": slug, "region": region, "tags": tags},
            "findings": [{"rule": rule, "message": "m", "expected": 1, "actual": 0} for rule in rules],
        }

    alike = [event("a", "eu", ["pool", "x"], ["drop", "trend"]), event("b", "eu", ["pool"], ["drop"])]
    assert groups.shared(alike) == ["tag pool", "region eu", "rule drop"]
    unlike = [event("a", "eu", ["x"], ["drop"]), event("b", "", ["y"], ["trend"])]
    assert groups.shared(unlike) == []
    assert groups.shared_line(unlike) == "They share no tag, region or rule."


def test_sources_of_one_team_or_owner_in_trouble_are_said_to_share_them():
    def event(slug, kind, team, owner):
        oncall = {"team": team, "owner": owner, "runbook_url": "", "next_step": "", "acknowledge_url": ""}
        return {
            "kind": kind,
            "at": "2026-11-30T06:19:00+00:00",
            "source": {"slug": slug, "tags": []},
            "oncall": oncall if kind != "resolved" else None,
            "findings": [{"rule": "drop", "message": "m", "expected": 1, "actual": 0}] if kind == "failing" else [],
        }

    storm = [event("a", "failing", "cars", "ada"), event("b", "failing", "cars", "bob"), event("c", "resolved", "", "")]
    assert groups.shared_line(storm) == "All share: team cars; the 2 still in trouble share: rule drop"
    alike = [event("a", "failing", "cars", "ada"), event("b", "overdue", "cars", "ada")]
    assert groups.shared(alike) == ["team cars", "owner ada"]
    # One source with no team named: nothing said of teams.
    assert groups.shared([event("a", "failing", "cars", ""), event("b", "failing", "", "")]) == ["rule drop"]


def test_each_line_of_a_storm_says_whose_source_it_is_and_its_runbook_unless_all_share_the_owner(
    api, smtp_sink, http_sink, after_commit
):
    slugs = fleet(3)
    owners = {"shop-01": "ada", "shop-02": "bob"}
    Source.objects.filter(slug__in=slugs).update(team="cars")
    for slug, owner in owners.items():
        Source.objects.filter(slug=slug).update(owner=owner, runbook_url=f"https://wiki.example.com/{owner}")
    storm, slack = _storm_on_email_and_slack(api, smtp_sink, http_sink, after_commit, slugs)
    for part in (storm.get_body(("plain",)).get_content(), storm.get_body(("html",)).get_content(), slack):
        storm_lines = {
            slug: next(ln for ln in part.replace("<li>", "\n").splitlines() if slug in ln) for slug in owners
        }
        # The team all share is said once, in the shared line; each owner on its own source's line.
        assert "All share: tag proxy-eu, region eu, team cars" in part
        assert "owner ada" in storm_lines["shop-01"] and "owner bob" in storm_lines["shop-02"]
        assert "team cars" not in storm_lines["shop-01"] + storm_lines["shop-02"]
        assert "wiki.example.com/ada" in part and "wiki.example.com/bob" in part


def test_a_storm_line_names_owner_and_team_where_they_differ_and_nothing_where_none_is_named():
    def event(slug, team, owner, runbook=""):
        return {
            "kind": "failing",
            "at": "2026-11-30T06:19:00+00:00",
            "source": {"slug": slug, "tags": []},
            "oncall": {"team": team, "owner": owner, "runbook_url": runbook},
            "findings": [{"rule": "drop", "message": "m", "expected": 1, "actual": 0}],
        }

    storm = [event("a", "cars", "ada", "https://wiki/a"), event("b", "boats", ""), event("c", "", "")]
    lines = dict((e["source"]["slug"], text) for e, text in groups.lines(storm))
    assert "owner ada (team cars)" in lines["a"]
    assert "team boats" in lines["b"] and "owner" not in lines["b"]
    assert "owner" not in lines["c"] and "team" not in lines["c"]
    assert [groups.runbook(e) for e in storm] == ["https://wiki/a", "", ""]


def test_an_overdue_source_in_a_storm_leaves_the_rules_the_failing_ones_share_said():
    def event(slug, kind, rules):
        return {
            "kind": kind,
            "at": "2026-11-30T06:19:00+00:00",
            "source": {"slug": slug, "tags": []},
            "findings": [{"rule": rule, "message": "m", "expected": 1, "actual": 0} for rule in rules],
        }

    failing = [event(f"f{n}", "failing", ["drop", "snapshot_overwritten"][: 1 + n % 2]) for n in range(20)]
    storm = [event("quiet", "overdue", []), *failing]
    assert groups.shared_line(storm) == "The 20 failing share: rule drop"
    assert groups.shared_line([event("quiet", "overdue", []), failing[0]]) == "The one failing: rule drop"
    # With a recovery too, the failing are still the ones named.
    assert groups.shared_line([*storm, event("back", "resolved", [])]) == "The 20 failing share: rule drop"
    # Nothing shared among them: nothing said of rules.
    apart = [event("quiet", "overdue", []), event("a", "failing", ["drop"]), event("b", "failing", ["trend"])]
    assert groups.shared_line(apart) == "They share no tag, region or rule."


def test_a_storm_with_data_loss_says_so_first():
    def event(slug, kind, rules):
        return {
            "kind": kind,
            "at": "2026-11-30T06:19:00+00:00",
            "source": {"slug": slug},
            "findings": [{"rule": rule, "message": "m", "expected": 1, "actual": 0} for rule in rules],
        }

    storm = [event("a", "failing", ["drop", "snapshot_overwritten"]), event("b", "failing", ["drop"])]
    assert (
        groups.headline(storm) == "Data loss: 2 sources: 1 lost data (a partial run replaced the snapshot), 1 failing"
    )
    assert groups.headline([event("a", "failing", ["drop"]), event("b", "resolved", [])]) == (
        "2 sources: 1 failing, 1 ok again"
    )


def test_a_storm_counts_and_lists_first_the_sources_whose_flip_into_failing_lost_data(api, http_sink, after_commit):
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    slugs = fleet(6)
    for slug in slugs:
        post(api, slug, 1, **GOOD)
    for n, slug in enumerate(slugs):  # the last two replaced their snapshots with what they got
        with after_commit():
            post(api, slug, 2, **BAD, **({"snapshot": {"action": "replaced", "rows": 300}} if n >= 4 else {}))
    deliver_all(now=timezone.now() + WINDOW)
    storm = http_sink.received("/slack")[-1].json()
    title = "Data loss: 5 sources: 2 lost data (a partial run replaced the snapshot), 3 failing (5 silently)"
    assert storm["blocks"][0]["text"]["text"] == title
    assert storm["text"].startswith(f":rotating_light: *{title}*")
    listed = [line for line in storm["text"].splitlines() if line.startswith("• ")]
    assert [slug for line in listed[:2] for slug in slugs if f" {slug} " in line] == ["shop-04", "shop-05"]


def test_a_storm_answered_500_is_retried_as_one_message(db, http_sink, settings):
    settings.ALERTS_RETRY_BASE_SECONDS = 60
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    sources = [Source.objects.get(slug=slug) for slug in fleet(3)]
    notifications = [alert(Alert.FAILING, source, slack) for source in sources]
    http_sink.reply(Reply(500))
    t0 = timezone.now()
    assert delivery.deliver(notifications[0].pk, now=t0) == "retrying"  # all three went, as one
    assert set(Notification.objects.values_list("status", flat=True)) == {"retrying"}
    later = t0 + timedelta(minutes=2)
    assert deliver_all(now=later) == ["sent", "skipped", "skipped"]
    first, retry = http_sink.received("/slack")
    assert first.body == retry.body and "3 sources failing" in retry.json()["text"]


def test_a_storm_refused_for_good_fails_every_notification_in_it(db, http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    sources = [Source.objects.get(slug=slug) for slug in fleet(3)]
    notifications = [alert(Alert.FAILING, source, slack) for source in sources]
    http_sink.reply(Reply(404))
    assert delivery.deliver(notifications[0].pk) == "failed"
    assert set(Notification.objects.values_list("status", flat=True)) == {"failed"}
    slack.refresh_from_db()
    assert slack.broken


def test_a_test_message_is_never_held(db, http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    [source] = [Source.objects.get(slug=slug) for slug in fleet(1)]
    assert delivery.deliver(alert(Alert.FAILING, source, slack).pk) == "sent"
    assert delivery.deliver(channels.send_test_message(slack).pk) == "sent"


def test_no_grouping_when_the_window_is_zero(db, http_sink, settings):
    settings.ALERTS_GROUP_SECONDS = 0
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    sources = [Source.objects.get(slug=slug) for slug in fleet(3)]
    notifications = [alert(Alert.FAILING, source, slack) for source in sources]
    assert [delivery.deliver(n.pk) for n in notifications] == ["sent", "sent", "sent"]


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_workers_delivering_a_storm_at_once_send_one_message(http_sink):
    slack = channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    slugs = fleet(20)
    notifications = [alert(Alert.FAILING, Source.objects.get(slug=slug), slack) for slug in slugs]
    start = threading.Barrier(4)
    results: list[str] = []

    def worker(mine):
        try:
            start.wait()
            for notification in mine:
                results.append(delivery.deliver(notification.pk))
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=worker, args=(notifications[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [message] = http_sink.received("/slack")
    assert named([message.json()["text"]], slugs) == set(slugs)
    assert set(Notification.objects.values_list("status", flat=True)) == {"sent"}
    assert results.count("sent") == 1


def test_a_recovery_beside_a_data_loss_shares_no_rule_and_comes_last():
    # "All share: rule declared_total, rule snapshot_overwritten" stood over a source that had just
    # recovered, and its line came first.
    def event(slug, kind, rules, tags=("pool",)):
        return {
            "kind": kind,
            "at": "2026-11-30T06:19:00+00:00",
            "source": {"slug": slug, "tags": list(tags)},
            "findings": [{"rule": rule, "message": "m", "expected": 1, "actual": 0} for rule in rules],
        }

    storm = [event("od", "resolved", []), event("idem", "failing", ["declared_total", "snapshot_overwritten"])]
    assert groups.shared_line(storm) == (
        "All share: tag pool; the one still in trouble: rule declared_total, rule snapshot_overwritten"
    )
    assert [e["source"]["slug"] for e in groups.in_order(storm)] == ["idem", "od"]
    body = groups.text_body(storm)
    assert body.index("idem") < body.index("od")
    untagged = [event("od", "resolved", [], ()), event("idem", "failing", ["drop"], ())]
    assert groups.shared_line(untagged) == "The one still in trouble: rule drop"
    three = [*untagged, event("x", "failing", ["drop", "trend"], ())]
    assert groups.shared_line(three) == "The 2 still in trouble share: rule drop"
    # Only sources in trouble: as before.
    assert groups.shared_line([event("a", "failing", ["drop"]), event("b", "failing", ["drop"])]) == (
        "All share: tag pool, rule drop"
    )
