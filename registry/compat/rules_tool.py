"""Rules on the tool definition around the schemas: name, title, description,
icons, annotations (hints hosts act on) and execution (task support).

Fields the MCP revisions define with a default are compared by meaning, the
default standing in for an absent field (`FIELD_DEFAULTS`): writing a default
out, or leaving it out, is no change at all.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from registry.compat.jsonvalues import json_equal
from registry.compat.kinds import Kind
from registry.compat.walk import ABSENT, Finding
from registry.pointers import escape

__all__ = [
    "ESCALATION",
    "FIELD_DEFAULTS",
    "HINT_DEFAULTS",
    "MCP_TOOL_FIELDS",
    "MCP_TOOL_FIELD_ORDER",
    "TASK_SUPPORT",
    "output_schema_changed",
    "tool_changes",
]

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

# How each value of `execution.taskSupport` may be called: without a task, as a
# task. A move that keeps every way of calling relaxes; one that drops a way
# tightens (a caller that called as before may be refused).
TASK_SUPPORT: dict[str, frozenset[str]] = {
    "forbidden": frozenset({"plain"}),
    "optional": frozenset({"plain", "task"}),
    "required": frozenset({"task"}),
}

# (object field, key) -> (the default an absent key reads as, the MCP revisions
# that define it). From the published schema of each revision
# (modelcontextprotocol/modelcontextprotocol, schema/<revision>/schema.json):
# ToolAnnotations' hints from 2025-03-26 on ("Default: false/true" in each),
# ToolExecution.taskSupport in 2025-11-25 ("Default: \"forbidden\""; the
# 2026-07-28 Tool has no `execution`). The defaults agree wherever a key is
# defined, so one table serves every revision.
_HINTS_SINCE = ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
FIELD_DEFAULTS: dict[tuple[str, str], tuple[Any, tuple[str, ...]]] = {
    ("annotations", "readOnlyHint"): (False, _HINTS_SINCE),
    ("annotations", "destructiveHint"): (True, _HINTS_SINCE),
    ("annotations", "idempotentHint"): (False, _HINTS_SINCE),
    ("annotations", "openWorldHint"): (True, _HINTS_SINCE),
    ("execution", "taskSupport"): ("forbidden", ("2025-11-25",)),
}

# MCP's defaults for absent hints: an absent hint means the cautious value.
HINT_DEFAULTS: dict[str, bool] = {
    key: default for (field, key), (default, _) in FIELD_DEFAULTS.items() if field == "annotations"
}
_HANDLED = MCP_TOOL_FIELDS
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
    if "execution" in differ:
        findings += execution_changed(old.get("execution"), new.get("execution"))
    if differ - _HANDLED:
        findings += extensions_changed(old, new)
    return findings


def name_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`tool-renamed`: a different `name` is a different tool to callers, whose
    calls to the old name fail (publish the new name as its own tool, with an
    alias for the old one). Example: `"name": "get_pull_request"` ->
    `"name": "pull_request_read"`."""
    if old.get("name") == new.get("name"):
        return []
    return [
        Finding(
            kind=Kind.TOOL_RENAMED,
            pointer="/name",
            name="name",
            old=old.get("name", ABSENT),
            new=new.get("name", ABSENT),
        )
    ]


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
        before, after = old.get(key, ABSENT), new.get(key, ABSENT)
        if before != after:
            findings.append(Finding(kind=kind, pointer=f"/{key}", name=key, old=before, new=after))
    return findings


