"""Intentional pauses: by report, by API; recorded with who, when and why; out of the baseline."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from sources.models import Flip, PauseEvent, Source
from sources.pages.selectors.source import paused_periods
from tests.conftest import make_token, report
from tests.test_baseline import day, post


def test_a_paused_report_pauses_the_source_until_its_next_report(api):
    post(api, 1, collected=500)
    assert post(api, 2, collected=0, paused=True, pause_reason="proxy pool migration")["verdict"] == "paused"
    source = Source.objects.get()
    assert (source.paused, source.health, source.pause_origin) == (True, "paused", "crawler")
    assert source.paused_reason == "proxy pool migration" and source.paused_by == "token:all-sources"
    assert post(api, 3, collected=498)["verdict"] == "complete"
    source.refresh_from_db()
    assert (source.paused, source.health) == (False, "ok")
    assert list(PauseEvent.objects.order_by("at", "id").values_list("action", "origin")) == [
        ("pause", "crawler"),
        ("resume", "crawler"),
    ]


def test_a_report_older_than_the_latest_run_neither_pauses_nor_resumes_the_source(api):
    # A spool emptied late: a late report does not speak for the source's present (docs/api.md), and
    # a paused one had paused a live source, silencing its alerts until the next report.
    post(api, 1, collected=500)
    post(api, 3, collected=500)
    assert post(api, 2, collected=0, paused=True, pause_reason="last week's migration")["verdict"] == "paused"
    source = Source.objects.get()
    assert (source.paused, source.health) == (False, "ok")
    post(api, 5, collected=0, paused=True, pause_reason="migration")
    assert post(api, 4, collected=500)["verdict"] == "complete"
    source.refresh_from_db()
    assert (source.paused, source.health, source.pause_origin) == (True, "paused", "crawler")
    assert list(PauseEvent.objects.values_list("action", "run__run_id")) == [("pause", "run-5")]


def test_an_operator_pause_makes_every_run_paused_until_resumed(api):
    post(api, 1, collected=500)
    response = api.post("/sources/shop/pause", {"reason": "site redesign", "until": None})
    assert response.status_code == 200, response.content
    pause = response.json()["pause"]
    assert pause["paused"] and pause["reason"] == "site redesign" and pause["by"] == "token:all-sources"
    assert pause["since"] is not None and response.json()["health"] == "paused"
    body = post(api, 2, collected=0, pages={"fetched": 5, "lost": 5})
    assert (body["verdict"], body["findings"], body["exit_code"]) == ("paused", [], 0)
    assert api.post("/sources/shop/resume").status_code == 200
    body = post(api, 3, collected=0, pages={"fetched": 5, "lost": 5})
    assert body["verdict"] == "incomplete"
    # The paused run did not move the baseline.
    assert Source.objects.get().baseline_collected == 500


def test_a_pause_with_an_end_time_lifts_itself(api):
    post(api, 1, collected=500)
    until = timezone.now() + timedelta(hours=1)
    api.post("/sources/shop/pause", {"reason": "maintenance", "until": until.isoformat()})
    Source.objects.update(paused_until=timezone.now() - timedelta(seconds=1))
    assert post(api, 2, collected=0)["verdict"] == "incomplete"
    last = PauseEvent.objects.first()
    assert (last.action, last.origin) == ("resume", "clock")


def test_pause_until_in_the_past_is_refused(api):
    post(api, 1)
    response = api.post("/sources/shop/pause", {"reason": "x", "until": "2020-01-01T00:00:00Z"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "until"
    assert not Source.objects.get().paused


def test_pause_needs_a_reason_and_an_aware_time(api):
    post(api, 1)
    assert api.post("/sources/shop/pause", {"until": None}).status_code == 422
    naive = api.post("/sources/shop/pause", {"reason": "x", "until": "2030-01-01T00:00:00"})
    assert naive.status_code == 422
    assert not PauseEvent.objects.exists()


def test_a_pause_until_given_as_a_number_is_refused_naming_it(api):
    # Lax parsing read a number as seconds since 1970: "until": 2 (meant as hours) was a moment in 1970.
    post(api, 1)
    for until in (2, 1_900_000_000, True, "1900000000", "2"):
        response = api.post("/sources/shop/pause", {"reason": "x", "until": until})
        assert response.status_code == 422, (until, response.content)
        error = response.json()["errors"][0]
        assert error["path"] == "until" and "ISO 8601" in error["message"], error
    assert not PauseEvent.objects.exists()
    in_an_hour = (timezone.now() + timedelta(hours=1)).isoformat()
    assert api.post("/sources/shop/pause", {"reason": "x", "until": in_an_hour}).status_code == 200


def test_a_pause_with_a_key_it_does_not_take_is_refused_and_pauses_nothing(api):
    # "untill" for "until" was a pause with no end: the source stayed silent until someone noticed.
    post(api, 1)
    response = api.post("/sources/shop/pause", {"reason": "2 h migration", "untill": "2030-01-01T00:00:00Z"})
    assert response.status_code == 422, response.content
    # With the key it probably meant and the ones it takes, not "Extra inputs are not permitted".
    assert response.json()["errors"] == [
        {"path": "untill", "message": "unknown field (did you mean until?); the fields here: reason, until"}
    ]
    assert not Source.objects.get().paused
    assert not PauseEvent.objects.exists()


def test_pause_and_resume_flip_health_and_are_recorded(api):
    post(api, 1, collected=500)
    api.post("/sources/shop/pause", {"reason": "r"})
    api.post("/sources/shop/resume")
    assert list(Flip.objects.order_by("at", "id").values_list("old_health", "new_health")) == [
        ("ok", "paused"),
        ("paused", "ok"),
    ]


def test_a_scoped_token_cannot_pause_another_source(api):
    post(api, 1)
    api.post_run(report(source="other", run_id="o", **day(1)))
    scoped = make_token("shop-only", ["shop"])
    assert api.post("/sources/other/pause", {"reason": "x"}, token=scoped).status_code == 404
    assert api.post("/sources/shop/pause", {"reason": "x"}, token=scoped).status_code == 200
    assert not Source.objects.get(slug="other").paused


def test_a_crawlers_pause_is_shaded_from_its_runs_start_to_the_start_of_the_run_that_ended_it(api):
    # A backfill of September posted today: its paused runs of days 4-6 were shaded as a sliver at
    # the minute of the backfill, where the charts have no run.
    for n in range(1, 10):
        paused = 4 <= n <= 6
        post(api, n, collected=0 if paused else 1000, paused=paused, pause_reason="migration" if paused else None)
    source = Source.objects.get()
    now = timezone.now()
    assert paused_periods(source, datetime(2026, 9, 1, tzinfo=UTC), now) == [
        (datetime(2026, 9, 4, 3, tzinfo=UTC), datetime(2026, 9, 7, 3, tzinfo=UTC))
    ]


def test_a_pause_is_shaded_in_the_order_it_happened_even_where_a_run_started_before(api):
    post(api, 1, collected=1000)
    source = Source.objects.get()
    api.post("/sources/shop/pause", {"reason": "site redesign"})
    api.post("/sources/shop/resume")
    resumed = PauseEvent.objects.get(action="resume").at
    # A crawler's paused run that started before the operator's resume and reported after it.
    started = resumed - timedelta(minutes=30)
    api.post_run(
        report(
            run_id="run-late-start",
            started_at=f"{started:%Y-%m-%dT%H:%M:%S.%fZ}",
            finished_at=f"{resumed + timedelta(seconds=1):%Y-%m-%dT%H:%M:%S.%fZ}",
            collected=0,
            paused=True,
            pause_reason="proxy pool migration",
        )
    )
    paused_at = PauseEvent.objects.get(action="pause", origin="api").at
    now = timezone.now()
    assert paused_periods(source, paused_at - timedelta(days=1), now) == [(paused_at, resumed), (resumed, now)]
