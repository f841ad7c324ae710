"""Toolset payloads of the seed stories, built as the service answers them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from registry.canonical import digest
from registry.sdk import payload_digest
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2


def served(
    definition: dict[str, Any],
    version: int,
    *,
    state: str = "active",
    route: list[dict[str, Any]] | None = None,
    sunset: str | None = None,
) -> dict[str, Any]:
    return {
        "version": version,
        "digest": digest(definition),
        "state": state,
        "sunset": sunset,
        "definition": definition,
        "route": route or [],
    }


def retired(definition: dict[str, Any], version: int) -> dict[str, Any]:
    return {"version": version, "digest": digest(definition), "definition": definition}


def payload(
    tools: list[dict[str, Any]],
    aliases: list[dict[str, Any]] | None = None,
    namespace: str = "billing",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "namespace": namespace,
        "tools": sorted(tools, key=lambda t: t["name"]),
        "aliases": aliases or [],
    }
    return {**body, "digest": payload_digest(body)}


V3_TO_V4_OPS: list[dict[str, Any]] = [
    {"op": "fill", "path": "/timeout_ms", "value": 30000},
    {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
    {
        "op": "reject",
        "path": "/mode",
        "values": ["write"],
        "message": "writes moved off the replica",
    },
]


def seed_000(*, v3_served: bool = False) -> dict[str, Any]:
    """db.query v4 current; v3 retired (the incident) or still served with a converter."""
    if v3_served:
        versions = [
            served(DB_QUERY_V4, 4),
            served(
                DB_QUERY_V3,
                3,
                state="deprecated",
                sunset="2027-01-01T00:00:00Z",
                route=[{"from": 3, "to": 4, "ops": V3_TO_V4_OPS}],
            ),
        ]
        gone: list[dict[str, Any]] = []
    else:
        versions = [served(DB_QUERY_V4, 4)]
        gone = [retired(DB_QUERY_V3, 3)]
    tool = {"name": "db.query", "current": 4, "versions": versions, "retired": gone}
    return payload([tool])


SEARCH_ROUTE_OPS: list[dict[str, Any]] = [
    {"op": "fill", "path": "/filters", "value": {}},
    {"op": "fill", "path": "/limit", "value": 20},
]


def seed_002(*, with_route: bool) -> dict[str, Any]:
    """search v2 current, v1 retired; alias search_v1 speaking search v1."""
    tool = {
        "name": "search",
        "current": 2,
        "versions": [served(SEARCH_V2, 2)],
        "retired": [retired(SEARCH_V1, 1)],
    }
    alias = {
        "name": "search_v1",
        "target": "search",
        "contract": {"tool": "search", "version": 1},
        "definition": SEARCH_V1,
        "route": [{"from": 1, "to": 2, "ops": SEARCH_ROUTE_OPS}] if with_route else None,
    }
    return payload([tool], [alias])


_RECORD_FIELDS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class _Events(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        entry = {k: v for k, v in record.__dict__.items() if k not in _RECORD_FIELDS}
        if "detail" in entry:
            entry["message"] = entry.pop("detail")
        entry["log_level"] = record.levelname.lower()
        self.events.append(entry)


@contextmanager
def captured_events(level: int = logging.DEBUG) -> Iterator[list[dict[str, Any]]]:
    """What the SDK logs through the standard library (the `registry` loggers),
    as dicts: `event`, `log_level`, `message` and the fields."""
    handler = _Events()
    logger = logging.getLogger("registry")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler.events
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
