"""The kind vocabulary: one row per kind (as oasdiff's `rules.go`).

`KINDS` gives each kind its severity on each side (input, output), its
message (and the output side's wording where a caller reading a result
needs other words), and the rules that report it, by `module.function`
under `registry/compat/`. A rule emits a finding (kind, pointer, values);
this table says how bad it is where it was found and how it reads. Tests
walk the table: every kind has a severity on both sides, a message, a
fixture under tests/cases/ and a rule whose docstring shows an example, and
a test that wraps emission fails when a rule reports a kind its row does not
name (tests/test_kinds.py).

Names never change once shipped, and are never reused. A coarse kind is
split the way buf retires a rule ID: the new kinds name, in `replaces`, the
kind that reported their changes before, and the old name keeps what it
still means (`deprecated: true` added was `description-changed` before
`deprecated-changed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "KINDS",
    "MESSAGES",
    "OUTPUT_MESSAGES",
    "READ_DIFFERENTLY",
    "SEVERITY",
    "TOOLSET_KINDS",
    "Kind",
    "KindSpec",
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
    DEPRECATED_CHANGED = "deprecated-changed"
    ACCESS_CHANGED = "access-changed"
    ENCODED_CONTENT_CHANGED = "encoded-content-changed"


@dataclass(frozen=True, slots=True)
class KindSpec:
    """A kind's row. `input` / `output`: its severity in an input or output
    schema (a change about the tool itself reads alike on both); `message`:
    a format string over the finding's `name` (the property or keyword
    concerned), `old` and `new` (as JSON; `(absent)` where there is none) and
    `new_name`; `output_message`: the words for a caller reading a result,
    where they differ; `rules`: the rules that report it (`module.function`);
    `replaces`: the kind that reported these changes before this one split
    from it."""

    input: Severity
    output: Severity
    message: str
    rules: tuple[str, ...]
    output_message: str | None = None
    replaces: Kind | None = None


_B, _A, _C = Severity.BREAKING, Severity.ADDITIVE, Severity.COSMETIC
# The rules of constraints, which tighten or relax.
_CONSTRAINT_RULES = (
    "rules_bounds.bound_changed",
    "rules_bounds.multiple_of_changed",
    "rules_bounds.pattern_changed",
    "rules_bounds.format_changed",
    "rules_bounds.unique_items_changed",
    "rules_arrays.contains_changed",
    "rules_dependencies.dependent_required_changed",
    "rules_combinators.union_changed",
    "rules_combinators.not_changed",
)

# docs/contract.md's kind table, in its order.
KINDS: dict[Kind, KindSpec] = {
    Kind.PROPERTY_REMOVED: KindSpec(
        _B,
        _B,
        "property '{name}' was removed; a value sent for it is no longer read",
        ("rules_objects.properties_changed", "rules_tool.output_schema_changed"),
        "property '{name}' was removed; a caller reading it from a result no longer gets it",
    ),
    Kind.PROPERTY_RENAMED: KindSpec(
        _B,
        _B,
        "property '{name}' was renamed to '{new_name}'",
        ("rules_objects.properties_changed",),
        "property '{name}' was renamed to '{new_name}'; a caller reading '{name}' "
        "from a result no longer finds it",
    ),
    Kind.CONST_CHANGED: KindSpec(
        _B,
        _B,
        "const changed from {old} to {new}",
        ("rules_values.enum_or_const_changed",),
        "const changed from {old} to {new}; results now carry {new}",
    ),
    Kind.UNANALYZABLE: KindSpec(
        _B,
        _B,
        "'{name}' changed and the engine cannot prove the change safe",
        (
            "rules_docs.unanalyzable_keyword",
            "rules_docs.dialect_changed",
            "rules_objects.content_model_changed",
            "rules_arrays.items_changed",
            "rules_combinators.union_changed",
            "rules_combinators.ref_with_siblings",
            "rules_tool.annotations_changed",
            "rules_tool.execution_changed",
            "walk.budget_finding",
        ),
    ),
    Kind.DEFAULT_ADDED: KindSpec(
        _B,
        _C,
        "default {new} was added; an absent value is now read as {new}",
        ("rules_objects.default_changed",),
        "default {new} was added; in a result it only documents a value",
    ),
    Kind.DEFAULT_CHANGED: KindSpec(
        _B,
        _C,
        "default changed from {old} to {new}; an absent value is read differently",
        ("rules_objects.default_changed",),
        "default changed from {old} to {new}; in a result it only documents a value",
    ),
    Kind.DEFAULT_REMOVED: KindSpec(
        _B,
        _C,
        "default {old} was removed; an absent value is no longer read as {old}",
        ("rules_objects.default_changed",),
        "default {old} was removed; in a result it only documented a value",
    ),
    Kind.REQUIRED_ADDED: KindSpec(
        _B,
        _A,
        "property '{name}' is now required",
        ("rules_objects.required_changed",),
        "property '{name}' is now always present in results",
    ),
    Kind.ENUM_NARROWED: KindSpec(
        _B,
        _A,
        "allowed values narrowed: {old} no longer accepted (now {new})",
        ("rules_values.enum_or_const_changed",),
        "values narrowed: {old} no longer returned (now {new})",
    ),
    Kind.TYPE_NARROWED: KindSpec(
        _B,
        _A,
        "type narrowed from {old} to {new}",
        ("rules_values.type_narrowed_or_widened",),
        "type narrowed from {old} to {new}; results keep to fewer types",
    ),
    Kind.CONSTRAINT_TIGHTENED: KindSpec(
        _B,
        _A,
        "'{name}' tightened from {old} to {new}",
        _CONSTRAINT_RULES,
        "'{name}' tightened from {old} to {new}; results keep within it",
    ),
    Kind.CONTENT_MODEL_CLOSED: KindSpec(
        _B,
        _A,
        "'{name}' now accepts fewer unlisted properties ({old} -> {new})",
        ("rules_objects.content_model_changed",),
        "'{name}' now lets fewer unlisted properties into results ({old} -> {new})",
    ),
    Kind.BRANCH_REMOVED: KindSpec(
        _B,
        _A,
        "'{name}' lost a branch: {old}",
        ("rules_combinators.union_changed",),
        "'{name}' lost a branch: results no longer take this shape: {old}",
    ),
    Kind.REQUIRED_REMOVED: KindSpec(
        _A,
        _B,
        "property '{name}' is no longer required",
        ("rules_objects.required_removed",),
        "property '{name}' may now be missing from a result",
    ),
    Kind.ENUM_WIDENED: KindSpec(
        _A,
        _B,
        "allowed values widened: {old} -> {new}",
        ("rules_values.enum_widened",),
        "values widened: {old} -> {new}; a caller may now receive a value it does not know",
    ),
    Kind.TYPE_WIDENED: KindSpec(
        _A,
        _B,
        "type widened from {old} to {new}",
        ("rules_values.type_narrowed_or_widened", "rules_values.nothing_was_valid"),
        "type widened from {old} to {new}; a caller may now receive a type it does not expect",
    ),
    Kind.CONSTRAINT_RELAXED: KindSpec(
        _A,
        _B,
        "'{name}' relaxed from {old} to {new}",
        (
            *_CONSTRAINT_RULES,
            "rules_dependencies.dependent_schemas_changed",
            "rules_combinators.all_of_changed",
        ),
        "'{name}' relaxed from {old} to {new}; a caller may now receive a value the old "
        "constraint excluded",
    ),
    Kind.CONTENT_MODEL_OPENED: KindSpec(
        _A,
        _B,
        "'{name}' now accepts more unlisted properties ({old} -> {new})",
        ("rules_objects.content_model_changed",),
        "'{name}' now lets more unlisted properties into results ({old} -> {new}); a caller "
        "may receive properties it does not know",
    ),
    Kind.BRANCH_ADDED: KindSpec(
        _A,
        _B,
        "'{name}' gained a branch: {new}",
        ("rules_combinators.union_changed",),
        "'{name}' gained a branch: a caller may now receive this shape: {new}",
    ),
    Kind.PROPERTY_ADDED: KindSpec(
        _A,
        _A,
        "property '{name}' was added",
        ("rules_objects.property_added", "rules_tool.output_schema_changed"),
    ),
    Kind.ANNOTATION_ESCALATED: KindSpec(
        _B,
        _B,
        "annotation '{name}' escalated from {old} to {new}",
        ("rules_tool.annotations_changed",),
    ),
    Kind.ANNOTATION_RELAXED: KindSpec(
        _A,
        _A,
        "annotation '{name}' relaxed from {old} to {new}",
        ("rules_tool.annotations_changed",),
    ),
    Kind.DESCRIPTION_CHANGED: KindSpec(
        _C,
        _C,
        "description changed",
        ("rules_tool.texts_changed", "rules_docs.annotation_changes"),
    ),
    Kind.TITLE_CHANGED: KindSpec(
        _C,
        _C,
        "title changed from {old} to {new}",
        (
            "rules_tool.texts_changed",
            "rules_tool.annotations_changed",
            "rules_docs.annotation_changes",
        ),
    ),
    Kind.EXAMPLES_CHANGED: KindSpec(_C, _C, "examples changed", ("rules_docs.annotation_changes",)),
    Kind.COMMENT_CHANGED: KindSpec(_C, _C, "$comment changed", ("rules_docs.annotation_changes",)),
    Kind.ICONS_CHANGED: KindSpec(_C, _C, "icons changed", ("rules_tool.texts_changed",)),
    Kind.TOOL_RENAMED: KindSpec(
        _B,
        _B,
        "the tool was renamed from {old} to {new}; calls to {old} fail",
        ("rules_tool.name_changed", "rules_toolset.toolset_changes"),
    ),
    Kind.DIALECT_CHANGED: KindSpec(
        _C,
        _C,
        "the schema dialect changed from {old} to {new}; each version is read in its own "
        "dialect and the same values are valid",
        ("rules_docs.dialect_changed",),
    ),
    Kind.EXTENSION_CHANGED: KindSpec(
        _C,
        _C,
        "field '{name}' changed; it is not part of the MCP tool definition "
        "and clients do not read it",
        ("rules_tool.extensions_changed",),
    ),
    Kind.SCHEMA_REWRITTEN: KindSpec(
        _C,
        _C,
        "the schema was rewritten; it accepts the same values as before",
        ("classifier.rewritten",),
    ),
    Kind.TOOL_REMOVED: KindSpec(
        _B,
        _B,
        "tool {old} is no longer served; calls to it fail",
        ("rules_toolset.toolset_changes",),
    ),
    Kind.TASK_SUPPORT_RELAXED: KindSpec(
        _A,
        _A,
        "task support relaxed from {old} to {new}; every way of calling the tool "
        "that worked still works",
        ("rules_tool.execution_changed",),
    ),
    Kind.TASK_SUPPORT_TIGHTENED: KindSpec(
        _B,
        _B,
        "task support tightened from {old} to {new}; a call made as before may now be refused",
        ("rules_tool.execution_changed",),
    ),
    Kind.DEPRECATED_CHANGED: KindSpec(
        _C,
        _C,
        "'deprecated' changed from {old} to {new}; the same values are valid and read alike",
        ("rules_docs.annotation_changes",),
        replaces=Kind.DESCRIPTION_CHANGED,
    ),
    Kind.ACCESS_CHANGED: KindSpec(
        _C,
        _C,
        "'{name}' changed from {old} to {new}; it marks a value as only returned or only "
        "sent, and the same values are valid",
        ("rules_docs.annotation_changes",),
        replaces=Kind.DESCRIPTION_CHANGED,
    ),
    Kind.ENCODED_CONTENT_CHANGED: KindSpec(
        _C,
        _C,
        "'{name}' changed from {old} to {new}; it describes the content encoded in a "
        "string, and the same values are valid",
        ("rules_docs.annotation_changes",),
        replaces=Kind.DESCRIPTION_CHANGED,
    ),
}

# Views of the table by column.
SEVERITY: dict[Kind, tuple[Severity, Severity]] = {
    kind: (spec.input, spec.output) for kind, spec in KINDS.items()
}
MESSAGES: dict[Kind, str] = {kind: spec.message for kind, spec in KINDS.items()}
# The same changes in an output schema, worded for the caller reading a result
# (the direction flips: docs/contract.md). Kinds not listed read alike on both sides.
OUTPUT_MESSAGES: dict[Kind, str] = {
    kind: spec.output_message for kind, spec in KINDS.items() if spec.output_message
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
    spec = KINDS[kind]
    return spec.output if side is Side.OUTPUT else spec.input


def message_of(kind: Kind, side: Side) -> str:
    """The message template of `kind` where it was found: an output schema's
    changes are worded for the caller who reads a result."""
    spec = KINDS[kind]
    if side is Side.OUTPUT and spec.output_message:
        return spec.output_message
    return spec.message
