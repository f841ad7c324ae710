"""Every keyword of each supported dialect is handled or explicitly sent to
`unanalyzable`, and the engine behaves as `dialects.reading` says.

The keywords come from each dialect's own meta-schemas (as python-jsonschema
ships them, `jsonschema_specifications`), so a keyword the tables forget fails
here. For each dialect and keyword, one change of that keyword is classified:
an analysed keyword gives a finding of a concrete kind (never `unanalyzable`,
never just `schema-rewritten`), an annotation a cosmetic one, an identity
nothing breaking, and a fail-closed keyword `unanalyzable`.
"""

from __future__ import annotations

from typing import Any

import jsonschema_specifications
import pytest

from registry.compat import Kind, Severity, classify
from registry.compat.dialects import (
    ANALYSED,
    ANNOTATION,
    DIALECTS,
    FAIL_CLOSED,
    IDENTITY,
    KNOWN,
    Dialect,
    dialect_of,
    reading,
)


def meta_schema_keywords(dialect: Dialect) -> set[str]:
    """The property names of the dialect's meta-schema and its vocabularies."""
    registry = jsonschema_specifications.REGISTRY
    base = dialect.uri.rstrip("#")
    found: set[str] = set()
    for uri in registry:
        if uri == base or uri.startswith(base.rsplit("/", 1)[0] + "/meta/"):
            found |= set(registry.contents(uri).get("properties", {}))
    if dialect.name == "draft-04":
        found.add("$ref")  # draft-04 defines `$ref` outside its meta-schema's properties
    return found


STRING, INTEGER = {"type": "string"}, {"type": "integer"}

# keyword -> (schema before, schema after): a change of that keyword alone
CHANGES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "type": (STRING, INTEGER),
    "enum": ({"enum": ["a", "b"]}, {"enum": ["a"]}),
    "const": ({"const": "a"}, {"const": "b"}),
    "default": ({"default": 1}, {"default": 2}),
    "properties": ({"properties": {"a": STRING}}, {"properties": {"a": INTEGER}}),
    "required": ({"required": ["a"]}, {"required": ["a", "b"]}),
    "additionalProperties": ({"additionalProperties": True}, {"additionalProperties": False}),
    "unevaluatedProperties": (
        {"unevaluatedProperties": STRING},
        {"unevaluatedProperties": INTEGER},
    ),
    "patternProperties": (
        {"patternProperties": {"^x": STRING}},
        {"patternProperties": {"^x": INTEGER}},
    ),
    "propertyNames": ({"propertyNames": {"maxLength": 3}}, {"propertyNames": {"maxLength": 2}}),
    "dependencies": ({"dependencies": {"a": ["b"]}}, {"dependencies": {"a": ["b", "c"]}}),
    "dependentRequired": (
        {"dependentRequired": {"a": ["b"]}},
        {"dependentRequired": {"a": ["b", "c"]}},
    ),
    "dependentSchemas": (
        {"dependentSchemas": {"a": {"required": ["b"]}}},
        {"dependentSchemas": {"a": {"required": ["b", "c"]}}},
    ),
    "items": ({"items": STRING}, {"items": INTEGER}),
    "prefixItems": ({"prefixItems": [STRING]}, {"prefixItems": [INTEGER]}),
    "additionalItems": (
        {"items": [STRING], "additionalItems": STRING},
        {"items": [STRING], "additionalItems": INTEGER},
    ),
    "unevaluatedItems": ({"unevaluatedItems": STRING}, {"unevaluatedItems": INTEGER}),
    "contains": ({"contains": STRING}, {"contains": INTEGER}),
    "minContains": ({"contains": STRING, "minContains": 1}, {"contains": STRING, "minContains": 2}),
    "maxContains": ({"contains": STRING, "maxContains": 2}, {"contains": STRING, "maxContains": 1}),
    "allOf": ({"allOf": [STRING, {"maxLength": 3}]}, {"allOf": [INTEGER, {"maxLength": 3}]}),
    "anyOf": ({"anyOf": [STRING, {"type": "null"}]}, {"anyOf": [STRING]}),
    "oneOf": ({"oneOf": [STRING, {"type": "null"}]}, {"oneOf": [STRING]}),
    "not": ({"not": STRING}, {"not": INTEGER}),
    "minimum": ({"minimum": 1}, {"minimum": 2}),
    "maximum": ({"maximum": 2}, {"maximum": 1}),
    "exclusiveMinimum": ({"exclusiveMinimum": 1}, {"exclusiveMinimum": 2}),
    "exclusiveMaximum": ({"exclusiveMaximum": 2}, {"exclusiveMaximum": 1}),
    "multipleOf": ({"multipleOf": 2}, {"multipleOf": 4}),
    "minLength": ({"minLength": 1}, {"minLength": 2}),
    "maxLength": ({"maxLength": 2}, {"maxLength": 1}),
    "pattern": ({"pattern": "^a"}, {"pattern": "^b"}),
    "format": ({}, {"format": "email"}),
    "minItems": ({"minItems": 1}, {"minItems": 2}),
    "maxItems": ({"maxItems": 2}, {"maxItems": 1}),
    "uniqueItems": ({}, {"uniqueItems": True}),
    "minProperties": ({"minProperties": 1}, {"minProperties": 2}),
    "maxProperties": ({"maxProperties": 2}, {"maxProperties": 1}),
    "$ref": ({"$ref": "#/$defs/s"}, {"$ref": "#/$defs/i"}),
    "if": ({"if": STRING, "then": {"maxLength": 1}}, {"if": INTEGER, "then": {"maxLength": 1}}),
    "then": ({"if": STRING, "then": {"maxLength": 1}}, {"if": STRING, "then": {"maxLength": 2}}),
    "else": ({"if": STRING, "else": {"maximum": 1}}, {"if": STRING, "else": {"maximum": 2}}),
    "$dynamicRef": ({"$dynamicRef": "#a"}, {"$dynamicRef": "#b"}),
    "$dynamicAnchor": ({"$dynamicAnchor": "a"}, {"$dynamicAnchor": "b"}),
    "$recursiveRef": ({"$recursiveRef": "#"}, {"$recursiveRef": "#/$defs/s"}),
    "$recursiveAnchor": ({"$recursiveAnchor": False}, {"$recursiveAnchor": True}),
    "$vocabulary": ({"$vocabulary": {}}, {"$vocabulary": {"x": True}}),
}
# Keywords that only mean something at the root of a document.
ROOT_ONLY = {"$schema", "$id", "id", "$anchor", "$defs", "definitions"}
DEFS = {"s": STRING, "i": INTEGER}


