"""A small typed tree of a JSON Schema, parsed once before any comparison.

Rules never walk raw dicts: they read `Node` fields. Parsing resolves local
`$ref`s (`#`, `#/$defs/...`, `#/definitions/...`, any JSON Pointer into the
same document) to the target's `Node`, which is registered before the parser
descends into it, so recursive schemas terminate (as msgspec does for types).

Parsing is lazy: a node reads its own scalar keywords and resolves its `$ref`
when it is made, and parses its child schemas (properties, additional and
unevaluated properties, prefix and rest items, union branches) only when a
rule first reads one of those fields; each property's node is made when the
property is first looked up (`Properties`). Subtrees the walker skips (equal
on both sides) are never parsed; `Limits` apply to what is parsed, and the
nesting of the raw document is checked up front (`_check_nesting`).

Draft-07 and 2020-12 spellings are normalised: `items: [...]` with
`additionalItems` and `prefixItems` with `items` both become
`prefix_items` + `rest_items`; boolean `exclusiveMinimum` (draft-04) becomes
the numeric form. Keywords the engine does not analyse are kept in `opaque`;
the walker turns any difference there into `unanalyzable`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, KeysView, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from registry.compat.report import ClassificationError

__all__ = [
    "ANNOTATION_KEYWORDS",
    "ANYTHING",
    "BOUND_KEYWORDS",
    "Limits",
    "Node",
    "Properties",
    "encode",
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

_UNIONS = frozenset({"anyOf", "oneOf", "allOf"})

# Keywords whose values hold child schemas, parsed when first read.
_CHILD_KEYWORDS = frozenset(
    {
        "properties",
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "prefixItems",
        "additionalItems",
        *_UNIONS,
    }
)

# How `_Parser._fill` treats each keyword of a node.
_K_OPAQUE, _K_SCALAR, _K_ANNOTATION, _K_BOUND, _K_CHILD, _K_CONTAINER, _K_REF = range(7)
_KIND: dict[str, int] = {
    **dict.fromkeys(_STRUCTURAL, _K_SCALAR),
    **dict.fromkeys(BOUND_KEYWORDS, _K_BOUND),
    **dict.fromkeys(_CHILD_KEYWORDS, _K_CHILD),
    **dict.fromkeys(ANNOTATION_KEYWORDS, _K_ANNOTATION),
    **dict.fromkeys(_CONTAINERS, _K_CONTAINER),
    "$ref": _K_REF,
}

_JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_DRAFT04_EXCLUSIVE = (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum"))
_SINGLE_TYPES = {name: frozenset({name}) for name in _JSON_TYPES}

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


_ENCODER = msgspec.json.Encoder(order="sorted")


def encode(value: Any) -> bytes | None:
    """The JSON encoding of `value` with keys sorted, or None if it has none."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None


class _Lazy:
    """What a node needs to parse its child schemas when first asked for them."""

    __slots__ = ("depth", "parser", "rel")

    def __init__(self, parser: _Parser, rel: str, depth: int) -> None:
        self.parser = parser
        self.rel = rel
        self.depth = depth


def _blank(node: Node, pointer: str, raw: Any) -> None:
    """The fields of a node whose keywords have not been read (children unset)."""
    node.pointer = pointer
    node.raw = raw
    node.accepts_nothing = False
    node.ref = None
    node.types = None
    node.enum = None
    node.const = _MISSING
    node.default = _MISSING
    node.required = _NO_NAMES
    node.bounds = {}
    node.pattern = None
    node.format = None
    node.unique_items = False
    node.schema_uri = None
    node.annotations = {}
    node.opaque = {}
    node._lazy = None


_NO_NAMES: frozenset[str] = frozenset()
_new_node = object.__new__


def _no_children(node: Node) -> None:
    node.properties = {}
    node.additional_properties = None
    node.unevaluated_properties = None
    node.prefix_items = ()
    node.rest_items = None
    node.any_of = None
    node.one_of = None
    node.all_of = None


_CHILD_FIELDS = frozenset(
    {
        "properties",
        "additional_properties",
        "unevaluated_properties",
        "prefix_items",
        "rest_items",
        "any_of",
        "one_of",
        "all_of",
    }
)


