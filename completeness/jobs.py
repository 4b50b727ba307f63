"""The background jobs: plain functions, run by whichever engine settings.TASK_ENGINE names.

Each job is safe to run twice or concurrently: deliveries are claimed, flips are made under the
source's row lock, and the sweep only hands out work.
"""

from __future__ import annotations

from collections.abc import Callable


def deliver_notification(notification_id: int) -> str:
    from sources.alerts import delivery

    return delivery.deliver(notification_id)


def sweep_outbox() -> int:
    from sources.alerts import delivery

    return len(delivery.sweep())


def check_overdue() -> dict:
    """Every minute: lift pauses whose end time came, flip sources that stopped reporting, then remind
    of problems nobody has acknowledged."""
    from sources.alerts import overdue, reminders

    lifted = overdue.lift_expired_pauses()
    flipped = overdue.mark_overdue()
    return {"pauses_lifted": lifted, "overdue": flipped, "reminders": reminders.send_reminders()}


def prune() -> dict:
    """Daily: remove what the retention settings no longer keep (sources.retention).

    A pass stops starting batches after PRUNE_TIME_BUDGET_SECONDS, inside the engine's time limit for
    a job (django-q2 kills one after Q_CLUSTER["timeout"]), and queues the next pass to carry on.
    """
    from django.conf import settings

    from completeness.tasks import enqueue
    from sources import retention

    result = retention.prune(time_budget=settings.PRUNE_TIME_BUDGET_SECONDS)
    if not result.finished:
        enqueue(prune)
    return result.as_dict()


JOBS: dict[str, Callable] = {job.__name__: job for job in (deliver_notification, sweep_outbox, check_overdue, prune)}
# The periodic ones, with the setting that says how often (both engines read this table).
PERIODIC = {"sweep_outbox": "ALERTS_SWEEP_SECONDS", "check_overdue": "ALERTS_OVERDUE_SECONDS", "prune": "PRUNE_SECONDS"}


def run(name: str, *args):
    """Run a job by name: a queue message names a job in this table, never an arbitrary import path."""
    return JOBS[name](*args)
