"""The background jobs: plain functions, run by whichever engine settings.TASK_ENGINE names
(sources.queue), each registered there by name.

Each job is safe to run twice or concurrently: deliveries are claimed, flips are made under the
source's row lock, and the sweep only hands out work.
"""

from __future__ import annotations

from django.conf import settings

from sources import retention
from sources.alerts import delivery, overdue, reminders
from sources.queue import enqueue, job


@job
def deliver_notification(notification_id: int) -> str:
    return delivery.deliver(notification_id)


@job
def sweep_outbox() -> int:
    return len(delivery.sweep())


@job
def check_overdue() -> dict:
    """Every minute: lift pauses whose end time came, flip sources that stopped reporting, then remind
    of problems nobody has acknowledged."""
    lifted = overdue.lift_expired_pauses()
    flipped = overdue.mark_overdue()
    return {"pauses_lifted": lifted, "overdue": flipped, "reminders": reminders.send_reminders()}


@job
def prune() -> dict:
    """Daily: remove what the retention settings no longer keep (sources.retention).

    A pass stops starting batches after PRUNE_TIME_BUDGET_SECONDS, inside the engine's time limit for
    a job (django-q2 kills one after Q_CLUSTER["timeout"]), and queues the next pass to carry on.
    """
    result = retention.prune(time_budget=settings.PRUNE_TIME_BUDGET_SECONDS)
    if not result.finished:
        enqueue("prune")
    return result.as_dict()
