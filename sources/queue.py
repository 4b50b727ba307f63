"""The app's one way to run work in the background: `enqueue("job_name", *args)`.

Jobs are plain functions in sources/jobs.py, registered here by name with @job, and enqueued by that
name: a job unknown here is refused when it is enqueued, not when a worker picks it up. The message
differs by engine, settings.TASK_ENGINE: django-q2 on the ORM broker (embedded) stores the function's
path, `sources.jobs.<name>`, which it imports; Celery on Redis (at scale) sends the job's name to its
one task, `run_job`, which looks it up here. The project package (completeness/) imports nothing
from the app: the Celery app finds the one task it runs, sources/tasks.py, by autodiscovery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from kombu.exceptions import OperationalError as KombuOperationalError

ENGINES = ("django_q", "celery")
# What sending a job raises when the broker cannot be reached (Celery's Redis refused or timed out;
# kombu wraps redis-py's errors in its own). django-q2's broker is the database, whose outage fails the
# transaction that would have queued the job.
QUEUE_UNREACHABLE: tuple[type[Exception], ...] = (KombuOperationalError,)
JOBS: dict[str, Callable] = {}
# The one Celery task (sources/tasks.py) by its registered name: messages are sent by name, so this
# module needs no import of it. The name predates the move of the jobs into the app; messages already
# queued under it still run.
RUN_JOB_TASK = "completeness.run_job"

log = logging.getLogger(__name__)


def job(func: Callable) -> Callable:
    JOBS[func.__name__] = func
    return func


def run(name: str, *args):
    return JOBS[name](*args)


def enqueue(name: str, *args) -> None:
    if name not in JOBS:
        raise ValueError(f"{name} is not a job in sources.jobs (have: {', '.join(sorted(JOBS))})")
    engine = settings.TASK_ENGINE
    if engine == "django_q":
        from django_q.tasks import async_task

        async_task(f"sources.jobs.{name}", *args, task_name=f"{name}{list(args)}", sync=settings.TASKS_SYNC)
    elif engine == "celery":
        from celery import current_app

        if settings.TASKS_SYNC:
            _run_inline(name, *args)
        else:
            current_app.send_task(RUN_JOB_TASK, args=(name, *args))
    else:
        raise ImproperlyConfigured(f"TASK_ENGINE is {engine!r}; it must be one of {', '.join(ENGINES)}")


def _run_inline(name: str, *args) -> None:
    """TASKS_SYNC (tests and debugging): the job runs where it is enqueued, and fails as a queued job
    fails, logged rather than raised into the request that enqueued it."""
    try:
        run(name, *args)
    except Exception:
        log.exception("job %s%s failed", name, list(args))


def enqueue_at(when: datetime, name: str, *args) -> bool:
    """Run the job at `when` rather than now, where the engine can: Celery holds the message until then
    (a countdown), so a retry goes out when it is due instead of with the next sweep. django-q2 has no
    such message (its scheduler looks once a minute at best): there the sweep hands it out. Returns
    whether a message was queued; the sweep stays the safety net either way."""
    if name not in JOBS:
        raise ValueError(f"{name} is not a job in sources.jobs (have: {', '.join(sorted(JOBS))})")
    if settings.TASK_ENGINE != "celery" or settings.TASKS_SYNC:
        return False
    from celery import current_app

    current_app.send_task(RUN_JOB_TASK, args=(name, *args), eta=when)
    return True
