"""Validation of MCP tool definitions: step 1 of the publishing rule (docs/contract.md).

    validate_definition(definition)   # raises DefinitionError(message, pointer)
    normalize_document(document)      # a bare JSON Schema becomes a tool definition

A valid definition is a JSON object whose `name` follows the MCP tool-name
rule, whose `inputSchema` (and `outputSchema`, when present) is an object
schema valid against its dialect's meta-schema (2020-12 unless `$schema` names
another), nested at most `MAX_SCHEMA_DEPTH` schemas deep, holding at most
`MAX_SCHEMA_NODES` schemas, whose every `$ref` resolves inside the definition
with no cycle that never reaches a property or item (and at most
`MAX_IN_PLACE_SCHEMAS` schemas applying to one value), and whose every
`pattern` and `patternProperties` key is a regular expression the registry
can match in linear time (`registry.patterns.check_pattern`). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urldefrag, urljoin

import msgspec
import referencing.exceptions
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.validators import validator_for
from referencing import Registry, Resource, Specification
from referencing.jsonschema import DRAFT202012, UnknownDialect, specification_with

from registry.compat.jsonvalues import a_json_type
from registry.patterns import PatternError, check_pattern
from registry.pointers import escape

__all__ = [
    "MAX_IN_PLACE_SCHEMAS",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "TOOL_NAME",
    "DefinitionError",
    "is_manifest",
    "normalize_document",
    "validate_definition",
]

TOOL_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")

# Schemas nested deeper than this are refused before the meta-schema check:
# jsonschema checks a schema recursively, about ten Python frames per level,
# so without a bound a deep schema ends in RecursionError. It equals the
# engine's default `LIMITS.max_depth`.
MAX_SCHEMA_DEPTH = 64
# More schema nodes (objects and booleans in schema positions) than this in
# one of `inputSchema` and `outputSchema` are refused: the engine's default
# `LIMITS.max_nodes`, so that every stored version can be compared with the next.
MAX_SCHEMA_NODES = 100_000
# At most this many schemas apply to one value, counting what `$ref`, `allOf`,
# `anyOf`, `oneOf`, `not`, `if`/`then`/`else` and `dependentSchemas` apply,
# `$ref`s followed (a validator evaluates each for every value it reaches).
MAX_IN_PLACE_SCHEMAS = 10_000

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


def is_manifest(document: Any) -> bool:
    """A manifest (`schemas/manifest.schema.json`): a `namespace` and a `tool` object."""
    return (
        isinstance(document, dict)
        and "namespace" in document
        and isinstance(document.get("tool"), dict)
    )


def normalize_document(document: Any) -> dict[str, Any]:
    """A tool definition as is; a manifest's `tool`; a bare JSON Schema (no
    `inputSchema` key) as the input schema of a tool named "tool"."""
    if not isinstance(document, dict):
        raise DefinitionError(
            "expected a tool definition, a manifest or a JSON Schema object, "
            f"not {a_json_type(document)}"
        )
    if is_manifest(document):
        tool: dict[str, Any] = document["tool"]
        return tool
    if "inputSchema" in document:
        return document
    return {"name": "tool", "inputSchema": document}


def validate_definition(definition: Any) -> None:
    """Raise DefinitionError for the first problem found in an MCP tool definition."""
    if not isinstance(definition, Mapping):
        raise DefinitionError(f"a tool definition is a JSON object, not {a_json_type(definition)}")
    _check_name(definition)
    for field in _STRING_FIELDS:
        if field in definition and not isinstance(definition[field], str):
            raise DefinitionError(f"'{field}' must be a string", f"/{field}")
    if "inputSchema" not in definition:
        raise DefinitionError("'inputSchema' is required")
    for field in _SCHEMA_KEYS:
        if field in definition:
            _check_schema_once(definition[field], f"/{field}")
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
        raise DefinitionError(f"'name' must be a string, not {a_json_type(name)}", "/name")
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
                f"annotation '{key}' must be true or false, not {a_json_type(value)}",
                f"/annotations/{escape(key)}",
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


_VALID_SCHEMAS: OrderedDict[tuple[bytes, str], None] = OrderedDict()
_VALID_SCHEMAS_SIZE = 1024


def _check_schema_once(schema: Any, pointer: str) -> None:
    """`_check_schema`, remembering schemas found valid: versions of a tool mostly
    differ outside their schemas, and the meta-schema check is milliseconds of
    python-jsonschema. Keyed by the schema's JSON bytes (and the pointer, which
    the messages name); only valid schemas are remembered."""
    try:
        key = (msgspec.json.encode(schema), pointer)
    except (TypeError, ValueError, OverflowError, RecursionError):
        _check_schema(schema, pointer)  # it names the problem (nesting, values)
        return
    if key in _VALID_SCHEMAS:
        _VALID_SCHEMAS.move_to_end(key)
        return
    _check_schema(schema, pointer)
    _VALID_SCHEMAS[key] = None
    if len(_VALID_SCHEMAS) > _VALID_SCHEMAS_SIZE:
        _VALID_SCHEMAS.popitem(last=False)


def _check_schema(schema: Any, pointer: str) -> None:
    if not isinstance(schema, dict):
        raise DefinitionError(f"must be a JSON Schema object, not {a_json_type(schema)}", pointer)
    if schema.get("type") != "object":
        found = _shorten(repr(schema.get("type")))
        raise DefinitionError(
            f'must be an object schema ("type": "object"), not type {found}', pointer
        )
    specification = _specification(schema, pointer)
    _check_depth(schema, pointer)
    # Before the meta-schema check: its `format: regex` compiles each pattern
    # with Python's recursive parser, which a pattern of 500 nested groups
    # would end in RecursionError.
    visited: set[int] = set()
    _check_patterns(schema, pointer, visited)
    validator_class = validator_for(schema, default=Draft202012Validator)
    try:
        _check_meta_schema(validator_class, schema)
    except SchemaError as error:
        raise _meta_schema_error(error, pointer) from None
    except RecursionError:  # a backstop: _check_depth should make this unreachable
        raise DefinitionError("schema is nested too deeply to check", pointer) from None
    _check_refs(schema, pointer, specification, visited)


_META_VALIDATORS: dict[type[Any], Any] = {}


def _check_meta_schema(validator_class: type[Any], schema: Mapping[str, Any]) -> None:
    """`validator_class.check_schema(schema)`, with the meta-schema's validator built
    once per dialect: jsonschema builds it on every call, which is 2.5 ms of a publish."""
    validator = _META_VALIDATORS.get(validator_class)
    if validator is None:
        meta = validator_class.META_SCHEMA
        meta_class = validator_for(meta, default=validator_class)
        validator = meta_class(meta, format_checker=meta_class.FORMAT_CHECKER)
        _META_VALIDATORS[validator_class] = validator
    for error in validator.iter_errors(schema):
        raise SchemaError.create_from(error)


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


_SCHEMA_KEYWORDS = frozenset(_SCHEMA_VALUED + _SCHEMA_LISTS + _SCHEMA_MAPS)


def _subschemas(schema: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    # `dict`, not `Mapping`, and leaves skipped at once: documents are parsed JSON,
    # and on a schema of 100,000 nodes the ABC checks and 24 lookups per leaf cost
    # seconds.
    if not _SCHEMA_KEYWORDS.intersection(schema):
        return
    for keyword in _SCHEMA_VALUED:
        value = schema.get(keyword)
        if isinstance(value, dict | bool):
            yield value, f"{pointer}/{keyword}"
    for keyword in _SCHEMA_LISTS:
        value = schema.get(keyword)
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield item, f"{pointer}/{keyword}/{index}"
    for keyword in _SCHEMA_MAPS:
        value = schema.get(keyword)
        if isinstance(value, dict):
            for name, item in value.items():
                # draft-07 `dependencies` also takes arrays of names
                if isinstance(item, dict | bool):
                    yield item, f"{pointer}/{keyword}/{escape(name)}"


def _check_depth(schema: Mapping[str, Any], pointer: str) -> None:
    stack: list[tuple[Any, str, int]] = [(schema, pointer, 1)]
    count = 0
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise DefinitionError(f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels", where)
        count += 1
        if count > MAX_SCHEMA_NODES:
            raise DefinitionError(f"schema has more than {MAX_SCHEMA_NODES} nodes", pointer)
        if isinstance(node, dict):
            stack.extend((child, path, depth + 1) for child, path in _subschemas(node, where))


def _check_patterns(schema: Any, pointer: str, visited: set[int]) -> None:
    """Every `pattern` and `patternProperties` key of the schemas under `schema`
    must pass `check_pattern`. `visited` holds the ids of the schema objects
    already walked, so that a `$ref` target is walked once whatever points to it."""
    stack: list[tuple[Any, str]] = [(schema, pointer)]
    while stack:
        node, where = stack.pop()
        if not isinstance(node, Mapping) or id(node) in visited:
            continue
        visited.add(id(node))
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            _check_one_pattern(pattern, f"{where}/pattern")
        keyed = node.get("patternProperties")
        if isinstance(keyed, Mapping):
            for key in keyed:
                if isinstance(key, str):
                    _check_one_pattern(key, f"{where}/patternProperties/{escape(key)}")
        stack.extend(_subschemas(node, where))


def _check_one_pattern(pattern: str, pointer: str) -> None:
    try:
        check_pattern(pattern)
    except PatternError as error:
        raise DefinitionError(error.message, pointer) from None


def _check_refs(
    schema: Mapping[str, Any],
    pointer: str,
    specification: Specification[Any],
    visited: set[int],
) -> None:
    """Every `$ref` must resolve inside the schema (JSON Pointer, `$anchor` or
    an embedded `$id` resource): the registry never fetches remote schemas.
    Resolution itself is the `referencing` library's, as jsonschema uses it.

    A target outside the schema keywords (`#/x-extra/...`) is walked too (its
    patterns and its own `$ref`s): a validator following the `$ref` runs it.
    And no chain of `$ref`s and in-place applicators (`allOf`, `anyOf`,
    `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`) may lead back to
    where it started: such a cycle never reaches a child of the value, so a
    validator would apply it to the same value forever (RecursionError)."""
    root: Resource[Any] = specification.create_resource(schema)
    registry: Registry[Any] = Registry().with_resource("", root).crawl()
    # schema positions first, `$ref` targets after, so each node is named by its
    # own pointer where it has one
    stack: list[tuple[Any, str, str]] = [(schema, pointer, "")]
    targets: list[tuple[Any, str, str]] = []
    located: dict[int, str] = {}
    in_place: dict[int, list[Any]] = {}
    while stack or targets:
        node, where, base_uri = stack.pop() if stack else targets.pop()
        if not isinstance(node, Mapping) or id(node) in located:
            continue
        located[id(node)] = where
        node_id = specification.id_of(node)
        if node_id is not None:
            base_uri = urljoin(base_uri, node_id)
        applied = list(_in_place(node))
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = urljoin(base_uri, ref)
            if urldefrag(target).url not in registry:
                raise DefinitionError(
                    f"$ref to remote target {ref!r} is not supported; put the schema under $defs",
                    f"{where}/$ref",
                )
            try:
                resolved = registry.resolver(base_uri).lookup(ref)
            except referencing.exceptions.Unresolvable:
                raise DefinitionError(f"$ref to missing target {ref!r}", f"{where}/$ref") from None
            # where the target is, when the `$ref` says it plainly; else the `$ref`
            plain = not base_uri and ref.startswith("#/")
            target_where = pointer + ref[1:] if plain else f"{where}/$ref"
            _check_patterns(resolved.contents, target_where, visited)
            targets.append((resolved.contents, target_where, urldefrag(target).url))
            applied.append(resolved.contents)
        in_place[id(node)] = applied
        stack.extend((child, path, base_uri) for child, path in _subschemas(node, where))
    _check_applications(schema, in_place, located)


def _in_place(schema: Mapping[str, Any]) -> Iterator[Any]:
    """The subschemas applied to the same value as `schema` (besides `$ref`)."""
    for keyword in ("allOf", "anyOf", "oneOf"):
        value = schema.get(keyword)
        if isinstance(value, list):
            yield from value
    for keyword in ("not", "if", "then", "else"):
        if keyword in schema:
            yield schema[keyword]
    dependent = schema.get("dependentSchemas")
    if isinstance(dependent, Mapping):
        yield from dependent.values()


def _check_applications(
    schema: Mapping[str, Any], in_place: dict[int, list[Any]], located: dict[int, str]
) -> None:
    """Refuse a cycle of in-place applications, and a schema that applies more
    than `MAX_IN_PLACE_SCHEMAS` subschemas to one value once every `$ref` is
    followed (`allOf` of two `$ref`s to an `allOf` of two `$ref`s ..., 30 levels:
    a billion schemas from a few lines). Iterative depth-first search, each
    schema finished once with its count (itself and what it applies, expanded)."""
    expanded: dict[int, int] = {}
    nodes: dict[int, Mapping[str, Any]] = {id(schema): schema}
    for applied in in_place.values():
        nodes.update((id(node), node) for node in applied if isinstance(node, Mapping))
    for start in [*nodes, *in_place]:
        if start in expanded:
            continue
        path: list[int] = [start]
        on_path = {start}
        pending: list[Iterator[Any]] = [iter(in_place.get(start, ()))]
        while pending:
            following = next(pending[-1], None)
            if following is None:
                pending.pop()
                finished = path.pop()
                on_path.discard(finished)
                count = 1 + sum(
                    expanded.get(id(child), 1)
                    for child in in_place.get(finished, ())
                    if isinstance(child, Mapping)
                )
                if count > MAX_IN_PLACE_SCHEMAS:
                    raise DefinitionError(
                        f"schema applies more than {MAX_IN_PLACE_SCHEMAS} subschemas to one "
                        "value once its $refs are followed (allOf/anyOf/oneOf of $refs "
                        "expanding exponentially)",
                        located.get(finished, ""),
                    )
                expanded[finished] = count
                continue
            if not isinstance(following, Mapping) or id(following) in expanded:
                continue
            if id(following) in on_path:
                cycle = [*path[path.index(id(following)) :], id(following)]
                trail = " -> ".join(located.get(n, "?") or "/" for n in cycle)
                raise DefinitionError(
                    "$ref cycle that never reaches a property or item: a validator would "
                    f"apply it to the same value forever ({_shorten(trail)})",
                    located.get(id(following), ""),
                )
            path.append(id(following))
            on_path.add(id(following))
            pending.append(iter(in_place.get(id(following), ())))


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
    where = pointer + "".join(f"/{escape(str(part))}" for part in path)
    keywords = [part for part in path if isinstance(part, str)]
    if keywords:
        message = f"'{keywords[-1]}' is invalid: {_shorten(culprit.message)}"
    else:
        message = f"schema is invalid: {_shorten(culprit.message)}"
    return DefinitionError(message, where)


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
