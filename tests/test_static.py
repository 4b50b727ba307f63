"""plotly.js is served from our own static files, taken from the installed plotly package."""

import re
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


def test_the_vendored_partial_bundle_is_the_plotly_js_the_python_package_ships():
    """The figures are made by plotly (Python) for its own plotly.js; the pages draw them with the
    cartesian partial bundle vendored by bin/vendor-plotly. An upgrade of the
    package without running the script again fails here."""
    root = Path(__file__).resolve().parent.parent
    package = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()[:300]
    vendored = (root / "completeness" / "static" / "vendor" / "plotly-cartesian.min.js").read_text()[:300]
    version = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", package).group(1)
    assert f"(cartesian - minified) v{version}" in vendored
    assert f"VERSION={version}\n" in (root / "bin" / "vendor-plotly").read_text()
    assert "MIT License" in (root / "completeness" / "static" / "vendor" / "plotly-cartesian.LICENSE.txt").read_text()
