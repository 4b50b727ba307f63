"""One page per storm: sources that fail within the grouping window share one PagerDuty incident (one
Opsgenie alert), which lists them and is resolved once, when the last recovers; webhooks keep one event
per source. PagerDuty's and Opsgenie's stand-ins are HTTP servers on 127.0.0.1."""

import threading
from datetime import datetime, timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from completeness.alerts import paging
from sources.alerts import channels
from sources.models import Notification, PagingIncident, Source, Tag
from sources.services.health import change_health_and_notify
from tests.alerts.conftest import deliver_all, postgres_only
from tests.alerts.conftest import post_day as post
from tests.alerts.sinks import HttpSink

pytestmark = pytest.mark.django_db

PD_KEY = "0123456789abcdef0123456789abcdef"
GENIE_KEY = "e3c8b1a0-1111-4222-8333-944455556666"
GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=300)


@pytest.fixture
def pagerduty(db, settings):
    settings.ALERTS_GROUP_SECONDS = 30
    with HttpSink() as sink:
        settings.ALERTS_PAGERDUTY_EVENTS_URL = sink.url("/v2/enqueue")
        channels.create_channel(kind="pagerduty", target=PD_KEY)
        yield sink


def fleet(count: int) -> list[str]:
    slugs = [f"shop-{n:02d}" for n in range(count)]
    pool = Tag.objects.create(name="proxy-eu")
    for slug in slugs:
        Source.objects.create(slug=slug, region="eu").tags.add(pool)
    return slugs


def events(sink: HttpSink) -> list[dict]:
    return [request.json() for request in sink.received()]


def test_a_storm_of_30_opens_one_pagerduty_incident_listing_them_resolved_once(api, pagerduty, http_sink):
    channels.create_channel(kind="webhook", target=http_sink.url("/hook"))
    slugs = fleet(30)
    for slug in slugs:
        post(api, slug, 1, **GOOD)
    for slug in slugs:  # the proxy pool goes down
        post(api, slug, 2, **BAD)
        deliver_all()
    triggers = [e for e in events(pagerduty) if e["event_action"] == "trigger"]
    assert len(triggers) == 30 and {e["dedup_key"] for e in triggers} == {"completeness/shop-00"}  # one incident
    last = triggers[-1]["payload"]
    assert last["summary"].startswith("shop-29 is failing silently (was ok) (30 sources in this incident: shop-00,")
    assert last["custom_details"]["page"]["sources"] == slugs
    assert len(http_sink.received("/hook")) == 30  # webhooks: one event per source

    for slug in slugs[:-1]:  # all but one recover: the incident stays open, nothing is sent
        post(api, slug, 3, **GOOD)
        deliver_all()
    assert [e["event_action"] for e in events(pagerduty)].count("resolve") == 0
    post(api, slugs[-1], 3, **GOOD)
    deliver_all()
    resolves = [e for e in events(pagerduty) if e["event_action"] == "resolve"]
    assert [e["dedup_key"] for e in resolves] == ["completeness/shop-00"]
    assert resolves[0]["payload"]["summary"].startswith("All 30 sources of this incident are ok again or paused after ")
    assert resolves[0]["payload"]["custom_details"]["page"]["sources"] == slugs
    assert len(http_sink.received("/hook")) == 60  # and 30 recoveries
    assert PagingIncident.objects.get().closed_at is not None


def test_staff_read_a_storms_incident_in_the_admin(api, pagerduty, admin_client):
    slugs = fleet(3)
    for slug in slugs:
        post(api, slug, 1, **GOOD)
        post(api, slug, 2, **BAD)
    page = admin_client.get("/admin/sources/pagingincident/").content.decode()
    assert "completeness/shop-00" in page and "shop-02" in page


def test_a_failure_after_the_window_opens_its_own_incident_and_a_lone_failure_keeps_its_source_key(
    api, pagerduty, settings
):
    first, second = fleet(2)
    for slug in (first, second):
        post(api, slug, 1, **GOOD)
    post(api, first, 2, **BAD)
    deliver_all()
    PagingIncident.objects.update(last_joined_at=timezone.now() - timedelta(seconds=31))  # the window passed
    post(api, second, 2, **BAD)
    deliver_all()
    assert [(e["event_action"], e["dedup_key"]) for e in events(pagerduty)] == [
        ("trigger", "completeness/shop-00"),
        ("trigger", "completeness/shop-01"),
    ]
    post(api, first, 3, **GOOD)
    deliver_all()
    assert events(pagerduty)[-1]["event_action"] == "resolve"
    assert events(pagerduty)[-1]["dedup_key"] == "completeness/shop-00"
    assert events(pagerduty)[-1]["payload"]["summary"].startswith("shop-00 is ok again (was failing)")