class Node:
    """One schema node. `None` in a field means the keyword is absent.

    A parsed node reads its own scalar keywords and its `$ref` target when it
    is made; its child schemas (the fields in `_CHILD_FIELDS`) are parsed on
    first access: until then their slots are unset and `__getattr__` fills them.
    """

    __slots__ = (
        "_lazy",
        "accepts_nothing",
        "additional_properties",
        "all_of",
        "annotations",
        "any_of",
        "bounds",
        "const",
        "default",
        "enum",
        "format",
        "one_of",
        "opaque",
        "pattern",
        "pointer",
        "prefix_items",
        "properties",
        "raw",
        "ref",
        "required",
        "rest_items",
        "schema_uri",
        "types",
        "unevaluated_properties",
        "unique_items",
    )

    pointer: str
    raw: Any
    accepts_nothing: bool
    ref: Node | None
    types: frozenset[str] | None
    enum: tuple[Any, ...] | None
    const: Any
    default: Any
    properties: Mapping[str, Node]
    required: frozenset[str]
    additional_properties: Node | None
    unevaluated_properties: Node | None
    prefix_items: tuple[Node, ...]
    rest_items: Node | None
    any_of: tuple[Node, ...] | None
    one_of: tuple[Node, ...] | None
    all_of: tuple[Node, ...] | None
    bounds: dict[str, int | float]
    pattern: str | None
    format: str | None
    unique_items: bool
    schema_uri: str | None
    annotations: dict[str, Any]
    opaque: dict[str, Any]
    _lazy: _Lazy | None

    def __init__(
        self,
        pointer: str,
        raw: Any,
        accepts_nothing: bool = False,
        ref: Node | None = None,
        types: frozenset[str] | None = None,
        enum: tuple[Any, ...] | None = None,
        const: Any = _MISSING,
        default: Any = _MISSING,
        properties: Mapping[str, Node] | None = None,
        required: frozenset[str] = frozenset(),
        additional_properties: Node | None = None,
        unevaluated_properties: Node | None = None,
        prefix_items: tuple[Node, ...] = (),
        rest_items: Node | None = None,
        any_of: tuple[Node, ...] | None = None,
        one_of: tuple[Node, ...] | None = None,
        all_of: tuple[Node, ...] | None = None,
        bounds: dict[str, int | float] | None = None,
        pattern: str | None = None,
        format: str | None = None,
        unique_items: bool = False,
        schema_uri: str | None = None,
        annotations: dict[str, Any] | None = None,
        opaque: dict[str, Any] | None = None,
    ) -> None:
        _blank(self, pointer, raw)
        self.accepts_nothing = accepts_nothing
        self.ref = ref
        self.types = types
        self.enum = enum
        self.const = const
        self.default = default
        self.required = required
        if bounds is not None:
            self.bounds = bounds
        self.pattern = pattern
        self.format = format
        self.unique_items = unique_items
        self.schema_uri = schema_uri
        if annotations is not None:
            self.annotations = annotations
        if opaque is not None:
            self.opaque = opaque
        self.properties = {} if properties is None else properties
        self.additional_properties = additional_properties
        self.unevaluated_properties = unevaluated_properties
        self.prefix_items = prefix_items
        self.rest_items = rest_items
        self.any_of = any_of
        self.one_of = one_of
        self.all_of = all_of

    def __repr__(self) -> str:
        return f"Node(pointer={self.pointer!r})"

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            """Called only for an unset slot: parse the child schemas, once."""
            lazy = self._lazy
            if lazy is None or name not in _CHILD_FIELDS:
                raise AttributeError(name)
            self._lazy = None
            _no_children(self)
            lazy.parser.fill_children(self, self.raw, lazy.rel, lazy.depth)
            return object.__getattribute__(self, name)

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


