"""Tokens: printed once, stored as a hash, scoped, revocable from the admin."""

import hashlib
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from sources.api.auth import authenticate
from sources.models import ApiToken, Source
from tests.conftest import make_token, report


def test_create_token_prints_the_raw_token_last_and_stores_only_a_hash(db):
    out = StringIO()
    call_command("create_token", "crawler-7", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    token = ApiToken.objects.get(name="crawler-7")
    assert token.all_sources
    assert raw not in {token.key_hash, token.key_id} and token.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert authenticate(raw) == token


def test_a_token_with_sources_covers_only_them(db):
    raw = make_token("two", ["alpha", "beta"])
    token = authenticate(raw)
    assert not token.all_sources
    assert sorted(token.sources.values_list("slug", flat=True)) == ["alpha", "beta"]


def test_create_token_refuses_a_bad_slug(db):
    with pytest.raises(CommandError, match="not a source slug"):
        call_command("create_token", "x", "--source=Not A Slug", stdout=StringIO())
    assert not ApiToken.objects.exists()


def test_a_tampered_token_does_not_authenticate(db):
    raw = make_token()
    assert authenticate(raw[:-1] + ("A" if raw[-1] != "A" else "B")) is None
    assert authenticate(raw + "x") is None
    assert authenticate("") is None


def test_a_scoped_token_never_creates_sources(api):
    scoped = make_token("scoped", ["known"])
    assert api.post_run(report(source="unknown"), token=scoped).status_code == 403
    assert list(Source.objects.values_list("slug", flat=True)) == ["known"]


def test_last_used_is_recorded(api):
    api.post_run(report())
    assert ApiToken.objects.get().last_used_at is not None


def test_the_admin_lists_tokens_and_revokes_them(admin_client, api):
    raw_token = api.token
    page = admin_client.get("/admin/sources/apitoken/")
    assert page.status_code == 200 and b"all sources" in page.content
    token = ApiToken.objects.get()
    response = admin_client.post(
        "/admin/sources/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}, follow=True
    )
    assert response.status_code == 200
    assert authenticate(raw_token) is None
    assert api.post_run(report()).status_code == 401


def test_the_admin_creates_a_token_and_shows_it_once_uncached(admin_client, api):
    Source.objects.create(slug="shop", name="Shop")
    shop = Source.objects.get(slug="shop")
    response = admin_client.post("/admin/sources/apitoken/add/", {"name": "ci crawler", "sources": [shop.pk]})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    raw = re.search(r'<code id="new-token"[^>]*>([^<]+)</code>', response.content.decode()).group(1)
    token = ApiToken.objects.get(name="ci crawler")
    assert raw.startswith(f"cmpl_{token.key_id}_") and token.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in str(ApiToken.objects.filter(pk=token.pk).values().get())
    assert list(token.sources.all()) == [shop] and not token.all_sources
    assert authenticate(raw) == token
    # Shown once: the token's page afterwards has its key id, never the secret.
    page = admin_client.get(f"/admin/sources/apitoken/{token.pk}/change/").content.decode()
    assert token.key_id in page and raw not in page


def test_the_admin_refuses_a_token_for_no_source_and_makes_none(admin_client, db):
    response = admin_client.post("/admin/sources/apitoken/add/", {"name": "nothing"})
    assert response.status_code == 200
    assert "Choose the sources this token may post for, or tick all sources." in response.content.decode()
    assert not ApiToken.objects.filter(name="nothing").exists()
