"""A small typed tree of a JSON Schema, parsed once before any comparison.

Rules never walk raw dicts: they read `Node` fields (`parser.py` makes them).
Each side is read in its own dialect into this one model: `items: [...]` with
`additionalItems` and `prefixItems` with `items` both become `prefix_items` +
`rest_items`; draft-04's boolean `exclusiveMinimum` becomes the numeric form;
draft-07's `dependencies` becomes `dependent_required` + `dependent_schemas`;
`id` / `$id`, `definitions` / `$defs` are identities and containers;
conjunctions arrive folded (`allOf[A]` reads as `A`).

A node's child schemas are parsed on first access (`Node.__getattr__`), each
property's node when the property is first looked up (`Properties`): subtrees
the walker skips (equal on both sides) are never parsed. Keywords the engine
does not analyse are kept in `opaque`; the walker turns any difference there
into `unanalyzable`.
"""

from __future__ import annotations

from collections.abc import Iterator, KeysView, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from registry.compat.dialects import ANNOTATIONS, DEFAULT, UNANALYZABLE, Dialect
from registry.compat.jsonvalues import encode, is_number, json_key, json_type, json_types
from registry.pointers import escape, unescape

if TYPE_CHECKING:
    from registry.compat.fold import Folded
    from registry.compat.parser import _Parser

