"""Log records kept out of the console at the default level."""

from __future__ import annotations

import logging


class EnqueuedAtDebug(logging.Filter):
    """django-q2 logs every job it queues at INFO ("Enqueued [completeness] 380"), in the process
    that queues it: a report that alerts three channels wrote three such lines into the server's
    log, and `add_channel` printed one per open problem it told the new channel about, above its own
    answer. The id says nothing an operator can use; the worker's line for the job (processed or
    failed) is kept. Shown again with LOG_LEVEL=DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and record.getMessage().startswith("Enqueued "):
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


class RoutineJobsAtDebug(logging.Filter):
    """django-q2 logs three lines at INFO for every run of a periodic job that went well ("created
    task ... from schedule [completeness.sweep_outbox]", "... processing ... 'sources.jobs.sweep_outbox'",
    "Processed 'sources.jobs.sweep_outbox' (...)"): six lines a minute, about a megabyte a day in
    bin/serve's qcluster.log, which nothing rotates, with the warnings that matter among them. A job
    that fails is logged at ERROR and kept; so are the jobs a report queues (an alert's delivery).
    Shown again with LOG_LEVEL=DEBUG."""

    def __init__(self, jobs: list[str]) -> None:
        super().__init__()
        self.marks = tuple(mark for job in jobs for mark in (f"'sources.jobs.{job}'", f"[completeness.{job}]"))

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and any(mark in record.getMessage() for mark in self.marks):
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True
