"""A small typed tree of a JSON Schema, parsed once before any comparison.

Rules never walk raw dicts: they read `Node` fields. Parsing resolves local
`$ref`s (`#`, `#/$defs/...`, `#/definitions/...`, any JSON Pointer into the
same document) to the target's `Node`, which is registered before the parser
descends into it, so recursive schemas terminate (as msgspec does for types).

Draft-07 and 2020-12 spellings are normalised: `items: [...]` with
`additionalItems` and `prefixItems` with `items` both become
`prefix_items` + `rest_items`; boolean `exclusiveMinimum` (draft-04) becomes
the numeric form. Keywords the engine does not analyse are kept in `opaque`;
the walker turns any difference there into `unanalyzable`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from registry.compat.report import ClassificationError

__all__ = [
    "ANNOTATION_KEYWORDS",
    "BOUND_KEYWORDS",
    "Limits",
    "Node",
    "is_number",
    "parse_schema",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """Documented bounds on what the engine analyses (bad input is refused, not walked).

    `max_depth` counts nesting of schemas, following `$ref` hops too;
    `max_nodes` counts every schema node of one side.
    """

    max_depth: int = 64
    max_nodes: int = 100_000


# Keywords that carry no validation: differences are cosmetic.
ANNOTATION_KEYWORDS = frozenset(
    {
        "description",
        "title",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
    }
)

BOUND_KEYWORDS = (
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
)

_CONTAINERS = frozenset({"$defs", "definitions"})

_STRUCTURAL = frozenset(
    {
        "$ref",
        "$schema",
        "$id",
        "type",
        "enum",
        "const",
        "default",
        "properties",
        "required",
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "anyOf",
        "oneOf",
        "allOf",
        "pattern",
        "format",
        "uniqueItems",
        *BOUND_KEYWORDS,
    }
)

_JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})

_MISSING: Any = object()


ALL_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def json_type(value: Any) -> str:
    """The JSON Schema type of a JSON value (an integral float is an integer)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(eq=False, slots=True)
class Node:
    """One schema node. `None` in a field means the keyword is absent."""

    pointer: str
    raw: Any
    accepts_nothing: bool = False  # the `false` schema
    ref: Node | None = None
    types: frozenset[str] | None = None
    enum: tuple[Any, ...] | None = None
    const: Any = _MISSING
    default: Any = _MISSING
    properties: dict[str, Node] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    additional_properties: Node | None = None
    unevaluated_properties: Node | None = None
    prefix_items: tuple[Node, ...] = ()
    rest_items: Node | None = None
    any_of: tuple[Node, ...] | None = None
    one_of: tuple[Node, ...] | None = None
    all_of: tuple[Node, ...] | None = None
    bounds: dict[str, int | float] = field(default_factory=dict)
    pattern: str | None = None
    format: str | None = None
    unique_items: bool = False
    schema_uri: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    opaque: dict[str, Any] = field(default_factory=dict)
    has_ref_below: bool = False

    @property
    def has_const(self) -> bool:
        return self.const is not _MISSING

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    def allowed_values(self) -> tuple[Any, ...] | None:
        """`const` as a one-value enum, else `enum`, else None (any value)."""
        if self.has_const:
            return (self.const,)
        return self.enum

    def effective_types(self, depth: int = 0) -> frozenset[str]:
        """The JSON types a valid value can have: `type`, else the types of the
        `enum`/`const` values, else what the union branches admit."""
        if self.accepts_nothing:
            return frozenset()
        if self.types is not None:
            return self.types
        values = self.allowed_values()
        if values is not None:
            return frozenset(json_type(v) for v in values)
        target = self.ref if self.ref is not None and self.is_ref_only() else None
        if target is not None and depth < 16:
            return target.effective_types(depth + 1)
        branches = self.any_of or self.one_of
        if branches and depth < 16:
            return frozenset().union(*(b.effective_types(depth + 1) for b in branches))
        return ALL_TYPES

    def admits(self, type_name: str) -> bool:
        """Whether values of this JSON type can be valid here."""
        types = self.effective_types()
        if type_name in types:
            return True
        numeric = {"integer", "number"}
        return type_name in numeric and bool(numeric & types)

    def is_ref_only(self) -> bool:
        return self.ref is not None and self.raw.keys() <= {"$ref"} | ANNOTATION_KEYWORDS


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


