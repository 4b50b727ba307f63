"""A report that flips its source while Celery's broker is down: stored and answered as usual, its
notification waits in the outbox for the sweep, and the web log says so in one line (it held a
hundred-line traceback from Django's robust on_commit for each such report).

The broker is real: Redis on 127.0.0.1, or a port where nothing listens."""

import logging
import signal
import time
import uuid

import pytest
import redis

from completeness.celery import app as celery_app
from sources.alerts import channels
from tests.alerts.sinks import free_port
from tests.alerts.stack import redis_reachable
from tests.conftest import post_declared

needs_redis = pytest.mark.skipif(not redis_reachable(), reason="Redis is not running on 127.0.0.1:6379")
REDIS_DB = 12  # a database of the local Redis no other test uses; the queue is this test's own too


@pytest.fixture
def celery_on(settings, monkeypatch):
    """Web-side Celery publishing to `broker`, on a queue of the test's own."""
    queue = f"broker-down-{uuid.uuid4().hex[:8]}"

    def on(broker: str) -> str:
        settings.TASK_ENGINE, settings.TASKS_SYNC = "celery", False
        monkeypatch.setitem(celery_app.conf, "broker_url", broker)
        monkeypatch.setitem(celery_app.conf, "task_default_queue", queue)
        # The connection and producer pools are made once per process from the broker URL: the test's
        # own, and the process's back afterwards.
        monkeypatch.setattr(celery_app, "_pool", None)
        monkeypatch.setattr(celery_app.amqp, "_producer_pool", None)
        return queue

    return on


def flip(api, django_capture_on_commit_callbacks, caplog):
    channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")
    post_declared(api, 1, 1000)
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        answer = post_declared(api, 2, 400)
    assert answer["verdict"] == "incomplete"


def test_a_flip_while_the_broker_is_down_is_stored_and_logged_in_one_line(
    api, celery_on, django_capture_on_commit_callbacks, caplog
):
    from sources.models import Notification

    celery_on(f"redis://127.0.0.1:{free_port()}/0")
    flip(api, django_capture_on_commit_callbacks, caplog)
    waiting = list(Notification.objects.values_list("pk", "status"))
    assert [status for _, status in waiting] == ["pending"]  # the sweep sends it once the broker is back
    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.name == "sources.alerts.outbox" and line.exc_info is None
    assert line.getMessage().startswith(
        f"could not queue the delivery of notification(s) {waiting[0][0]}, the task queue cannot be reached "
        "(OperationalError: "
    )
    assert "the sweep_outbox job sends them once the broker answers again" in line.getMessage()


def test_a_flip_while_the_broker_is_frozen_is_answered_within_seconds(
    api, celery_on, silent_redis, django_capture_on_commit_callbacks, caplog
):
    # A Redis that accepts and never answers held the report's request (and its gunicorn thread)
    # until Redis came back: kombu waits forever on a socket by default.
    from sources.models import Notification

    celery_on(f"redis://127.0.0.1:{silent_redis}/0")
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the report waited on the frozen broker"))
    signal.alarm(30)
    try:
        flip(api, django_capture_on_commit_callbacks, caplog)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 15
    assert list(Notification.objects.values_list("status", flat=True)) == ["pending"]
    assert any(r.getMessage().startswith("could not queue the delivery") for r in caplog.records)


@needs_redis
def test_a_flip_while_the_broker_answers_is_queued_without_a_word(
    api, celery_on, django_capture_on_commit_callbacks, caplog
):
    queue = celery_on(f"redis://127.0.0.1:6379/{REDIS_DB}")
    local = redis.Redis(db=REDIS_DB)
    try:
        flip(api, django_capture_on_commit_callbacks, caplog)
        assert local.llen(queue) == 1  # the delivery job, for the worker
    finally:
        # The queue and kombu's bindings of it, which it writes beside.
        local.delete(queue, *local.keys(f"*{queue}*"))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