def annotations_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`annotation-escalated` / `annotation-relaxed`, read with MCP's defaults.

    Example: `readOnlyHint` true -> false, `destructiveHint` false -> true,
    `idempotentHint` true -> false, `openWorldHint` false -> true escalate
    (breaking); the reverse relaxes. An absent hint equals its default, so
    writing the default out is no change. Other annotation keys: `title`
    is `title-changed`; anything else that differs is `unanalyzable`.
    """
    findings = []
    for hint, default in HINT_DEFAULTS.items():
        before = old.get(hint, default)
        after = new.get(hint, default)
        if before == after:
            continue
        kind = Kind.ANNOTATION_ESCALATED if after == ESCALATION[hint] else Kind.ANNOTATION_RELAXED
        findings.append(
            Finding(
                kind=kind,
                pointer=f"/annotations/{hint}",
                name=hint,
                old=old.get(hint, ABSENT),
                new=new.get(hint, ABSENT),
            )
        )
    if old.get("title", ABSENT) != new.get("title", ABSENT):
        findings.append(
            Finding(
                kind=Kind.TITLE_CHANGED,
                pointer="/annotations/title",
                name="title",
                old=old.get("title", ABSENT),
                new=new.get("title", ABSENT),
            )
        )
    others = (old.keys() | new.keys()) - _KNOWN_ANNOTATIONS
    for key in sorted(others) if others else ():
        before, after = old.get(key, ABSENT), new.get(key, ABSENT)
        if before != after:
            findings.append(
                Finding(
                    kind=Kind.UNANALYZABLE,
                    pointer=f"/annotations/{escape(key)}",
                    name=key,
                    old=before,
                    new=after,
                )
            )
    return findings


def execution_changed(old: Any, new: Any) -> list[Finding]:
    """`task-support-relaxed`, `task-support-tightened`: `execution.taskSupport`
    read with MCP's default ("forbidden" when absent, as when `execution` is).

    Example: absent -> `{"taskSupport": "forbidden"}` is no change;
    `"forbidden"` -> `"optional"` relaxes (a call without a task still works);
    `"optional"` -> `"required"` tightens (a call without a task is refused).
    A value MCP does not define, or another key of `execution`, that differs
    is `unanalyzable`.
    """
    default = FIELD_DEFAULTS[("execution", "taskSupport")][0]
    if not isinstance(old, dict) or not isinstance(new, dict):
        # `execution` absent reads as empty; anything else that is no object is no MCP value
        if (old is not None and not isinstance(old, dict)) or (
            new is not None and not isinstance(new, dict)
        ):
            return [
                Finding(
                    kind=Kind.UNANALYZABLE,
                    pointer="/execution",
                    name="execution",
                    old=ABSENT if old is None else old,
                    new=ABSENT if new is None else new,
                )
            ]
        old, new = old or {}, new or {}
    findings = []
    before, after = old.get("taskSupport", ABSENT), new.get("taskSupport", ABSENT)
    modes_before = TASK_SUPPORT.get(default if before is ABSENT else before)
    modes_after = TASK_SUPPORT.get(default if after is ABSENT else after)
    if modes_before is None or modes_after is None:
        if not json_equal(before, after):
            findings.append(
                Finding(
                    kind=Kind.UNANALYZABLE,
                    pointer="/execution/taskSupport",
                    name="taskSupport",
                    old=before,
                    new=after,
                )
            )
    elif modes_before != modes_after:
        kind = (
            Kind.TASK_SUPPORT_RELAXED
            if modes_after >= modes_before
            else Kind.TASK_SUPPORT_TIGHTENED
        )
        findings.append(
            Finding(
                kind=kind,
                pointer="/execution/taskSupport",
                name="taskSupport",
                old=before,
                new=after,
            )
        )
    for key in sorted((old.keys() | new.keys()) - {"taskSupport"}):
        was, now = old.get(key, ABSENT), new.get(key, ABSENT)
        if was is ABSENT or now is ABSENT or not json_equal(was, now):
            findings.append(
                Finding(
                    kind=Kind.UNANALYZABLE,
                    pointer=f"/execution/{escape(key)}",
                    name=key,
                    old=was,
                    new=now,
                )
            )
    return findings


def output_schema_changed(old: Any, new: Any) -> list[Finding]:
    """`property-added` / `property-removed` at `/outputSchema`: the tool gained
    or lost the schema of its results (None where there is none); two schemas
    are the walk's business. Example: a tool without `outputSchema` that
    declares `{"type": "object"}` is property-added at `/outputSchema`."""
    if old is None and new is not None:
        return [
            Finding(kind=Kind.PROPERTY_ADDED, pointer="/outputSchema", name="outputSchema", new=new)
        ]
    if new is None and old is not None:
        return [
            Finding(
                kind=Kind.PROPERTY_REMOVED, pointer="/outputSchema", name="outputSchema", old=old
            )
        ]
    return []


def extensions_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    """`extension-changed`: a field outside the MCP `Tool` object (a server's
    own `surface`, `skills`, `requiredScopes`) differs. No MCP client reads
    it (the SDK's `Tool` model drops it), so it is cosmetic.
    Example: `"requiredScopes": ["repo"]` -> `"requiredScopes": ["repo", "gist"]`."""
    return [
        Finding(
            kind=Kind.EXTENSION_CHANGED,
            pointer=f"/{escape(key)}",
            name=key,
            old=old.get(key, ABSENT),
            new=new.get(key, ABSENT),
        )
        for key in sorted((old.keys() | new.keys()) - MCP_TOOL_FIELDS)
        if not json_equal(old.get(key), new.get(key)) or (key in old) != (key in new)
    ]
