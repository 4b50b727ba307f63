"""A run's started_at and finished_at lie after 2000-01-01T00:00:00Z and at most 24 hours ahead of the
server's clock: a report from the future would pin the source's "latest run" for years."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from completeness.report import RunReport
from sources.ingest.errors import ReportInvalid
from sources.ingest.ingest import parse_report
from sources.models import Run, Source
from tests.conftest import report, run_report


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def from_now(**delta) -> str:
    return stamp(datetime.now(UTC) + timedelta(**delta))


def instant(value) -> str:
    """A timedelta is read from the clock as the test runs. Parameters are made as the tests are
    collected: 25 hours ahead then is less than 24 on a run that reaches the test an hour later."""
    return stamp(datetime.now(UTC) + value) if isinstance(value, timedelta) else value


def paths(response) -> list[str]:
    return [e["path"] for e in response.json()["errors"]]


@pytest.mark.parametrize(
    "started,finished,named",
    [
        ("1999-12-31T23:59:59Z", "2026-09-15T04:00:00Z", "started_at"),
        ("2000-01-01T00:00:00Z", "2026-09-15T04:00:00Z", "started_at"),
        ("1970-01-01T00:00:00Z", "1970-01-01T01:00:00Z", "finished_at"),
    ],
)
def test_an_instant_not_after_the_year_2000_is_422_naming_it(api, started, finished, named):
    response = api.post_run(report(started_at=started, finished_at=finished))
    assert response.status_code == 422, response.content
    assert named in paths(response)
    assert not Run.objects.exists()


def test_an_instant_just_after_the_year_2000_is_accepted(api):
    response = api.post_run(report(started_at="2000-01-01T00:00:01Z", finished_at="2000-01-01T00:00:01+00:00"))
    assert response.status_code == 201, response.content
    stored = Run.objects.get()
    assert stored.started_at == stored.finished_at == datetime(2000, 1, 1, 0, 0, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "started,finished,named",
    [
        (timedelta(hours=-1), timedelta(hours=25), ["finished_at"]),
        (timedelta(hours=25), timedelta(hours=26), ["started_at", "finished_at"]),
        ("9000-01-01T00:00:00Z", "9000-01-01T01:00:00Z", ["started_at", "finished_at"]),
    ],
)
def test_an_instant_more_than_24_hours_ahead_is_422_naming_it(api, started, finished, named):
    response = api.post_run(report(started_at=instant(started), finished_at=instant(finished)))
    assert response.status_code == 422, response.content
    assert paths(response) == named
    assert not Run.objects.exists()


def test_an_instant_less_than_24_hours_ahead_is_accepted(api):
    # Clocks of crawler hosts drift, and a report may name its time zone oddly: a day of slack.
    finished = from_now(hours=23)
    response = api.post_run(report(started_at=from_now(hours=-1), finished_at=finished))
    assert response.status_code == 201, response.content
    assert stamp(Run.objects.get().finished_at) == finished


def test_a_report_from_the_future_cannot_hide_a_failing_source(api):
    assert api.post_run(run_report("shop", 2, collected=1000)).status_code == 201
    future = report(
        source="shop",
        run_id="future",
        started_at="9000-01-01T00:00:00Z",
        finished_at="9000-01-01T01:00:00Z",
        collected=1000,
    )
    assert api.post_run(future).status_code == 422
    failing = api.post_run(run_report("shop", 1, collected=100, crawler_verdict="complete")).json()
    assert (failing["verdict"], failing["silent"]) == ("incomplete", True)
    source = Source.objects.get()
    assert (source.health, source.last_verdict) == ("failing", "incomplete")


# The clock is an argument: the checks hold for any "now", not only today's.
NOW = datetime(2031, 6, 1, 12, 0, tzinfo=UTC)


def body(started: datetime, finished: datetime) -> bytes:
    return json.dumps(report(started_at=stamp(started), finished_at=stamp(finished))).encode()


def test_parse_report_checks_against_the_clock_it_is_given():
    parsed = parse_report(body(NOW, NOW + timedelta(hours=24)), now=NOW)
    assert parsed.report.finished_at == NOW + timedelta(hours=24)
    with pytest.raises(ReportInvalid) as refused:
        parse_report(body(NOW, NOW + timedelta(hours=24, seconds=1)), now=NOW)
    assert [e.path for e in refused.value.errors] == ["finished_at"]


def test_the_pure_schema_checks_the_upper_bound_only_when_given_a_clock():
    far = body(NOW + timedelta(days=3650), NOW + timedelta(days=3651))
    assert RunReport.model_validate_json(far).collected == 1000
    with pytest.raises(ValueError):
        RunReport.model_validate_json(far, context={"now": NOW})
    with pytest.raises(ValueError):
        RunReport.model_validate_json(body(datetime(1999, 1, 1, tzinfo=UTC), NOW))
