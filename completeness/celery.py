"""The Celery engine: `celery -A completeness worker` runs the jobs, `celery -A completeness beat` the clock.

The same jobs as django-q2 runs (sources/jobs.py), behind one task that names them (sources/tasks.py,
found by autodiscovery: this project package imports nothing from the app).
"""

from __future__ import annotations

import os
from datetime import timedelta

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "completeness.settings")

from django.conf import settings  # noqa: E402  (needs the settings module named first)


app = Celery("completeness")
app.conf.update(
    broker_url=settings.CELERY_BROKER_URL,
    task_default_queue=settings.CELERY_TASK_QUEUE,
    broker_connection_retry_on_startup=True,
    # A report must not wait on a broker that is down: the outbox sweep resends what was not queued.
    broker_connection_timeout=2,
    task_publish_retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.5},
    task_ignore_result=True,
    # Delivered on ack after the run: a worker killed mid-job leaves the message for another.
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    timezone="UTC",
    beat_schedule_filename=str(settings.VAR_DIR / "celerybeat-schedule"),
    beat_schedule={
        name: {"task": "completeness.run_job", "schedule": timedelta(seconds=getattr(settings, setting)), "args": (name,)}
        for name, setting in settings.PERIODIC_JOBS.items()
    },
)
app.autodiscover_tasks()