class Properties(Mapping[str, Node]):
    """The `properties` of a parsed node: names and raw schemas at once, each
    property's node parsed when it is first looked up (a walk that skips the
    properties equal on both sides never makes their nodes)."""

    __slots__ = ("_depth", "_nodes", "_parser", "_rel", "schemas")

    def __init__(self, parser: _Parser, schemas: dict[str, Any], rel: str, depth: int) -> None:
        self.schemas = schemas  # name -> raw schema
        self._nodes: dict[str, Node] = {}
        self._parser = parser
        self._rel = rel
        self._depth = depth

    def __getitem__(self, name: str) -> Node:
        node = self._nodes.get(name)
        if node is None:
            schema = self.schemas[name]  # KeyError for an unknown name
            node = self._parser.parse(
                schema, f"{self._rel}/properties/{_escape(name)}", self._depth + 1
            )
            self._nodes[name] = node
        return node

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self.schemas else default

    def __contains__(self, name: object) -> bool:
        return name in self.schemas

    def keys(self) -> KeysView[str]:
        return self.schemas.keys()  # a set-like view that never makes a node

    def __iter__(self) -> Iterator[str]:
        return iter(self.schemas)

    def __len__(self) -> int:
        return len(self.schemas)

    def __repr__(self) -> str:
        return f"Properties({list(self.schemas)!r})"