__all__ = [
    "ALL_TYPES",
    "ANNOTATION_KEYWORDS",
    "ANYTHING",
    "ANY_STRING",
    "Limits",
    "Node",
    "Properties",
    "encode",
    "is_number",
    "json_type",
    "local_target",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """Documented bounds on what the engine analyses (docs/contract.md).

    Refused with `ClassificationError` (bad input is not walked): `max_depth`
    counts nesting of schemas, following `$ref` hops too; `max_nodes` counts
    every schema node of one side.

    A work budget, deterministic (counted, never timed): per side, pairs of old
    and new schema nodes compared (by the walk, and by the probes it makes to
    match union branches or check a fit) up to one per schema object of the
    two documents plus `max_steps`; comparisons nested at most `max_walk_depth`
    deep (a recursive `$ref` against another recursion). Past either, the
    side's report ends with `unanalyzable` at the node where it ran out, naming
    the bound. The branches of two unions left unmatched by equal JSON and
    shape are tried against each other pairwise: past `max_branch_pairs`
    (unmatched old branches times new branches), the union is `unanalyzable`.
    `max_witness_bytes`: the JSON of the candidate witnesses the witness search
    checks per classification; past it, changes are reported without a witness.
    """

    max_depth: int = 64
    max_nodes: int = 100_000
    max_steps: int = 20_000
    max_walk_depth: int = 96
    max_branch_pairs: int = 4_096
    max_witness_bytes: int = 2_000_000


# Keywords that carry no validation: differences are cosmetic.
ANNOTATION_KEYWORDS = ANNOTATIONS

# Keywords that name or hold schemas without constraining an instance.
IDENTITY_KEYWORDS = frozenset({"$id", "id", "$anchor", "$schema"})
CONTAINERS = frozenset({"$defs", "definitions"})
INERT = ANNOTATIONS | IDENTITY_KEYWORDS | CONTAINERS

SCALARS = frozenset(
    {"type", "enum", "const", "default", "required", "pattern", "format", "uniqueItems"}
)
UNIONS = frozenset({"anyOf", "oneOf", "allOf"})
# Keywords whose values hold child schemas, parsed when first read.
CHILD_KEYWORDS = frozenset(
    {
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "dependentSchemas",
        "items",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "not",
        *UNIONS,
    }
)
MAP_KEYWORDS = frozenset({"properties", "patternProperties", "dependentSchemas"})

JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
ALL_TYPES = JSON_TYPES

MISSING: Any = object()


class Lazy:
    """What a node needs to parse its child schemas when first asked for them."""

    __slots__ = ("depth", "folded", "parser", "rel")

    def __init__(self, parser: _Parser, rel: str, depth: int, folded: Folded | None) -> None:
        self.parser = parser
        self.rel = rel
        self.depth = depth
        self.folded = folded


NO_NAMES: frozenset[str] = frozenset()
new_node = object.__new__

_CHILD_FIELDS = frozenset(
    {
        "properties",
        "pattern_properties",
        "additional_properties",
        "unevaluated_properties",
        "property_names",
        "dependent_schemas",
        "prefix_items",
        "rest_items",
        "unevaluated_items",
        "contains",
        "not_",
        "any_of",
        "one_of",
        "all_of",
    }
)


def blank(node: Node, pointer: str, raw: Any, dialect: Dialect) -> None:
    """The fields of a node whose keywords have not been read (children unset)."""
    node.pointer = pointer
    node.raw = raw
    node.dialect = dialect
    node.accepts_nothing = False
    node.ref = None
    node.ref_only = False
    node.types = None
    node.enum = None
    node.const = MISSING
    node.default = MISSING
    node.required = NO_NAMES
    node.dependent_required = {}
    node.bounds = {}
    node.pattern = None
    node.format = None
    node.unique_items = False
    node.schema_uri = None
    node.annotations = {}
    node.opaque = {}
    node.borrowed = NO_NAMES
    node.memo = {}
    node._lazy = None


def no_children(node: Node) -> None:
    node.properties = {}
    node.pattern_properties = {}
    node.additional_properties = None
    node.unevaluated_properties = None
    node.property_names = None
    node.dependent_schemas = {}
    node.prefix_items = ()
    node.rest_items = None
    node.unevaluated_items = None
    node.contains = None
    node.not_ = None
    node.any_of = None
    node.one_of = None
    node.all_of = None


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
        "borrowed",
        "bounds",
        "const",
        "contains",
        "default",
        "dependent_required",
        "dependent_schemas",
        "dialect",
        "enum",
        "format",
        "memo",
        "not_",
        "one_of",
        "opaque",
        "pattern",
        "pattern_properties",
        "pointer",
        "prefix_items",
        "properties",
        "property_names",
        "raw",
        "ref",
        "ref_only",
        "required",
        "rest_items",
        "schema_uri",
        "types",
        "unevaluated_items",
        "unevaluated_properties",
        "unique_items",
    )

    pointer: str
    raw: Any
    dialect: Dialect
    accepts_nothing: bool
    ref: Node | None
    ref_only: bool  # a `$ref` beside nothing that constrains: the node is its target
    types: frozenset[str] | None
    enum: tuple[Any, ...] | None
    const: Any
    default: Any
    properties: Mapping[str, Node]
    pattern_properties: Mapping[str, Node]
    required: frozenset[str]
    dependent_required: dict[str, frozenset[str]]
    dependent_schemas: Mapping[str, Node]
    additional_properties: Node | None
    unevaluated_properties: Node | None
    property_names: Node | None
    prefix_items: tuple[Node, ...]
    rest_items: Node | None
    unevaluated_items: Node | None
    contains: Node | None
    not_: Node | None
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
    borrowed: frozenset[str]  # keywords of another dialect, read with their own meaning
    memo: dict[str, Any]  # what rules work out once per node (effective types, shape)
    _lazy: Lazy | None

    def __init__(
        self,
        pointer: str,
        raw: Any,
        accepts_nothing: bool = False,
        types: frozenset[str] | None = None,
        dialect: Dialect = DEFAULT,
    ) -> None:
        blank(self, pointer, raw, dialect)
        no_children(self)
        self.accepts_nothing = accepts_nothing
        self.types = types

    def __repr__(self) -> str:
        return f"Node(pointer={self.pointer!r})"

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            """Called only for an unset slot: parse the child schemas, once."""
            lazy = self._lazy
            if lazy is None or name not in _CHILD_FIELDS:
                raise AttributeError(name)
            self._lazy = None
            no_children(self)
            lazy.parser.fill_children(self, self.raw, lazy.rel, lazy.depth, lazy.folded)
            return object.__getattribute__(self, name)

    @property
    def has_const(self) -> bool:
        return self.const is not MISSING

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING

    def allowed_values(self) -> tuple[Any, ...] | None:
        """The values `const` and `enum` allow together, else None (any value)."""
        if self.has_const:
            if self.enum is not None:
                key = json_key(self.const)
                return (self.const,) if any(json_key(v) == key for v in self.enum) else ()
            return (self.const,)
        return self.enum

    def effective_types(self, depth: int = 0) -> frozenset[str]:
        """The JSON types a valid value can have: `type` (narrowed by `enum` /
        `const`), else the types of the `enum`/`const` values, else what the
        union branches admit (worked out once per node)."""
        found = self.memo.get("types")
        if found is None:
            found = self.memo["types"] = self._effective_types(depth)
        return found

    def _effective_types(self, depth: int) -> frozenset[str]:
        if self.accepts_nothing:
            return frozenset()
        values = self.allowed_values()
        if values is not None:
            return json_types(values, self.types)
        if self.types is not None:
            return self.types
        target = self.ref if self.ref is not None and self.ref_only else None
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

    def unsatisfiable(self) -> bool:
        """Whether the node surely accepts no value (`false`, no type left, an
        empty `enum`, a `const` outside its `type`): nothing valid reaches it."""
        return self.accepts_nothing or not self.effective_types()

    def is_ref_only(self) -> bool:
        return self.ref_only

    def own_keywords(self) -> bool:
        """Whether the node constrains values by keywords beside its `anyOf` /
        `oneOf` (annotations, identities, `default` and a `type` that every
        branch keeps to anyway do not count)."""
        found = self.memo.get("own")
        if found is None:
            found = self.memo["own"] = self._own_keywords()
        return bool(found)

    def _own_keywords(self) -> bool:
        raw = self.raw
        if type(raw) is not dict:
            return raw is False  # `false` refuses everything; `true` asks nothing
        others = raw.keys() - _BESIDE_UNION
        if not others:
            return False
        if others != {"type"} or self.types is None:
            return True
        branches = self.any_of or self.one_of or ()
        return not branches or not all(_within(b, self.types) for b in branches)

    def bare_union(self) -> bool:
        """An `anyOf` or `oneOf` with nothing else that constrains beside it: it
        accepts what one of its branches accepts, and nothing more is asked."""
        raw = self.raw
        return (
            type(raw) is dict
            and ("anyOf" in raw) != ("oneOf" in raw)
            and "$ref" not in raw
            and not self.own_keywords()
        )

    def has_applicators(self) -> bool:
        """Whether subschemas beside this node's own keywords evaluate the same
        instance (what `unevaluated*` depend on)."""
        return bool(
            self.all_of
            or self.any_of
            or self.one_of
            or self.dependent_schemas
            or (self.ref is not None and not self.ref_only)
            or self.opaque.keys() & UNANALYZABLE
        )


