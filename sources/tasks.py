"""The one Celery task: it runs a job of sources/jobs.py by name (found by the Celery app's autodiscovery;
sources.queue sends messages to it by its registered name)."""

from celery import shared_task

from sources import queue


@shared_task(name=queue.RUN_JOB_TASK)
def run_job(name: str, *args):
    return queue.run(name, *args)
