"""References, cycles, dialects and the documented limits of the engine."""

from __future__ import annotations

from typing import Any

import pytest

from registry.compat import LIMITS, ClassificationError, Kind, Severity, classify


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
