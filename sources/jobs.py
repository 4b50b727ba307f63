"""The background jobs: plain functions, run by whichever engine settings.TASK_ENGINE names
(sources.queue), each registered there by name.

Each job is safe to run twice or concurrently: deliveries are claimed, flips are made under the
source's row lock, and the sweep only hands out work.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.utils import timezone

from sources.alerts import delivery, digests, history, reminders, watch
from sources.queue import enqueue, job
from sources.services import overdue, retention, windows


def periodic(func: Callable) -> Callable:
    """Records each run's start (sources.alerts.watch.record_run): a task cluster or beat that stopped
    shows as a job whose last run grows old, which nothing else would tell."""

    @wraps(func)
    def run(*args):
        started = timezone.now()
        try:
            result = func(*args)
        except Exception as exc:
            watch.record_run(func.__name__, started, error=f"{type(exc).__name__}: {exc}")
            raise
        watch.record_run(func.__name__, started)
        return result

    return run


@job
def deliver_notification(notification_id: int) -> str:
    return delivery.deliver(notification_id)


@job
@periodic
def sweep_outbox() -> int:
    return len(delivery.sweep())


@job
@periodic
def check_overdue() -> dict:
    """Every minute: lift pauses whose end time came, open maintenance windows whose time came (as
    pauses), flip sources that stopped reporting, tell the channels where sources whose history settled
    stand, then remind of problems nobody has acknowledged."""
    lifted = overdue.lift_expired_pauses()
    opened = windows.open_windows()
    flipped = overdue.mark_overdue()
    return {
        "pauses_lifted": lifted,
        "windows_opened": opened,
        "overdue": flipped,
        "history_told": history.announce_history(),
        "reminders": reminders.send_reminders(),
    }


@job
@periodic
def send_digests() -> list[int]:
    """Hourly: the weekly digest of every channel that wants one and had none for a week."""
    return digests.send_digests()


@job
@periodic
def prune() -> dict:
    """Daily: remove what the retention settings no longer keep (sources.services.retention).

    A pass stops starting batches after PRUNE_TIME_BUDGET_SECONDS, inside the engine's time limit for
    a job (django-q2 kills one after Q_CLUSTER["timeout"]), and queues the next pass to carry on.
    """
    result = retention.prune(time_budget=settings.PRUNE_TIME_BUDGET_SECONDS)
    if not result.finished:
        enqueue("prune")
    return result.as_dict()