def definition(dialect: Dialect, keyword: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A tool whose input schema holds `schema` as property `p` (at the root
    for identities), in `dialect`."""
    container = "definitions" if dialect.name.startswith("draft") else "$defs"
    root: dict[str, Any] = {"$schema": dialect.uri, "type": "object", container: DEFS}
    if keyword in ROOT_ONLY:
        root.update(schema)
    else:
        root["properties"] = {"p": _in_container(schema, container)}
    return {"name": "t", "inputSchema": root}


def _in_container(value: Any, container: str) -> Any:
    """`value` with its `$ref`s pointing into `container`."""
    if isinstance(value, dict):
        return {k: _in_container(v, container) for k, v in value.items()}
    if isinstance(value, list):
        return [_in_container(v, container) for v in value]
    if isinstance(value, str):
        return value.replace("#/$defs/", f"#/{container}/")
    return value


def identity_change(keyword: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if keyword == "$schema":
        return {}, {}  # tested by the dialect-change tests below
    if keyword in ("$defs", "definitions"):
        return {keyword: {"unused": STRING}}, {keyword: {"unused": INTEGER}}
    return {keyword: "a"}, {keyword: "b"}


CASES = [
    (dialect, keyword)
    for dialect in DIALECTS
    for keyword in sorted(meta_schema_keywords(dialect) | (KNOWN - {"$schema"}))
    if keyword != "$schema"
]


def test_every_meta_schema_keyword_has_a_reading() -> None:
    for dialect in DIALECTS:
        for keyword in meta_schema_keywords(dialect):
            assert reading(dialect, keyword) in (ANALYSED, ANNOTATION, IDENTITY, FAIL_CLOSED)
            assert keyword in KNOWN, f"{keyword} of {dialect.name} is not in the tables"


@pytest.mark.parametrize(("dialect", "keyword"), CASES, ids=[f"{d.name}-{k}" for d, k in CASES])
def test_each_keyword_behaves_as_its_reading_says(dialect: Dialect, keyword: str) -> None:
    how = reading(dialect, keyword)
    if how == IDENTITY:
        before, after = identity_change(keyword)
    elif how == ANNOTATION:
        value = [1] if keyword == "examples" else True if keyword in ("deprecated",) else "x"
        other = [2] if keyword == "examples" else False if keyword == "deprecated" else "y"
        before, after = {keyword: value}, {keyword: other}
    elif how == FAIL_CLOSED and keyword == "additionalItems":
        # 2020-12 reads it only beside an array `items` (the older spelling, leniently)
        before, after = {"additionalItems": STRING}, {"additionalItems": INTEGER}
    else:
        before, after = CHANGES[keyword]
    report = classify(definition(dialect, keyword, before), definition(dialect, keyword, after))
    kinds = {c.kind for c in report.changes}
    if how == FAIL_CLOSED:
        assert Kind.UNANALYZABLE in kinds, (keyword, report)
    elif how == ANALYSED:
        assert Kind.UNANALYZABLE not in kinds, (keyword, report)
        assert kinds - {Kind.SCHEMA_REWRITTEN}, (keyword, report)
    elif how == ANNOTATION:
        assert report.severity is Severity.COSMETIC, (keyword, report)
    else:
        assert Kind.UNANALYZABLE not in kinds, (keyword, report)
        assert report.severity is not Severity.BREAKING, (keyword, report)


# -- the dialect of each side ------------------------------------------------------------------

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": schema}


def test_generator_upgrade_from_draft_07_to_2020_12_is_dialect_changed_alone() -> None:
    """What zod-to-json-schema emits for the same zod schema, before and after
    its target moved to 2020-12."""
    old = {
        "$schema": DRAFT_07,
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"$ref": "#/definitions/id"}, INTEGER]},
            "limit": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["pair"],
        "additionalProperties": False,
        "definitions": {"id": {"type": "string", "minLength": 1}},
    }
    new = {
        "$schema": DRAFT_2020,
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"$ref": "#/$defs/id"}, INTEGER]},
            "limit": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["pair"],
        "additionalProperties": False,
        "$defs": {"id": {"type": "string", "minLength": 1}},
    }
    report = classify(tool(old), tool(new))
    assert [(c.kind, c.path) for c in report.changes] == [
        (Kind.DIALECT_CHANGED, "/inputSchema/$schema")
    ]
    assert report.severity is Severity.COSMETIC


def test_draft_04_boolean_exclusive_minimum_reads_as_the_numeric_form() -> None:
    old = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    new = {
        "$schema": DRAFT_2020,
        **old,
        "properties": {"n": {"type": "number", "exclusiveMinimum": 0}},
    }
    new["$schema"] = DRAFT_2020
    report = classify(tool(old), tool(new))
    assert {c.kind for c in report.changes} == {Kind.DIALECT_CHANGED}


def test_a_keyword_one_dialect_ignores_and_the_other_enforces_is_unanalyzable() -> None:
    # draft-07 validators ignore unevaluatedProperties; 2020-12 ones refuse {"x": 1}
    body = {"type": "object", "properties": {"a": STRING}, "unevaluatedProperties": False}
    report = classify(tool({"$schema": DRAFT_07, **body}), tool({"$schema": DRAFT_2020, **body}))
    found = {(c.kind, c.path) for c in report.changes}
    assert (Kind.UNANALYZABLE, "/inputSchema/unevaluatedProperties") in found
    assert report.severity is Severity.BREAKING


def test_an_unknown_dialect_is_compared_with_no_other() -> None:
    old = {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}
    new = {"$schema": DRAFT_2020, "type": "object"}
    report = classify(tool(old), tool(new))
    assert [c.kind for c in report.changes] == [Kind.UNANALYZABLE]
    assert dialect_of("http://json-schema.org/draft-03/schema#") is None
    assert dialect_of(None) is DIALECTS[-1]
    assert dialect_of("http://json-schema.org/draft-07/schema") is DIALECTS[2]
