"""Logging for the `registry` command: structlog, and the standard library routed through it.

    configure_logging(json=True)     # `registry serve`: one JSON object per line on stdout
    configure_logging(json=False)    # the other verbs: structlog's lines on stderr

With `json=True` every line is a JSON object with at least `event`, `level`
and `timestamp` (RFC 3339, UTC); the request lines of the API add
`request_id`, `method`, `path`, `status`, `duration_ms`. structlog's own
loggers (the API, the SDK) render straight to bytes on stdout (cached on
first use: `serve` configures once); records of standard library loggers (the
embedded PostgreSQL, asyncpg, uvicorn, granian) go through the same
processors plus their `logger` name, so stdout holds nothing but JSON lines.

Calling it again replaces the previous configuration. A hot path may write its
own lines to the same output (`json_lines()`: the API's line per request,
encoded by msgspec in one step rather than through structlog's processors).
"""

from __future__ import annotations

import logging
import logging.config
import sys
from typing import Any

import msgspec
import structlog

__all__ = ["JsonLines", "configure_logging", "json_lines", "stdlib_config"]

# Loggers of the libraries under `serve`: their records go to the root handler.
_LIBRARY_LOGGERS = (
    "asyncio",
    "asyncpg",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "_granian",
    "granian.access",
)
# Lines that only repeat what the registry logs itself (one line per request).
_QUIET_LOGGERS = ("uvicorn.access", "granian.access")

_encoder = msgspec.json.Encoder(enc_hook=repr)


class JsonLines:
    """The output of `configure_logging(json=True)`, for a line encoded by its caller."""

    __slots__ = ("_stream", "level")

    def __init__(self, stream: Any, level: int) -> None:
        self._stream = stream
        self.level = level  # lines below it are not written

    def write(self, line: bytes) -> None:
        """`line` (one JSON object, newline included) as structlog's own lines are written."""
        self._stream.write(line)
        self._stream.flush()


_json_lines: list[JsonLines | None] = [None]  # the one in force


def json_lines() -> JsonLines | None:
    """Where JSON lines go while `configure_logging(json=True)` is in force; otherwise None
    (log through structlog, whatever it is configured to do)."""
    return _json_lines[0]


def _serialize(value: Any, **_: Any) -> bytes:
    return _encoder.encode(value)


def _serialize_text(value: Any, **_: Any) -> str:
    return _encoder.encode(value).decode()


def _stderr_logger(*_: Any) -> structlog.PrintLogger:
    # sys.stderr as it is at each call (pytest swaps it per test)
    return structlog.PrintLogger(sys.stderr)


def _drop_color_message(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    event.pop("color_message", None)  # uvicorn's ANSI-coloured copy of the message
    return event


def _shared_processors() -> list[Any]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def stdlib_config(json: bool, *, level: int = logging.INFO) -> dict[str, Any]:
    """The `logging.config.dictConfig` of `configure_logging` (a server that
    configures logging itself, like granian, is handed this one)."""
    if json:
        renderer: Any = structlog.processors.JSONRenderer(serializer=_serialize_text)
        stream = "ext://sys.stdout"
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
        stream = "ext://sys.stderr"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "structlog": {
                "()": structlog.stdlib.ProcessorFormatter,
                "foreign_pre_chain": [
                    structlog.stdlib.add_logger_name,
                    *_shared_processors(),
                    structlog.stdlib.ExtraAdder(),
                    _drop_color_message,
                ],
                "processors": [
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    renderer,
                ],
            }
        },
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "formatter": "structlog",
                "stream": stream,
            }
        },
        "root": {"handlers": ["default"], "level": logging.getLevelName(level)},
        "loggers": {
            name: {
                "handlers": [],
                "propagate": True,
                "level": logging.getLevelName(
                    logging.WARNING if name in _QUIET_LOGGERS else logging.NOTSET
                ),
            }
            for name in _LIBRARY_LOGGERS
        },
    }


def configure_logging(json: bool, *, level: int = logging.INFO) -> None:
    """JSON lines on stdout (`json=True`, for `serve`) or console lines on stderr.

    `json=False` (the other verbs, which may run in-process in tests) sets up
    structlog only and leaves the standard library's logging as it is: its
    warnings reach stderr through logging's last-resort handler.
    """
    _json_lines[0] = JsonLines(sys.stdout.buffer, level) if json else None
    if json:
        logging.config.dictConfig(stdlib_config(json, level=level))
    processors: list[Any] = [
        *_shared_processors(),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]
    if json:
        structlog.configure(
            processors=[*processors, structlog.processors.JSONRenderer(serializer=_serialize)],
            wrapper_class=structlog.make_filtering_bound_logger(level),
            logger_factory=structlog.BytesLoggerFactory(sys.stdout.buffer),
            cache_logger_on_first_use=True,
        )
    else:
        # Not cached: a client verb run in-process (tests) must not pin loggers.
        structlog.configure(
            processors=[*processors, structlog.dev.ConsoleRenderer(colors=False)],
            wrapper_class=structlog.make_filtering_bound_logger(level),
            logger_factory=_stderr_logger,
            cache_logger_on_first_use=False,
        )
