"""plotly.js is served from our own static files, taken from the installed plotly package."""

from pathlib import Path

import plotly
from django.contrib.staticfiles import finders
from django.core.management import call_command


def test_the_finder_finds_plotly_js_in_the_package():
    found = finders.find("vendor/plotly.min.js")
    assert found and Path(found).is_relative_to(Path(plotly.__file__).parent)


def test_plotly_js_is_served(client, db):
    response = client.get("/static/vendor/plotly.min.js")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert len(body) > 1_000_000 and b"plotly" in body[:2000].lower()


def test_collectstatic_copies_it(tmp_path, settings):
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    call_command("collectstatic", "--no-input", verbosity=0)
    assert (tmp_path / "vendor" / "plotly.min.js").stat().st_size > 1_000_000
    assert (tmp_path / "completeness" / "site.css").is_file()


def test_no_template_loads_anything_from_the_internet():
    templates = Path(__file__).resolve().parent.parent / "templates"
    for template in templates.rglob("*.html"):
        text = template.read_text()
        assert 'src="http' not in text and 'href="http' not in text, template
