"""The one Celery task: it runs a job of sources/jobs.py by name (found by the Celery app's autodiscovery).

Its name predates the move of the jobs into the app; messages already queued under it still run.
"""

from celery import shared_task

from sources import queue


@shared_task(name="completeness.run_job")
def run_job(name: str, *args):
    return queue.run(name, *args)
