"""Validation of MCP tool definitions: step 1 of the publishing rule (DESIGN.md).

    validate_definition(definition)   # raises DefinitionError(message, pointer)
    normalize_document(document)      # a bare JSON Schema becomes a tool definition

A valid definition is a JSON object whose `name` follows the MCP tool-name
rule, whose `inputSchema` (and `outputSchema`, when present) is an object
schema valid against its dialect's meta-schema (2020-12 unless `$schema` names
another), nested at most `MAX_SCHEMA_DEPTH` schemas deep, and whose every
`$ref` resolves inside the definition. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urldefrag, urljoin

import referencing.exceptions
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.validators import validator_for
from referencing import Registry, Resource, Specification
from referencing.jsonschema import DRAFT202012, UnknownDialect, specification_with

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "TOOL_NAME",
    "DefinitionError",
    "normalize_document",
    "validate_definition",
]

TOOL_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")

# Schemas nested deeper than this are refused before the meta-schema check:
# jsonschema checks a schema recursively, about ten Python frames per level,
# so without a bound a deep schema ends in RecursionError. It equals the
# engine's default `LIMITS.max_depth`.
MAX_SCHEMA_DEPTH = 64

_SCHEMA_KEYS = ("inputSchema", "outputSchema")
_STRING_FIELDS = ("title", "description")

# Keywords whose values are schemas, for the depth and `$ref` walk (every
# dialect from draft 4 to 2020-12). Values under other keywords (`default`,
# `const`, `enum`, `examples`) are data: a "$ref" there is not a reference.
_SCHEMA_VALUED = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_MAPS = (
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "dependencies",
)
_MAX_MESSAGE = 200


class DefinitionError(ValueError):
    """An invalid tool definition. `pointer` is the JSON Pointer of the
    offending value in the definition ("" for the whole definition)."""

    def __init__(self, message: str, pointer: str = "") -> None:
        self.message = message
        self.pointer = pointer
        super().__init__(f"{pointer}: {message}" if pointer else message)


def normalize_document(document: Any) -> dict[str, Any]:
    """A tool definition as is; a bare JSON Schema (no `inputSchema` key) as
    the input schema of a tool named "tool"."""
    if not isinstance(document, dict):
        raise DefinitionError(
            f"expected a tool definition or a JSON Schema object, not {_json_type(document)}"
        )
    if "inputSchema" in document:
        return document
    return {"name": "tool", "inputSchema": document}


def validate_definition(definition: Any) -> None:
    """Raise DefinitionError for the first problem found in an MCP tool definition."""
    if not isinstance(definition, Mapping):
        raise DefinitionError(f"a tool definition is a JSON object, not {_json_type(definition)}")
    _check_name(definition)
    for field in _STRING_FIELDS:
        if field in definition and not isinstance(definition[field], str):
            raise DefinitionError(f"'{field}' must be a string", f"/{field}")
    if "inputSchema" not in definition:
        raise DefinitionError("'inputSchema' is required")
    for field in _SCHEMA_KEYS:
        if field in definition:
            _check_schema(definition[field], f"/{field}")
    _check_annotations(definition)
    if "icons" in definition:
        _check_icons(definition["icons"])
    if "_meta" in definition and not isinstance(definition["_meta"], Mapping):
        raise DefinitionError("'_meta' must be an object", "/_meta")


def _check_name(definition: Mapping[str, Any]) -> None:
    if "name" not in definition:
        raise DefinitionError("'name' is required")
    name = definition["name"]
    if not isinstance(name, str):
        raise DefinitionError(f"'name' must be a string, not {_json_type(name)}", "/name")
    if not TOOL_NAME.fullmatch(name):
        raise DefinitionError(
            f"tool name {_shorten(repr(name))} must be 1 to 128 characters of "
            "A-Z, a-z, 0-9, '.', '_' and '-'",
            "/name",
        )


def _check_annotations(definition: Mapping[str, Any]) -> None:
    if "annotations" not in definition:
        return
    annotations = definition["annotations"]
    if not isinstance(annotations, Mapping):
        raise DefinitionError("'annotations' must be an object", "/annotations")
    for key, value in annotations.items():
        if key.endswith("Hint") and not isinstance(value, bool):
            raise DefinitionError(
                f"annotation '{key}' must be true or false, not {_json_type(value)}",
                f"/annotations/{_escape(key)}",
            )
    if "title" in annotations and not isinstance(annotations["title"], str):
        raise DefinitionError("annotation 'title' must be a string", "/annotations/title")


def _check_icons(icons: Any) -> None:
    if not isinstance(icons, list):
        raise DefinitionError("'icons' must be an array", "/icons")
    for index, icon in enumerate(icons):
        if not isinstance(icon, Mapping) or not isinstance(icon.get("src"), str):
            raise DefinitionError(
                "an icon must be an object with a string 'src'", f"/icons/{index}"
            )


def _check_schema(schema: Any, pointer: str) -> None:
    if not isinstance(schema, dict):
        raise DefinitionError(f"must be a JSON Schema object, not {_json_type(schema)}", pointer)
    if schema.get("type") != "object":
        found = _shorten(repr(schema.get("type")))
        raise DefinitionError(
            f'must be an object schema ("type": "object"), not type {found}', pointer
        )
    specification = _specification(schema, pointer)
    _check_depth(schema, pointer)
    validator_class = validator_for(schema, default=Draft202012Validator)
    try:
        validator_class.check_schema(schema)
    except SchemaError as error:
        raise _meta_schema_error(error, pointer) from None
    except RecursionError:  # a backstop: _check_depth should make this unreachable
        raise DefinitionError("schema is nested too deeply to check", pointer) from None
    _check_refs(schema, pointer, specification)


def _specification(schema: Mapping[str, Any], pointer: str) -> Specification[Any]:
    if "$schema" not in schema:
        return DRAFT202012
    dialect = schema["$schema"]
    if not isinstance(dialect, str):
        raise DefinitionError("'$schema' must be a string", f"{pointer}/$schema")
    try:
        return specification_with(dialect)
    except UnknownDialect:
        raise DefinitionError(
            f"unknown JSON Schema dialect {_shorten(repr(dialect))}", f"{pointer}/$schema"
        ) from None


def _subschemas(schema: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    for keyword in _SCHEMA_VALUED:
        value = schema.get(keyword)
        if isinstance(value, Mapping | bool):
            yield value, f"{pointer}/{keyword}"
    for keyword in _SCHEMA_LISTS:
        value = schema.get(keyword)
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield item, f"{pointer}/{keyword}/{index}"
    for keyword in _SCHEMA_MAPS:
        value = schema.get(keyword)
        if isinstance(value, Mapping):
            for name, item in value.items():
                # draft-07 `dependencies` also takes arrays of names
                if isinstance(item, Mapping | bool):
                    yield item, f"{pointer}/{keyword}/{_escape(name)}"


def _check_depth(schema: Mapping[str, Any], pointer: str) -> None:
    stack: list[tuple[Any, str, int]] = [(schema, pointer, 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise DefinitionError(f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels", where)
        if isinstance(node, Mapping):
            stack.extend((child, path, depth + 1) for child, path in _subschemas(node, where))


def _check_refs(schema: Mapping[str, Any], pointer: str, specification: Specification[Any]) -> None:
    """Every `$ref` must resolve inside the schema (JSON Pointer, `$anchor` or
    an embedded `$id` resource): the registry never fetches remote schemas.
    Resolution itself is the `referencing` library's, as jsonschema uses it."""
    root: Resource[Any] = specification.create_resource(schema)
    registry: Registry[Any] = Registry().with_resource("", root).crawl()
    stack: list[tuple[Any, str, str]] = [(schema, pointer, "")]
    while stack:
        node, where, base_uri = stack.pop()
        if not isinstance(node, Mapping):
            continue
        node_id = specification.id_of(node)
        if node_id is not None:
            base_uri = urljoin(base_uri, node_id)
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = urljoin(base_uri, ref)
            if urldefrag(target).url not in registry:
                raise DefinitionError(
                    f"$ref to remote target {ref!r} is not supported; put the schema under $defs",
                    f"{where}/$ref",
                )
            try:
                registry.resolver(base_uri).lookup(ref)
            except referencing.exceptions.Unresolvable:
                raise DefinitionError(f"$ref to missing target {ref!r}", f"{where}/$ref") from None
        stack.extend((child, path, base_uri) for child, path in _subschemas(node, where))


def _meta_schema_error(error: SchemaError, pointer: str) -> DefinitionError:
    """Name the schema keyword that fails and where, e.g.
    `/inputSchema/properties/x/type: 'type' is invalid: 'strin' is not valid ...`."""
    # jsonschema's best match stops at an anyOf whose branches fail equally;
    # a branch that failed deeper inside the schema points closer to the mistake.
    culprit: ValidationError | SchemaError = error
    while culprit.context:
        deepest = max(culprit.context, key=lambda e: len(e.absolute_path))
        if len(deepest.absolute_path) <= len(culprit.absolute_path):
            break
        culprit = deepest
    path = list(culprit.absolute_path)
    where = pointer + "".join(f"/{_escape(str(part))}" for part in path)
    keywords = [part for part in path if isinstance(part, str)]
    if keywords:
        message = f"'{keywords[-1]}' is invalid: {_shorten(culprit.message)}"
    else:
        message = f"schema is invalid: {_shorten(culprit.message)}"
    return DefinitionError(message, where)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, Mapping) else type(value).__name__
