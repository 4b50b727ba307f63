"""A token posts reports, pauses, resumes and acknowledges; changing how its sources are judged
(settings, maintenance windows) needs `may_configure`, off for a new token, granted by
`create_token --may-configure` or the admin, and kept by every token made before it existed."""

import json
from datetime import timedelta
from importlib import import_module
from io import StringIO
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from sources.management.commands.create_token import Command as CreateToken
from sources.models import ApiToken, MaintenanceWindow, PauseEvent, Source
from tests.conftest import assert_error_body, make_token, report

LOOSER = {"min_completeness": 0.1, "drop_threshold": 0.99, "learn_days": 366, "min_margin": 0.5}


@pytest.fixture
def reporter(db) -> str:
    """A crawler's token as made from now on: no --may-configure."""
    return make_token("crawler", ["shop"])


def patch_settings(client, token: str, payload, slug: str = "shop"):
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return client.patch(
        f"/api/v1/sources/{slug}/settings",
        data=body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def window(**overrides) -> dict:
    start = timezone.now() + timedelta(hours=1)
    body = {
        "name": "db upgrade",
        "reason": "replica swap",
        "starts_at": start.isoformat(),
        "ends_at": (start + timedelta(hours=2)).isoformat(),
        "sources": ["shop"],
    }
    return {**body, **overrides}


def source_row(slug: str = "shop") -> dict:
    return Source.objects.filter(slug=slug).values().get()


def test_a_new_token_is_refused_a_settings_change_with_403_and_nothing_is_written(api, client, reporter):
    assert api.post_run(report(), token=reporter).status_code == 201
    before = source_row()
    response = patch_settings(client, reporter, LOOSER)
    body = assert_error_body(response, 403)
    # What is missing, and the two ways an operator grants it.
    detail = body["detail"]
    assert "changing a source's settings needs a token that may configure" in detail, detail
    assert "'crawler' may not" in detail and "--may-configure" in detail and "'May configure'" in detail, detail
    assert source_row() == before
    assert not ApiToken.objects.get(name="crawler").may_configure


@pytest.mark.parametrize(
    "payload",
    [{"min_completeness": 7}, {"colour": "blue"}, "{not json", "[]", {"field_minimums": {"pri\u0000ce": 0.5}}],
    ids=["bad value", "unknown key", "not json", "not an object", "unstorable key"],
)
def test_the_refusal_comes_before_the_body_is_read(api, client, reporter, payload):
    # A 422 would send whoever holds the token to mend a body that no mending lets through.
    assert api.post_run(report(), token=reporter).status_code == 201
    before = source_row()
    assert_error_body(patch_settings(client, reporter, payload), 403, "may configure")
    assert source_row() == before


def test_a_new_token_still_reports_reads_pauses_resumes_and_acknowledges(api, reporter):
    answer = api.post_run(report(declared_total=1000, collected=400), token=reporter)
    assert answer.status_code == 201 and answer.json()["verdict"] == "incomplete"
    assert api.get("/sources/shop", token=reporter).status_code == 200
    assert api.get("/sources/shop/runs", token=reporter).json()["count"] == 1
    assert api.get("/sources/shop/runs/run-1", token=reporter).status_code == 200
    assert api.get("/sources/shop/windows", token=reporter).json() == []
    acknowledged = api.post("/sources/shop/acknowledge", {"note": "known outage"}, token=reporter)
    assert acknowledged.status_code == 200 and acknowledged.json()["by"] == "token:crawler", acknowledged.content
    paused = api.post("/sources/shop/pause", {"reason": "proxy migration"}, token=reporter)
    assert paused.status_code == 200 and paused.json()["pause"]["paused"], paused.content
    assert api.post("/sources/shop/resume", token=reporter).status_code == 200
    assert list(PauseEvent.objects.order_by("id").values_list("action", "actor")) == [
        ("pause", "token:crawler"),
        ("resume", "token:crawler"),
    ]
    assert api.post_run(report(run_id="run-2", collected=1000), token=reporter).status_code == 201


def test_a_new_token_for_all_sources_may_not_plan_a_window(api):
    everywhere = make_token("fleet")
    assert api.post_run(report(), token=everywhere).status_code == 201
    body = assert_error_body(api.post("/windows", window(), token=everywhere), 403, "planning a maintenance window")
    assert "--may-configure" in body["detail"]
    assert not MaintenanceWindow.objects.exists()
    # Its reports are untouched, unknown sources registered as before.
    assert api.post_run(report(source="new-shop"), token=everywhere).status_code == 201


def test_a_token_made_with_may_configure_changes_settings_and_plans_windows(api, client):
    out = StringIO()
    call_command("create_token", "ops-script", "--may-configure", stdout=out)
    said, raw = out.getvalue().strip().splitlines()
    assert "for all sources; it may change settings and plan maintenance windows" in said, said
    assert api.post_run(report(), token=raw).status_code == 201
    changed = patch_settings(client, raw, {"min_completeness": 0.9, "owner": "ana"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["settings"]["min_completeness"] == 0.9 and changed.json()["owner"] == "ana"
    assert api.post("/windows", window(), token=raw).status_code == 201
    assert MaintenanceWindow.objects.count() == 1


def test_create_token_says_what_a_token_without_the_flag_may_not_do(db):
    out = StringIO()
    call_command("create_token", "crawler-7", "--source=shop", stdout=out)
    said = out.getvalue().strip().splitlines()[0]
    assert "for shop; it may not change settings or plan maintenance windows" in said, said
    assert not ApiToken.objects.get(name="crawler-7").may_configure


def test_create_token_help_names_the_flag():
    text = CreateToken().create_parser("manage.py", "create_token").format_help()
    assert "--may-configure" in text and "maintenance windows" in text


def test_a_token_that_existed_before_the_upgrade_keeps_its_power(api, client):
    # Rows as migration 0029 finds them: the new column added with its default, off.
    old = make_token("nightly-sync", ["shop"])
    old_fleet = make_token("old-fleet")
    assert api.post_run(report(), token=old).status_code == 201
    assert patch_settings(client, old, {"trend_days": 7}).status_code == 403
    migration = import_module("sources.migrations.0029_token_may_configure")
    migration.grant_to_existing_tokens(apps, SimpleNamespace(connection=connection))  # as migrate's schema editor
    assert patch_settings(client, old, {"trend_days": 7}).status_code == 200
    assert Source.objects.get(slug="shop").trend_days == 7
    assert api.post("/windows", window(), token=old_fleet).status_code == 201
    # A token made after the upgrade starts without it.
    assert patch_settings(client, make_token("new-crawler", ["shop"]), {"trend_days": 9}).status_code == 403
    assert Source.objects.get(slug="shop").trend_days == 7


def test_staff_sessions_are_unaffected_and_other_users_still_refused(api, client, staff, viewer):
    assert api.post_run(report()).status_code == 201
    client.force_login(viewer)
    assert_error_body(client.patch("/api/v1/sources/shop/settings", {"trend_days": 7}, "application/json"), 403)
    assert_error_body(client.post("/api/v1/windows", window(), "application/json"), 403)
    client.force_login(staff)
    changed = client.patch("/api/v1/sources/shop/settings", {"trend_days": 7}, "application/json")
    assert changed.status_code == 200, changed.content
    assert client.post("/api/v1/windows", window(), "application/json").status_code == 201
    assert Source.objects.get(slug="shop").trend_days == 7 and MaintenanceWindow.objects.count() == 1


def test_the_admin_shows_the_permission_and_grants_and_takes_it(admin_client, api, client, reporter):
    assert api.post_run(report(), token=reporter).status_code == 201
    token = ApiToken.objects.get(name="crawler")
    listing = admin_client.get("/admin/sources/apitoken/").content.decode()
    assert "May configure" in listing
    page = admin_client.get(f"/admin/sources/apitoken/{token.pk}/change/")
    assert page.context["adminform"].form["may_configure"].value() is False
    form = {"name": "crawler", "sources": [Source.objects.get(slug="shop").pk]}
    assert (
        admin_client.post(f"/admin/sources/apitoken/{token.pk}/change/", {**form, "may_configure": "on"}).status_code
        == 302
    )
    assert patch_settings(client, reporter, {"trend_days": 7}).status_code == 200
    assert admin_client.post(f"/admin/sources/apitoken/{token.pk}/change/", form).status_code == 302
    assert patch_settings(client, reporter, {"trend_days": 9}).status_code == 403
    assert Source.objects.get(slug="shop").trend_days == 7


def test_the_admin_makes_a_token_without_the_permission_unless_ticked(admin_client, db):
    shop = Source.objects.create(slug="shop")
    form = admin_client.get("/admin/sources/apitoken/add/").content.decode()
    assert 'name="may_configure"' in form and "leave this off unless" in form
    made = admin_client.post("/admin/sources/apitoken/add/", {"name": "crawler", "sources": [shop.pk]})
    assert "it may not change settings or plan maintenance windows" in made.content.decode()
    assert not ApiToken.objects.get(name="crawler").may_configure
    made = admin_client.post(
        "/admin/sources/apitoken/add/", {"name": "ops", "all_sources": "on", "may_configure": "on"}
    )
    assert "for all sources; it may change settings and plan maintenance windows" in made.content.decode()
    assert ApiToken.objects.get(name="ops").may_configure
