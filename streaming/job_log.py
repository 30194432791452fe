"""The job's progress lines (``rebalance-monitor run``): each with its time and a level.

``--log-format text`` (the default)::

    2026-11-28T14:20:05.123Z INFO [events] batch 3: 12 rebalance events, ...
    2026-11-28T14:21:00.004Z WARNING kafka: DOWN: 10.0.0.7:9092: connection refused ...

``--log-format json``: one JSON object per line, for a log shipper::

    {"ts": "2026-11-28T14:20:05.123Z", "level": "INFO", "message": "[events] batch 3: ..."}

The time is UTC with milliseconds; the levels are Python's (INFO, WARNING, ERROR). The lines
go to stdout through the standard :mod:`logging` machinery, on a logger of their own that
does not propagate (so no library's root configuration duplicates them). :func:`message_of`
takes a text line back apart (tests and benchmarks read the lines).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import TextIO

__all__ = ["DEFAULT_LOG_FORMAT", "LOG_FORMATS", "JobLog", "message_of"]

LOG_FORMATS = ("text", "json")
DEFAULT_LOG_FORMAT = "text"

_TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (?:INFO|WARNING|ERROR) (.*)", re.S)


def _iso(record: logging.LogRecord) -> str:
    seconds = int(record.created)
    millis = int((record.created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{_iso(record)} {record.levelname} {record.getMessage()}"


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {"ts": _iso(record), "level": record.levelname, "message": record.getMessage()}
        return json.dumps(doc, ensure_ascii=False)


class JobLog:
    """The job's lines in ``log_format`` (:data:`LOG_FORMATS`) on ``stream`` (stdout);
    :meth:`info` is the job's ``progress``, :meth:`warning` its ``warn``."""

    def __init__(self, log_format: str = DEFAULT_LOG_FORMAT, stream: TextIO | None = None) -> None:
        if log_format not in LOG_FORMATS:
            raise ValueError(f"log format: expected one of {', '.join(LOG_FORMATS)}")
        self._logger = logging.Logger(f"rebalance_monitor.{log_format}")  # never the root's
        handler = logging.StreamHandler(stream or sys.stdout)
        handler.setFormatter(_JsonFormatter() if log_format == "json" else _TextFormatter())
        self._logger.addHandler(handler)
        self._logger.propagate = False

    def info(self, message: str) -> None:
        self._logger.info("%s", message)

    def warning(self, message: str) -> None:
        self._logger.warning("%s", message)

    def error(self, message: str) -> None:
        self._logger.error("%s", message)


def message_of(line: str) -> str:
    """The message of a text line (:class:`JobLog`), or ``line`` itself when it is none."""
    match = _TEXT_LINE.fullmatch(line.rstrip("\n"))
    return line.rstrip("\n") if match is None else match.group(1)
