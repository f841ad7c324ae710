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
    "READ_DIFFERENTLY",
    "SEVERITY",
    "Kind",
    "Severity",
    "Side",
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
}


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


# Messages are format strings over the finding's arguments: `name` (the
# property or keyword concerned), `old` and `new` (rendered as JSON).
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
}