def _escape(token: str) -> str:
    if "~" not in token and "/" not in token:
        return token
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
        """The node at `rel`: its scalar keywords and `$ref` now, children on demand."""
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
        node = _new_node(Node)
        _blank(node, pointer, raw)
        self.by_pointer[rel] = node  # registered before descending: cycles end here
        self._fill(node, raw, rel, depth)
        if node.ref is not None:
            _check_ref_chain(node)
        return node

    def _fill(self, node: Node, raw: dict[str, Any], rel: str, depth: int) -> None:
        """The node's own keywords, in one pass; child schemas are left for later."""
        lazy = draft04 = False
        for key, value in raw.items():
            kind = _KIND.get(key, _K_OPAQUE)
            if kind == _K_SCALAR:
                self._fill_scalar(node, key, value, rel)
            elif kind == _K_ANNOTATION:
                node.annotations[key] = value
            elif kind == _K_BOUND:
                if type(value) is int or (type(value) is float and math.isfinite(value)):
                    node.bounds[key] = value
                else:
                    draft04 = self._fill_bound(node, key, value, raw, rel) or draft04
            elif kind == _K_CHILD:
                lazy = True
                self._check_container(key, value, rel)
            elif kind == _K_CONTAINER:
                if not isinstance(value, dict):
                    raise ClassificationError(
                        f"'{key}' must be an object", f"{self.base}{rel}/{key}"
                    )
            elif kind == _K_OPAQUE:
                node.opaque[key] = value
        if "additionalItems" in raw and not isinstance(raw.get("items"), list):
            # Ignored by validators unless `items` is an array; keep it visible anyway.
            node.opaque.setdefault("additionalItems", raw["additionalItems"])
        if draft04:
            for key, exclusive in _DRAFT04_EXCLUSIVE:
                if raw.get(exclusive) is True:
                    node.bounds.pop(key, None)
        if lazy:
            node._lazy = _Lazy(self, rel, depth)
        else:
            _no_children(node)
        if "$ref" in raw:
            node.ref = self._resolve(raw["$ref"], f"{rel}/$ref", depth)

    def _fill_scalar(self, node: Node, key: str, value: Any, rel: str) -> None:
        if key == "type":
            single = _SINGLE_TYPES.get(value) if isinstance(value, str) else None
            if single is not None:
                node.types = single
                return
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not all(
                isinstance(n, str) and n in _JSON_TYPES for n in names
            ):
                raise ClassificationError(
                    f"'type' must name JSON types, got {value!r}", f"{self.base}{rel}/type"
                )
            node.types = frozenset(names)
        elif key == "enum":
            if not isinstance(value, list):
                raise ClassificationError("'enum' must be an array", f"{self.base}{rel}/enum")
            node.enum = tuple(value)
        elif key == "const":
            node.const = value
        elif key == "default":
            node.default = value
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
                raise ClassificationError(
                    "'required' must be an array of strings", f"{self.base}{rel}/required"
                )
            node.required = frozenset(value)
        elif key == "pattern":
            if not isinstance(value, str):
                raise ClassificationError("'pattern' must be a string", f"{self.base}{rel}/pattern")
            node.pattern = value
        elif key == "format":
            node.format = str(value)
        elif key == "uniqueItems":
            node.unique_items = value is True
        elif key == "$schema":
            node.schema_uri = str(value)
        elif key == "$id":
            node.opaque["$id"] = value

    def _check_container(self, key: str, value: Any, rel: str) -> None:
        """The shape of a keyword holding child schemas, checked before they are parsed."""
        if key == "properties":
            if not isinstance(value, dict):
                raise ClassificationError(
                    "'properties' must be an object", f"{self.base}{rel}/properties"
                )
        elif key in _UNIONS:
            if not isinstance(value, list) or not value:
                raise ClassificationError(
                    f"'{key}' must be a non-empty array", f"{self.base}{rel}/{key}"
                )
        elif key == "prefixItems" and not isinstance(value, list):
            raise ClassificationError(
                "'prefixItems' must be an array", f"{self.base}{rel}/prefixItems"
            )

    def _child(self, raw: Any, rel: str, depth: int) -> Node:
        return self.parse(raw, rel, depth + 1)

    def fill_children(self, node: Node, raw: dict[str, Any], rel: str, depth: int) -> None:
        """Parse the child schemas of `node` (called once, on first access)."""
        child = self._child
        props = raw.get("properties")
        if props is not None:
            node.properties = Properties(self, props, rel, depth)
        if "additionalProperties" in raw:
            node.additional_properties = child(
                raw["additionalProperties"], f"{rel}/additionalProperties", depth
            )
        if "unevaluatedProperties" in raw:
            node.unevaluated_properties = child(
                raw["unevaluatedProperties"], f"{rel}/unevaluatedProperties", depth
            )
        items = raw.get("items", _MISSING)
        if "prefixItems" in raw:
            node.prefix_items = tuple(
                child(s, f"{rel}/prefixItems/{i}", depth) for i, s in enumerate(raw["prefixItems"])
            )
            if items is not _MISSING:
                node.rest_items = child(items, f"{rel}/items", depth)
        elif isinstance(items, list):  # draft-07 tuple form
            node.prefix_items = tuple(
                child(s, f"{rel}/items/{i}", depth) for i, s in enumerate(items)
            )
            if "additionalItems" in raw:
                node.rest_items = child(raw["additionalItems"], f"{rel}/additionalItems", depth)
        elif items is not _MISSING:
            node.rest_items = child(items, f"{rel}/items", depth)
        if "anyOf" in raw:
            node.any_of = tuple(
                child(b, f"{rel}/anyOf/{i}", depth) for i, b in enumerate(raw["anyOf"])
            )
        if "oneOf" in raw:
            node.one_of = tuple(
                child(b, f"{rel}/oneOf/{i}", depth) for i, b in enumerate(raw["oneOf"])
            )
        if "allOf" in raw:
            node.all_of = tuple(
                child(b, f"{rel}/allOf/{i}", depth) for i, b in enumerate(raw["allOf"])
            )

    def _fill_bound(self, node: Node, key: str, value: Any, raw: dict[str, Any], rel: str) -> bool:
        """A bound that is not a plain finite number; True for a draft-04 boolean."""
        if key.startswith("exclusive") and isinstance(value, bool):
            # draft-04: a boolean that makes minimum/maximum exclusive
            plain = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value and plain in raw:
                node.bounds[key] = raw[plain]
            return True
        if not is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
            raise ClassificationError(f"'{key}' must be a finite number", f"{self.base}{rel}/{key}")
        node.bounds[key] = value
        return False

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


# The `true` schema, standing in where a side says nothing about a position.
ANYTHING = Node(pointer="", raw=True)


def parse_schema(raw: Any, pointer: str, limits: Limits, *, encoded: bytes | None = None) -> Node:
    """Parse the schema at `pointer` (e.g. `/inputSchema`) of a definition.

    Only the root is parsed here; child schemas are parsed when first read.
    The nesting of the document itself (not counting `$ref` hops, which are
    counted as they are followed) is checked up front so that no deep raw
    subtree reaches a report. `encoded`, the document's JSON when the caller
    has it, lets a small document without `$ref` skip that walk.
    """
    if not _shallow(encoded, limits.max_depth):
        _check_nesting(raw, pointer, limits.max_depth)
    parser = _Parser(raw, pointer, limits)
    return parser.parse(raw, "", 0)


