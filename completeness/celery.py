"""The Celery engine: `celery -A completeness worker` runs the jobs, `celery -A completeness beat` the clock.

Loaded as Celery's Django guide says: completeness/__init__.py imports this app, so every process that
loads the project (gunicorn, manage.py, the worker, beat) publishes with it, to the queue and broker the
settings name (CELERY_TASK_QUEUE, CELERY_BROKER_URL). Without that, the web process published on
Celery's default app to its default `celery` queue, which no worker reads. The settings are read when
Celery first needs its configuration, not at import: importing the project package configures nothing.

The same jobs as django-q2 runs (sources/jobs.py), behind one task that names them (sources/tasks.py,
found by autodiscovery: this project package imports nothing from the app).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "completeness.settings")

app = Celery("completeness")
# CELERY_BROKER_URL -> broker_url, and any other CELERY_* setting Celery knows.
app.config_from_object("django.conf:settings", namespace="CELERY")


def configuration() -> dict[str, Any]:
    """What the project decides (below whatever CELERY_* settings say), from the Django settings."""
    from django.conf import settings

    return {
        # One name, one setting: the web process, the worker (which consumes the default queue) and
        # beat all use it.
        "task_default_queue": settings.CELERY_TASK_QUEUE,
        "broker_connection_retry_on_startup": True,
        # A worker or beat retries a lost broker for as long as it takes, where Celery's default gives
        # up after 100 tries (about 50 minutes of a Redis outage) and the process exits: under a
        # supervisor that restarts it this changes nothing, without one (a container with no restart
        # policy) the jobs stopped for good while the web process went on queueing them.
        "broker_connection_max_retries": None,
        # A report must not wait on a broker that is down: the outbox sweep resends what was not queued.
        "broker_connection_timeout": 2,
        # Nor on one that froze (it accepts and never answers): kombu's Redis waits forever by default,
        # so a report that changed its source's health held its gunicorn thread until Redis came back,
        # and a storm of them would hold every thread, /healthz's too. A healthy Redis answers a publish
        # in well under a millisecond; the worker's blocking read of the queue returns within a second
        # (kombu's brpop_timeout).
        "broker_transport_options": {"socket_timeout": 2, "socket_connect_timeout": 2},
        "task_publish_retry_policy": {"max_retries": 1, "interval_start": 0, "interval_step": 0.5},
        "task_ignore_result": True,
        # Delivered on ack after the run: a worker killed mid-job leaves the message for another.
        "task_acks_late": True,
        "worker_prefetch_multiplier": 1,
        "timezone": "UTC",
        "beat_schedule_filename": str(settings.VAR_DIR / "celerybeat-schedule"),
        "beat_schedule": {
            name: {
                "task": "completeness.run_job",  # sources.queue.RUN_JOB_TASK (the project imports nothing of the app)
                "schedule": timedelta(seconds=getattr(settings, setting)),
                "args": (name,),
            }
            for name, setting in settings.PERIODIC_JOBS.items()
        },
    }


app.add_defaults(configuration)
app.autodiscover_tasks()
