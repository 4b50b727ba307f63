"""Accepting an incomplete run as baseline: recorded with who and when, moves the baseline forward only."""

import pytest

from sources.ingest.baselines import NotAcceptable, accept_as_baseline
from sources.models import BaselineAcceptance, Run, Source
from tests.conftest import run_report


@pytest.fixture
def shrunk(api):
    """9000 twice, then the site really shrank to 6000 (no declared total: judged by drop)."""
    api.post_run(run_report("shop", 3, collected=9000))
    api.post_run(run_report("shop", 2, collected=9000))
    return api.post_run(run_report("shop", 1, collected=6000)).json()


def test_accepting_moves_the_baseline_and_records_who(shrunk, api, staff_client, staff):
    assert shrunk["verdict"] == "incomplete"
    response = staff_client.post(f"/runs/{shrunk['run']}/accept-baseline", {"note": "site removed a category"})
    assert response.status_code == 302
    acceptance = BaselineAcceptance.objects.get()
    assert acceptance.accepted_by == staff and acceptance.accepted_by_name == "ops"
    assert acceptance.previous_baseline == 9000 and acceptance.note == "site removed a category"
    run = Run.objects.get(pk=shrunk["run"])
    assert run.accepted_as_baseline
    source = Source.objects.get(slug="shop")
    assert source.baseline_collected == 6000 and source.baseline_run_id == run.pk
    # The next run of 6000 is complete: it is judged against the accepted baseline.
    assert api.post_run(run_report("shop", 0, collected=6000)).json()["verdict"] == "complete"


def test_the_runs_page_says_what_accepting_does_before_it_is_done(shrunk, staff_client):
    # One click in the source's history used to accept at once, and an accepted run sets aside what
    # the source had learned. The headline and the history now open the run's page, which asks.
    page = staff_client.get("/sources/shop/").content.decode()
    assert "accept-baseline" not in page
    assert page.count(f'href="/runs/{shrunk["run"]}/#accept"') == 2
    assert not BaselineAcceptance.objects.exists()
    run_page = staff_client.get(f"/runs/{shrunk['run']}/").content.decode()
    assert f'action="/runs/{shrunk["run"]}/accept-baseline"' in run_page and 'id="accept"' in run_page
    assert "later runs are judged against 6,000" in run_page and "learned again from this run on" in run_page
    # What the run found comes first; the question follows it.
    assert run_page.index('id="findings"') < run_page.index('id="accept"')


def test_a_run_that_failed_on_a_field_alone_asks_about_that_field_not_the_count(api, staff_client):
    for n in (4, 3, 2):
        api.post_run(run_report("flats", n, collected=4800, fields={"price": 4790, "title": 4800}))
    failed = api.post_run(run_report("flats", 1, collected=4804, fields={"price": 2300, "title": 4804})).json()
    assert [f["rule"] for f in failed["findings"] if f["mode"] == "enforce"] == ["field_coverage"]
    page = " ".join(staff_client.get(f"/runs/{failed['run']}/").content.decode().split())
    assert "really fills <code>price</code> in 47.9% of its records now" in page
    assert (
        "later runs' fields are judged against this run's" in page
        and "title" not in page[page.index('id="accept"') :][:600]
    )
    assert "later runs are judged against 4,804" not in page


def test_an_incomplete_run_older_than_the_baseline_is_not_offered(shrunk, api, staff_client):
    # The site came back: a complete run after the shrunk one is the baseline now, and the old run is
    # not what the source is now; its page no longer asks, nor does its row in the history.
    api.post_run(run_report("shop", 0, collected=9000))
    run_page = staff_client.get(f"/runs/{shrunk['run']}/").content.decode()
    assert 'id="accept"' not in run_page and "accept-baseline" not in run_page
    assert f'href="/runs/{shrunk["run"]}/#accept"' not in staff_client.get("/sources/shop/").content.decode()


def test_without_accepting_the_next_run_still_fails(shrunk, api):
    assert api.post_run(run_report("shop", 0, collected=6000)).json()["verdict"] == "incomplete"


def test_accepting_an_older_run_does_not_replace_a_newer_baseline(api, staff):
    api.post_run(run_report("shop", 5, collected=9000))
    old = api.post_run(run_report("shop", 4, collected=5000)).json()
    api.post_run(run_report("shop", 3, collected=9100))
    accept_as_baseline(Run.objects.get(pk=old["run"]), staff)
    source = Source.objects.get(slug="shop")
    assert source.baseline_collected == 9100
    assert Run.objects.get(pk=old["run"]).accepted_as_baseline


def test_a_complete_run_cannot_be_accepted(api, staff):
    run = api.post_run(run_report("shop", 1)).json()
    with pytest.raises(NotAcceptable):
        accept_as_baseline(Run.objects.get(pk=run["run"]), staff)
    assert not BaselineAcceptance.objects.exists()


def test_a_run_that_collected_nothing_cannot_be_accepted_and_the_page_says_why(api, staff, staff_client):
    api.post_run(run_report("shop", 2, collected=9000))
    empty = api.post_run(run_report("shop", 1, collected=0)).json()
    assert empty["verdict"] == "incomplete"
    with pytest.raises(NotAcceptable, match="collected nothing"):
        accept_as_baseline(Run.objects.get(pk=empty["run"]), staff)
    response = staff_client.post(f"/runs/{empty['run']}/accept-baseline", {"note": "x"}, follow=True)
    assert "collected nothing: it cannot be the new normal" in response.content.decode()
    assert not BaselineAcceptance.objects.exists()
    assert Source.objects.get(slug="shop").baseline_collected == 9000
    # Nothing offers it: no form on the run, no link to one in the source's history or its headline.
    assert "accept-baseline" not in staff_client.get(f"/runs/{empty['run']}/").content.decode()
    assert "#accept" not in staff_client.get("/sources/shop/").content.decode()


def test_accepting_twice_records_once(shrunk, staff):
    run = Run.objects.get(pk=shrunk["run"])
    first = accept_as_baseline(run, staff)
    assert accept_as_baseline(run, staff).pk == first.pk
    assert BaselineAcceptance.objects.count() == 1


def test_accept_of_unknown_run_is_404_and_of_complete_run_is_a_message(api, staff_client):
    assert staff_client.post("/runs/999999/accept-baseline").status_code == 404
    run = api.post_run(run_report("shop", 1)).json()
    response = staff_client.post(f"/runs/{run['run']}/accept-baseline", follow=True)
    assert response.status_code == 200 and b"only an incomplete run needs accepting" in response.content


def test_accept_redirect_stays_on_site(shrunk, staff_client):
    response = staff_client.post(f"/runs/{shrunk['run']}/accept-baseline", {"next": "https://evil.example/"})
    assert response["Location"] == f"/runs/{shrunk['run']}/"
