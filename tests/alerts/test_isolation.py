"""Isolation: a receiver that hangs delays only its own channel, never another channel's page.

Measured as the issue found it: Celery's worker as the Procfile runs it (prefork, two processes: this
machine's CPUs), a webhook that hangs 12 s per request (past the 10 s read timeout), a PagerDuty
stand-in beside it. Before channels took a lease per delivery, each hanging request held one of the two
worker processes and the pages waited behind them (10-30 s). Processes, Redis and receivers are real.
"""

import os
import time
import uuid

import pytest

from tests.alerts.sinks import HttpSink, Reply
from tests.alerts.stack import Stack, redis_reachable

NO_REDIS = not redis_reachable() and not os.environ.get("ALERTS_E2E_REQUIRE_REDIS")

PD_KEY = "0123456789abcdef0123456789abcdef"
GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=300)
ON_TIME = 2.0  # seconds from the API's answer to the page


def run(n: int, source: str, **fields) -> dict:
    return dict(
        source=source,
        run_id=f"{source}-{n}",
        started_at=f"2026-09-{n:02d}T03:00:00Z",
        finished_at=f"2026-09-{n:02d}T04:00:00Z",
        exit_code=0,
        **fields,
    )


WORKERS = {
    # As the Procfile runs it: prefork, here with this machine's two CPUs.
    "celery": [
        "-m",
        "celery",
        "-A",
        "completeness",
        "worker",
        "-c",
        "2",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "WARNING",
    ],
    # Q_WORKERS=2, the default.
    "django_q": ["manage.py", "qcluster"],
}


@pytest.mark.parametrize("engine", ["celery", "django_q"])
def test_a_hanging_webhook_does_not_delay_pagerduty(tmp_path, e2e_template, engine):
    if engine == "celery" and NO_REDIS:
        pytest.skip("Redis is not reachable on 127.0.0.1:6379")
    sources = [f"shop-{n}" for n in range(4)]
    with (
        HttpSink() as hook,
        HttpSink() as pagerduty,
        e2e_template.copy(tmp_path) as db,
        Stack(
            tmp_path,
            db.url,
            TASK_ENGINE=engine,
            Q_WORKERS=2,
            CELERY_TASK_QUEUE=f"e2e-{uuid.uuid4().hex[:8]}",
            ALERTS_PAGERDUTY_EVENTS_URL=pagerduty.url("/v2/enqueue"),
            ALERTS_SWEEP_SECONDS=60,  # the sweep is no help here: what arrives in time came straight away
            ALERTS_GROUP_SECONDS=30,
        ) as stack,
    ):
        hook.reply(*[Reply(delay=12) for _ in range(20)])
        stack.serve()
        stack.start("worker", *WORKERS[engine])
        stack.setup(["webhook", hook.url("/hook")], ["pagerduty", PD_KEY])
        stack.wait_until_serving()
        for source in sources:
            assert stack.post_run(**run(1, source, **GOOD)).status_code == 201
        time.sleep(3)  # the worker is up and idle
        answered = {}
        for source in sources:
            assert stack.post_run(**run(2, source, **BAD)).status_code == 201
            answered[source] = time.monotonic()
            time.sleep(0.3)
        pages = pagerduty.wait_for(len(sources), timeout=40)
        late = {
            page.json()["payload"]["source"]: round(page.at - answered[page.json()["payload"]["source"]], 2)
            for page in pages
        }
        print("seconds from the API's answer to the page:", late)
        assert len(pages) == len(sources), stack.logs()
        assert max(late.values()) < ON_TIME, late
        assert len(hook.received()) >= 1  # the hanging receiver was tried meanwhile


@pytest.mark.django_db
def test_a_channel_with_a_delivery_in_flight_turns_the_next_away_and_hands_it_out_when_free(http_sink, settings):
    from django.utils import timezone

    from sources.alerts import channels, delivery
    from sources.models import Notification

    settings.TASK_ENGINE, settings.TASKS_SYNC = "django_q", True  # a handed-out job runs here and now
    hanging = channels.create_channel(kind="webhook", target=http_sink.url("/hanging"))
    other = channels.create_channel(kind="webhook", target=http_sink.url("/other"))
    in_flight = channels.send_test_message(hanging)
    Notification.objects.filter(pk=in_flight.pk).update(status="sending", claimed_at=timezone.now())
    behind = channels.send_test_message(hanging)
    assert delivery.deliver(behind.pk) == "busy"  # not waited for
    assert delivery.deliver(channels.send_test_message(other).pk) == "sent"  # another channel: on time
    assert [r.path for r in http_sink.received()] == ["/other"]
    # The one in flight ends (sent again here, as its worker would have): the lane hands out the next.
    Notification.objects.filter(pk=in_flight.pk).update(status="pending", next_attempt_at=timezone.now())
    assert delivery.deliver(in_flight.pk) == "sent"
    assert Notification.objects.get(pk=behind.pk).status == "sent"
    assert [r.path for r in http_sink.received()] == ["/other", "/hanging", "/hanging"]
