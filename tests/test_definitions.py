"""Validation of MCP tool definitions (publishing rule step 1) and bare-schema wrapping."""

from __future__ import annotations

from typing import Any

import pytest

from registry.definitions import (
    MAX_SCHEMA_DEPTH,
    DefinitionError,
    normalize_document,
    validate_definition,
)
from tests.corpus import load_pairs

DRAFT_04 = "http://json-schema.org/draft-04/schema#"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"


def tool(**fields: Any) -> dict[str, Any]:
    definition: dict[str, Any] = {"name": "db.query", "inputSchema": {"type": "object"}}
    definition.update(fields)
    return definition


def schema(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", **keywords}


def refused(definition: Any) -> DefinitionError:
    with pytest.raises(DefinitionError) as caught:
        validate_definition(definition)
    return caught.value


@pytest.mark.parametrize(
    "definition",
    [
        tool(),
        tool(name="a"),
        tool(name="A-z_0.9"),
        tool(name="x" * 128),
        tool(
            title="Query",
            description="Run a read-only SQL query.",
            inputSchema=schema(
                properties={"query": {"type": "string", "minLength": 1}},
                required=["query"],
                additionalProperties=False,
            ),
            outputSchema=schema(properties={"rows": {"type": "array"}}),
            annotations={"title": "Query", "readOnlyHint": True, "openWorldHint": False},
            icons=[{"src": "https://example.com/db.png", "mimeType": "image/png"}],
            _meta={"schemaVersion": "v4"},
        ),
        tool(inputSchema=schema(**{"$schema": DRAFT_07}, properties={"a": {"type": "string"}})),
        # draft-04's boolean exclusiveMinimum is valid in its own dialect
        tool(
            inputSchema=schema(
                **{"$schema": DRAFT_04},
                properties={"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
            )
        ),
        tool(
            inputSchema=schema(
                **{"$defs": {"Name": {"type": "string"}}},
                properties={"a": {"$ref": "#/$defs/Name"}, "b": {"items": {"$ref": "#"}}},
            )
        ),
        tool(
            inputSchema=schema(
                **{"$schema": DRAFT_07},
                definitions={"Name": {"type": "string"}},
                properties={"a": {"$ref": "#/definitions/Name"}},
            )
        ),
        tool(
            inputSchema=schema(
                **{"$defs": {"A": {"$anchor": "named", "type": "string"}}},
                properties={"a": {"$ref": "#named"}},
            )
        ),
        # an embedded resource with its own $id: its refs resolve against it
        tool(
            inputSchema=schema(
                **{
                    "$id": "https://example.com/root",
                    "$defs": {
                        "A": {
                            "$id": "a",
                            "$defs": {"B": {"type": "string"}},
                            "properties": {"b": {"$ref": "#/$defs/B"}},
                        }
                    },
                },
                properties={"a": {"$ref": "a"}, "b": {"$ref": "https://example.com/a#/$defs/B"}},
            )
        ),
        # "$ref" inside data keywords is data, and a property may be called "$ref"
        tool(
            inputSchema=schema(
                properties={
                    "$ref": {"type": "string"},
                    "x": {"default": {"$ref": "#/nowhere"}, "const": {"$ref": "y"}},
                }
            )
        ),
    ],
)
def test_valid_definitions(definition: dict[str, Any]) -> None:
    validate_definition(definition)


@pytest.mark.parametrize(
    ("definition", "pointer", "fragment"),
    [
        ([], "", "JSON object"),
        (None, "", "JSON object"),
        ({"inputSchema": {"type": "object"}}, "", "'name' is required"),
        (tool(name=5), "/name", "must be a string"),
        (tool(name=""), "/name", "1 to 128 characters"),
        (tool(name="db query"), "/name", "1 to 128 characters"),
        (tool(name="db/query"), "/name", "1 to 128 characters"),
        (tool(name="x" * 129), "/name", "1 to 128 characters"),
        (tool(name="tool\n"), "/name", "1 to 128 characters"),
        (tool(name="caf\u00e9"), "/name", "1 to 128 characters"),
        ({"name": "t"}, "", "'inputSchema' is required"),
        (tool(inputSchema=None), "/inputSchema", "JSON Schema object, not null"),
        (tool(inputSchema=True), "/inputSchema", "JSON Schema object, not a boolean"),
        (tool(inputSchema={}), "/inputSchema", '"type": "object"'),
        (tool(inputSchema={"type": "array"}), "/inputSchema", '"type": "object"'),
        (tool(inputSchema={"type": ["object", "null"]}), "/inputSchema", '"type": "object"'),
        (tool(outputSchema={"type": "string"}), "/outputSchema", '"type": "object"'),
        (tool(title=1), "/title", "'title' must be a string"),
        (tool(description=["x"]), "/description", "'description' must be a string"),
        (tool(annotations=[]), "/annotations", "must be an object"),
        (tool(annotations={"readOnlyHint": "true"}), "/annotations/readOnlyHint", "true or false"),
        (tool(annotations={"customHint": 1}), "/annotations/customHint", "true or false"),
        (tool(annotations={"title": 3}), "/annotations/title", "must be a string"),
        (tool(icons={"src": "x"}), "/icons", "must be an array"),
        (tool(icons=[{"src": "a"}, "b"]), "/icons/1", "string 'src'"),
        (tool(_meta=[]), "/_meta", "must be an object"),
    ],
)
def test_invalid_definitions(definition: Any, pointer: str, fragment: str) -> None:
    error = refused(definition)
    assert error.pointer == pointer
    assert fragment in error.message


@pytest.mark.parametrize(
    ("input_schema", "pointer", "keyword"),
    [
        (schema(properties={"x": {"type": "strin"}}), "/properties/x/type", "type"),
        (
            schema(properties={"x": {"minLength": -1}}),
            "/properties/x/minLength",
            "minLength",
        ),
        (schema(required="x"), "/required", "required"),
        (schema(required=["a", "a"]), "/required", "required"),
        (schema(properties={"x": {"enum": 5}}), "/properties/x/enum", "enum"),
        (
            schema(properties={"a/b": {"pattern": 5}}),
            "/properties/a~1b/pattern",
            "pattern",
        ),
        (
            schema(additionalProperties=3),
            "/additionalProperties",
            "additionalProperties",
        ),
        (
            schema(properties={"n": {"type": "number", "exclusiveMinimum": True}}),
            "/properties/n/exclusiveMinimum",
            "exclusiveMinimum",
        ),
        (
            schema(**{"$schema": DRAFT_07}, properties={"x": {"items": [{"type": 1}]}}),
            "/properties/x/items/0/type",
            "type",
        ),
    ],
)
def test_meta_schema_failures_name_the_keyword_and_its_place(
    input_schema: dict[str, Any], pointer: str, keyword: str
) -> None:
    error = refused(tool(inputSchema=input_schema))
    assert error.pointer == "/inputSchema" + pointer
    assert error.message.startswith(f"'{keyword}' is invalid: ")
    assert str(error) == f"/inputSchema{pointer}: {error.message}"


def test_output_schema_is_checked_against_its_meta_schema() -> None:
    error = refused(tool(outputSchema=schema(properties={"x": {"type": "float"}})))
    assert error.pointer == "/outputSchema/properties/x/type"


def test_the_dialect_decides_validity() -> None:
    boolean_exclusive = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    validate_definition(
        tool(inputSchema=schema(**{"$schema": DRAFT_04}, properties={"n": boolean_exclusive}))
    )
    with pytest.raises(DefinitionError):
        validate_definition(tool(inputSchema=schema(properties={"n": boolean_exclusive})))


@pytest.mark.parametrize(
    ("dialect", "fragment"),
    [("https://example.com/my-dialect", "unknown JSON Schema dialect"), (7, "must be a string")],
)
def test_unknown_dialects_are_refused(dialect: Any, fragment: str) -> None:
    error = refused(tool(inputSchema=schema(**{"$schema": dialect})))
    assert error.pointer == "/inputSchema/$schema"
    assert fragment in error.message


@pytest.mark.parametrize(
    ("input_schema", "pointer", "fragment"),
    [
        (
            schema(properties={"x": {"$ref": "#/$defs/Nope"}}),
            "/inputSchema/properties/x/$ref",
            "$ref to missing target '#/$defs/Nope'",
        ),
        (
            schema(**{"$defs": {"A": {}}}, properties={"x": {"$ref": "#/$defs/A/properties/b"}}),
            "/inputSchema/properties/x/$ref",
            "missing target",
        ),
        (
            schema(properties={"x": {"anyOf": [{"type": "null"}, {"$ref": "#missing-anchor"}]}}),
            "/inputSchema/properties/x/anyOf/1/$ref",
            "missing target",
        ),
        (
            schema(properties={"x": {"$ref": "https://example.com/other.json"}}),
            "/inputSchema/properties/x/$ref",
            "remote target",
        ),
        (
            schema(properties={"x": {"$ref": "other.json#/a"}}),
            "/inputSchema/properties/x/$ref",
            "remote target",
        ),
    ],
)
def test_refs_must_resolve_inside_the_definition(
    input_schema: dict[str, Any], pointer: str, fragment: str
) -> None:
    error = refused(tool(inputSchema=input_schema))
    assert error.pointer == pointer
    assert fragment in error.message


@pytest.mark.parametrize("keyword", ["not", "items", "additionalProperties", "anyOf", "properties"])
def test_schemas_nested_past_the_limit_are_refused_without_recursion_error(keyword: str) -> None:
    def nest(depth: int) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "string"}
        for _ in range(depth):
            if keyword == "anyOf":
                node = {"anyOf": [node]}
            elif keyword == "properties":
                node = {"type": "object", "properties": {"p": node}}
            else:
                node = {keyword: node}
        return node

    # the root inputSchema is level 1, the nested chain adds the rest
    validate_definition(tool(inputSchema=schema(properties={"x": nest(MAX_SCHEMA_DEPTH - 2)})))
    error = refused(tool(inputSchema=schema(properties={"x": nest(MAX_SCHEMA_DEPTH * 20)})))
    assert f"nested deeper than {MAX_SCHEMA_DEPTH} levels" in error.message
    assert error.pointer.startswith("/inputSchema/properties/x/")


def test_normalize_keeps_a_tool_definition() -> None:
    definition = tool(description="d")
    assert normalize_document(definition) == definition


def test_normalize_wraps_a_bare_schema() -> None:
    bare = schema(properties={"q": {"type": "string"}})
    assert normalize_document(bare) == {"name": "tool", "inputSchema": bare}
    validate_definition(normalize_document(bare))


@pytest.mark.parametrize("document", [[], "x", 1, None, True])
def test_normalize_refuses_what_is_neither(document: Any) -> None:
    with pytest.raises(DefinitionError, match="JSON Schema object"):
        normalize_document(document)


@pytest.mark.corpus
def test_real_definitions_from_the_corpus() -> None:
    """Every definition github-mcp-server listed is valid, except the two
    versions of get_me that listed `inputSchema: null` (MCP requires an object)."""
    refused_ids = set()
    checked = 0
    for pair in load_pairs():
        for definition in (pair.old, pair.new):
            if definition is None:
                continue
            checked += 1
            try:
                validate_definition(definition)
            except DefinitionError as error:
                assert error.pointer == "/inputSchema"
                assert definition["inputSchema"] is None
                refused_ids.add(pair.id)
    assert checked > 700
    assert len(refused_ids) <= 2
