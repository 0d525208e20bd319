"""Worker logs as plain text (Faust's own format) or JSON lines, one event per line.

JSON lines carry ``request_id`` and ``session_id`` as fields when the log call names them
(``extra=``), so an operator can follow one request across workers. Tool arguments, content and
raw chunks are never logged at any level by Toolwire's own code.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import orjson

FORMATS: Final = ("text", "json")
_FIELDS: Final = ("request_id", "session_id", "partition", "offset")


class JsonLines(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the ids it names."""

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {"time": round(record.created, 3),
                                 "level": record.levelname.lower(),
                                 "logger": record.name, "message": record.getMessage()}
        for name in _FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                event[name] = value
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(event, default=str).decode()


def logging_config(log_format: str, level: str) -> dict[str, Any] | None:
    """A ``logging.config.dictConfig`` for the worker; ``None`` keeps Faust's text format."""
    if log_format == "text":
        return None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonLines}},
        "handlers": {"default": {"class": "logging.StreamHandler", "formatter": "json",
                                 "stream": "ext://sys.stderr"}},
        "root": {"level": {"warn": "WARNING"}.get(level, level.upper()),
                 "handlers": ["default"]},
    }
