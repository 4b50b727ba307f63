"""A NUL character typed (or posted) into a page's form is a form error, never a 500: PostgreSQL refuses
NUL in text and in JSON, and SQLite would keep a note nobody can read back whole.
The same forms with the same text minus the NUL are stored as before."""

import pytest

from sources.models import Acknowledgement, BaselineAcceptance, Source
from tests.conftest import run_report
from tests.test_source_settings import VALID


@pytest.fixture
def failing(api):
    api.post_run(run_report("shop", 2, collected=9000))
    return api.post_run(run_report("shop", 1, collected=3000)).json()


def messages_of(response) -> str:
    return " ".join(str(m) for m in response.context["messages"])


def test_an_acknowledgement_note_with_a_nul_is_refused_with_a_message(failing, staff_client):
    response = staff_client.post("/alerts/acknowledge/shop/", {"note": "on\x00it"}, follow=True)
    assert response.status_code == 200
    assert "note: Null characters are not allowed." in messages_of(response)
    assert not Acknowledgement.objects.exists()
    response = staff_client.post("/alerts/acknowledge/shop/", {"note": "on it"}, follow=True)
    assert Acknowledgement.objects.get().note == "on it"


def test_an_accept_baseline_note_with_a_nul_is_refused_with_a_message(failing, staff_client):
    response = staff_client.post(f"/runs/{failing['run']}/accept-baseline", {"note": "shrank\x00"}, follow=True)
    assert response.status_code == 200
    assert "note: Null characters are not allowed." in messages_of(response)
    assert not BaselineAcceptance.objects.exists()
    staff_client.post(f"/runs/{failing['run']}/accept-baseline", {"note": "shrank"})
    assert BaselineAcceptance.objects.get().note == "shrank"


@pytest.mark.parametrize(
    "field, value",
    [
        ("field_minimums", "pri\x00ce = 95%"),
        ("field_minimums", "price = 95%\x00"),
        ("owner", "ops\x00"),
        ("team", "\x00"),
        ("runbook_url", "https://wiki.example/run\x00book"),
        ("min_completeness", "98%\x00"),
        ("expected_interval", "6h\x00"),
    ],
)
def test_a_settings_field_with_a_nul_is_a_form_error_and_nothing_is_saved(failing, staff_client, field, value):
    before = Source.objects.values().get(slug="shop")
    response = staff_client.post("/sources/shop/settings", {**VALID, field: value})
    assert response.status_code == 200
    assert "Settings not saved" in response.content.decode()
    assert response.context["settings_form"].errors[field], response.context["settings_form"].errors
    assert Source.objects.values().get(slug="shop") == before


def test_the_same_settings_without_the_nul_are_saved(failing, staff_client):
    response = staff_client.post("/sources/shop/settings", {**VALID, "field_minimums": "price = 95%", "owner": "ops"})
    assert response.status_code == 302
    source = Source.objects.get(slug="shop")
    assert (source.field_minimums, source.owner) == ({"price": 0.95}, "ops")