# What may sit beside a bare union: nothing that constrains a value.
_BESIDE_UNION = INERT | {"anyOf", "oneOf", "default"}


def _within(branch: Node, types: frozenset[str]) -> bool:
    """Whether every value `branch` accepts has one of `types` (an integer is a number)."""
    kinds = branch.effective_types()
    return all(t in types or (t == "integer" and "number" in types) for t in kinds)


class Properties(Mapping[str, Node]):
    """A map of child schemas by name (`properties`, `patternProperties`,
    `dependentSchemas`): names and raw schemas at once, each node parsed when
    it is first looked up (a walk that skips the ones equal on both sides never
    makes their nodes)."""

    __slots__ = ("_depth", "_homes", "_keyword", "_nodes", "_parser", "_rel", "schemas")

    def __init__(
        self,
        parser: _Parser,
        schemas: dict[str, Any],
        rel: str,
        depth: int,
        keyword: str = "properties",
        homes: dict[str, str] | None = None,
    ) -> None:
        self.schemas = schemas  # name -> raw schema
        self._nodes: dict[str, Node] = {}
        self._parser = parser
        self._rel = rel
        self._depth = depth
        self._keyword = keyword
        self._homes = homes  # name -> the schema holding it, where folding moved it

    def __getitem__(self, name: str) -> Node:
        node = self._nodes.get(name)
        if node is None:
            schema = self.schemas[name]  # KeyError for an unknown name
            home = self._homes.get(name, self._rel) if self._homes else self._rel
            node = self._parser.parse(
                schema, f"{home}/{self._keyword}/{escape(name)}", self._depth + 1
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


def local_target(document: Any, ref: str) -> tuple[Any, str] | None:
    """The raw target of a local `$ref` (`#` or `#/...`) in `document` and its
    JSON Pointer, normalised; None when it is not local or names nothing."""
    if not (ref == "#" or ref.startswith("#/")):
        return None
    target: Any = document
    tokens = ref[2:].split("/") if ref != "#" else []
    for raw_token in tokens:
        token = unescape(raw_token.replace("%25", "%"))
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            return None
    return target, "".join("/" + escape(unescape(t)) for t in tokens)


# The `true` schema, standing in where a side says nothing about a position.
ANYTHING = Node(pointer="", raw=True)
# Property names: any string (what `propertyNames` is compared against when absent).
ANY_STRING = Node(pointer="", raw={"type": "string"}, types=frozenset({"string"}))
