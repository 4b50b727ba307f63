"""Flips write notifications (the outbox) in the report's transaction: once per change, never for pauses."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from completeness.alerts.messages import headline
from sources.alerts import channels
from sources.models import Flip, Health, Notification, PauseOrigin, Source
from sources.services import health, pausing
from tests.alerts.conftest import pending_kinds
from tests.conftest import report

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=500)


def post(api, n: int, source: str = "shop", **fields):
    body = report(
        source=source,
        run_id=f"run-{n}",
        started_at=f"2026-09-{n:02d}T03:00:00Z",
        finished_at=f"2026-09-{n:02d}T04:00:00Z",
        **fields,
    )
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def channel(db):
    return channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")


def test_ok_to_failing_alerts_once_and_back_to_ok_resolves(api, channel):
    post(api, 1, **GOOD)
    assert pending_kinds() == []
    post(api, 2, **BAD)
    assert pending_kinds() == ["failing"]
    for n in range(3, 8):  # six failing runs in a row alert once
        post(api, n, **BAD)
    assert pending_kinds() == ["failing"]
    post(api, 8, **GOOD)
    assert pending_kinds() == ["failing", "resolved"]
    post(api, 9, **GOOD)
    assert pending_kinds() == ["failing", "resolved"]


def test_the_alert_carries_the_flip_the_run_and_enforced_findings_only(api, channel):
    post(api, 1, **GOOD)
    # delivery is observed by default: it fires but must neither fail the run nor appear in the alert.
    post(api, 2, **BAD, delivery={"attempted": 10, "delivered": 7})
    notification = Notification.objects.get()
    flip = Flip.objects.get(new_health="failing")
    assert notification.flip == flip and notification.run.run_id == "run-2"
    assert notification.channel == channel and notification.status == "pending"
    event = notification.event
    assert event["change"] == {"from": "ok", "to": "failing"}
    assert [f["rule"] for f in event["findings"]] == ["declared_total"]
    assert event["findings"][0]["expected"] is not None and event["findings"][0]["actual"] is not None
    assert notification.run.observed_rules == ["delivery"]
    assert event["source"]["url"].endswith("/sources/shop/")


def test_observed_findings_never_alert(api, channel):
    post(api, 1, **GOOD)
    body = post(api, 2, **GOOD, delivery={"attempted": 10, "delivered": 2})
    assert body["verdict"] == "complete" and [f["mode"] for f in body["findings"]] == ["observe"]
    assert pending_kinds() == []


def test_a_rule_switched_to_enforce_alerts_from_the_next_run(api, channel):
    flaky_delivery = dict(**GOOD, delivery={"attempted": 10, "delivered": 2})
    post(api, 1, **flaky_delivery)
    assert pending_kinds() == []
    Source.objects.filter(slug="shop").update(rule_modes={"delivery": "enforce"})
    body = post(api, 2, **flaky_delivery)
    assert body["verdict"] == "incomplete"
    assert pending_kinds() == ["failing"]
    assert [f["rule"] for f in Notification.objects.get().event["findings"]] == ["delivery"]


def test_snapshot_overwritten_alerts_even_while_failing(api, channel):
    post(api, 1, collected=9000, snapshot={"action": "replaced", "rows": 9000})
    post(api, 2, collected=1200, snapshot={"action": "kept_previous", "rows": 9000})
    assert pending_kinds() == ["failing"]
    # Still failing, and now a partial run replaced the snapshot: data loss alerts anyway.
    post(api, 3, collected=1100, snapshot={"action": "replaced", "rows": 1100})
    assert pending_kinds() == ["failing", "snapshot_overwritten"]
    # Still failing without overwriting: silence.
    post(api, 4, collected=1100, snapshot={"action": "kept_previous", "rows": 9000})
    assert pending_kinds() == ["failing", "snapshot_overwritten"]


def test_snapshot_overwritten_by_a_run_reported_after_a_newer_one_alerts(api, channel):
    # Run 2 arrives after run 3 (overlapping runs, a spool): it moves no health, so no flip speaks
    # for it, and its overwrite of the published snapshot alerted nobody.
    post(api, 1, collected=9000)
    post(api, 3, collected=9000)
    body = post(api, 2, collected=1200, snapshot={"action": "replaced", "rows": 1200})
    assert [f["rule"] for f in body["findings"]] == ["snapshot_overwritten", "drop"]
    assert Source.objects.get(slug="shop").health == Health.OK
    assert pending_kinds() == ["snapshot_overwritten"]
    assert "(reported after a newer run)" in headline(Notification.objects.get().event)


def test_snapshot_overwritten_from_ok_alerts_once_through_the_flip(api, channel):
    post(api, 1, collected=9000, snapshot={"action": "replaced", "rows": 9000})
    post(api, 2, collected=1200, snapshot={"action": "replaced", "rows": 1200})
    assert pending_kinds() == ["failing"]
    rules = [f["rule"] for f in Notification.objects.get().event["findings"]]
    assert rules == ["snapshot_overwritten", "drop"]  # most severe first


def _pause(slug="shop", origin=PauseOrigin.API):
    return pausing.pause_source(Source.objects.get(slug=slug), origin=origin, actor="ops", reason="migration")


def test_a_paused_source_alerts_on_nothing(api, channel):
    post(api, 1, **GOOD)
    _pause()
    post(api, 2, **BAD)
    post(api, 3, collected=10, snapshot={"action": "replaced", "rows": 10})
    assert Source.objects.get(slug="shop").health == Health.PAUSED
    assert pending_kinds() == []


def test_pausing_and_resuming_a_healthy_source_is_silent_but_resuming_into_a_problem_alerts(api, channel):
    post(api, 1, **GOOD)
    _pause()
    pausing.resume_source(Source.objects.get(slug="shop"), origin=PauseOrigin.API, actor="ops")
    assert pending_kinds() == []  # ok -> paused -> ok
    post(api, 2, **BAD)
    assert pending_kinds() == ["failing"]
    _pause()
    assert pending_kinds() == ["failing"]  # failing -> paused: somebody decided
    pausing.resume_source(Source.objects.get(slug="shop"), origin=PauseOrigin.API, actor="ops")
    # paused -> failing: whatever happened during the pause was silenced; now it is heard.
    assert pending_kinds() == ["failing", "failing"]


def test_a_crawler_paused_run_is_silent(api, channel):
    post(api, 1, **GOOD)
    post(api, 2, collected=0, paused=True, pause_reason="site maintenance")
    assert pending_kinds() == []
    post(api, 3, **BAD)  # the crawler's pause ends with its next report, which fails: heard
    assert pending_kinds() == ["failing"]


def test_channels_alert_only_for_sources_in_their_scope(api):
    everything = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/all")
    shop_only = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/shop", source_slugs=["shop"])
    tagged = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/cars", tag_names=["cars"])
    heartbeat = channels.create_channel(kind="heartbeat", target="http://127.0.0.1:9/beat")
    post(api, 1, source="cars-ae", **GOOD)
    Source.objects.get(slug="cars-ae").tags.add(tagged.tags.get())
    Notification.objects.all().delete()
    post(api, 2, source="cars-ae", **BAD)
    post(api, 2, source="shop", **BAD)
    post(api, 2, source="books", **BAD)
    by_source = {
        slug: sorted(Notification.objects.filter(source__slug=slug).values_list("channel_id", flat=True))
        for slug in ("cars-ae", "shop", "books")
    }
    assert by_source == {
        "cars-ae": sorted([everything.pk, tagged.pk]),
        "shop": sorted([everything.pk, shop_only.pk]),
        "books": [everything.pk],
    }
    assert not Notification.objects.filter(channel=heartbeat).exists()


def test_heartbeats_are_written_after_complete_runs_only(api):
    beat = channels.create_channel(kind="heartbeat", target="http://127.0.0.1:9/beat")
    post(api, 1, **GOOD)
    post(api, 2, **BAD)
    post(api, 3, **GOOD, delivery={"attempted": 10, "delivered": 2})
    _pause()
    post(api, 4, **GOOD)
    assert list(Notification.objects.filter(channel=beat).order_by("id").values_list("run__run_id", flat=True)) == [
        "run-1",
        "run-3",
    ]


def test_a_complete_run_reported_after_a_newer_one_calls_no_heartbeat(api):
    # The source is failing on its latest run: a beat for an older run kept the uptime monitor green.
    beat = channels.create_channel(kind="heartbeat", target="http://127.0.0.1:9/beat")
    post(api, 1, **GOOD)
    post(api, 3, **BAD)
    assert post(api, 2, **GOOD)["verdict"] == "complete"
    assert Source.objects.get(slug="shop").health == Health.FAILING
    assert list(Notification.objects.filter(channel=beat).values_list("run__run_id", flat=True)) == ["run-1"]


def test_the_flip_and_its_notifications_commit_together(channel):
    source = Source.objects.create(slug="shop")

    class Boom(Exception):
        pass

    from django.db import transaction

    with pytest.raises(Boom), transaction.atomic():
        health.change_health_and_notify(source, Health.FAILING, cause="test")
        assert Notification.objects.count() == 1
        raise Boom
    assert Flip.objects.count() == 0 and Notification.objects.count() == 0


def test_ingest_queries_do_not_grow_with_the_number_of_channels(api):
    def queries_for_failing_report(slug: str) -> int:
        post(api, 1, source=slug, **GOOD)
        with CaptureQueriesContext(connection) as ctx:
            post(api, 2, source=slug, **BAD)
        return len(ctx.captured_queries)

    channels.create_channel(kind="slack", target="http://127.0.0.1:9/a")
    one = queries_for_failing_report("one-channel")
    for n in range(10):
        channels.create_channel(kind="slack", target=f"http://127.0.0.1:9/{n}")
    eleven = queries_for_failing_report("eleven-channels")
    assert Notification.objects.filter(source__slug="eleven-channels").count() == 11
    assert eleven == one


def test_an_alert_quotes_a_findings_lost_urls_without_their_credentials(api, channel):
    from completeness.alerts.messages import text_body
    from tests.test_run_page_secrets import LOST_URL, SESSION_URL

    post(api, 1, **GOOD)
    lost = {"expected": 40, "fetched": 38, "lost": 2, "lost_urls": [LOST_URL, SESSION_URL]}
    post(api, 2, **BAD, pages=lost)
    event = Notification.objects.get().event
    quoted = [f["message"] for f in event["findings"] if "shop.example" in f["message"]]
    assert quoted, event["findings"]  # the finding that names the lost pages is in the alert
    body = text_body(event)
    for secret in ("s3cret", "abc123", "8f14e45fceea167a5a36dedd4bea2543"):
        assert secret not in str(event) and secret not in body
    assert "https://shop.example/list?page=3&token=…" in body


def _resumed_failing_events(api, *, paused_run: bool) -> tuple[dict, dict]:
    """A partial run replaced the snapshot; the source was paused (a crawl made meanwhile when
    paused_run) and resumed into failing. The resume's events to a channel for everything and to a
    data-loss pager's webhook, as {channel: event}."""
    everything = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/all")
    pager = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/pager", min_severity="data_loss")
    post(api, 1, collected=1000, snapshot={"action": "replaced", "rows": 1000})
    post(api, 2, collected=100, snapshot={"action": "replaced", "rows": 100})
    _pause()
    if paused_run:
        post(api, 3, collected=1000)
    Notification.objects.all().delete()
    pausing.resume_source(Source.objects.get(slug="shop"), origin=PauseOrigin.API, actor="ops")
    events = {n.channel_id: n.event for n in Notification.objects.filter(kind="failing")}
    return events.get(everything.pk, {}), events.get(pager.pk, {})


