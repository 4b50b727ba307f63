"""enqueue(job, *args): hand a job from completeness.jobs to the engine settings.TASK_ENGINE names."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

ENGINES = ("django_q", "celery")


def enqueue(job: Callable, *args) -> None:
    from completeness.jobs import JOBS

    name = job.__name__
    if JOBS.get(name) is not job:
        raise ValueError(f"{name} is not a job in completeness.jobs")
    engine = settings.TASK_ENGINE
    if engine == "django_q":
        from django_q.tasks import async_task

        async_task(f"completeness.jobs.{name}", *args, task_name=f"{name}{list(args)}", sync=settings.TASKS_SYNC)
    elif engine == "celery":
        from completeness.celery import run_job

        if settings.TASKS_SYNC:
            run_job.apply(args=(name, *args))
        else:
            run_job.apply_async(args=(name, *args))
    else:
        raise ImproperlyConfigured(f"TASK_ENGINE is {engine!r}; it must be one of {', '.join(ENGINES)}")
