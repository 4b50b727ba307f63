"""Deleting runs by hand in the admin: the runs go, and their source points at the latest run left, so
its pages and the API read its present from a run that exists (sources/services/run_deletion.py)."""

import re

from sources.models import Run, Source
from tests.conftest import run_report


def _latest(api) -> dict:
    return api.get("/sources/shop").json()["last_run"]


def test_deleting_a_sources_latest_run_points_it_at_the_latest_left(api, admin_client):
    api.post_run(run_report("shop", 3, collected=9000, declared_total=9000))
    failing = int(api.post_run(run_report("shop", 2, collected=1200, declared_total=9000)).json()["run"])
    test_report = api.post_run(run_report("shop", 1, collected=5, paused=True, pause_reason="a test post")).json()
    assert test_report["verdict"] == "paused"

    # One run, from its own delete page.
    answer = admin_client.post(f"/admin/sources/run/{test_report['run']}/delete/", {"post": "yes"})
    assert answer.status_code == 302
    source = Source.objects.get(slug="shop")
    assert (source.last_run_id, source.last_judged_run_id, source.last_verdict) == (failing, failing, "incomplete")
    assert source.last_run_started_at == Run.objects.get(pk=failing).started_at
    assert _latest(api)["verdict"] == "incomplete"
    run_page = admin_client.get(f"/runs/{failing}/").content.decode()
    now = re.search(r'data-part="source-now">(.*?)</p>', run_page).group(1)
    assert "this is its latest run" in now

    # Several, by the list's delete action: the good run before them is what is left.
    good = Run.objects.get(source=source, collected=9000).pk
    api.post_run(run_report("shop", 0, collected=9000, declared_total=9000))
    newest = Run.objects.filter(source=source).order_by("-started_at")[0].pk
    action = {"action": "delete_selected", "_selected_action": [failing, newest], "post": "yes"}
    assert admin_client.post("/admin/sources/run/", action).status_code == 302
    source.refresh_from_db()
    assert (source.last_run_id, source.last_judged_run_id, source.last_verdict) == (good, good, "complete")
    page = admin_client.get("/sources/shop/").content.decode()
    assert "No runs reported yet" not in page and "the latest run is complete with 9,000 records" in page

    # Every run gone: nothing is left to point at, and the page says so.
    admin_client.post(f"/admin/sources/run/{good}/delete/", {"post": "yes"})
    source.refresh_from_db()
    assert (source.last_run_id, source.last_judged_run_id, source.last_run_started_at) == (None, None, None)
    assert "No runs reported yet" in admin_client.get("/sources/shop/").content.decode()


def test_deleting_an_older_run_leaves_the_latest_as_it_was(api, admin_client):
    older = int(api.post_run(run_report("shop", 2)).json()["run"])
    latest = int(api.post_run(run_report("shop", 1)).json()["run"])
    admin_client.post(f"/admin/sources/run/{older}/delete/", {"post": "yes"})
    source = Source.objects.get(slug="shop")
    assert (source.last_run_id, source.last_judged_run_id) == (latest, latest)
    assert not Run.objects.filter(pk=older).exists()
