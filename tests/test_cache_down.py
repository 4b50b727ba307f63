"""When the shared cache (Redis at CACHE_URL) cannot be reached, the API stores every report and the
pages answer: the rate limits let requests through uncounted (the password-reset form excepted, which
answers 503), and what the cache keeps is computed anew. With the cache reachable, everything works as
before.

The outage is real: the cache is Django's RedisCache at a port on 127.0.0.1 where nothing listens.
"""

import contextlib
import logging
import os
import subprocess
import sys
import time
import uuid

import pytest
import redis
from django.core import mail
from django.core.cache import cache

from completeness.settings import redis_cache
from completeness.web import shared_cache
from sources.models import Run, Source
from sources.pages.selectors.choices import CHOICES_KEY, FilterChoices
from tests.alerts.sinks import free_port
from tests.alerts.stack import redis_reachable
from tests.conftest import report, run_report, stored_rows

needs_redis = pytest.mark.skipif(not redis_reachable(), reason="Redis is not running on 127.0.0.1:6379")

REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"
# A database of the local Redis that no other test uses; each test that takes it keeps to a key prefix of its own.
REACHABLE_URL = "redis://127.0.0.1:6379/7"


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """The warnings are logged once a minute per process: each test starts with none logged."""
    monkeypatch.setattr(shared_cache, "_warned_at", {})
    monkeypatch.setattr(shared_cache, "_unlogged", {})


@pytest.fixture
def cache_down(settings):
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": f"redis://127.0.0.1:{free_port()}/0"}}


@contextlib.contextmanager
def reachable_cache(settings):
    """The local Redis as the cache, under a key prefix of this test's own, whose keys are deleted after
    it. Not cache.clear(): that empties the whole database, and CI runs the PostgreSQL and SQLite suites
    side by side against one Redis, so one suite's clear wiped the keys another's test had just written
    (and both counted the same token's requests towards one rate limit)."""
    prefix = f"test-{uuid.uuid4().hex}"
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": REACHABLE_URL, "KEY_PREFIX": prefix}}
    try:
        yield
    finally:
        client = redis.Redis.from_url(REACHABLE_URL)
        try:
            for key in client.scan_iter(match=f"{prefix}:*"):
                client.delete(key)
        finally:
            client.close()


@pytest.fixture
def cache_up(settings):
    if not redis_reachable():
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    with reachable_cache(settings):
        yield


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "completeness.cache" and r.levelno == logging.WARNING]


