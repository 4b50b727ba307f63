"""The one Celery task: it runs a job of sources/jobs.py by name (found by the Celery app's autodiscovery;
sources.queue sends messages to it by its registered name). And what beat does when it starts."""

import logging

from celery import beat, shared_task
from celery.signals import beat_init
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.utils import timezone

from completeness.text import one_line
from sources import queue
from sources.alerts import watch

log = logging.getLogger(__name__)


@shared_task(name=queue.RUN_JOB_TASK)
def run_job(name: str, *args):
    try:
        return queue.run(name, *args)
    except (OperationalError, InterfaceError) as exc:
        # One line per job, not Celery's fifty-line traceback for each (two jobs a minute, more with
        # deliveries, for as long as the outage lasts). The message is acked either way (acks_late acks a
        # failure too); what the job had to do is still in the database, for its next run or the sweep.
        log.warning(
            "job %s%s did not run: the database cannot be reached (%s: %s); it runs again at its next "
            "interval, and what it had to do waits in the database",
            name,
            list(args),
            type(exc).__name__,
            one_line(str(exc)),
        )
        return None


@beat_init.connect
def send_due_jobs(sender: beat.Service, **kwargs) -> None:
    """Beat counts each job's first interval from its own start (its schedule file remembers runs, but
    a container's is gone when it is recreated): the daily prune and hourly digests first ran a full
    interval after every start, and prune never where beat restarts more often than daily. django-q2
    keeps its schedules in the database and runs what fell due while it was down. So here, once at
    start: each periodic job that never ran, or whose last run (as /readyz reads it) is at least an
    interval old, is sent now through beat's own schedule, as a tick sends it: its next run is then an
    interval from now, and a schedule file that has it due too does not send it again. The others keep
    their schedule."""
    try:
        due = [job.name for job in watch.jobs(timezone.now()) if job.due]
    except DatabaseError:
        log.warning("beat could not read when the periodic jobs last ran: each keeps its schedule", exc_info=True)
        return
    finally:
        connection.close()  # beat uses the database nowhere else: it holds no connection open
    scheduler = sender.scheduler
    for name in due:
        entry = scheduler.schedule.get(name)
        if entry is not None:
            scheduler.reserve(entry)
            scheduler.apply_entry(entry, producer=scheduler.producer)
