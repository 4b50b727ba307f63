"""The overdue clock: a source that stops reporting flips to overdue once, alerts once, and a report brings it back."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sources import jobs
from sources.alerts import channels
from sources.models import Flip, Health, Notification, PauseOrigin, Source
from sources.services import overdue, pausing
from tests.alerts.conftest import pending_kinds
from tests.conftest import report, unwrapped

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


@pytest.fixture
def channel(db):
    return channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")


def watched(slug="shop", reported_ago=HOUR * 3, **fields) -> Source:
    now = timezone.now()
    defaults = dict(
        expected_interval=HOUR, grace=HOUR, last_report_at=now - reported_ago, health_since=now - reported_ago
    )
    return Source.objects.create(slug=slug, **{**defaults, **fields})


def test_a_late_source_flips_to_overdue_and_alerts_once(channel):
    watched("late", reported_ago=HOUR * 2 + timedelta(minutes=1))
    watched("in-time", reported_ago=HOUR * 2 - timedelta(minutes=1))
    watched("unwatched", expected_interval=None)
    result = jobs.check_overdue()
    assert result["overdue"] == ["late"]
    assert Source.objects.get(slug="late").health == Health.OVERDUE
    assert Source.objects.get(slug="in-time").health == Health.OK
    flip = Flip.objects.get()
    assert flip.run is None and flip.cause.startswith("clock")
    assert pending_kinds() == ["overdue"]
    assert Notification.objects.get().event["run"] is None
    assert jobs.check_overdue()["overdue"] == []  # already overdue: no second alert
    assert pending_kinds() == ["overdue"]


def test_a_failing_source_that_stops_reporting_alerts_overdue_without_its_old_findings(api, channel):
    api.post_run(report(declared_total=1000, collected=1000))
    api.post_run(
        report(
            run_id="run-2",
            started_at="2026-09-16T03:00:00Z",
            finished_at="2026-09-16T04:00:00Z",
            declared_total=1000,
            collected=10,
        )
    )
    Source.objects.filter(slug="shop").update(
        expected_interval=HOUR,
        grace=HOUR,
        last_report_at=timezone.now() - HOUR * 3,
        health_since=timezone.now() - HOUR * 3,
    )
    assert overdue.mark_overdue() == ["shop"]
    assert pending_kinds() == ["failing", "overdue"]
    event = Notification.objects.get(kind="overdue").event
    assert event["change"] == {"from": "failing", "to": "overdue"} and event["findings"] == []


def test_a_paused_source_is_never_overdue(channel):
    source = watched()
    pausing.pause_source(source, origin=PauseOrigin.API, actor="ops", reason="holiday")
    assert overdue.mark_overdue() == []
    assert pending_kinds() == []


def test_a_source_back_from_a_pause_gets_a_full_interval(channel):
    source = watched(reported_ago=HOUR * 48)
    pausing.pause_source(source, origin=PauseOrigin.API, actor="ops", reason="holiday")
    pausing.resume_source(source, origin=PauseOrigin.API, actor="ops")
    assert overdue.mark_overdue() == []
    assert overdue.mark_overdue(now=timezone.now() + HOUR * 2 + timedelta(minutes=1)) == ["shop"]


def test_a_report_brings_an_overdue_source_back_with_a_resolved_alert(api, channel):
    api.post_run(report(declared_total=1000, collected=1000))
    Source.objects.filter(slug="shop").update(
        expected_interval=HOUR,
        grace=HOUR,
        last_report_at=timezone.now() - HOUR * 3,
        health_since=timezone.now() - HOUR * 3,
    )
    assert overdue.mark_overdue() == ["shop"]
    response = api.post_run(
        report(
            run_id="run-2",
            started_at="2026-09-16T03:00:00Z",
            finished_at="2026-09-16T04:00:00Z",
            declared_total=1000,
            collected=1000,
        )
    )
    assert response.status_code == 201
    assert Source.objects.get(slug="shop").health == Health.OK
    assert pending_kinds() == ["overdue", "resolved"]


def test_expired_pauses_lift_themselves_and_that_is_recorded(channel):
    now = timezone.now()
    ending = watched("ending", reported_ago=timedelta(minutes=1))
    holding = watched("holding", reported_ago=timedelta(minutes=1))
    pausing.pause_source(ending, origin=PauseOrigin.API, actor="ops", reason="x", until=now + timedelta(minutes=5))
    pausing.pause_source(holding, origin=PauseOrigin.API, actor="ops", reason="x", until=now + HOUR)
    Source.objects.filter(slug="ending").update(paused_until=now - timedelta(seconds=1))
    assert jobs.check_overdue()["pauses_lifted"] == ["ending"]
    ending = Source.objects.get(slug="ending")
    assert not ending.paused and ending.health == Health.OK
    assert ending.pause_events.first().origin == PauseOrigin.CLOCK
    assert Source.objects.get(slug="holding").paused
    assert pending_kinds() == []  # paused -> ok is not news


def test_finding_candidates_is_one_query_however_many_sources():
    for n in range(30):
        watched(f"s{n}", reported_ago=timedelta(minutes=n))
    with CaptureQueriesContext(connection) as ctx:
        candidates = list(overdue.overdue_candidates(timezone.now()).values_list("slug", flat=True))
    assert candidates == [] and len(ctx.captured_queries) == 1
    sql = ctx.captured_queries[0]["sql"].lower()
    assert '"paused"' in sql and '"expected_interval" is not null' in sql  # the partial index's condition


def test_the_alerts_page_dates_an_overdue_problem_from_the_deadline_it_missed(channel, client, django_user_model):
    # The clock job noticed three days late (the service was down): the problem began at the deadline.
    watched("noticed-late", reported_ago=HOUR * 74)
    watched("prompt", reported_ago=HOUR * 2 + timedelta(seconds=30))
    jobs.check_overdue()
    client.force_login(django_user_model.objects.create_user("ops", password="x"))
    page = unwrapped(client.get("/alerts/").content.decode())
    late = Source.objects.get(slug="noticed-late")
    deadline = late.last_report_at + HOUR * 2
    row = page[page.index('id="ack-noticed-late"') :]
    assert row.index(f"{deadline:%Y-%m-%d %H:%M} UTC <small") < row.index("</tr>")
    assert f"(noticed {late.health_since:%Y-%m-%d %H:%M} UTC, the time alerts give)" in row[: row.index("</tr>")]
    # Noticed within the minute, the two are one: no second time.
    prompt = page[page.index('id="ack-prompt"') :]
    assert "(noticed" not in prompt[: prompt.index("</tr>")]


def test_the_alerts_page_dates_an_overdue_problem_back_from_a_pause_as_its_alert_did(
    channel, client, django_user_model
):
    """A pause that ended after the last report gave a full interval from its end: the alert named
    that deadline, and the page counted from the last report, nine hours earlier."""
    now = timezone.now().replace(microsecond=0)
    resumed = now - HOUR * 40
    for slug in ("resumed", "plain"):
        watched(slug, reported_ago=HOUR * 49, health_since=resumed if slug == "resumed" else now - HOUR * 49)
    Flip.objects.create(
        source=Source.objects.get(slug="resumed"), old_health=Health.PAUSED, new_health=Health.OK, at=resumed
    )
    assert overdue.mark_overdue(now) == ["plain", "resumed"]
    told = {n.source.slug: n.event["overdue"]["due_at"] for n in Notification.objects.select_related("source")}
    assert told["resumed"].startswith(f"{resumed + HOUR * 2:%Y-%m-%dT%H:%M}")
    client.force_login(django_user_model.objects.create_user("ops", password="x"))
    with CaptureQueriesContext(connection) as one_each:
        page = unwrapped(client.get("/alerts/").content.decode())
    for slug, due in (("resumed", resumed + HOUR * 2), ("plain", now - HOUR * 47)):
        row = page[page.index(f'id="ack-{slug}"') :]
        assert row.index(f"{due:%Y-%m-%d %H:%M} UTC <small") < row.index("</tr>"), slug
    # The deadlines of all the overdue rows come from one query, not one a row.
    for n in range(5):
        watched(f"more-{n}", reported_ago=HOUR * 49)
    overdue.mark_overdue(now)
    with CaptureQueriesContext(connection) as more:
        assert client.get("/alerts/").status_code == 200
    assert len(more) == len(one_each)
