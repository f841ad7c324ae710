"""References, cycles, dialects and the documented limits of the engine."""

from __future__ import annotations

from typing import Any

import pytest

from registry.compat import LIMITS, ClassificationError, Kind, Severity, classify
from tests.adversarial import package_json_like, ref_chain, union_of_objects, wide_object


def tool(schema: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": schema}


RECURSIVE = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/node"}},
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
        }
    },
}


def test_recursive_schema_compared_with_itself_is_identical() -> None:
    import copy

    assert classify(tool(RECURSIVE), tool(copy.deepcopy(RECURSIVE))).changes == []


def test_change_inside_a_recursive_definition_is_found_once_and_terminates() -> None:
    import copy

    new = copy.deepcopy(RECURSIVE)
    new["$defs"]["node"]["properties"]["label"] = {"type": "string", "maxLength": 3}
    report = classify(tool(RECURSIVE), tool(new))
    tightened = [c for c in report.changes if c.kind is Kind.CONSTRAINT_TIGHTENED]
    assert [c.path for c in tightened] == ["/inputSchema/$defs/node/properties/label/maxLength"]
    assert tightened[0].witness == {"tree": {"label": "aaaa"}}


def test_draft07_definitions_and_tuple_items() -> None:
    old = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"$ref": "#/definitions/s"}, {"type": "integer"}]}
        },
        "definitions": {"s": {"type": "string"}},
    }
    new = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"$ref": "#/definitions/s"}, {"type": "string"}]}
        },
        "definitions": {"s": {"type": "string"}},
    }
    report = classify(tool(old), tool(new))
    narrowed = [c for c in report.changes if c.kind is Kind.TYPE_NARROWED]
    assert [c.path for c in narrowed] == ["/inputSchema/properties/pair/items/1/type"]
    assert narrowed[0].witness == {"pair": ["a", 0]}


def test_2020_prefix_items_equal_to_draft07_tuple_items() -> None:
    draft07 = {
        "type": "object",
        "properties": {
            "p": {"type": "array", "items": [{"type": "string"}], "additionalItems": False}
        },
    }
    modern = {
        "type": "object",
        "properties": {"p": {"type": "array", "prefixItems": [{"type": "string"}], "items": False}},
    }
    assert classify(tool(draft07), tool(modern)).severity is Severity.IDENTICAL or all(
        c.severity is not Severity.BREAKING for c in classify(tool(draft07), tool(modern)).changes
    )


def test_boolean_schemas() -> None:
    old = {"type": "object", "properties": {"a": True}}
    new = {"type": "object", "properties": {"a": False}}
    report = classify(tool(old), tool(new))
    assert report.severity is Severity.BREAKING
    assert report.changes[0].kind is Kind.TYPE_NARROWED
    assert classify(tool(new), tool(old)).severity is Severity.ADDITIVE


def test_nullable_type_list() -> None:
    old = {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}
    new = {"type": "object", "properties": {"a": {"type": "string"}}}
    report = classify(tool(old), tool(new))
    change = next(c for c in report.changes if c.kind is Kind.TYPE_NARROWED)
    assert change.witness == {"a": None}


def test_union_branch_matched_and_compared_in_depth() -> None:
    old = {
        "type": "object",
        "properties": {
            "v": {
                "oneOf": [
                    {"type": "string"},
                    {"type": "object", "properties": {"x": {"type": "string"}}},
                ]
            }
        },
    }
    new = {
        "type": "object",
        "properties": {
            "v": {
                "oneOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
                    },
                ]
            }
        },
    }
    report = classify(tool(old), tool(new))
    assert report.severity is Severity.ADDITIVE
    assert [c.path for c in report.changes] == ["/inputSchema/properties/v/oneOf/1/properties/y"]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "missing target"),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://evil.example/s.json"}}},
            "never fetched",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/b"}},
                "$defs": {"b": {"$ref": "#/$defs/c"}, "c": {"$ref": "#/$defs/b"}},
            },
            "cycle",
        ),
        ({"type": "object", "properties": []}, "properties"),
        ({"type": "objet"}, "type"),
        ({"type": "object", "properties": {"n": {"maximum": "10"}}}, "maximum"),
        ("not a schema", "object or a boolean"),
    ],
)
def test_refused_schemas_raise_a_documented_error(schema: Any, message: str) -> None:
    with pytest.raises(ClassificationError, match=message):
        classify(tool({"type": "object"}), tool(schema))


def test_ten_thousand_levels_are_refused_without_recursion_error() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(10_000):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(ClassificationError, match=f"deeper than {LIMITS.max_depth}"):
        classify(tool({"type": "object"}), tool(deep))


def test_a_definition_must_be_an_object() -> None:
    with pytest.raises(ClassificationError):
        classify([], tool({}))  # type: ignore[arg-type]


# -- the work budget (Limits.max_steps, max_walk_depth, max_branch_pairs) ------------------