def _shallow(encoded: bytes | None, limit: int) -> bool:
    """Whether a document surely nests no deeper than `limit`: each level of
    nesting is an object of its own, so without `$ref` hops a document with
    at most `limit` opening braces (in strings too) cannot be deeper."""
    return encoded is not None and encoded.count(b"{") <= limit and b'"$ref"' not in encoded


def _check_ref_chain(start: Node) -> None:
    """A `$ref` chain that never reaches a schema (`A -> B -> A`) is refused."""
    seen: set[int] = set()
    node: Node | None = start
    while node is not None and node.ref is not None and node.is_ref_only():
        if id(node) in seen:
            raise ClassificationError("$ref cycle that never reaches a schema", start.pointer)
        seen.add(id(node))
        node = node.ref


class _TooDeep(Exception):
    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[str] = []
        self.at: str | None = None  # set once unwinding crosses a `$ref` hop


def _check_nesting(raw: Any, base: str, limit: int) -> None:
    """Refuse a document whose schemas nest deeper than `limit`, counting the
    hops into `$defs`/`definitions` (other local targets are walked in place)."""
    if type(raw) is not dict:
        return
    try:
        _Nesting(raw, limit).walk(raw, 0)
    except _TooDeep as exc:
        pointer = (exc.at or "") + "".join("/" + t for t in reversed(exc.tokens))
        raise ClassificationError(
            f"schema nested deeper than {limit} levels", base + pointer
        ) from None


_CHILDREN_OR_REF = _CHILD_KEYWORDS | {"$ref"}


def _never(_: Any) -> bool:
    return False


class _Nesting:
    def __init__(self, document: dict[str, Any], limit: int) -> None:
        self.document = document
        self.limit = limit
        self.entered: set[str] = set()

    def walk(self, raw: dict[str, Any], depth: int) -> None:
        if depth > self.limit:
            raise _TooDeep
        below = depth + 1
        # a schema with no child schemas and no `$ref` ends here unless it is too deep
        ends = _CHILDREN_OR_REF.isdisjoint if below <= self.limit else _never
        for key, value in raw.items():
            if key == "$ref":
                self._hop(value, below)
            elif key not in _CHILD_KEYWORDS:
                continue
            elif key == "properties":
                if isinstance(value, dict):
                    for name, sub in value.items():
                        if type(sub) is dict and not ends(sub):
                            self._enter(sub, below, "properties/", name)
            elif isinstance(value, list):
                for i, sub in enumerate(value):
                    if type(sub) is dict and not ends(sub):
                        self._enter(sub, below, f"{key}/", str(i))
            elif type(value) is dict:
                self._enter(value, below, key, "")

    def _enter(self, sub: dict[str, Any], depth: int, keyword: str, name: str) -> None:
        """Walk a child schema; on the way out of a too-deep one, name the step
        (formatted only then: most walks never fail)."""
        try:
            self.walk(sub, depth)
        except _TooDeep as exc:
            if exc.at is None:
                exc.tokens.append(keyword + _escape(name))
            raise

    def _hop(self, ref: Any, depth: int) -> None:
        """Follow a `$ref` into a definitions container, once per target."""
        if not isinstance(ref, str) or ref in self.entered:
            return
        tokens = ref[2:].split("/") if ref.startswith("#/") else []
        if not tokens or tokens[0] not in _CONTAINERS:
            return
        self.entered.add(ref)
        target: Any = self.document
        for raw_token in tokens:
            token = _unescape(raw_token.replace("%25", "%"))
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                return  # reported by the parser if it is ever reached
        if type(target) is not dict:
            return
        try:
            self.walk(target, depth)
        except _TooDeep as exc:
            if exc.at is None:
                exc.at = "/" + "/".join(_escape(_unescape(t)) for t in tokens)
            raise