def test_a_storm_paused_closes_once_when_the_last_is_paused(api, pagerduty):
    slugs = fleet(3)
    for slug in slugs:
        post(api, slug, 1, **GOOD)
    for slug in slugs:
        post(api, slug, 2, **BAD)
    deliver_all()
    for slug in slugs:
        assert api.post(f"/sources/{slug}/pause", {"reason": "proxy pool replaced"}).status_code == 200
        deliver_all()
    actions = [(e["event_action"], e["dedup_key"]) for e in events(pagerduty)]
    assert actions == [("trigger", "completeness/shop-00")] * 3 + [("resolve", "completeness/shop-00")]


def test_opsgenie_gets_one_alert_for_a_storm_closed_once(api, settings):
    settings.ALERTS_GROUP_SECONDS = 30
    with HttpSink() as sink:
        settings.ALERTS_OPSGENIE_API_URL = sink.url("").rstrip("/")
        channels.create_channel(kind="opsgenie", target=GENIE_KEY)
        slugs = fleet(5)
        for slug in slugs:
            post(api, slug, 1, **GOOD)
        for slug in slugs:
            post(api, slug, 2, **BAD)
            deliver_all()
        for slug in slugs:
            post(api, slug, 3, **GOOD)
            deliver_all()
        creates = [r.json() for r in sink.received("/v2/alerts")]
        closes = [r.path for r in sink.received() if r.path.endswith("/close?identifierType=alias")]
    assert {c["alias"] for c in creates} == {"completeness/shop-00"} and len(creates) == 5
    assert creates[-1]["details"]["sources"] == ", ".join(slugs)
    assert closes == ["/v2/alerts/completeness%2Fshop-00/close?identifierType=alias"]


def test_the_grouping_decisions():
    t0 = datetime(2026, 11, 30, 6, 0)
    window = timedelta(seconds=30)
    first = paging.join("a", t0, [], window)
    assert first.opened and first.incident.key == "completeness/a"
    second = paging.join("b", t0 + timedelta(seconds=20), [first.incident], window)
    assert not second.opened and second.incident.members == ("a", "b")
    # The window slides with each join: a trickle of failures stays one incident.
    third = paging.join("c", t0 + timedelta(seconds=45), [second.incident], window)
    assert third.incident.members == ("a", "b", "c")
    late = paging.join("d", t0 + timedelta(seconds=80), [third.incident], window)
    assert late.opened and late.incident.key == "completeness/d"
    # Its own key still open (it recovered, the others did not): it rejoins rather than clash.
    gone = paging.leave("a", [third.incident])
    assert gone is not None and not gone.closes and gone.incident.members == ("b", "c")
    back = paging.join("a", t0 + timedelta(hours=2), [gone.incident], window)
    assert not back.opened and back.incident.members == ("b", "c", "a")
    assert paging.leave("z", [third.incident]) is None
    assert paging.join("a", t0, [first.incident], timedelta(0)).incident.members == ("a",)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_workers_writing_a_storm_at_once_open_one_incident(settings):
    settings.ALERTS_GROUP_SECONDS = 30
    settings.ALERTS_PAGERDUTY_EVENTS_URL = "http://127.0.0.1:9/v2/enqueue"  # nothing is delivered here
    channels.create_channel(kind="pagerduty", target=PD_KEY)
    slugs = fleet(12)
    start = threading.Barrier(4)

    def worker(mine: list[str]) -> None:
        try:
            start.wait()
            for slug in mine:
                with transaction.atomic():
                    source = Source.objects.select_for_update().get(slug=slug)
                    change_health_and_notify(source, "failing", cause="run")
                    source.save()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(slugs[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [incident] = PagingIncident.objects.all()
    assert sorted(incident.members) == slugs
    keys = {event["page"]["key"] for event in Notification.objects.values_list("event", flat=True)}
    assert keys == {incident.key}
