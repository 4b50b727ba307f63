"""The hand-made inputs that once broke the server, replayed against the Procfile's web line (gunicorn
with gunicorn.conf.py, threaded workers, a database of its own) as production runs it: each is a 4xx
JSON answer naming what is wrong, and nothing is stored. tests/test_fuzz_api.py sends the same inputs
through Django in-process; this is the real server, its middleware and its workers."""

from __future__ import annotations

import json

import pytest
import requests

from tests.conftest import report
from tests.test_fuzz_api import EXAMPLES
from tests.web_process import procfile_web

SOURCE = "elsewhere"  # the one source procfile_web's token may post for


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with procfile_web(tmp_path_factory.mktemp("inputs"), workers=2) as (port, token):
        base = f"http://127.0.0.1:{port}/api/v1"
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        # A source with a problem, so that a well-formed acknowledgement would be stored.
        failing = session.post(f"{base}/runs", json=report(source=SOURCE, run_id="run-0", collected=100), timeout=30)
        assert failing.status_code == 201, failing.text
        yield base, session


def stored(base: str, session: requests.Session) -> list:
    """What an input could have written, as the API reads it back: the source with its settings and
    acknowledgement, its runs, and which sources exist."""
    source = session.get(f"{base}/sources/{SOURCE}", timeout=30).json()
    runs = session.get(f"{base}/sources/{SOURCE}/runs", params={"per_page": 200}, timeout=30).json()
    listing = session.get(f"{base}/sources", timeout=30).json()
    return [source, [run["run_id"] for run in runs["items"]], [s["slug"] for s in listing["items"]]]


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_hand_made_input_gets_a_4xx_json_answer_from_the_real_server_and_stores_nothing(web, name):
    base, session = web
    (path, method, slug), body = EXAMPLES[name]
    if slug is not None:
        path = path.replace("{slug}", SOURCE)
    if isinstance(body, dict) and "source" in body:
        body = {**body, "source": SOURCE}
    before = stored(base, session)
    response = session.request(
        method,
        base + path.removeprefix("/api/v1"),
        data=json.dumps(body),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert response.headers["Content-Type"].startswith("application/json")
    answer = response.json()
    assert answer["detail"] and isinstance(answer["errors"], list), answer
    assert stored(base, session) == before
