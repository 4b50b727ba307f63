"""The web process publishes with the project's Celery app, to the queue and broker its settings name.

Before completeness/__init__.py loaded the app, a job published from gunicorn used Celery's default
app and its default `celery` queue, which no worker reads: alerts waited for the sweep.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import completeness.wsgi  # what gunicorn loads, and nothing else
from celery import current_app  # what sources.queue sends with
print(current_app.main, current_app.conf.task_default_queue, current_app.conf.broker_url)
"""


def test_the_web_process_publishes_to_the_configured_queue_on_the_configured_broker():
    env = {
        **os.environ,
        "CELERY_TASK_QUEUE": "probe-queue",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/9",
        "DJANGO_SETTINGS_MODULE": "completeness.settings",
    }
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["completeness", "probe-queue", "redis://127.0.0.1:6379/9"]


def test_beat_schedules_every_periodic_job_on_the_same_queue(settings):
    from completeness import celery_app

    assert set(celery_app.conf.beat_schedule) == set(settings.PERIODIC_JOBS)
    assert celery_app.conf.task_default_queue == settings.CELERY_TASK_QUEUE
