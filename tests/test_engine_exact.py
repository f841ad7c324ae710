"""Exact where the engine used to be over-strict, sound where it used to slip.

Each pair states its truth: a breaking verdict carries a witness that
python-jsonschema finds valid under the old schema and refused by the new
one; a non-breaking verdict is checked on every value of a small universe
that the old schema accepts.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from jsonschema import FormatChecker
from jsonschema.validators import Draft202012Validator, validator_for

from registry.compat import Kind, Severity, classify
from registry.compat.kinds import READ_DIFFERENTLY

STRING, INTEGER, NUMBER = {"type": "string"}, {"type": "integer"}, {"type": "number"}
NULL = {"type": "null"}


def tool(schema: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": schema}


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def validator(schema: Any) -> Any:
    return validator_for(schema, default=Draft202012Validator)(
        schema, format_checker=FormatChecker()
    )


SCALARS: list[Any] = [None, True, 0, 1, 1.5, -1, "", "a", "ab", "x1", "red"]
UNIVERSE: list[Any] = [
    *SCALARS,
    [],
    ["a"],
    ["a", 1],
    ["a", 1, 1],
    [1, "a"],
    *({name: value} for name, value in itertools.product(["a", "b", "foo", "bar"], SCALARS)),
    {"a": "a", "b": 1},
    {"foo": "a", "bar": 1},
    {"prop1": "one"},
    {"prop1": "seven"},
    {"prop1": 1},
]


def assert_safe(old: Any, new: Any) -> None:
    """No value of the universe valid under old is refused by new."""
    old_validator, new_validator = validator(old), validator(new)
    for value in UNIVERSE:
        if old_validator.is_valid(value):
            assert new_validator.is_valid(value), value


def assert_breaks(old: Any, new: Any, *kinds: Kind) -> None:
    report = classify(tool(old), tool(new))
    assert report.severity is Severity.BREAKING, report
    found = {c.kind for c in report.breaking}
    assert set(kinds) <= found, found
    for change in report.breaking:
        assert change.witness is not None, change
        assert validator(old).is_valid(change.witness), change
        if change.kind not in READ_DIFFERENTLY:
            assert not validator(new).is_valid(change.witness), change


def assert_not_breaking(old: Any, new: Any, severity: Severity | None = None) -> None:
    report = classify(tool(old), tool(new))
    assert report.severity is not Severity.BREAKING, report
    if severity is not None:
        assert report.severity is severity, report
    assert_safe(old, new)


# -- missed before: 2020-12 keywords read as opaque ---------------------------------------------


def test_unevaluated_properties_read_like_additional_properties() -> None:
    old = {**obj(foo=STRING), "unevaluatedProperties": STRING}
    new = {**obj(foo=STRING, bar=NUMBER), "unevaluatedProperties": STRING}
    assert_breaks(old, new, Kind.TYPE_NARROWED)
    report = classify(tool(old), tool(new))
    assert {"bar": "a"} in [c.witness for c in report.breaking]


def test_unevaluated_items_read_like_items_after_prefix_items() -> None:
    old = {"type": "array", "prefixItems": [STRING, NUMBER, NUMBER], "unevaluatedItems": STRING}
    new = {"type": "array", "prefixItems": [STRING, NUMBER], "unevaluatedItems": STRING}
    assert_breaks(old, new, Kind.TYPE_NARROWED)


def test_unevaluated_properties_beside_subschemas_fail_closed() -> None:
    old = {"allOf": [obj(a=STRING)], "unevaluatedProperties": False}
    new = {"allOf": [obj(a=STRING)], "unevaluatedProperties": STRING}
    report = classify(tool(old), tool(new))
    assert Kind.UNANALYZABLE in report.kinds()


# -- over-strict before: conjunctions, one-branch unions, impossible values ----------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"allOf": [STRING, {"maxLength": 5}]}, {"allOf": [{"maxLength": 5}, STRING]}),
        ({"allOf": [STRING, STRING]}, {"allOf": [STRING]}),
        ({"allOf": [STRING]}, {"allOf": [STRING, STRING]}),
        (STRING, {"allOf": [STRING]}),
        ({"allOf": [STRING]}, STRING),
        ({"oneOf": [STRING]}, {"anyOf": [STRING]}),
        ({"anyOf": [STRING]}, {"allOf": [STRING]}),
        ({"oneOf": [STRING]}, STRING),
        (STRING, {"$ref": "#/$defs/s", "$defs": {"s": STRING}}),
        ({"$ref": "#/$defs/s", "$defs": {"s": STRING}}, STRING),
        ({"$id": "a", **STRING}, {"$id": "b", **STRING}),
    ],
)
def test_the_same_values_in_other_words_are_not_breaking(old: Any, new: Any) -> None:
    assert_not_breaking(tool_schema(old), tool_schema(new))


def tool_schema(inner: Any) -> dict[str, Any]:
    """`inner` as property `p` of an object (`$defs` and `$id` kept at the root)."""
    root: dict[str, Any] = {"type": "object"}
    inner = dict(inner)
    if "$defs" in inner:
        root["$defs"] = inner.pop("$defs")
    root["properties"] = {"p": inner}
    return root


def test_a_conjunct_removed_relaxes_and_one_added_tightens() -> None:
    loose = obj(prop1={"allOf": [{"enum": ["one", "two", "three"]}, STRING]})
    tight = obj(prop1={"allOf": [STRING]})
    assert_not_breaking(loose, tight, Severity.ADDITIVE)
    assert_breaks(tight, loose, Kind.ENUM_NARROWED)


def test_a_branch_that_accepted_nothing_is_no_loss() -> None:
    old = obj(v={"anyOf": [STRING, {"allOf": [STRING, INTEGER]}]})
    new = obj(v={"anyOf": [STRING]})
    assert_not_breaking(old, new)


def test_a_property_that_could_never_be_sent_is_no_loss() -> None:
    old = {**obj(a=STRING, gone=False), "additionalProperties": False}
    new = {**obj(a=STRING), "additionalProperties": False}
    assert_not_breaking(old, new)


def test_a_removed_property_still_read_by_the_map_is_no_loss() -> None:
    old = {**obj(foo=STRING, bar=STRING), "additionalProperties": False}
    new = {**obj(foo=STRING), "additionalProperties": STRING}
    assert_not_breaking(old, new)
    narrower = {**obj(foo=STRING), "additionalProperties": INTEGER}
    assert_breaks(old, narrower)


def test_a_pattern_that_now_governs_a_removed_property_is_no_loss() -> None:
    old = {**obj(foo=STRING, I_123=INTEGER), "additionalProperties": False}
    new = {
        **obj(foo=STRING),
        "additionalProperties": False,
        "patternProperties": {"^S_": STRING, "^I_": NUMBER},
    }
    assert_not_breaking(old, new)


# -- keywords analysed instead of unanalyzable -----------------------------------------------------


def test_not_compares_what_it_refuses() -> None:
    assert_not_breaking({"not": NUMBER}, {"not": INTEGER}, Severity.ADDITIVE)
    assert_breaks({"not": INTEGER}, {"not": NUMBER}, Kind.CONSTRAINT_TIGHTENED)
    assert_breaks(obj(a=STRING), obj(a={**STRING, "not": {"const": "a"}}))


def test_dependent_required() -> None:
    old = {**obj(card=INTEGER, cvv=INTEGER, zip=STRING), "dependentRequired": {"card": ["cvv"]}}
    new = {
        **obj(card=INTEGER, cvv=INTEGER, zip=STRING),
        "dependentRequired": {"card": ["cvv", "zip"]},
    }
    assert_breaks(old, new, Kind.CONSTRAINT_TIGHTENED)
    assert_not_breaking(new, old, Severity.ADDITIVE)


def test_draft_07_dependencies_read_as_both_kinds() -> None:
    draft = "http://json-schema.org/draft-07/schema#"
    old = {"$schema": draft, **obj(a=STRING, b=STRING), "dependencies": {"a": ["b"]}}
    new = {"$schema": draft, **obj(a=STRING, b=STRING), "dependencies": {"b": ["a"]}}
    assert_breaks(old, new, Kind.CONSTRAINT_TIGHTENED)
    schemas_old = {"$schema": draft, "dependencies": {"foo": STRING, "bar": STRING}}
    schemas_new = {"$schema": draft, "dependencies": {"foo": STRING}}
    assert_not_breaking(schemas_old, schemas_new)


def test_dependent_schemas() -> None:
    old = {**obj(a=STRING, b=STRING), "dependentSchemas": {"a": {"required": ["b"]}}}
    new = {**obj(a=STRING, b=STRING), "dependentSchemas": {"a": {"required": ["b", "c"]}}}
    assert_breaks(old, new, Kind.REQUIRED_ADDED)
    assert_not_breaking(new, old)


def test_property_names() -> None:
    old = {**obj(), "additionalProperties": STRING}
    new = {**old, "propertyNames": {"pattern": "^[a-z]+$"}}
    assert_breaks(old, new, Kind.CONSTRAINT_TIGHTENED)
    assert_not_breaking(new, old)


def test_contains_and_min_contains() -> None:
    old = {"type": "array", "contains": STRING}
    new = {"type": "array", "contains": STRING, "minContains": 2}
    assert_breaks(old, new, Kind.CONSTRAINT_TIGHTENED)
    assert_not_breaking(new, old)
    assert_breaks({"type": "array"}, old, Kind.CONSTRAINT_TIGHTENED)


def test_a_branch_changed_inside_a_union_is_compared_in_depth() -> None:
    old = obj(v={"anyOf": [STRING, obj(x=STRING)]})
    new = obj(v={"anyOf": [STRING, {**obj(x=STRING), "required": ["x"]}]})
    assert_breaks(old, new, Kind.REQUIRED_ADDED)


def test_a_union_added_beside_an_object_is_a_conjunct() -> None:
    old = {**obj(body=STRING, reaction=STRING), "required": []}
    new = {**old, "anyOf": [{"required": ["body"]}, {"required": ["reaction"]}]}
    assert_breaks(old, new, Kind.CONSTRAINT_TIGHTENED)
    assert_not_breaking(new, old, Severity.ADDITIVE)


def test_a_plain_schema_becoming_a_nullable_union_keeps_its_narrowing() -> None:
    old = obj(t=STRING)
    new = obj(t={"anyOf": [{**STRING, "minLength": 1}, NULL]})
    assert_breaks(old, new, Kind.CONSTRAINT_TIGHTENED)
    report = classify(tool(old), tool(new))
    assert {"t": ""} in [c.witness for c in report.breaking]


# -- the definition around the schemas -------------------------------------------------------------


def test_fields_outside_the_mcp_tool_are_cosmetic() -> None:
    old = {**tool(obj(a=STRING)), "surface": "cli", "skills": ["a"], "requiredScopes": ["repo"]}
    new = {**tool(obj(a=STRING)), "surface": "web", "skills": ["b"]}
    report = classify(old, new)
    assert report.severity is Severity.COSMETIC
    assert {(c.kind, c.path) for c in report.changes} == {
        (Kind.EXTENSION_CHANGED, "/surface"),
        (Kind.EXTENSION_CHANGED, "/skills"),
        (Kind.EXTENSION_CHANGED, "/requiredScopes"),
    }


def test_a_renamed_tool_breaks_its_callers() -> None:
    report = classify(tool(obj()), {**tool(obj()), "name": "t2"})
    assert [(c.kind, c.severity) for c in report.changes] == [
        (Kind.TOOL_RENAMED, Severity.BREAKING)
    ]
    assert report.changes[0].message == 'the tool was renamed from "t" to "t2"; calls to "t" fail'
