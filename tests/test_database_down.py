"""When the database cannot be reached, the API answers 503 with Retry-After and a JSON body, and the
pages a plain error page: never a traceback, never a 500.

The outage is real: the connection is swapped for one to a database that is not there (a closed port
on PostgreSQL, a file in a missing folder on SQLite), so every query fails as it would in production.
"""

import copy
import logging
import signal
import socket

import pytest
from django.db import connections
from django.db.utils import load_backend

from tests.alerts.sinks import free_port
from tests.conftest import report


@pytest.fixture
def database_down(db, tmp_path):
    live = connections["default"]
    settings = copy.deepcopy(live.settings_dict)
    if live.vendor == "postgresql":
        settings.update(HOST="127.0.0.1", PORT=str(free_port()))
    else:
        settings["NAME"] = str(tmp_path / "no-such-folder" / "db.sqlite3")
    dead = load_backend(settings["ENGINE"]).DatabaseWrapper(settings, "default")
    connections["default"] = dead
    try:
        yield
    finally:
        dead.close()
        connections["default"] = live


def test_the_api_answers_503_with_retry_after_and_a_json_body_when_the_database_is_down(api, database_down):
    response = api.post_run(report())
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert int(response["Retry-After"]) > 0
    body = response.json()
    assert body["errors"] == [] and "database" in body["detail"]
    for path in ("/sources", "/sources/shop", "/sources/shop/runs"):
        assert api.get(path).status_code == 503, path
    assert api.post("/sources/shop/pause", {"reason": "x"}).status_code == 503


@pytest.fixture
def down_warnings(caplog, monkeypatch):
    from sources.api import middleware

    monkeypatch.setattr(middleware, "_warned_at", None, raising=False)
    monkeypatch.setattr(middleware, "_unlogged", 0, raising=False)
    caplog.set_level(logging.WARNING, logger="sources.api.middleware")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "sources.api.middleware"]


def test_the_log_says_the_database_is_down_and_what_to_do_once_a_minute(
    api, staff_client, database_down, down_warnings, monkeypatch
):
    # Django's own line said only "Service Unavailable: /api/v1/runs", once per request.
    from sources.api import middleware

    assert api.post_run(report()).status_code == 503
    [warning] = down_warnings()
    assert warning.startswith("the database cannot be reached, answering 503 with Retry-After: OperationalError: ")
    assert "check that the database DATABASE_URL names runs and accepts connections" in warning
    assert "\n" not in warning
    assert api.post_run(report()).status_code == 503 and staff_client.get("/").status_code == 503
    assert len(down_warnings()) == 1  # not a line per request
    monkeypatch.setattr(middleware, "_warned_at", middleware._warned_at - middleware.WARN_EVERY_SECONDS)
    assert staff_client.get("/").status_code == 503  # the pages say it too
    assert "answering 503 with Retry-After (2 more since the last warning): " in down_warnings()[-1]


def test_the_log_says_nothing_of_the_database_while_it_is_up(api, staff_client, down_warnings):
    assert api.post_run(report()).status_code == 201 and staff_client.get("/").status_code == 200
    assert down_warnings() == []


def test_a_celery_job_that_cannot_reach_the_database_logs_one_line(database_down, caplog):
    # The worker's log held a fifty-line traceback per job per minute for as long as an outage lasted.
    from sources.tasks import run_job

    with caplog.at_level(logging.WARNING, logger="sources.tasks"):
        assert run_job("check_overdue") is None
    [line] = [r for r in caplog.records if r.name == "sources.tasks"]
    assert line.exc_info is None and "\n" not in line.getMessage()
    assert line.getMessage().startswith("job check_overdue[] did not run: the database cannot be reached (")


def test_a_celery_job_runs_without_a_word_while_the_database_is_up(db, caplog):
    from sources.tasks import run_job

    with caplog.at_level(logging.WARNING, logger="sources.tasks"):
        assert isinstance(run_job("check_overdue"), dict)
    assert [r for r in caplog.records if r.name == "sources.tasks"] == []


def test_the_api_answers_as_usual_when_the_database_is_up(api):
    response = api.post_run(report())
    assert response.status_code == 201
    assert "Retry-After" not in response


@pytest.mark.parametrize("url", ["/", "/sources/shop/", "/runs/1/", "/proxies/", "/alerts/", "/admin/"])
def test_pages_answer_a_plain_503_page_when_the_database_is_down(staff_client, database_down, url):
    response = staff_client.get(url)
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "Temporarily unavailable" in page and "Traceback" not in page


def test_the_login_page_answers_a_plain_503_page_when_the_database_is_down(client, database_down):
    response = client.post("/accounts/login/", {"username": "ops", "password": "ops-password"})
    assert response.status_code == 503
    assert "Temporarily unavailable" in response.content.decode()


def test_pages_answer_as_usual_when_the_database_is_up(api, staff_client):
    api.post_run(report())
    assert staff_client.get("/sources/shop/").status_code == 200


@pytest.fixture
def database_hung(db, settings):
    """A PostgreSQL address that takes the connection and never answers, as a frozen host does: the
    kernel completes the handshake from its backlog, and nothing ever replies to the startup."""
    live = connections["default"]
    if live.vendor != "postgresql":
        pytest.skip("a network database's hang; SQLite has no connection to wait on")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        hung = copy.deepcopy(live.settings_dict)
        hung.update(HOST="127.0.0.1", PORT=str(silent.getsockname()[1]))
        hung["OPTIONS"]["connect_timeout"] = 2
        dead = load_backend(hung["ENGINE"]).DatabaseWrapper(hung, "default")
        connections["default"] = dead
        # Were the wait unbounded, the test would hang with the request: fail it instead.
        previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the request waited on a hung database"))
        signal.alarm(30)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
            dead.close()
            connections["default"] = live


def test_a_database_that_hangs_is_given_up_and_answered_503_like_one_that_refuses(api, client, database_hung):
    response = api.post_run(report())
    assert response.status_code == 503 and "database" in response.json()["detail"]
    ready = client.get("/readyz")
    assert ready.status_code == 503 and "database" in ready.json()["down"]


def test_connections_carry_a_connect_timeout_and_keepalives():
    live = connections["default"]
    if live.vendor != "postgresql":
        pytest.skip("PostgreSQL's connection options")
    options = live.settings_dict["OPTIONS"]
    assert options["connect_timeout"] == 5 and options["keepalives"] == 1 and options["tcp_user_timeout"] == 30_000