def _edits() -> list[tuple[str, Any]]:
    def types_narrowed(schema: dict[str, Any]) -> None:
        schema["definitions"]["entryObject"]["properties"]["types"] = {
            "$ref": "#/definitions/entry"
        }

    def overrides_widened(schema: dict[str, Any]) -> None:
        schema["definitions"]["overrides"]["additionalProperties"]["anyOf"].append({"type": "null"})

    def fallback_tightened(schema: dict[str, Any]) -> None:
        schema["definitions"]["fallback"]["minItems"] = 2

    def export_removed(schema: dict[str, Any]) -> None:
        schema["definitions"]["exports"]["anyOf"].pop(1)

    return [
        ("types-narrowed", types_narrowed),
        ("overrides-widened", overrides_widened),
        ("fallback-tightened", fallback_tightened),
        ("export-removed", export_removed),
    ]


@pytest.mark.parametrize(("edit", "change"), _edits(), ids=[e for e, _ in _edits()])
def test_a_recursive_package_json_schema_is_classified_both_ways(edit: str, change: Any) -> None:
    """Item 8 of issue 24: real recursive schemas raised RecursionError."""
    import copy
    import json

    old = package_json_like()
    assert 20_000 < len(json.dumps(old)) < 30_000
    new = copy.deepcopy(old)
    change(new)
    for before, after in ((old, new), (new, old)):
        report = classify(tool(before), tool(after))
        assert report.changes
        assert report == classify(tool(before), tool(after))  # the same every time


def test_a_recursive_package_json_schema_is_classified_under_a_low_recursion_limit() -> None:
    import copy
    import sys

    old = package_json_like()
    new = copy.deepcopy(old)
    _edits()[0][1](new)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(220)
    try:
        try:
            outcome: Any = classify(tool(old), tool(new))
        except ClassificationError as error:  # the documented refusal, never RecursionError
            outcome = error
    finally:
        sys.setrecursionlimit(limit)
    assert isinstance(outcome, ClassificationError) or outcome.severity is Severity.BREAKING


def test_thirty_thousand_properties_are_compared_change_by_change() -> None:
    old = wide_object(30_000)
    new = {"type": "object", "properties": dict(old["properties"])}
    new["properties"]["p7"] = {"type": "string", "maxLength": 3}
    new["properties"]["q"] = {"type": "string"}
    report = classify(tool(old), tool(new))
    assert sorted((c.kind, c.path) for c in report.changes) == [
        (Kind.CONSTRAINT_TIGHTENED, "/inputSchema/properties/p7/maxLength"),
        (Kind.DESCRIPTION_CHANGED, "/inputSchema/properties/p7/description"),
        (Kind.PROPERTY_ADDED, "/inputSchema/properties/q"),
    ]
    tightened = next(c for c in report.changes if c.kind is Kind.CONSTRAINT_TIGHTENED)
    assert tightened.witness == {"p7": "aaaa"}


def test_two_unions_of_a_thousand_changed_branches_are_unanalyzable_naming_the_bound() -> None:
    report = classify(
        tool(union_of_objects(1000, "string")), tool(union_of_objects(1000, "integer"))
    )
    [change] = report.changes
    assert (change.kind, change.path) == (Kind.UNANALYZABLE, "/inputSchema/properties/v/anyOf")
    assert f"max_branch_pairs = {LIMITS.max_branch_pairs:,}" in change.message


def test_a_thousand_branches_reordered_pair_up_by_their_json() -> None:
    old = union_of_objects(1000, "string")
    new = union_of_objects(1000, "string")
    new["properties"]["v"]["anyOf"].reverse()
    new["properties"]["v"]["anyOf"][0]["properties"]["key_999"]["maxLength"] = 3
    report = classify(tool(old), tool(new))
    assert [(c.kind, c.path) for c in report.changes] == [
        (
            Kind.CONSTRAINT_TIGHTENED,
            "/inputSchema/properties/v/anyOf/0/properties/key_999/maxLength",
        )
    ]


def test_two_recursions_of_other_periods_stop_at_the_walk_depth_naming_it() -> None:
    report = classify(tool(ref_chain(30)), tool(ref_chain(31, "integer")))
    [change] = report.changes
    assert change.kind is Kind.UNANALYZABLE
    assert change.path.startswith("/inputSchema/$defs/n")
    assert f"max_walk_depth = {LIMITS.max_walk_depth}" in change.message
    assert report == classify(tool(ref_chain(30)), tool(ref_chain(31, "integer")))


def test_the_step_budget_is_counted_not_timed() -> None:
    from registry.compat import Limits

    old, new = union_of_objects(30, "string"), union_of_objects(30, "integer")
    tight = Limits(max_steps=40)
    first = classify(tool(old), tool(new), limits=tight)
    assert [c.kind for c in first.changes][-1:] == [Kind.UNANALYZABLE]
    assert "max_steps = 40" in first.changes[-1].message
    assert all(classify(tool(old), tool(new), limits=tight) == first for _ in range(3))
    assert not any(
        "budget" in c.message for c in classify(tool(old), tool(new)).changes
    )  # the defaults are ample for this
