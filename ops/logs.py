"""Log records carry the request id; in production they are JSON lines.

One configuration (``logging_config``) serves Django, Celery (which logs through Django's) and
gunicorn's own loggers (config/gunicorn.py), so every process writes the same lines.
"""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime
from typing import Any

from .context import request_id

# Attributes a record may carry (through ``extra``) that become fields of its JSON line.
FIELDS = ("task_name", "task_id", "method", "path", "view", "status", "duration_ms")


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get() or "-"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, and the Celery
    task or the request's method, view, status and duration when the record has them."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id.get(),
            "process": record.process,
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None and value != "":
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def logging_config(
    log_format: str, level: str, loggers: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` dictionary: one console handler on standard error,
    JSON lines (``json``) or text with the request id (``text``)."""
    if log_format not in {"json", "text"}:
        raise ValueError(f"LOG_FORMAT must be json or text, got {log_format!r}")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "ops.logs.RequestIdFilter"}},
        "formatters": {
            "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
            "json": {"()": "ops.logs.JsonFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",  # standard error: stdout is a command's output
                "formatter": log_format,
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": loggers or {},
    }


class LogWriter(io.TextIOBase):
    """A text stream whose every line becomes a log record: the output of a management
    command (``call_command(..., stdout=LogWriter(logger))``) as log lines."""

    def __init__(self, logger: logging.Logger, level: int = logging.INFO) -> None:
        super().__init__()
        self.logger = logger
        self.level = level
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            if line.strip():
                self.logger.log(self.level, line.rstrip())
        return len(text)

    def close(self) -> None:
        """Log what is left of an unfinished line. (``flush`` keeps it: a command that
        flushes half a line, as migrate does before " OK", gets it on one line.)"""
        if self._pending.strip():
            self.logger.log(self.level, self._pending.rstrip())
        self._pending = ""
        super().close()