def test_a_resume_into_failing_after_runs_made_while_paused_cites_the_judged_run_and_its_data_loss(api):
    # The alert named the paused run, with no findings: "shop is failing" and nothing to fix, and as
    # severity "failing", so the data-loss pager never heard that a lost snapshot was back unsolved.
    heard, paged = _resumed_failing_events(api, paused_run=True)
    assert heard["run"]["run_id"] == "run-2" and heard["run"]["verdict"] == "incomplete", heard["run"]
    assert "snapshot_overwritten" in [f["rule"] for f in heard["findings"]], heard["findings"]
    assert heard["severity"] == "data_loss"
    assert paged and paged["run"]["run_id"] == "run-2"


def test_a_resume_into_failing_with_no_run_since_the_pause_cites_the_latest_run_as_before(api):
    heard, paged = _resumed_failing_events(api, paused_run=False)
    assert heard["run"]["run_id"] == "run-2" and heard["severity"] == "data_loss"
    assert paged and paged["run"]["run_id"] == "run-2"


def test_a_channel_added_after_such_a_resume_is_told_of_the_judged_run(api):
    _resumed_failing_events(api, paused_run=True)
    added = channels.create_channel(kind="webhook", target="http://127.0.0.1:9/new")
    reminder = Notification.objects.get(channel=added, kind="reminder").event
    assert reminder["run"]["run_id"] == "run-2" and reminder["severity"] == "data_loss", reminder
