"""Every form field's aria-describedby names elements the page has: a screen reader reads a field's
help and its error through those ids, and the settings form pointed at ids nobody rendered."""

import re

import pytest

from tests.conftest import run_report
from tests.test_source_settings import VALID

DESCRIBED_BY = re.compile(r'aria-describedby="([^"]+)"')


def dangling(page: str) -> list[str]:
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    return [name for names in DESCRIBED_BY.findall(page) for name in names.split() if name not in ids]


@pytest.fixture
def shop(api):
    api.post_run(run_report("shop", 1))


@pytest.mark.parametrize("path", ["/sources/shop/", "/alerts/", "/alerts/channels/", "/runs/1/"])
def test_every_description_a_field_names_is_on_the_page(shop, staff_client, path):
    page = staff_client.get(path).content.decode()
    assert dangling(page) == [], path


def test_a_settings_error_is_described_too(shop, staff_client):
    page = staff_client.post("/sources/shop/settings", {**VALID, "min_margin": "60%"}).content.decode()
    assert 'aria-describedby="id_min_margin_helptext id_min_margin_error"' in page
    assert 'id="id_min_margin_error"' in page and dangling(page) == []


@pytest.mark.parametrize("path", ["/alerts/channels/", "/admin/sources/channel/add/"])
def test_a_channels_target_and_secret_are_not_the_logins_password(admin_client, path):
    # Masked as passwords, they are what a browser's password manager fills with the saved login (the
    # name before them with the user name) and offers to save a webhook URL over: "new-password" says
    # neither is the login's.
    page = admin_client.get(path).content.decode()
    for name in ("target", "secret"):
        field = re.search(rf'<input [^>]*name="{name}"[^>]*>', page)
        assert field is not None and 'type="password"' in field[0], name
        assert 'autocomplete="new-password"' in field[0], field[0]
