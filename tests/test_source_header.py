"""The source page's pause header and the charts' range and paused periods."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from sources.models import PauseEvent, PauseOrigin, Source
from sources.pages.charts.ranges import DEFAULT_RANGE, ChartRange
from sources.pages.selectors import source as source_selectors
from sources.services import pausing
from tests.conftest import run_report, unwrapped


def test_the_header_shows_the_current_pause_not_a_mix_of_two(staff_client, api):
    api.post_run(run_report("shop", 1))
    source = Source.objects.get(slug="shop")
    pausing.pause_source(source, origin=PauseOrigin.API, actor="token:crawler", reason="first")
    PauseEvent.objects.filter(source=source).update(at=timezone.now() - timedelta(days=2))
    Source.objects.filter(pk=source.pk).update(paused_since=timezone.now() - timedelta(days=2))
    pausing.pause_source(source, origin=PauseOrigin.UI, actor="user:ops-lead", reason="second")
    page = unwrapped(staff_client.get("/sources/shop/").content.decode())
    note = page[page.index('class="paused-note"') : page.index("</p>", page.index('class="paused-note"'))]
    today = timezone.now().astimezone(UTC).strftime("%Y-%m-%d")
    assert "user:ops-lead (web page)" in note and f"on {today}" in note and "second" in note
    assert "paused without a break since" in note


def test_an_unknown_range_is_the_default():
    now = datetime(2026, 11, 30, tzinfo=UTC)
    assert ChartRange.of("5y", now).key == DEFAULT_RANGE
    assert ChartRange.of("7d", now).start == now - timedelta(days=7)


def test_paused_periods_from_the_pause_events(db):
    source = Source.objects.create(slug="shop")
    now = timezone.now()
    since = now - timedelta(days=30)

    def event(action, days_ago):
        PauseEvent.objects.create(
            source=source, action=action, origin=PauseOrigin.UI, at=now - timedelta(days=days_ago)
        )

    event(PauseEvent.Action.RESUME, 25)  # paused before the period began
    event(PauseEvent.Action.PAUSE, 10)
    event(PauseEvent.Action.PAUSE, 9)  # new terms, the same pause
    event(PauseEvent.Action.RESUME, 8)
    event(PauseEvent.Action.PAUSE, 1)
    source.paused = True
    periods = source_selectors.paused_periods(source, since, now)
    days = [((now - a) / timedelta(days=1), (now - b) / timedelta(days=1)) for a, b in periods]
    assert [(round(a), round(b)) for a, b in days] == [(30, 25), (10, 8), (1, 0)]


def test_paused_throughout_with_no_event_in_the_period(db):
    source = Source.objects.create(slug="shop", paused=True)
    now = timezone.now()
    assert source_selectors.paused_periods(source, now - timedelta(days=7), now) == [(now - timedelta(days=7), now)]


def _header(client, slug="shop") -> str:
    page = unwrapped(client.get(f"/sources/{slug}/").content.decode())
    start = page.index('<p class="sub">')
    return page[start : page.index("</p>", start)]


def test_a_source_without_an_overdue_clock_says_how_often_it_reports(api, staff_client):
    for n in range(9, 0, -1):
        api.post_run(run_report("shop", n))
    header = _header(staff_client)
    assert "(no overdue clock; it reports about every 1 day: " in header and 'href="#settings"' in header
    Source.objects.filter(slug="shop").update(expected_interval=timedelta(days=1), grace=timedelta(hours=2))
    header = _header(staff_client)
    assert "no overdue clock" not in header and "expected every 1 day + 2 h grace" in header


def test_one_that_stopped_reporting_is_said_to_be_quiet_with_nothing_to_alert(api, staff_client, viewer_client):
    for n in range(12, 4, -1):
        api.post_run(run_report("shop", n))
    Source.objects.filter(slug="shop").update(last_report_at=timezone.now() - timedelta(days=4, hours=1))
    header = _header(staff_client)
    assert "<strong>it reports about every 1 day, and has not for 4 days 1 h</strong>" in header, header
    assert "no overdue clock is set, so nothing alerts on it" in header
    # An operator who may not change settings is not sent to a form they cannot use.
    assert "no overdue clock is set, so nothing alerts on it)" in _header(viewer_client)


def test_too_few_runs_tell_no_cadence(api, staff_client):
    for n in (3, 2, 1):
        api.post_run(run_report("shop", n))
    assert 'data-part="no-clock"' not in _header(staff_client)
