"""Static files collected by an earlier version are named at check time (manage.py check, migrate): once
a manifest exists the pages name its copies, and after an upgrade the source pages loaded the old
charts.js and drew no chart."""

import json
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import SystemCheckError

from completeness.web.storage import StaticStorage
from sources.ops.static_current import stale_collected_files

CHARTS = Path(__file__).resolve().parent.parent / "completeness" / "static" / "completeness" / "charts.js"


def collected(root: Path, charts_js: bytes) -> Path:
    """A STATIC_ROOT as collectstatic leaves it, with charts.js's hashed copy holding `charts_js`."""
    (root / "completeness").mkdir(parents=True)
    (root / "completeness" / "charts.0123456789ab.js").write_bytes(charts_js)
    (root / "staticfiles.json").write_text(
        json.dumps(
            {"version": "1.1", "hash": "x", "paths": {"completeness/charts.js": "completeness/charts.0123456789ab.js"}}
        )
    )
    return root


def test_a_copy_collected_before_the_file_changed_is_named(tmp_path):
    root = collected(tmp_path, b"// charts.js of the version before\n")
    assert stale_collected_files(StaticStorage(location=str(root), base_url="/static/")) == ["completeness/charts.js"]


def test_a_current_copy_and_no_manifest_are_not(tmp_path):
    root = collected(tmp_path / "current", CHARTS.read_bytes())
    assert stale_collected_files(StaticStorage(location=str(root), base_url="/static/")) == []
    (tmp_path / "none").mkdir()
    assert stale_collected_files(StaticStorage(location=str(tmp_path / "none"), base_url="/static/")) == []


def test_manage_py_check_shows_it(settings, tmp_path):
    settings.STATIC_ROOT = str(collected(tmp_path, b"// old\n"))
    # The tests store static files without a manifest (conftest); the service's own storage here.
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "completeness.web.storage.StaticStorage"}}
    try:
        call_command("check", fail_level="WARNING")
    except SystemCheckError as exc:
        assert "completeness.W002" in str(exc) and "completeness/charts.js" in str(exc)
    else:
        raise AssertionError("check passed with a stale charts.js collected")