def test_a_redis_cache_from_cache_url_gives_up_after_cache_timeout_seconds():
    code = "from django.conf import settings; print(settings.CACHES['default']['OPTIONS'])"
    env = {**os.environ, "CACHE_URL": "redis://127.0.0.1:6390/0", "CACHE_TIMEOUT_SECONDS": "0.25"}
    env.pop("DATABASE_URL", None)
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env={**env, "DJANGO_SETTINGS_MODULE": "completeness.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "{'socket_connect_timeout': 0.25, 'socket_timeout': 0.25}", out.stderr


def test_a_report_is_stored_promptly_when_the_cache_hangs(api, settings, silent_redis):
    settings.CACHES = {"default": redis_cache(f"redis://127.0.0.1:{silent_redis}/0", 0.25)}
    started = time.monotonic()
    response = api.post_run(run_report("shop", 0))
    assert response.status_code == 201, response.content
    # Each cache call waits 0.25 s, not redis-py's own 5 s: a frozen cache held every report 10 s.
    assert time.monotonic() - started < 3


# --- the API --------------------------------------------------------------------------------------


def test_a_report_is_stored_when_the_cache_cannot_be_reached(api, cache_down, django_capture_on_commit_callbacks):
    before = stored_rows()
    # The callbacks run as after a request's commit: a new source forgets the overview's lists there.
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post_run(report())
    assert response.status_code == 201, response.content
    assert Run.objects.get().run_id == "run-1"
    assert stored_rows()["Run"] == before["Run"] + 1
    assert api.get("/sources").status_code == 200
    assert api.get("/sources/shop/runs").status_code == 200


def test_the_rate_limits_let_reports_through_uncounted_while_the_cache_is_down(api, cache_down, settings, caplog):
    settings.API_RATE_PER_TOKEN = "2/min"
    settings.API_RATE_PER_ADDRESS = "2/min"
    with caplog.at_level(logging.WARNING, logger="completeness.cache"):
        statuses = [api.post_run(report(run_id=f"r{n}")).status_code for n in range(5)]
    assert statuses == [201] * 5
    assert Run.objects.count() == 5
    # One warning per limit, not one per request.
    warnings = cache_warnings(caplog)
    assert len(warnings) == 2, warnings
    assert any("API_RATE_PER_TOKEN lets through" in w for w in warnings)
    assert all("ConnectionError" in w for w in warnings)


def test_unknown_tokens_are_still_refused_while_the_cache_is_down(api, cache_down):
    response = api.post_run(report(), token="guess")
    assert response.status_code == 401
    assert Run.objects.count() == 0


def test_the_rate_limit_refuses_over_the_limit_when_the_redis_cache_answers(api, cache_up, settings, caplog):
    settings.API_RATE_PER_TOKEN = "2/min"
    with caplog.at_level(logging.WARNING, logger="completeness.cache"):
        statuses = [api.post_run(report(run_id=f"r{n}")).status_code for n in range(3)]
    assert statuses == [201, 201, 429]
    assert Run.objects.count() == 2
    assert cache_warnings(caplog) == []


# --- the pages ------------------------------------------------------------------------------------


def a_source_in(api, region: str) -> None:
    assert api.post_run(run_report("shop", 0)).status_code == 201
    Source.objects.filter(slug="shop").update(region=region)


def test_the_overview_answers_when_the_cache_cannot_be_reached(api, viewer_client, cache_down):
    a_source_in(api, "eu")
    response = viewer_client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    # The source's row, and its region among the filter lists, read without the cache.
    assert 'data-slug="shop"' in page and "<option>eu</option>" in page


def test_the_overview_keeps_its_filter_lists_in_the_cache_when_it_answers(api, viewer_client, cache_up):
    a_source_in(api, "eu")
    assert viewer_client.get("/").status_code == 200
    kept = cache.get(CHOICES_KEY)
    assert isinstance(kept, FilterChoices) and kept.regions == ["eu"]


def test_editing_a_source_while_the_cache_is_down_is_saved(db, cache_down, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        Source.objects.create(slug="shop", region="eu")
    assert Source.objects.get().region == "eu"


def test_the_password_reset_form_answers_503_and_mails_nobody_while_the_cache_is_down(client, staff, cache_down):
    # Its limit is all that keeps the form from mailing someone over and over: it fails closed.
    staff.email = "ops@example.test"
    staff.save()
    response = client.post("/accounts/password_reset/", {"email": "ops@example.test"})
    assert response.status_code == 503 and int(response["Retry-After"]) >= 1
    assert "cannot be reached" in response.content.decode()
    assert mail.outbox == []


def test_the_password_reset_form_mails_when_the_redis_cache_answers(client, staff, cache_up):
    staff.email = "ops@example.test"
    staff.save()
    assert client.post("/accounts/password_reset/", {"email": "ops@example.test"}).status_code == 302
    assert len(mail.outbox) == 1


@needs_redis
def test_a_test_on_the_redis_cache_leaves_the_keys_of_a_suite_beside_it_alone(settings):
    # The other suite's test, midway: its key must outlive this one's start and end.
    other = redis.Redis.from_url(REACHABLE_URL)
    mine = f"other-suite-{uuid.uuid4().hex}"
    try:
        other.set(mine, b"1", ex=60)
        with reachable_cache(settings):
            cache.set("shared-name", 1)
            assert cache.get("shared-name") == 1
            assert other.get(mine) == b"1"
        assert other.get(mine) == b"1"
        assert not list(other.scan_iter(match="test-*:shared-name"))
    finally:
        other.delete(mine)
        other.close()
