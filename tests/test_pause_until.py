"""A pause's end time lies in the future and at most 366 days ahead, by API and by the page form."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sources.models import PauseEvent, Source
from tests.conftest import assert_error_body, report, unwrapped


@pytest.fixture
def shop(api):
    api.post_run(report())
    return Source.objects.get(slug="shop")


def ahead(until):
    """An end time given as a timedelta is read from the clock as the test runs. Parameters are made
    as the tests are collected: an hour ahead then is past on a run that reaches the test an hour later."""
    return (timezone.now() + until).isoformat() if isinstance(until, timedelta) else until


@pytest.mark.parametrize(
    "until",
    [
        "9999-12-31T23:59:59-14:00",  # year 10000 in UTC: the pause that took a source down
        "2999-01-01T00:00:00Z",
        timedelta(days=367),
        timedelta(seconds=-1),
        "2001-01-01T00:00:00Z",
    ],
)
def test_the_api_refuses_an_end_time_in_the_past_or_more_than_366_days_ahead(api, shop, until):
    response = api.post("/sources/shop/pause", {"reason": "maintenance", "until": ahead(until)})
    assert response.status_code == 422, response.content
    assert [e["path"] for e in response.json()["errors"]] == ["until"]
    assert not Source.objects.get().paused and not PauseEvent.objects.exists()


@pytest.mark.parametrize("until", [timedelta(hours=1), timedelta(days=365), timedelta(days=366, minutes=-1), None])
def test_the_api_accepts_an_end_time_up_to_366_days_ahead(api, shop, until):
    response = api.post("/sources/shop/pause", {"reason": "maintenance", "until": ahead(until)})
    assert response.status_code == 200, response.content
    assert Source.objects.get().paused


def test_after_a_refused_end_time_the_source_still_answers(api, shop, staff_client):
    assert_error_body(
        api.post("/sources/shop/pause", {"reason": "x", "until": "9999-12-31T23:59:59-14:00"}), 422, "until"
    )
    assert not Source.objects.get().paused
    assert api.get("/sources/shop").json()["slug"] == "shop"
    assert [s["slug"] for s in api.get("/sources").json()["items"]] == ["shop"]
    assert staff_client.get("/sources/shop/").status_code == 200
    assert api.post("/sources/shop/resume").status_code == 200


def local(until=None, **delta) -> str:
    """As the form's field writes a time; a timedelta is read from the clock as the test runs (ahead())."""
    if until is not None and not isinstance(until, timedelta):
        return until
    return (timezone.now() + (timedelta(**delta) if until is None else until)).strftime("%Y-%m-%dT%H:%M")


@pytest.mark.parametrize("until", ["9999-12-31T23:59", "2999-01-01T10:00", timedelta(days=367), timedelta(minutes=-2)])
def test_the_page_form_refuses_an_end_time_in_the_past_or_more_than_366_days_ahead(shop, staff_client, until):
    response = staff_client.post("/sources/shop/pause", {"reason": "maintenance", "until": local(until)}, follow=True)
    assert response.status_code == 200
    assert "Not paused: until:" in response.content.decode()
    assert not Source.objects.get().paused


@pytest.mark.parametrize("until", [timedelta(hours=1), timedelta(days=365), ""])
def test_the_page_form_accepts_an_end_time_up_to_366_days_ahead(shop, staff_client, until):
    response = staff_client.post("/sources/shop/pause", {"reason": "maintenance", "until": local(until)})
    assert response.status_code == 302
    assert Source.objects.get().paused


def test_the_page_says_when_a_pause_with_an_end_time_lifts_itself(shop, staff_client):
    """The message after pausing with an end time names that time: it used to say "until it is
    resumed" whatever was entered, beside a pause box that said "until 2026-12-05 10:00 UTC"."""
    until = (timezone.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    response = staff_client.post(
        "/sources/shop/pause", {"reason": "maintenance", "until": until.strftime("%Y-%m-%dT%H:%M")}, follow=True
    )
    page = response.content.decode()
    assert f"shop paused until {until:%Y-%m-%d %H:%M} UTC (or until resumed): nothing about it alerts" in page
    assert "until it is resumed" not in page

    staff_client.post("/sources/shop/resume")
    page = staff_client.post("/sources/shop/pause", {"reason": "maintenance", "until": ""}, follow=True)
    assert "shop paused: nothing about it alerts until it is resumed." in page.content.decode()


def test_a_refused_pause_keeps_what_was_typed_and_a_later_visit_does_not(shop, staff_client):
    typed = {"reason": "supplier migrating their catalogue, back Monday", "until": local(minutes=-2)}
    page = staff_client.post("/sources/shop/pause", typed, follow=True).content.decode()
    form = page[page.index('id="pause-form"') : page.index("</form>", page.index('id="pause-form"'))]
    assert f'value="{typed["reason"]}"' in form and f'value="{typed["until"]}"' in form
    assert page.count("Not paused: until:") == 1
    again = staff_client.get("/sources/shop/").content.decode()
    assert typed["reason"] not in again and "Not paused" not in again


def test_the_api_refuses_a_reason_of_spaces_only_as_the_page_form_does(api, shop, staff_client):
    response = api.post("/sources/shop/pause", {"reason": "   ", "until": ahead(timedelta(seconds=-1))})
    assert_error_body(response, 422, "reason")
    assert [e["path"] for e in response.json()["errors"]] == ["reason", "until"]  # both named in one answer
    assert not Source.objects.get().paused and not PauseEvent.objects.exists()
    assert staff_client.post("/sources/shop/pause", {"reason": "   "}).status_code == 302
    assert not Source.objects.get().paused
    # A reason with spaces around it is kept, without them.
    assert api.post("/sources/shop/pause", {"reason": "  supplier migration "}).status_code == 200
    assert Source.objects.get().paused_reason == "supplier migration"


def test_the_pause_form_says_the_time_now_in_utc_and_the_pause_says_how_long_it_has_left(shop, staff_client):
    # The picker shows the browser's own date format under a label that says UTC: someone two hours
    # east typed their 09:00 and the pause lifted two hours late, with nothing on the page to compare.
    now = timezone.now()
    form = staff_client.get("/sources/shop/").content.decode()
    assert f"optional, UTC (now {now:%Y-%m-%d %H}:" in form
    until = (now + timedelta(days=2, hours=3, minutes=30)).replace(second=0, microsecond=0)
    staff_client.post("/sources/shop/pause", {"reason": "maintenance", "until": until.strftime("%Y-%m-%dT%H:%M")})
    page = unwrapped(staff_client.get("/sources/shop/").content.decode())
    note = page[page.index('class="paused-note"') : page.index("</p>", page.index('class="paused-note"'))]
    assert f"until {until:%Y-%m-%d %H:%M} UTC (in 2 days 3 h)" in note
    assert "(just now)" in note
    # Beside it, a pause with no end time says how long it has lasted, not how long it has left.
    Source.objects.filter(slug="shop").update(paused_until=None)
    PauseEvent.objects.filter(source__slug="shop").update(at=now - timedelta(days=9))
    page = unwrapped(staff_client.get("/sources/shop/").content.decode())
    note = page[page.index('class="paused-note"') : page.index("</p>", page.index('class="paused-note"'))]
    assert "(9 days ago), until resumed" in note and "(in " not in note
