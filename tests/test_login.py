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
    # Announced as it appears: a screen reader on the username field heard nothing of the refusal.
    assert b'role="alert">Your username and password did not match' in response.content


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


# demo / demo is a superuser whose password the README and the login page give away: bin/serve on
# 127.0.0.1 behind a reverse proxy, or the Procfile's web on 0.0.0.0 after seed_demo, handed the admin
# to anyone who reached it. With that password it signs in only from this machine.
ELSEWHERE = [{"REMOTE_ADDR": "203.0.113.9"}, {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}]


@pytest.fixture
def demo(django_user_model):
    return django_user_model.objects.create_superuser("demo", "demo@example.test", "demo")


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
@pytest.mark.parametrize("where", ELSEWHERE)
def test_the_demo_login_with_its_public_password_is_refused_from_elsewhere(client, demo, path, where):
    response = client.post(path, {"username": "demo", "password": "demo"}, **where)
    assert response.status_code == 200  # the form again, with its error
    assert "_auth_user_id" not in client.session
    assert b"demo</code> / <code>demo" not in client.get("/accounts/login/", **where).content


def test_the_demo_login_signs_in_from_this_machine(client, demo):
    assert b"demo</code> / <code>demo" in client.get("/accounts/login/").content
    assert client.post("/accounts/login/", {"username": "demo", "password": "demo"}).status_code == 302


def test_with_trust_loopback_off_the_demo_login_is_refused_from_this_machine_too(client, demo, settings):
    settings.TRUST_LOOPBACK = False
    assert b"demo</code> / <code>demo" not in client.get("/accounts/login/").content
    assert client.post("/accounts/login/", {"username": "demo", "password": "demo"}).status_code == 200
    assert "_auth_user_id" not in client.session


def test_the_demo_login_with_a_password_of_its_own_signs_in_from_anywhere(client, demo):
    demo.set_password("a-password-of-its-own")
    demo.save()
    response = client.post(
        "/accounts/login/", {"username": "demo", "password": "a-password-of-its-own"}, **ELSEWHERE[0]
    )
    assert response.status_code == 302
