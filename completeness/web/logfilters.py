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
