"""Every page needs a login; staff-only actions are refused on the server, not just hidden."""

import pytest

from tests.conftest import run_report

PAGES = ["/", "/proxies/", "/sources/shop/", "/runs/1/"]


@pytest.mark.parametrize("path", PAGES)
def test_pages_redirect_anonymous_users_to_login(client, db, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_login_page_logs_in_and_lands_on_the_overview(client, staff):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "ops", "password": "ops-password"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_the_login_page_names_the_demo_login_only_where_it_exists(client, django_user_model):
    assert b"demo</code> / <code>demo" not in client.get("/accounts/login/").content
    django_user_model.objects.create_user("demo", password="demo")
    assert b"demo</code> / <code>demo" in client.get("/accounts/login/").content


def test_wrong_password_stays_on_login(client, staff):
    response = client.post("/accounts/login/", {"username": "ops", "password": "nope"})
    assert response.status_code == 200
    assert b"did not match" in response.content


def test_non_staff_cannot_switch_a_rule_mode(api, viewer_client):
    api.post_run(run_report("shop", 1))
    response = viewer_client.post("/sources/shop/rules", {"rule": "lost_pages", "mode": "observe"})
    assert response.status_code == 403
    from sources.models import Source

    assert Source.objects.get(slug="shop").rule_modes == {}


def test_non_staff_sees_no_mode_switch_and_no_accept_button(api, viewer_client):
    api.post_run(run_report("shop", 1, declared_total=2000))
    page = viewer_client.get("/sources/shop/").content.decode()
    assert 'action="/sources/shop/rules"' not in page
    assert "accept-baseline" not in page and "#accept" not in page


def test_staff_sees_the_mode_switch(api, staff_client):
    api.post_run(run_report("shop", 1, declared_total=2000))
    page = staff_client.get("/sources/shop/").content.decode()
    assert 'action="/sources/shop/rules"' in page
    assert "#accept" in page  # to the run's page, where the form is


def test_non_staff_cannot_accept_a_baseline(api, viewer_client):
    run_id = api.post_run(run_report("shop", 1, declared_total=2000)).json()["run"]
    assert viewer_client.post(f"/runs/{run_id}/accept-baseline").status_code == 403
    from sources.models import BaselineAcceptance

    assert not BaselineAcceptance.objects.exists()


def test_pages_refuse_get_on_actions(api, staff_client):
    api.post_run(run_report("shop", 1))
    assert staff_client.get("/sources/shop/pause").status_code == 405
