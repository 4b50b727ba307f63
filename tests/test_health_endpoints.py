"""/healthz and /readyz: answered without a login; /readyz is 503 naming what is down."""

import json

import pytest
from django.test import Client
from django.utils import timezone

from tests.alerts.sinks import free_port
from tests.alerts.stack import redis_reachable

pytestmark = pytest.mark.django_db

needs_redis = pytest.mark.skipif(not redis_reachable(), reason="Redis is not running on 127.0.0.1:6379")
REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"


def test_healthz_answers_without_a_login_or_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_uptime_checks_that_send_head_get_the_same_answer_as_get(staff_client):
    # Load balancers and uptime monitors often probe with HEAD: 405 would read as "down".
    anonymous = Client()
    assert anonymous.head("/healthz").status_code == 200
    assert anonymous.head("/readyz").status_code == anonymous.get("/readyz").status_code == 200
    assert anonymous.head("/").status_code == 302  # the login, as for GET
    assert staff_client.head("/").status_code == 200
    assert staff_client.post("/").status_code == 405


def test_readyz_is_ready_on_the_embedded_engine_whose_broker_is_the_database(client, settings):
    settings.TASK_ENGINE = "django_q"
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ready" and body["down"] == [] and body["degraded"] == []
    assert body["checks"] == {"database": {"ok": True}, "broker": {"ok": True}, "cache": {"ok": True}}
    assert response["Cache-Control"].startswith("max-age=0")


@needs_redis
def test_readyz_is_ready_on_celery_when_redis_answers(client, settings):
    settings.TASK_ENGINE = "celery"
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["task_engine"] == "celery"


def test_readyz_is_503_naming_the_broker_when_redis_does_not_answer(client, settings):
    settings.TASK_ENGINE = "celery"
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["down"] == ["broker"]
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["broker"]["ok"] is False
    assert "ConnectionError" in body["checks"]["broker"]["error"]


def test_readyz_names_the_cache_as_degraded_when_its_redis_does_not_answer_and_stays_ready(client, settings):
    # The API and the pages go on without it (tests/test_cache_down.py): an operator is told, and no
    # load balancer takes the process out, which would refuse reports it still stores.
    settings.TASK_ENGINE = "django_q"
    port = free_port()  # nothing listens there
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": f"redis://:cachepass@127.0.0.1:{port}/0"}}
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded" and body["down"] == [] and body["degraded"] == ["cache"]
    assert body["checks"]["cache"] == {"ok": False, "error": "ConnectionError"}
    text = response.content.decode()
    assert str(port) not in text and "cachepass" not in text


@needs_redis
def test_readyz_is_ready_when_the_redis_cache_answers(client, settings):
    settings.TASK_ENGINE = "django_q"
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": "redis://127.0.0.1:6379/7"}}
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"]["cache"] == {"ok": True}


def test_readyz_names_the_cache_as_degraded_when_the_file_cache_cannot_be_written(client, settings, tmp_path):
    settings.TASK_ENGINE = "django_q"
    (tmp_path / "a-file").write_text("")
    settings.CACHES = {
        "default": {
            "BACKEND": "completeness.web.counters.SharedFileCache",
            "LOCATION": str(tmp_path / "a-file" / "cache"),
        }
    }
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["degraded"] == ["cache"] and response.json()["status"] == "degraded"


def test_readyz_is_503_naming_the_database_and_its_queue_when_the_database_does_not_answer(
    client, settings, monkeypatch
):
    from sources.ops import checks

    class Refusing:
        def cursor(self):
            raise OSError("connection refused")

    # The test's own database must keep working for the test client; the checks see one that refuses.
    monkeypatch.setattr(checks, "connections", {"default": Refusing()})
    # django-q2's queue is a table of that same database: down with it.
    monkeypatch.setattr(checks, "_orm_queue", checks.database)
    settings.TASK_ENGINE = "django_q"
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["database", "broker"]
    assert body["checks"]["database"] == {"ok": False, "error": "OSError"}


def test_readyz_tells_anonymous_callers_what_is_down_but_not_where(client, settings):
    settings.TASK_ENGINE = "celery"
    port = free_port()
    settings.CELERY_BROKER_URL = f"redis://:brokerpass@127.0.0.1:{port}/0"  # nothing listens there
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["broker"] and body["checks"]["broker"] == {"ok": False, "error": "ConnectionError"}
    text = response.content.decode()
    assert str(port) not in text and "127.0.0.1" not in text and "brokerpass" not in text


def test_readyz_tells_staff_where(client, settings, staff):
    client.force_login(staff)
    settings.TASK_ENGINE = "celery"
    port = free_port()
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"
    body = client.get("/readyz").json()
    assert (
        body["checks"]["broker"]["error"].startswith("ConnectionError")
        and str(port) in body["checks"]["broker"]["error"]
    )


def test_readyz_hides_where_a_periodic_job_failed_from_anonymous_callers(client, settings):
    from sources.alerts import watch

    settings.TASK_ENGINE = "django_q"
    watch.record_run(
        "prune", started_at=timezone.now(), error="OperationalError: could not connect to db.internal:5432"
    )
    body = client.get("/readyz").json()
    assert body["alert_path"]["jobs"]["prune"]["last_error"] == "OperationalError"
    assert "db.internal" not in json.dumps(body)


def test_the_probes_need_no_login_where_the_pages_do(client):
    assert client.get("/").status_code == 302  # the overview asks for a login
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code in (200, 503)
