"""Static file names: hashed once collectstatic wrote a manifest, plain before.

The served headers (brotli/gzip, a year-long immutable cache) are checked against bin/serve in
tests/test_serve.py, which collects for real; compressing plotly.js takes too long to repeat here.
"""

import json

from completeness.web.storage import StaticStorage


def test_without_a_manifest_the_plain_name_is_used(tmp_path):
    storage = StaticStorage(location=str(tmp_path), base_url="/static/")
    assert storage.url("completeness/site.css") == "/static/completeness/site.css"


def test_with_a_manifest_the_hashed_name_is_used_and_an_unlisted_file_keeps_its_own(tmp_path):
    (tmp_path / "staticfiles.json").write_text(
        json.dumps(
            {
                "version": "1.1",
                "hash": "x",
                "paths": {"vendor/plotly.min.js": "vendor/plotly.min.0123456789ab.js"},
            }
        )
    )
    storage = StaticStorage(location=str(tmp_path), base_url="/static/")
    assert storage.url("vendor/plotly.min.js") == "/static/vendor/plotly.min.0123456789ab.js"
    assert storage.url("completeness/new.css") == "/static/completeness/new.css"


def test_the_overview_does_not_load_plotly_and_a_source_page_does(staff_client, api):
    from tests.conftest import run_report

    api.post_run(run_report("shop", 1))
    assert b"plotly" not in staff_client.get("/").content
    assert b"vendor/plotly-cartesian.min.js" in staff_client.get("/sources/shop/").content
