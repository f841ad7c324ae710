"""The kind vocabulary, each kind's severity per side, and the message catalogue.

This module is the one registry of kinds (as oasdiff's `rules.go`): rules emit
a kind, this table says how bad it is on the side where it was found, and the
wording of every message lives here. Tests walk `SEVERITY` and `MESSAGES` so a
kind without a severity on both sides or without a message cannot ship.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "MESSAGES",
    "OUTPUT_MESSAGES",
    "READ_DIFFERENTLY",
    "SEVERITY",
    "TOOLSET_KINDS",
    "Kind",
    "Severity",
    "Side",
    "message_of",
    "severity_of",
    "worst",
]


class Severity(StrEnum):
    IDENTICAL = "identical"
    COSMETIC = "cosmetic"
    ADDITIVE = "additive"
    BREAKING = "breaking"


_RANK = {Severity.IDENTICAL: 0, Severity.COSMETIC: 1, Severity.ADDITIVE: 2, Severity.BREAKING: 3}


def worst(severities: list[Severity]) -> Severity:
    """The top severity of a report: the worst of its changes, `identical` for none."""
    return max(severities, key=_RANK.__getitem__, default=Severity.IDENTICAL)


class Side(StrEnum):
    """Where a change was found. Input schemas are requests, output schemas responses."""

    INPUT = "input"
    OUTPUT = "output"
    TOOL = "tool"  # annotations, description, title, icons: same severity either way


class Kind(StrEnum):
    """Public kind names (docs/contract.md). A value never changes once shipped."""

    PROPERTY_REMOVED = "property-removed"
    PROPERTY_RENAMED = "property-renamed"
    PROPERTY_ADDED = "property-added"
    CONST_CHANGED = "const-changed"
    UNANALYZABLE = "unanalyzable"
    DEFAULT_ADDED = "default-added"
    DEFAULT_CHANGED = "default-changed"
    DEFAULT_REMOVED = "default-removed"
    REQUIRED_ADDED = "required-added"
    REQUIRED_REMOVED = "required-removed"
    ENUM_NARROWED = "enum-narrowed"
    ENUM_WIDENED = "enum-widened"
    TYPE_NARROWED = "type-narrowed"
    TYPE_WIDENED = "type-widened"
    CONSTRAINT_TIGHTENED = "constraint-tightened"
    CONSTRAINT_RELAXED = "constraint-relaxed"
    CONTENT_MODEL_CLOSED = "content-model-closed"
    CONTENT_MODEL_OPENED = "content-model-opened"
    BRANCH_REMOVED = "branch-removed"
    BRANCH_ADDED = "branch-added"
    ANNOTATION_ESCALATED = "annotation-escalated"
    ANNOTATION_RELAXED = "annotation-relaxed"
    DESCRIPTION_CHANGED = "description-changed"
    TITLE_CHANGED = "title-changed"
    EXAMPLES_CHANGED = "examples-changed"
    COMMENT_CHANGED = "comment-changed"
    ICONS_CHANGED = "icons-changed"
    DIALECT_CHANGED = "dialect-changed"
    EXTENSION_CHANGED = "extension-changed"
    SCHEMA_REWRITTEN = "schema-rewritten"
    TOOL_RENAMED = "tool-renamed"
    TOOL_REMOVED = "tool-removed"
    TASK_SUPPORT_RELAXED = "task-support-relaxed"
    TASK_SUPPORT_TIGHTENED = "task-support-tightened"


_B, _A, _C = Severity.BREAKING, Severity.ADDITIVE, Severity.COSMETIC

# kind -> (severity in inputSchema, severity in outputSchema); docs/contract.md's table.
SEVERITY: dict[Kind, tuple[Severity, Severity]] = {
    Kind.PROPERTY_REMOVED: (_B, _B),
    Kind.PROPERTY_RENAMED: (_B, _B),
    Kind.CONST_CHANGED: (_B, _B),
    Kind.UNANALYZABLE: (_B, _B),
    Kind.DEFAULT_ADDED: (_B, _C),
    Kind.DEFAULT_CHANGED: (_B, _C),
    Kind.DEFAULT_REMOVED: (_B, _C),
    Kind.REQUIRED_ADDED: (_B, _A),
    Kind.ENUM_NARROWED: (_B, _A),
    Kind.TYPE_NARROWED: (_B, _A),
    Kind.CONSTRAINT_TIGHTENED: (_B, _A),
    Kind.CONTENT_MODEL_CLOSED: (_B, _A),
    Kind.BRANCH_REMOVED: (_B, _A),
    Kind.REQUIRED_REMOVED: (_A, _B),
    Kind.ENUM_WIDENED: (_A, _B),
    Kind.TYPE_WIDENED: (_A, _B),
    Kind.CONSTRAINT_RELAXED: (_A, _B),
    Kind.CONTENT_MODEL_OPENED: (_A, _B),
    Kind.BRANCH_ADDED: (_A, _B),
    Kind.PROPERTY_ADDED: (_A, _A),
    Kind.ANNOTATION_ESCALATED: (_B, _B),
    Kind.ANNOTATION_RELAXED: (_A, _A),
    Kind.DESCRIPTION_CHANGED: (_C, _C),
    Kind.TITLE_CHANGED: (_C, _C),
    Kind.EXAMPLES_CHANGED: (_C, _C),
    Kind.COMMENT_CHANGED: (_C, _C),
    Kind.ICONS_CHANGED: (_C, _C),
    Kind.DIALECT_CHANGED: (_C, _C),
    Kind.EXTENSION_CHANGED: (_C, _C),
    Kind.SCHEMA_REWRITTEN: (_C, _C),
    Kind.TOOL_RENAMED: (_B, _B),
    Kind.TOOL_REMOVED: (_B, _B),
    Kind.TASK_SUPPORT_RELAXED: (_A, _A),
    Kind.TASK_SUPPORT_TIGHTENED: (_B, _B),
}

# Kinds about a namespace's set of tools rather than one definition: found by
# `registry.compat.rules_toolset` (a tool the manifests or a server no longer hold).
TOOLSET_KINDS = frozenset({Kind.TOOL_REMOVED})


# Kinds whose witness is valid under both versions by design: the value is
# kept by the new schema's open content model but dropped or read differently.
READ_DIFFERENTLY = frozenset(
    {
        Kind.PROPERTY_REMOVED,
        Kind.PROPERTY_RENAMED,
        Kind.DEFAULT_ADDED,
        Kind.DEFAULT_CHANGED,
        Kind.DEFAULT_REMOVED,
    }
)


def severity_of(kind: Kind, side: Side) -> Severity:
    input_severity, output_severity = SEVERITY[kind]
    return output_severity if side is Side.OUTPUT else input_severity


def message_of(kind: Kind, side: Side) -> str:
    """The message template of `kind` where it was found: an output schema's
    changes are worded for the caller who reads a result."""
    if side is Side.OUTPUT:
        return OUTPUT_MESSAGES.get(kind) or MESSAGES[kind]
    return MESSAGES[kind]


# Messages are format strings over the finding's arguments: `name` (the
# property or keyword concerned), `old` and `new` (rendered as JSON; `null` is
# JSON's null, `(absent)` a keyword or field that is not there).
MESSAGES: dict[Kind, str] = {
    Kind.PROPERTY_REMOVED: "property '{name}' was removed; a value sent for it is no longer read",
    Kind.PROPERTY_RENAMED: "property '{name}' was renamed to '{new_name}'",
    Kind.PROPERTY_ADDED: "property '{name}' was added",
    Kind.CONST_CHANGED: "const changed from {old} to {new}",
    Kind.UNANALYZABLE: "'{name}' changed and the engine cannot prove the change safe",
    Kind.DEFAULT_ADDED: "default {new} was added; an absent value is now read as {new}",
    Kind.DEFAULT_CHANGED: (
        "default changed from {old} to {new}; an absent value is read differently"
    ),
    Kind.DEFAULT_REMOVED: "default {old} was removed; an absent value is no longer read as {old}",
    Kind.REQUIRED_ADDED: "property '{name}' is now required",
    Kind.REQUIRED_REMOVED: "property '{name}' is no longer required",
    Kind.ENUM_NARROWED: "allowed values narrowed: {old} no longer accepted (now {new})",
    Kind.ENUM_WIDENED: "allowed values widened: {old} -> {new}",
    Kind.TYPE_NARROWED: "type narrowed from {old} to {new}",
    Kind.TYPE_WIDENED: "type widened from {old} to {new}",
    Kind.CONSTRAINT_TIGHTENED: "'{name}' tightened from {old} to {new}",
    Kind.CONSTRAINT_RELAXED: "'{name}' relaxed from {old} to {new}",
    Kind.CONTENT_MODEL_CLOSED: "'{name}' now accepts fewer unlisted properties ({old} -> {new})",
    Kind.CONTENT_MODEL_OPENED: "'{name}' now accepts more unlisted properties ({old} -> {new})",
    Kind.BRANCH_REMOVED: "'{name}' lost a branch: {old}",
    Kind.BRANCH_ADDED: "'{name}' gained a branch: {new}",
    Kind.ANNOTATION_ESCALATED: "annotation '{name}' escalated from {old} to {new}",
    Kind.ANNOTATION_RELAXED: "annotation '{name}' relaxed from {old} to {new}",
    Kind.DESCRIPTION_CHANGED: "description changed",
    Kind.TITLE_CHANGED: "title changed from {old} to {new}",
    Kind.EXAMPLES_CHANGED: "examples changed",
    Kind.COMMENT_CHANGED: "$comment changed",
    Kind.ICONS_CHANGED: "icons changed",
    Kind.DIALECT_CHANGED: (
        "the schema dialect changed from {old} to {new}; each version is read in its own "
        "dialect and the same values are valid"
    ),
    Kind.EXTENSION_CHANGED: (
        "field '{name}' changed; it is not part of the MCP tool definition "
        "and clients do not read it"
    ),
    Kind.SCHEMA_REWRITTEN: "the schema was rewritten; it accepts the same values as before",
    Kind.TOOL_RENAMED: "the tool was renamed from {old} to {new}; calls to {old} fail",
    Kind.TOOL_REMOVED: "tool {old} is no longer served; calls to it fail",
    Kind.TASK_SUPPORT_RELAXED: (
        "task support relaxed from {old} to {new}; every way of calling the tool "
        "that worked still works"
    ),
    Kind.TASK_SUPPORT_TIGHTENED: (
        "task support tightened from {old} to {new}; a call made as before may now be refused"
    ),
}

# The same changes in an output schema, worded for the caller reading a result
# (the direction flips: docs/contract.md). Kinds not listed read alike on both sides.
OUTPUT_MESSAGES: dict[Kind, str] = {
    Kind.PROPERTY_REMOVED: (
        "property '{name}' was removed; a caller reading it from a result no longer gets it"
    ),
    Kind.PROPERTY_RENAMED: (
        "property '{name}' was renamed to '{new_name}'; a caller reading '{name}' "
        "from a result no longer finds it"
    ),
    Kind.CONST_CHANGED: "const changed from {old} to {new}; results now carry {new}",
    Kind.DEFAULT_ADDED: "default {new} was added; in a result it only documents a value",
    Kind.DEFAULT_CHANGED: (
        "default changed from {old} to {new}; in a result it only documents a value"
    ),
    Kind.DEFAULT_REMOVED: "default {old} was removed; in a result it only documented a value",
    Kind.REQUIRED_ADDED: "property '{name}' is now always present in results",
    Kind.REQUIRED_REMOVED: "property '{name}' may now be missing from a result",
    Kind.ENUM_NARROWED: "values narrowed: {old} no longer returned (now {new})",
    Kind.ENUM_WIDENED: (
        "values widened: {old} -> {new}; a caller may now receive a value it does not know"
    ),
    Kind.TYPE_NARROWED: "type narrowed from {old} to {new}; results keep to fewer types",
    Kind.TYPE_WIDENED: (
        "type widened from {old} to {new}; a caller may now receive a type it does not expect"
    ),
    Kind.CONSTRAINT_TIGHTENED: "'{name}' tightened from {old} to {new}; results keep within it",
    Kind.CONSTRAINT_RELAXED: (
        "'{name}' relaxed from {old} to {new}; a caller may now receive a value the old "
        "constraint excluded"
    ),
    Kind.CONTENT_MODEL_CLOSED: (
        "'{name}' now lets fewer unlisted properties into results ({old} -> {new})"
    ),
    Kind.CONTENT_MODEL_OPENED: (
        "'{name}' now lets more unlisted properties into results ({old} -> {new}); a caller "
        "may receive properties it does not know"
    ),
    Kind.BRANCH_REMOVED: "'{name}' lost a branch: results no longer take this shape: {old}",
    Kind.BRANCH_ADDED: "'{name}' gained a branch: a caller may now receive this shape: {new}",
}