class _Parser:
    def __init__(self, document: Any, base_pointer: str, limits: Limits) -> None:
        self.document = document
        self.base = base_pointer
        self.limits = limits
        self.by_pointer: dict[str, Node] = {}
        self.count = 0

    def parse(self, raw: Any, rel: str, depth: int) -> Node:
        pointer = self.base + rel
        if depth > self.limits.max_depth:
            raise ClassificationError(
                f"schema nested deeper than {self.limits.max_depth} levels", pointer
            )
        cached = self.by_pointer.get(rel)
        if cached is not None:
            return cached
        self.count += 1
        if self.count > self.limits.max_nodes:
            raise ClassificationError(
                f"schema has more than {self.limits.max_nodes} nodes", pointer
            )
        if isinstance(raw, bool):
            node = Node(pointer=pointer, raw=raw, accepts_nothing=not raw)
            self.by_pointer[rel] = node
            return node
        if not isinstance(raw, dict):
            raise ClassificationError(
                f"a schema is an object or a boolean, not {type(raw).__name__}", pointer
            )
        node = Node(pointer=pointer, raw=raw)
        self.by_pointer[rel] = node  # registered before descending: cycles end here
        self._fill(node, raw, rel, depth)
        return node

    def _child(self, node: Node, raw: Any, rel: str, depth: int) -> Node:
        child = self.parse(raw, rel, depth + 1)
        if child.ref is not None or child.has_ref_below:
            node.has_ref_below = True
        return child

    def _fill(self, node: Node, raw: dict[str, Any], rel: str, depth: int) -> None:
        for key, value in raw.items():
            if key in ANNOTATION_KEYWORDS:
                node.annotations[key] = value
            elif key in _CONTAINERS:
                if not isinstance(value, dict):
                    raise ClassificationError(
                        f"'{key}' must be an object", f"{self.base}{rel}/{key}"
                    )
            elif key not in _STRUCTURAL:
                node.opaque[key] = value
        if "$ref" in raw:
            node.ref = self._resolve(raw["$ref"], f"{rel}/$ref", depth)
            node.has_ref_below = True
        if "$schema" in raw:
            node.schema_uri = str(raw["$schema"])
        if "$id" in raw:
            node.opaque["$id"] = raw["$id"]
        self._fill_values(node, raw, rel)
        self._fill_objects(node, raw, rel, depth)
        self._fill_arrays(node, raw, rel, depth)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in raw:
                branches = raw[key]
                if not isinstance(branches, list) or not branches:
                    raise ClassificationError(
                        f"'{key}' must be a non-empty array", f"{self.base}{rel}/{key}"
                    )
                parsed = tuple(
                    self._child(node, b, f"{rel}/{key}/{i}", depth) for i, b in enumerate(branches)
                )
                setattr(
                    node, {"anyOf": "any_of", "oneOf": "one_of", "allOf": "all_of"}[key], parsed
                )
        self._fill_bounds(node, raw, rel)

    def _fill_values(self, node: Node, raw: dict[str, Any], rel: str) -> None:
        if "type" in raw:
            declared = raw["type"]
            names = [declared] if isinstance(declared, str) else declared
            if not isinstance(names, list) or not all(
                isinstance(n, str) and n in _JSON_TYPES for n in names
            ):
                raise ClassificationError(
                    f"'type' must name JSON types, got {declared!r}", f"{self.base}{rel}/type"
                )
            node.types = frozenset(names)
        if "enum" in raw:
            if not isinstance(raw["enum"], list):
                raise ClassificationError("'enum' must be an array", f"{self.base}{rel}/enum")
            node.enum = tuple(raw["enum"])
        if "const" in raw:
            node.const = raw["const"]
        if "default" in raw:
            node.default = raw["default"]
        if "pattern" in raw:
            if not isinstance(raw["pattern"], str):
                raise ClassificationError("'pattern' must be a string", f"{self.base}{rel}/pattern")
            node.pattern = raw["pattern"]
        if "format" in raw:
            node.format = str(raw["format"])
        if "uniqueItems" in raw:
            node.unique_items = raw["uniqueItems"] is True

    def _fill_objects(self, node: Node, raw: dict[str, Any], rel: str, depth: int) -> None:
        if "properties" in raw:
            props = raw["properties"]
            if not isinstance(props, dict):
                raise ClassificationError(
                    "'properties' must be an object", f"{self.base}{rel}/properties"
                )
            node.properties = {
                name: self._child(node, sub, f"{rel}/properties/{_escape(name)}", depth)
                for name, sub in props.items()
            }
        if "required" in raw:
            required = raw["required"]
            if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
                raise ClassificationError(
                    "'required' must be an array of strings", f"{self.base}{rel}/required"
                )
            node.required = frozenset(required)
        if "additionalProperties" in raw:
            node.additional_properties = self._child(
                node, raw["additionalProperties"], f"{rel}/additionalProperties", depth
            )
        if "unevaluatedProperties" in raw:
            node.unevaluated_properties = self._child(
                node, raw["unevaluatedProperties"], f"{rel}/unevaluatedProperties", depth
            )

    def _fill_arrays(self, node: Node, raw: dict[str, Any], rel: str, depth: int) -> None:
        items = raw.get("items", _MISSING)
        if "prefixItems" in raw:
            prefix = raw["prefixItems"]
            if not isinstance(prefix, list):
                raise ClassificationError(
                    "'prefixItems' must be an array", f"{self.base}{rel}/prefixItems"
                )
            node.prefix_items = tuple(
                self._child(node, s, f"{rel}/prefixItems/{i}", depth) for i, s in enumerate(prefix)
            )
            if items is not _MISSING:
                node.rest_items = self._child(node, items, f"{rel}/items", depth)
        elif isinstance(items, list):  # draft-07 tuple form
            node.prefix_items = tuple(
                self._child(node, s, f"{rel}/items/{i}", depth) for i, s in enumerate(items)
            )
            if "additionalItems" in raw:
                node.rest_items = self._child(
                    node, raw["additionalItems"], f"{rel}/additionalItems", depth
                )
        elif items is not _MISSING:
            node.rest_items = self._child(node, items, f"{rel}/items", depth)
        if "additionalItems" in raw and not isinstance(items, list):
            # Ignored by validators unless `items` is an array; keep it visible anyway.
            node.opaque.setdefault("additionalItems", raw["additionalItems"])

    def _fill_bounds(self, node: Node, raw: dict[str, Any], rel: str) -> None:
        for key in BOUND_KEYWORDS:
            if key not in raw:
                continue
            value = raw[key]
            if key.startswith("exclusive") and isinstance(value, bool):
                # draft-04: a boolean that makes minimum/maximum exclusive
                plain = "minimum" if key == "exclusiveMinimum" else "maximum"
                if value and plain in raw:
                    node.bounds[key] = raw[plain]
                continue
            if not is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
                raise ClassificationError(
                    f"'{key}' must be a finite number", f"{self.base}{rel}/{key}"
                )
            node.bounds[key] = value
        for key in ("minimum", "maximum"):
            exclusive = "exclusiveMinimum" if key == "minimum" else "exclusiveMaximum"
            if raw.get(exclusive) is True:
                node.bounds.pop(key, None)

    def _resolve(self, ref: Any, at: str, depth: int) -> Node:
        pointer = self.base + at
        if not isinstance(ref, str):
            raise ClassificationError("'$ref' must be a string", pointer)
        if not (ref == "#" or ref.startswith("#/")):
            raise ClassificationError(
                f"$ref {ref!r} is not a local JSON Pointer ('#/...'); remote and anchor "
                "references are never fetched",
                pointer,
            )
        rel = (
            "" if ref == "#" else "/" + "/".join(_escape(_unescape(t)) for t in ref[2:].split("/"))
        )
        target: Any = self.document
        for raw_token in ref[2:].split("/") if ref != "#" else []:
            token = _unescape(raw_token.replace("%25", "%"))
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                raise ClassificationError(f"$ref to missing target {ref}", pointer)
        return self.parse(target, rel, depth + 1)


def parse_schema(raw: Any, pointer: str, limits: Limits) -> Node:
    """Parse the schema at `pointer` (e.g. `/inputSchema`) of a definition."""
    parser = _Parser(raw, pointer, limits)
    root = parser.parse(raw, "", 0)
    _check_ref_loops(parser.by_pointer.values())
    return root


def _check_ref_loops(nodes: Any) -> None:
    """A `$ref` chain that never reaches a schema (`A -> B -> A`) is refused."""
    for start in nodes:
        seen: set[int] = set()
        node: Node | None = start
        while node is not None and node.is_ref_only():
            if id(node) in seen:
                raise ClassificationError("$ref cycle that never reaches a schema", start.pointer)
            seen.add(id(node))
            node = node.ref
