"""The log line of each request: one JSON object, encoded by msgspec in one step.

    log_request(request_id, "GET", "/healthz", "/healthz", 200, 0.000123, actor=None)

Under `registry serve` (`configure_logging(json=True)`) the line is the same
JSON object structlog's processors made of it (`event`, `level`, `timestamp`
with the request's fields), written to the same output, at a fraction of the
cost: the chain of processors cost more than some routes. Under any other
logging configuration (the other verbs, tests capturing structlog's events) it
goes through structlog as before.
"""

from __future__ import annotations

import logging
import time
from typing import Final

import msgspec
import structlog

from registry.logging_setup import json_lines

__all__ = ["log_request"]

_log = structlog.get_logger("registry.api")
_INFO: Final = logging.INFO


class RequestLine(msgspec.Struct, frozen=True):
    """The fields in structlog's order: the call's, then `event`, `level`, `timestamp`."""

    request_id: str
    method: str
    path: str
    route: str
    status: int
    duration_ms: float
    actor: str | None
    event: str
    level: str
    timestamp: str


_encoder = msgspec.json.Encoder()
_second: list[tuple[int, str]] = [(-1, "")]  # the last second formatted, and its text


def timestamp(now: float) -> str:
    """RFC 3339 in UTC to the microsecond, as structlog's `TimeStamper(fmt="iso", utc=True)`."""
    second = int(now)
    cached, text = _second[0]
    if cached != second:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second[0] = (second, text)
    return f"{text}.{int((now - second) * 1_000_000):06d}Z"


def log_request(
    request_id: str,
    method: str,
    path: str,
    route: str,
    status: int,
    seconds: float,
    *,
    actor: str | None,
) -> None:
    duration_ms = round(seconds * 1000, 3)
    out = json_lines()
    if out is None:
        _log.info(
            "request",
            request_id=request_id,
            method=method,
            path=path,
            route=route,
            status=status,
            duration_ms=duration_ms,
            actor=actor,
        )
        return
    if out.level > _INFO:
        return
    line = RequestLine(
        request_id,
        method,
        path,
        route,
        status,
        duration_ms,
        actor,
        "request",
        "info",
        timestamp(time.time()),
    )
    out.write(_encoder.encode(line) + b"\n")
