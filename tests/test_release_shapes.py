"""The shapes real release histories showed (issue 31, and the rerun over
published releases of MCP reference servers), built by hand: each item as the
engine must now read it. Tool removal and version bumps, the
items a pipeline reports, are held by tests/test_pipeline_removals.py and
tests/test_semver.py."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from registry.compat import Kind, Severity, classify
from registry.sdk.strict import strict_schema


def tool(input_schema: Any = None, **fields: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": input_schema or {"type": "object"}, **fields}


# -- 2. `execution` and the other fields MCP defines with a default ------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, {"taskSupport": "forbidden"}),
        ({"taskSupport": "forbidden"}, None),
        (None, {}),
        ({}, {"taskSupport": "forbidden"}),
    ],
)
def test_an_execution_that_means_the_default_is_no_change(before: Any, after: Any) -> None:
    old = tool() if before is None else tool(execution=before)
    new = tool() if after is None else tool(execution=after)
    report = classify(old, new)
    assert report.severity is Severity.IDENTICAL
    assert report.changes == []


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        ("forbidden", "optional", Kind.TASK_SUPPORT_RELAXED),
        ("required", "optional", Kind.TASK_SUPPORT_RELAXED),
        ("optional", "required", Kind.TASK_SUPPORT_TIGHTENED),
        ("optional", "forbidden", Kind.TASK_SUPPORT_TIGHTENED),
        ("forbidden", "required", Kind.TASK_SUPPORT_TIGHTENED),
        (None, "optional", Kind.TASK_SUPPORT_RELAXED),
    ],
)
def test_task_support_loosened_is_additive_and_tightened_breaking(
    before: str | None, after: str, kind: Kind
) -> None:
    old = tool() if before is None else tool(execution={"taskSupport": before})
    report = classify(old, tool(execution={"taskSupport": after}))
    assert [(c.kind, c.path) for c in report.changes] == [(kind, "/execution/taskSupport")]
    expected = Severity.ADDITIVE if kind is Kind.TASK_SUPPORT_RELAXED else Severity.BREAKING
    assert report.severity is expected


def test_annotation_hints_written_out_with_their_defaults_are_no_change() -> None:
    written = {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert classify(tool(), tool(annotations=written)).changes == []


def test_the_default_dialect_written_out_is_no_change() -> None:
    """MCP reads an input or output schema without `$schema` as 2020-12."""
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    written = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    assert classify(tool(schema), tool(written)).changes == []
    assert classify(tool(outputSchema=written), tool(outputSchema=schema)).changes == []
    draft07 = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
    assert [c.kind for c in classify(tool(schema), tool(draft07)).changes] == [Kind.DIALECT_CHANGED]


# -- 3. properties declared inside union branches, and witnesses --------------------------

ITEM = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "position": {"type": "integer"},
        "body": {"type": "string"},
    },
    "required": ["path", "position", "body"],
    "additionalProperties": False,
}
OTHER = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "line": {"type": "integer"},
        "body": {"type": "string"},
    },
    "required": ["path", "line", "body"],
    "additionalProperties": False,
}


def _comments(items: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"comments": {"type": "array", "items": items}}}


def test_items_widened_into_a_union_of_themselves_and_another_is_additive() -> None:
    old = _comments(ITEM)
    new = _comments({"anyOf": [copy.deepcopy(ITEM), OTHER]})
    report = classify(tool(old), tool(new))
    assert report.severity is Severity.ADDITIVE
    assert [(c.kind, c.path) for c in report.changes] == [
        (Kind.BRANCH_ADDED, "/inputSchema/properties/comments/items/anyOf")
    ]
    # and back: the branch is gone, with a witness the old union took
    back = classify(tool(new), tool(old))
    assert [(c.kind, c.path) for c in back.changes] == [
        (Kind.BRANCH_REMOVED, "/inputSchema/properties/comments/items/anyOf")
    ]
    witness = back.changes[0].witness
    assert Draft202012Validator(new).is_valid(witness)
    assert not Draft202012Validator(old).is_valid(witness)


def test_a_branch_declaring_one_more_property_is_seen_inside_the_branch() -> None:
    widened = copy.deepcopy(ITEM)
    widened["properties"]["side"] = {"enum": ["LEFT", "RIGHT"]}
    report = classify(
        tool(_comments(ITEM)), tool(_comments({"oneOf": [widened, {"type": "string"}]}))
    )
    assert report.severity is Severity.ADDITIVE
    assert sorted((c.kind, c.path) for c in report.changes) == [
        (Kind.BRANCH_ADDED, "/inputSchema/properties/comments/items/oneOf"),
        (Kind.PROPERTY_ADDED, "/inputSchema/properties/comments/items/oneOf/0/properties/side"),
    ]


def test_a_union_beside_a_redundant_type_reads_as_the_union() -> None:
    old = {"type": "object", "properties": {"a": {"type": "string"}}}
    new = {"type": "object", "anyOf": [copy.deepcopy(old), {"type": "object", "required": ["b"]}]}
    report = classify(tool(old), tool(new))
    assert report.severity is Severity.ADDITIVE
    assert [c.kind for c in report.changes] == [Kind.BRANCH_ADDED]


def test_branches_trading_names_under_closed_objects_break() -> None:
    """Each old branch's value is refused by every new branch: no branch of the
    new union takes it, whatever the names (a value of a closed object carrying
    an undeclared name is refused, not ignored)."""

    def union(*names: str) -> dict[str, Any]:
        branches = [
            {
                "type": "object",
                "properties": {name: {"type": "string"}},
                "required": [name],
                "additionalProperties": False,
            }
            for name in names
        ]
        return {"type": "object", "properties": {"v": {"anyOf": branches}}}

    old, new = union("k0", "k1"), union("k2", "k3")
    report = classify(tool(old), tool(new))
    assert report.severity is Severity.BREAKING
    removed = [c for c in report.changes if c.kind is Kind.BRANCH_REMOVED]
    assert [c.witness for c in removed] == [{"v": {"k0": "a"}}, {"v": {"k1": "a"}}]
    for change in removed:
        assert not Draft202012Validator(new).is_valid(change.witness)


def test_a_removed_property_is_shown_only_with_a_witness_new_does_not_read() -> None:
    """Open objects: the removed value is still accepted, and silently ignored
    (seed 000). Its witness is refused by new read strictly, as the gate reads a
    version-less call; a removal new still reads through a branch shows none."""
    old = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    new = {"type": "object", "properties": {"a": {"type": "string"}}}
    change = next(c for c in classify(tool(old), tool(new)).changes)
    assert change.kind is Kind.PROPERTY_REMOVED
    assert change.witness == {"b": 0}
    assert Draft202012Validator(new).is_valid(change.witness)  # accepted, and ignored
    assert not Draft202012Validator(strict_schema(new)).is_valid(change.witness)


def _bounded(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"max_length": schema}}


def test_a_bound_written_the_other_way_over_the_integers_is_no_break() -> None:
    """A release of a fetch server: pydantic's `gt=0, lt=1000000` became `ge=1, le=999999`
    on an integer: the same integers pass (the engine called it two tightenings)."""
    old = {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1000000}
    new = {"type": "integer", "minimum": 1, "maximum": 999999}
    report = classify(tool(_bounded(old)), tool(_bounded(new)))
    assert report.severity is Severity.COSMETIC, report
    numbers = classify(
        tool(_bounded({"type": "number", "exclusiveMinimum": 0})),
        tool(_bounded({"type": "number", "minimum": 1})),
    )
    [change] = numbers.changes
    assert (change.kind, change.path) == (
        Kind.CONSTRAINT_TIGHTENED,
        "/inputSchema/properties/max_length/minimum",
    )
    assert change.witness == {"max_length": 0.5}
    loosened = classify(
        tool(_bounded({"type": "integer", "maximum": 10})),
        tool(_bounded({"type": "integer", "exclusiveMaximum": 12})),
    )
    assert [c.kind for c in loosened.changes] == [Kind.CONSTRAINT_RELAXED]


# -- 4. output changes are worded for the caller reading a result ----------------------------


def test_output_changes_are_worded_in_the_output_direction() -> None:
    old = _comments(ITEM)
    new = _comments({"anyOf": [copy.deepcopy(ITEM), OTHER]})
    report = classify(tool(outputSchema=old), tool(outputSchema=new))
    [change] = report.changes
    assert (change.kind, change.severity) == (Kind.BRANCH_ADDED, Severity.BREAKING)
    assert "a caller may now receive this shape" in change.message
    removed = classify(
        tool(outputSchema={"type": "object", "properties": {"id": {"type": "string"}}}),
        tool(outputSchema={"type": "object", "properties": {}}),
    ).changes[0]
    assert removed.kind is Kind.PROPERTY_REMOVED
    assert "sent" not in removed.message
    assert "reading it from a result" in removed.message
    sent = classify(
        tool({"type": "object", "properties": {"id": {"type": "string"}}}),
        tool({"type": "object", "properties": {}}),
    ).changes[0]
    assert "a value sent for it is no longer read" in sent.message


# -- 5. null is null, absent is absent --------------------------------------------------------


def test_a_default_null_is_shown_as_null_and_apart_from_absent() -> None:
    old = {"type": "object", "properties": {"q": {"type": "string"}}}
    new = copy.deepcopy(old)
    new["properties"]["cursor"] = {"type": ["string", "null"], "default": None}
    report = classify(tool(old), tool(new))
    added = next(c for c in report.changes if c.kind is Kind.DEFAULT_ADDED)
    assert added.message == "default null was added; an absent value is now read as null"
    document = msgspec.json.decode(msgspec.json.encode(added))
    assert document["new"] is None and "old" not in document  # null before, nothing after
    property_added = next(c for c in report.changes if c.kind is Kind.PROPERTY_ADDED)
    assert "old" not in msgspec.json.decode(msgspec.json.encode(property_added))


def test_a_const_null_changed_shows_null() -> None:
    old = {"type": "object", "properties": {"x": {"const": None}}}
    new = {"type": "object", "properties": {"x": {"const": 0}}}
    change = classify(tool(old), tool(new)).changes[0]
    assert change.message == "const changed from null to 0"
    assert msgspec.json.decode(msgspec.json.encode(change))["old"] is None
