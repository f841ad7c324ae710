"""The library's loggers: the standard library's `logging`, with structured fields.

    _log = get_logger(__name__)
    _log.warning("toolset.sync.from_cache", message="RUNNING FROM CACHE: ...", url=url)

Silent by default. A record goes to `logging.getLogger(name)` and nowhere
else: an application that configures no logging sees what the standard library
shows then (WARNING and above on stderr, through its last-resort handler) and
never a byte on stdout, which is a stdio MCP server's protocol stream. An
application's `structlog.configure` (whose default prints to stdout) never
reaches these loggers. A call below the logger's level is dropped before
anything is formatted. Written here rather than taken from structlog: the
library needs one call shape and one processor, and structlog's import is about
a third of what the gate adds to a server's start (bench/startup_bench.py).

A record's message reads `event: message` (or `event key=value ...`); its
`extra` holds `event` and every field (`message` as `detail`: logging reserves
the name), so `registry serve`'s JSON formatter writes them as fields.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

__all__ = ["StructuredLogger", "get_logger"]

# LogRecord attributes an `extra` key may not overwrite (logging raises KeyError)
_RESERVED = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
_KWARGS = ("exc_info", "stack_info", "stacklevel")


def _to_logging(
    _: Any, __: str, event_dict: MutableMapping[str, Any]
) -> tuple[tuple[str], dict[str, Any]]:
    """The last processor: (args, kwargs) of the standard library logging call."""
    event = str(event_dict.pop("event", ""))
    kwargs: dict[str, Any] = {k: event_dict.pop(k) for k in _KWARGS if k in event_dict}
    detail = event_dict.pop("message", None)
    extra: dict[str, Any] = {"event": event}
    for key, value in event_dict.items():
        extra[f"{key}_" if key in _RESERVED else key] = value
    if detail is not None:
        extra["detail"] = detail
        text = f"{event}: {detail}"
    else:
        text = " ".join([event, *(f"{key}={value!r}" for key, value in event_dict.items())])
    kwargs["extra"] = extra
    return (text,), kwargs


class StructuredLogger:
    """`log.info("event", key=value, ...)` onto the standard library logger `name`."""

    __slots__ = ("_logger",)

    def __init__(self, name: str) -> None:
        self._logger = logging.getLogger(name)

    def log(self, level: int, event: str, **fields: Any) -> None:
        if self._logger.isEnabledFor(level):
            args, kwargs = _to_logging(None, "", {"event": event, **fields})
            self._logger.log(level, *args, **kwargs)

    def debug(self, event: str, **fields: Any) -> None:
        self.log(logging.DEBUG, event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self.log(logging.INFO, event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self.log(logging.WARNING, event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.log(logging.ERROR, event, **fields)

    def exception(self, event: str, **fields: Any) -> None:
        fields.setdefault("exc_info", True)
        self.log(logging.ERROR, event, **fields)


def get_logger(name: str) -> StructuredLogger:
    """A logger writing structured records to the standard library logger `name`."""
    return StructuredLogger(name)
