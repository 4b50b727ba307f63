import json
import os
import re
import socket
import threading
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.alerts.sinks import HttpSink

# The worked examples of the contract (docs/api.md, docs/verdicts.md). The repository's copy is the
# source of truth; the project's shared contract folder, when it sits beside the checkout, is only
# compared with it (tests/test_examples.py).
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
SHARED_EXAMPLES_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "examples"


def assert_error_body(response, status: int, naming: str | None = None) -> dict:
    """An API error as the contract writes it: JSON {"detail": string, "errors": [{"path", "message"}]},
    naming `naming` (a field's path, or a word of the detail) when given."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"detail", "errors"}
    assert isinstance(body["detail"], str) and body["detail"]
    assert isinstance(body["errors"], list)
    assert all(set(e) == {"path", "message"} for e in body["errors"])
    if naming is not None:
        said = [body["detail"], *(e["path"] for e in body["errors"]), *(e["message"] for e in body["errors"])]
        assert any(naming in text for text in said), body
    return body


def stored_rows() -> dict[str, int]:
    """How many rows a report can write, per table: equal before and after means nothing was stored."""
    from sources.models import FailureWindowEvent, PauseEvent, ProxyTransition, Run, Source

    return {
        model.__name__: model.objects.count()
        for model in (Run, Source, FailureWindowEvent, ProxyTransition, PauseEvent)
    }


def make_token(name: str = "test", sources: list[str] | None = None, *, may_configure: bool = False) -> str:
    out = StringIO()
    args = [name] + [f"--source={slug}" for slug in sources or []] + (["--may-configure"] if may_configure else [])
    call_command("create_token", *args, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


@pytest.fixture(autouse=True, scope="session")
def plain_static_names():
    """Pages name static files as they are in the source tree.

    The project's storage uses the hashed names of a manifest when var/static holds one (after
    bin/serve): a stale one from an earlier serve would give the browser tests old CSS.
    tests/test_static_files.py and tests/test_serve.py test the hashed, compressed names themselves.
    """
    from django.test.utils import override_settings

    with override_settings(
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
    ):
        yield


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate limits count in the cache, which outlives a test: each test starts with none spent."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def every_report_live(settings, monkeypatch):
    """Tests tell their stories with runs on fixed dates (September 2026, so that messages and pages
    read the same every day). Received today, those reports would be history: changes of health that
    alert nobody (sources.alerts.history). Here every report is live, in this process and in the
    servers a test starts; tests/alerts/test_history.py sets the default back and tests history."""
    settings.ALERTS_HISTORY_AFTER_SECONDS = None
    monkeypatch.setenv("ALERTS_HISTORY_AFTER_SECONDS", "off")


@pytest.fixture
def unthrottled(settings):
    """Thousands of reports from one address and one token in a few seconds (a simulated fleet, months
    of a source's history): more than the API's rate limits allow."""
    settings.API_RATE_PER_ADDRESS = "off"
    settings.API_RATE_PER_TOKEN = "off"


@pytest.fixture
def token(db) -> str:
    # Most tests are about what a call does, not who may make it: their token may do all a token can,
    # as every token made before may_configure existed still may (tests/test_token_powers.py).
    return make_token("all-sources", may_configure=True)


@pytest.fixture
def api(client, token):
    return ApiClient(client, token)


class ApiClient:
    """Posts to the real API through Django's test client, with a bearer token."""

    def __init__(self, client, token: str):
        self.client = client
        self.token = token

    def headers(self, token: str | None = None) -> dict:
        token = self.token if token is None else token
        return {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}

    def post_run(self, report, token: str | None = None):
        body = report if isinstance(report, (bytes, str)) else json.dumps(report)
        # Django's test client drops the Content-Type of an empty body; a crawler's client sends it.
        return self.client.post(
            "/api/v1/runs",
            data=body,
            content_type="application/json",
            CONTENT_TYPE="application/json",
            **self.headers(token),
        )

    def get(self, path: str, token: str | None = None, **params):
        return self.client.get(f"/api/v1{path}", params, **self.headers(token))

    def post(self, path: str, payload=None, token: str | None = None):
        return self.client.post(
            f"/api/v1{path}", data=json.dumps(payload or {}), content_type="application/json", **self.headers(token)
        )


def unwrapped(html: str) -> str:
    """A page's HTML without the spans that keep each date and range of counts on one line (the
    `unbroken` filter): what a reader sees as one string."""
    return re.sub(r'<span class="nowrap">(.*?)</span>', r"\1", html)


def report(**overrides) -> dict:
    """A minimal valid report; tests say only what they are about."""
    body = {
        "source": "shop",
        "run_id": "run-1",
        "started_at": "2026-09-15T03:00:00Z",
        "finished_at": "2026-09-15T04:00:00Z",
        "exit_code": 0,
        "collected": 1000,
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}


def post_declared(api, n: int, collected: int, slug: str = "shop") -> dict:
    """Post run n of `slug` (2026-09-n, an hour long) against a declared total of 1,000: 1,000 is
    complete, 400 fails. The alert tests' way to make a source fail and recover."""
    started = datetime(2026, 9, n, 3, tzinfo=UTC)
    return post_declared_at(api, slug, started, started + timedelta(hours=1), collected, run_id=f"{slug}-{n}")


def post_declared_at(
    api, slug: str, started: datetime, finished: datetime, collected: int, *, run_id: str | None = None
) -> dict:
    """Post a run of `slug` between these instants against a declared total of 1,000."""
    answer = api.post_run(
        report(
            source=slug,
            run_id=run_id or f"{slug}-{started:%Y%m%dT%H%M}",
            started_at=f"{started:%Y-%m-%dT%H:%M:%SZ}",
            finished_at=f"{finished:%Y-%m-%dT%H:%M:%SZ}",
            declared_total=1000,
            collected=collected,
        )
    )
    assert answer.status_code == 201, answer.content
    return answer.json()


@pytest.fixture
def http_sink():
    """A real HTTP endpoint on 127.0.0.1 that records what it receives (webhooks, Slack, PagerDuty)."""
    with HttpSink() as sink:
        yield sink


@pytest.fixture
def staff(db, django_user_model):
    return django_user_model.objects.create_user("ops", password="ops-password", is_staff=True)


@pytest.fixture
def viewer(db, django_user_model):
    return django_user_model.objects.create_user("viewer", password="viewer-password", is_staff=False)


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


def day(n: int, hour: int = 3) -> str:
    """An ISO timestamp n days before 'now' (tests post recent runs so 24 h / 7 d windows see them)."""
    from datetime import UTC, datetime, timedelta

    moment = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=n, hours=hour)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def run_report(source: str, n: int, **overrides) -> dict:
    """A report of `source` started n days ago, 40 minutes long; complete unless overridden."""
    from datetime import datetime, timedelta

    started = day(n)
    finished = (datetime.fromisoformat(started.replace("Z", "+00:00")) + timedelta(minutes=40)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    body = {
        "source": source,
        "run_id": f"{source}-{n}-{overrides.pop('suffix', '')}",
        "started_at": started,
        "finished_at": finished,
        "exit_code": 0,
        "collected": 1000,
    }
    body.update(overrides)
    return body


# TEST_CLOCK=2026-12-31T23:30Z runs each test as if the clock read that instant as it starts (README,
# "Two commands"): the hour or the date at which a test that counts from now breaks, found before
# CI meets it. Parameters read the clock when the tests are collected, always some minutes before they
# run: that clock starts five minutes early.
TEST_CLOCK = os.environ.get("TEST_CLOCK")
if TEST_CLOCK:
    import time_machine

    try:
        _DESTINATION = datetime.fromisoformat(TEST_CLOCK)
    except ValueError:
        _DESTINATION = None
    if _DESTINATION is None or _DESTINATION.tzinfo is None:
        raise ValueError(f"TEST_CLOCK={TEST_CLOCK!r} is not an instant with its zone, e.g. 2026-12-31T23:30Z")
    time_machine.travel(_DESTINATION - timedelta(minutes=5), tick=True).start()

    @pytest.fixture(autouse=True)
    def clock_at_test_clock():
        with time_machine.travel(_DESTINATION, tick=True):
            yield


@pytest.fixture
def silent_redis():
    """A port that accepts connections and never answers: a Redis whose host froze (the cache's, the
    broker's)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()
