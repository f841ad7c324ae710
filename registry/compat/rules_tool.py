"""Rules on the tool definition around the schemas: name, title, description,
icons and annotations (hints hosts act on).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from registry.compat.jsonvalues import json_equal
from registry.compat.kinds import Kind
from registry.compat.walk import Finding

__all__ = ["ESCALATION", "HINT_DEFAULTS", "MCP_TOOL_FIELDS", "MCP_TOOL_FIELD_ORDER", "tool_changes"]

# MCP's defaults for absent hints: an absent hint means the cautious value.
HINT_DEFAULTS: dict[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}

# hint -> the value that promises less (moving to it is an escalation)
ESCALATION: dict[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}

# The fields of the MCP `Tool` object, every protocol revision up to
# 2025-11-25 (the wire names of `mcp.types.Tool`). Written out rather than read
# from the `mcp` SDK at run time: the engine is installed without it, and two
# installs must classify alike; tests/test_kinds.py checks the list
# against the installed SDK. In the order the SDK's type declares them.
MCP_TOOL_FIELD_ORDER = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "execution",
    "_meta",
)
MCP_TOOL_FIELDS = frozenset(MCP_TOOL_FIELD_ORDER)
_HANDLED = MCP_TOOL_FIELDS - {"execution"}
_TEXTS = frozenset({"description", "title", "icons"})
_KNOWN_ANNOTATIONS = frozenset({*HINT_DEFAULTS, "title"})


def tool_changes(
    old: dict[str, Any], new: dict[str, Any], differ: AbstractSet[str]
) -> list[Finding]:
    """The findings about the fields around the schemas, given the top-level
    fields that `differ` (as JSON; the caller has compared them already). Only
    those are read; the schemas themselves are not the business of this module."""
    findings: list[Finding] = []
    if "name" in differ:
        findings += name_changed(old, new)
    if not _TEXTS.isdisjoint(differ):
        findings += texts_changed(old, new)
    if "annotations" in differ:
        findings += annotations_changed(old.get("annotations") or {}, new.get("annotations") or {})
    if differ - _HANDLED:
        findings += other_fields_changed(old, new)
        findings += extensions_changed(old, new)
    return findings


def name_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`tool-renamed`: a different `name` is a different tool to callers, whose
    calls to the old name fail (publish the new name as its own tool, with an
    alias for the old one). Example: `"name": "get_pull_request"` ->
    `"name": "pull_request_read"`."""
    if old.get("name") == new.get("name"):
        return []
    return [Finding(Kind.TOOL_RENAMED, "/name", "name", old.get("name"), new.get("name"))]


def texts_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`description-changed`, `title-changed`, `icons-changed` on the tool:
    cosmetic, always reported (a description change is how tool poisoning shows up).
    Example: `"icons": [{"src": "https://a.example/1.png"}]` -> `"icons":
    [{"src": "https://a.example/2.png"}]` is icons-changed."""
    findings = []
    for key, kind in (
        ("description", Kind.DESCRIPTION_CHANGED),
        ("title", Kind.TITLE_CHANGED),
        ("icons", Kind.ICONS_CHANGED),
    ):
        if old.get(key) != new.get(key):
            findings.append(Finding(kind, f"/{key}", key, old.get(key), new.get(key)))
    return findings


def annotations_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`annotation-escalated` / `annotation-relaxed`, read with MCP's defaults.

    Example: `readOnlyHint` true -> false, `destructiveHint` false -> true,
    `idempotentHint` true -> false, `openWorldHint` false -> true escalate
    (breaking); the reverse relaxes. An absent hint equals its default, so
    writing the default out is no change. Other annotation keys: `title`
    is title-changed; anything else that differs is unanalyzable.
    """
    findings = []
    for hint, default in HINT_DEFAULTS.items():
        before = old.get(hint, default)
        after = new.get(hint, default)
        if before == after:
            continue
        kind = Kind.ANNOTATION_ESCALATED if after == ESCALATION[hint] else Kind.ANNOTATION_RELAXED
        findings.append(Finding(kind, f"/annotations/{hint}", hint, old.get(hint), new.get(hint)))
    if old.get("title") != new.get("title"):
        findings.append(
            Finding(
                Kind.TITLE_CHANGED,
                "/annotations/title",
                "title",
                old.get("title"),
                new.get("title"),
            )
        )
    others = (old.keys() | new.keys()) - _KNOWN_ANNOTATIONS
    for key in sorted(others) if others else ():
        if old.get(key) != new.get(key):
            findings.append(
                Finding(Kind.UNANALYZABLE, f"/annotations/{key}", key, old.get(key), new.get(key))
            )
    return findings


def other_fields_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`execution` (task support) differs: unanalyzable, fail closed."""
    return [
        Finding(Kind.UNANALYZABLE, f"/{key}", key, old.get(key), new.get(key))
        for key in sorted((old.keys() | new.keys()) & (MCP_TOOL_FIELDS - _HANDLED))
        if not json_equal(old.get(key), new.get(key)) or (key in old) != (key in new)
    ]


def extensions_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`extension-changed`: a field outside the MCP `Tool` object (a server's
    own `surface`, `skills`, `requiredScopes`) differs. No MCP client reads
    it (the SDK's `Tool` model drops it), so it is cosmetic.
    Example: `"requiredScopes": ["repo"]` -> `"requiredScopes": ["repo", "gist"]`."""
    return [
        Finding(Kind.EXTENSION_CHANGED, f"/{_escape(key)}", key, old.get(key), new.get(key))
        for key in sorted((old.keys() | new.keys()) - MCP_TOOL_FIELDS)
        if not json_equal(old.get(key), new.get(key)) or (key in old) != (key in new)
    ]


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
