"""Wire forms the MCP adapters answer with: listed tools, tool results, refusals, cursors.

Every result leaves as a plain dict projected on the session's negotiated
revision (registry/sdk/revisions.py); the `mcp` SDK then validates it against
its own surface of that revision.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp import types
from mcp.server.context import HandlerResult
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from registry.sdk.gate import Decision, Gate, GateError
from registry.sdk.handlers import HandlerCheck
from registry.sdk.refusals import structured_content
from registry.sdk.revisions import (
    KNOWN_REVISIONS,
    project_call_result,
    project_tool,
)
from registry.sdk.toolset import Toolset, ToolsetError

__all__ = [
    "MODEL_FACING_SINCE",
    "Refusals",
    "Snapshot",
    "as_result",
    "decode_cursor",
    "encode_cursor",
    "input_schemas",
    "listed_tools",
    "project_listing",
    "project_result",
    "refusal",
    "revision",
]

Refusals = Literal["auto", "jsonrpc", "result"]

MODEL_FACING_SINCE = "2025-11-25"
"""The revision from which refusals of arguments are tool results (SEP-1303)."""

_CONTENT = (
    types.TextContent,
    types.ImageContent,
    types.AudioContent,
    types.ResourceLink,
    types.EmbeddedResource,
)


def revision(protocol_version: str | None) -> str:
    """The session's revision for projecting; an unknown one reads as the oldest."""
    if protocol_version in KNOWN_REVISIONS:
        assert protocol_version is not None
        return protocol_version
    return KNOWN_REVISIONS[0]


def listed_tools(toolset: Toolset) -> tuple[dict[str, Any], ...]:
    """Every tool's current definition by name, `_meta` carrying `schemaVersion`
    ("v4") and `schemaHash` (its digest); checked once against the SDK's Tool."""
    tools = []
    for entry in sorted(toolset.tools, key=lambda t: t.name):
        current = entry.current_version
        definition = copy.deepcopy(current.definition)
        meta = definition.get("_meta")
        definition["_meta"] = {
            **(meta if isinstance(meta, dict) else {}),
            "schemaVersion": f"v{current.version}",
            "schemaHash": current.digest,
        }
        try:
            types.Tool.model_validate(definition)
        except ValidationError as exc:
            raise ToolsetError(
                f"{entry.name} v{current.version} is not a Tool the mcp SDK can list: {exc}"
            ) from exc
        tools.append(definition)
    return tuple(tools)


def project_listing(tools: tuple[dict[str, Any], ...], revision: str) -> tuple[dict[str, Any], ...]:
    """The listed tools with only the fields of `revision` (a known one)."""
    return tuple(project_tool(t, revision) for t in tools)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One toolset as a gated server serves it: its gate, its listing, its input
    schemas, and the tools whose handler's framework would not take what current
    accepts (registry/sdk/handlers.py; empty on servers without a framework parse)."""

    toolset: Toolset
    gate: Gate
    listed: tuple[dict[str, Any], ...]
    schemas: Mapping[str, dict[str, Any]]
    # the listing projected per revision, filled on first use
    by_revision: dict[str, tuple[dict[str, Any], ...]]
    handlers: Mapping[str, HandlerCheck] = field(default_factory=dict)

    def decide(self, name: str, arguments: Any, meta: Mapping[str, Any] | None) -> Decision:
        """`Gate.check`, then the handler check: an accepted call the handler's
        framework would drop, refuse or change is refused (-31004 handler_mismatch)."""
        decision = self.gate.check(name, arguments, meta)
        if decision.accepted and self.handlers:
            check = self.handlers.get(decision.tool)
            if check is not None:
                assert decision.arguments is not None
                error = check.refusal(decision.arguments)
                if error is not None:
                    return Decision(False, decision.tool, decision.version, None, error)
        return decision

    def listing(self, protocol_version: str | None) -> tuple[dict[str, Any], ...]:
        key = revision(protocol_version)
        found = self.by_revision.get(key)
        if found is None:
            found = self.by_revision[key] = project_listing(self.listed, key)
        return found


def input_schemas(toolset: Toolset) -> dict[str, dict[str, Any]]:
    schemas = {
        t.name: t.current_version.definition.get("inputSchema", {"type": "object"})
        for t in toolset.tools
    }
    for alias in toolset.aliases:
        schemas[alias.name] = alias.definition.get("inputSchema", {"type": "object"})
    return schemas


def encode_cursor(digest: str, offset: int) -> str:
    raw = json.dumps({"d": digest, "o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        body = json.loads(raw)
        digest, offset = body["d"], body["o"]
    except (binascii.Error, ValueError, TypeError, KeyError) as exc:
        raise MCPError(
            types.INVALID_PARAMS, "Invalid cursor", {"reason": "invalid_cursor"}
        ) from exc
    if not isinstance(digest, str) or not isinstance(offset, int) or offset < 0:
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor", {"reason": "invalid_cursor"})
    return digest, offset


def as_result(value: Any) -> types.CallToolResult | types.InputRequiredResult:
    """A tool handler's return value as a `tools/call` result (a model or a dict)."""
    if isinstance(value, types.CallToolResult | types.InputRequiredResult):
        return value
    if value is None:
        return types.CallToolResult(content=[])
    if isinstance(value, str):
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])
    if isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=value
        )
    if isinstance(value, list) and value and all(isinstance(v, _CONTENT) for v in value):
        return types.CallToolResult(content=value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def project_result(result: HandlerResult, protocol_version: str | None) -> HandlerResult:
    """A `tools/call` result with only what the session's revision defines.
    `input_required` results (2026-07-28) pass as they are."""
    if isinstance(result, types.InputRequiredResult):
        return result
    if isinstance(result, BaseModel):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if result is None or result.get("resultType") == "input_required":
        return result
    return project_call_result(result, revision(protocol_version))


def refusal(error: GateError, protocol_version: str | None, mode: Refusals) -> dict[str, Any]:
    """A refusal as the session should see it: an `isError` result (returned) or
    a JSON-RPC error (raised as `MCPError`, which the SDK never turns into a result).

    `auto`: a refusal of the arguments themselves (the gate wrote `model_text`)
    is a result from 2025-11-25 on; everything else is a JSON-RPC error.
    `result`: every refusal with `model_text` is a result, on any revision.
    `jsonrpc`: always a JSON-RPC error.
    """
    if error.model_text is not None and (
        mode == "result" or (mode == "auto" and revision(protocol_version) >= MODEL_FACING_SINCE)
    ):
        result = {
            "content": [{"type": "text", "text": error.model_text}],
            "structuredContent": structured_content(error),
            "isError": True,
            "resultType": "complete",  # required from 2026-07-28 on; projected away before
        }
        projected: dict[str, Any] = project_call_result(result, revision(protocol_version))
        return projected
    raise MCPError(error.code, error.message, error.data)
