"""Small builders shared by the store tests."""

from __future__ import annotations

from typing import Any

from registry.canonical import digest
from registry.store.records import PublishPlan, ToolState


def tool(name: str = "db.query", **properties: Any) -> dict[str, Any]:
    """A tool definition whose input schema has `properties` (strings by default)."""
    props = properties or {"query": {"type": "string"}}
    return {
        "name": name,
        "description": "test tool",
        "inputSchema": {"type": "object", "properties": props},
    }


def variant(n: int, name: str = "db.query") -> dict[str, Any]:
    """The n-th distinct definition of a tool."""
    return tool(name, **{f"field_{n}": {"type": "string"}})


def accept(_state: ToolState) -> PublishPlan:
    return PublishPlan()


def digest_of(definition: dict[str, Any]) -> str:
    return digest(definition)
