"""LOG_FORMAT=json: one JSON object per log line, for collectors that parse lines (Loki, CloudWatch, ELK).

Small enough not to need python-json-logger: the standard attributes of a record are named once, and
whatever a call passes in `extra` (source, run_id, ...) becomes a key of its own.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

# What every LogRecord carries; anything else on a record came from `extra`.
STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in STANDARD and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # default=str: an extra that JSON cannot hold (a datetime, a model) is written as its text.
        return json.dumps(line, default=str, ensure_ascii=False)
