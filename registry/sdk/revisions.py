"""What each MCP revision defines of tools: one projection for listings, results, verify.

    project_tool(definition, "2025-03-26")       # only name, description, inputSchema, annotations
    project_call_result(result, "2024-11-05")    # no structuredContent, no audio or resource_link
    revision_of("2027-01-01")                    # "2026-07-28": the newest known at or before it

A gated server's `tools/list` and `tools/call` results (registry/sdk/mcp_adapter.py)
and the registry's `verify` (registry/policy/verify.py) both project through here,
so a listing the gate serves on a revision verifies on that revision.

The field sets are the property names of the definitions in the MCP
specification's published schema, `schema/<revision>/schema.json` of
modelcontextprotocol/modelcontextprotocol (2024-11-05, 2025-03-26 and 2025-06-18
read at commit 19a4ad9ae96a907a30922d62e1a1c69b3cacdd93); the 2025-11-25 and
2026-07-28 rows are the official SDK's wire types generated from those schemas
(`mcp_types._v2025_11_25`, `mcp_types._v2026_07_28`), which
tests/sdk/test_revisions.py compares them with. They are data here, not read at
run time, because the registry's service installs without the `mcp` SDK and
the schemas of the older revisions ship in no package.

One deliberate difference: a tool's `_meta` is passed through on every
revision. The gate's `schemaVersion` and `schemaHash` live there (docs/contract.md),
every revision reserves `_meta` for protocol metadata, and no digest counts it.
A content block of a type the revision lacks (audio before 2025-03-26,
resource_link before 2025-06-18) becomes a text block holding its JSON, so the
model still reads what the tool said.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "KNOWN_REVISIONS",
    "RevisionError",
    "project_call_result",
    "project_tool",
    "revision_of",
]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)  # matched whole (fullmatch)

_RESOURCE_2024 = frozenset({"uri", "mimeType"})
_CONTENT_2024 = {
    "TextContent": frozenset({"type", "text", "annotations"}),
    "ImageContent": frozenset({"type", "data", "mimeType", "annotations"}),
    "EmbeddedResource": frozenset({"type", "resource", "annotations"}),
    "Annotations": frozenset({"audience", "priority"}),
    "TextResourceContents": _RESOURCE_2024 | {"text"},
    "BlobResourceContents": _RESOURCE_2024 | {"blob"},
}
_HINTS = frozenset({"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})
_M = frozenset({"_meta"})
_TOOL_2025_06 = frozenset(
    {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}
)
_CONTENT_2025_06 = {
    "TextContent": _CONTENT_2024["TextContent"] | _M,
    "ImageContent": _CONTENT_2024["ImageContent"] | _M,
    "AudioContent": frozenset({"type", "data", "mimeType", "annotations", "_meta"}),
    "ResourceLink": frozenset(
        {"type", "uri", "name", "title", "description", "mimeType", "size", "annotations", "_meta"}
    ),
    "EmbeddedResource": _CONTENT_2024["EmbeddedResource"] | _M,
    "Annotations": frozenset({"audience", "priority", "lastModified"}),
    "TextResourceContents": _CONTENT_2024["TextResourceContents"] | _M,
    "BlobResourceContents": _CONTENT_2024["BlobResourceContents"] | _M,
}
_ICON = frozenset({"src", "mimeType", "sizes", "theme"})

DEFINITIONS: dict[str, dict[str, frozenset[str]]] = {
    "2024-11-05": {
        "Tool": frozenset({"name", "description", "inputSchema"}),
        "CallToolResult": frozenset({"content", "isError", "_meta"}),
        "ListToolsResult": frozenset({"tools", "nextCursor", "_meta"}),
        **_CONTENT_2024,
    },
    "2025-03-26": {
        "Tool": frozenset({"name", "description", "inputSchema", "annotations"}),
        "ToolAnnotations": _HINTS,
        "CallToolResult": frozenset({"content", "isError", "_meta"}),
        "ListToolsResult": frozenset({"tools", "nextCursor", "_meta"}),
        **_CONTENT_2024,
        "AudioContent": frozenset({"type", "data", "mimeType", "annotations"}),
    },
    "2025-06-18": {
        "Tool": _TOOL_2025_06,
        "ToolAnnotations": _HINTS,
        "CallToolResult": frozenset({"content", "structuredContent", "isError", "_meta"}),
        "ListToolsResult": frozenset({"tools", "nextCursor", "_meta"}),
        **_CONTENT_2025_06,
    },
    "2025-11-25": {
        "Tool": _TOOL_2025_06 | {"icons", "execution"},
        "ToolAnnotations": _HINTS,
        "ToolExecution": frozenset({"taskSupport"}),
        "Icon": _ICON,
        "CallToolResult": frozenset({"content", "structuredContent", "isError", "_meta"}),
        "ListToolsResult": frozenset({"tools", "nextCursor", "_meta"}),
        **_CONTENT_2025_06,
        "ResourceLink": _CONTENT_2025_06["ResourceLink"] | {"icons"},
    },
    "2026-07-28": {
        "Tool": _TOOL_2025_06 | {"icons"},
        "ToolAnnotations": _HINTS,
        "Icon": _ICON,
        "CallToolResult": frozenset(
            {"content", "structuredContent", "isError", "_meta", "resultType"}
        ),
        "ListToolsResult": frozenset(
            {"tools", "nextCursor", "_meta", "resultType", "ttlMs", "cacheScope"}
        ),
        **_CONTENT_2025_06,
        "ResourceLink": _CONTENT_2025_06["ResourceLink"] | {"icons"},
    },
}
"""Revision -> definition name -> its property names (see the module docstring)."""

KNOWN_REVISIONS: tuple[str, ...] = tuple(sorted(DEFINITIONS))

# where a field holds another definition (a list of them where the name is in brackets)
_NESTED: dict[tuple[str, str], str] = {
    ("Tool", "annotations"): "ToolAnnotations",
    ("Tool", "execution"): "ToolExecution",
    ("Tool", "icons"): "[Icon]",
    ("ResourceLink", "icons"): "[Icon]",
    ("ListToolsResult", "tools"): "[Tool]",
    ("CallToolResult", "content"): "[ContentBlock]",
    ("TextContent", "annotations"): "Annotations",
    ("ImageContent", "annotations"): "Annotations",
    ("AudioContent", "annotations"): "Annotations",
    ("ResourceLink", "annotations"): "Annotations",
    ("EmbeddedResource", "annotations"): "Annotations",
    ("EmbeddedResource", "resource"): "ResourceContents",
}
_CONTENT_TYPES = {
    "text": "TextContent",
    "image": "ImageContent",
    "audio": "AudioContent",
    "resource_link": "ResourceLink",
    "resource": "EmbeddedResource",
}


class RevisionError(ValueError):
    """A protocol revision that is not a date, or predates MCP tools."""


def revision_of(protocol_version: str) -> str:
    """The known revision whose definitions apply: the newest at or before the date."""
    if not isinstance(protocol_version, str) or not _DATE.fullmatch(protocol_version):
        raise RevisionError(
            f"protocolVersion {protocol_version!r} is not a revision date (YYYY-MM-DD)"
        )
    known = [r for r in KNOWN_REVISIONS if r <= protocol_version]
    if not known:
        raise RevisionError(
            f"protocolVersion {protocol_version} predates MCP tools "
            f"(first revision: {KNOWN_REVISIONS[0]})"
        )
    return known[-1]


def _project(value: Any, definition: str, table: Mapping[str, frozenset[str]]) -> Any:
    if definition.startswith("["):
        inner = definition[1:-1]
        if not isinstance(value, list):
            return value
        return [_project(item, inner, table) for item in value]
    if not isinstance(value, Mapping):
        return value
    if definition == "ContentBlock":
        return _content_block(value, table)
    if definition == "ResourceContents":
        definition = "BlobResourceContents" if "blob" in value else "TextResourceContents"
    fields = table.get(definition, frozenset())
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in fields:
            nested = _NESTED.get((definition, key))
            out[key] = item if nested is None else _project(item, nested, table)
    return out


def _content_block(block: Mapping[str, Any], table: Mapping[str, frozenset[str]]) -> Any:
    definition = _CONTENT_TYPES.get(str(block.get("type")))
    if definition is None or definition not in table:
        # a block this revision cannot carry: its JSON as text, so nothing is lost
        text = json.dumps(dict(block), ensure_ascii=False, default=str)
        return _project({"type": "text", "text": text}, "TextContent", table)
    return _project(block, definition, table)


def project_tool(definition: Mapping[str, Any], revision: str) -> dict[str, Any]:
    """A Tool definition with only the fields (and annotation, icon, execution
    fields) of `revision`; `_meta` is kept (see the module docstring)."""
    table = DEFINITIONS[revision_of(revision)]
    out: dict[str, Any] = _project(definition, "Tool", table)
    if "_meta" in definition:
        out["_meta"] = definition["_meta"]
    return out


def project_call_result(result: Mapping[str, Any], revision: str) -> dict[str, Any]:
    """A `tools/call` result with only what `revision` defines."""
    projected: dict[str, Any] = _project(
        result, "CallToolResult", DEFINITIONS[revision_of(revision)]
    )
    return projected
