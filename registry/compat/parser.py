"""The parser: a raw JSON Schema document read into `Node`s (`schema.py`).

Each side is read in its own dialect, named by its root `$schema` (absent or
unknown: 2020-12), with `dialects.py` saying how each keyword is read;
conjunctions are folded first (`fold.py`). Parsing resolves local `$ref`s
(`#`, `#/$defs/...`, any JSON Pointer into the same document) to the target's
`Node`, registered before the parser descends into it, so recursive schemas
terminate. A node reads its own scalar keywords and resolves its `$ref` when
it is made; its child schemas are parsed when a rule first reads them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import repeat
from typing import Any

from registry.compat.bounds import BOUNDS, BY_KEYWORD
from registry.compat.bounds import KEYWORDS as BOUND_KEYWORDS
from registry.compat.dialects import ANNOTATIONS, DEFAULT, KNOWN, UNANALYZABLE, Dialect, dialect_of
from registry.compat.fold import Folded, fold
from registry.compat.jsonvalues import encode, is_number
from registry.compat.nesting import check_nesting
from registry.compat.report import ClassificationError
from registry.compat.schema import (
    CHILD_KEYWORDS,
    CONTAINERS,
    IDENTITY_KEYWORDS,
    INERT,
    JSON_TYPES,
    MAP_KEYWORDS,
    MISSING,
    SCALARS,
    UNIONS,
    Lazy,
    Limits,
    Node,
    Properties,
    blank,
    local_target,
    new_node,
    no_children,
)
from registry.pointers import escape

__all__ = ["check_depth", "parse_schema"]

# How `_Parser._fill` treats each keyword of a node.
(
    _K_OPAQUE,
    _K_SCALAR,
    _K_ANNOTATION,
    _K_BOUND,
    _K_CHILD,
    _K_CONTAINER,
    _K_REF,
    _K_IDENTITY,
    _K_DEPENDENT_REQUIRED,
    _K_DEPENDENCIES,
) = range(10)


def _keyword_kinds(dialect: Dialect) -> dict[str, int]:
    """keyword -> how it is read under `dialect` (a keyword of another dialect
    with that dialect's meaning); a keyword of no dialect is opaque."""
    table: dict[str, int] = {}
    for keyword in KNOWN:
        if (
            keyword in ("additionalItems", "prefixItems", "items")
            and keyword not in dialect.keywords
        ):
            continue  # the other dialect's array spelling: structural, read below
        if keyword in UNANALYZABLE:
            kind = _K_OPAQUE
        elif keyword in SCALARS:
            kind = _K_SCALAR
        elif keyword in ANNOTATIONS:
            kind = _K_ANNOTATION
        elif keyword in BOUND_KEYWORDS:
            kind = _K_BOUND
        elif keyword in CHILD_KEYWORDS:
            kind = _K_CHILD
        elif keyword in CONTAINERS:
            kind = _K_CONTAINER
        elif keyword == "$ref":
            kind = _K_REF
        elif keyword in IDENTITY_KEYWORDS:
            kind = _K_IDENTITY
        elif keyword == "dependentRequired":
            kind = _K_DEPENDENT_REQUIRED
        elif keyword == "dependencies":
            kind = _K_DEPENDENCIES
        else:  # pragma: no cover - tests/test_dialects.py keeps every keyword classified
            raise AssertionError(f"keyword {keyword!r} is not classified")
        table[keyword] = kind
    return table


_KINDS: dict[str, dict[str, int]] = {}
# draft-04 spells an exclusive bound as a boolean beside its inclusive keyword
_DRAFT04_EXCLUSIVE = tuple((b.exclusive_of, b.keyword) for b in BOUNDS if b.exclusive_of)
_SINGLE_TYPES = {name: frozenset({name}) for name in JSON_TYPES}


class _Parser:
    def __init__(self, document: Any, base_pointer: str, limits: Limits, dialect: Dialect) -> None:
        self.document = document
        self.base = base_pointer
        self.limits = limits
        self.dialect = dialect
        kinds = _KINDS.get(dialect.name)
        if kinds is None:
            kinds = _KINDS[dialect.name] = _keyword_kinds(dialect)
        self.kinds = kinds
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
            node = Node(pointer=pointer, raw=raw, accepts_nothing=not raw, dialect=self.dialect)
            self.by_pointer[rel] = node
            return node
        if not isinstance(raw, dict):
            raise ClassificationError(
                f"a schema is an object or a boolean, not {type(raw).__name__}", pointer
            )
        folded = None
        if "allOf" in raw or "anyOf" in raw or "oneOf" in raw or "$ref" in raw:
            folded = fold(raw, rel, self._target, self.dialect)
            if folded is not None and folded.raw is False:
                node = Node(pointer=pointer, raw=False, accepts_nothing=True, dialect=self.dialect)
                self.by_pointer[rel] = node
                return node
        node = new_node(Node)
        effective = folded.raw if folded is not None else raw
        assert isinstance(effective, dict)
        blank(node, pointer, effective, self.dialect)
        self.by_pointer[rel] = node  # registered before descending: cycles end here
        self._fill(node, effective, rel, depth, folded)
        if node.ref is not None:
            _check_ref_chain(node)
        return node

    def _fill(
        self, node: Node, raw: dict[str, Any], rel: str, depth: int, folded: Folded | None
    ) -> None:
        """The node's own keywords, in one pass; child schemas are left for later."""
        lazy = draft04 = False
        kinds = self.kinds
        # up to draft-07 validators ignore whatever sits beside a `$ref`: a
        # constraint there is kept opaque (another validator may apply it)
        inert_siblings = self.dialect.ref_overrides_siblings and "$ref" in raw
        for key, value in raw.items():
            kind = kinds.get(key, _K_OPAQUE)
            if key == "additionalItems" and isinstance(raw.get("items"), list):
                kind = _K_CHILD  # the array form of `items`, read under any dialect
            if inert_siblings and key not in INERT and key != "$ref":
                kind = _K_OPAQUE
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
            elif kind == _K_IDENTITY:
                if rel and (key == "$schema" or (key != "$anchor" and _holds_ref(raw))):
                    # a dialect, or a resource whose `$ref`s resolve against it,
                    # below the root: kept opaque, fail closed
                    node.opaque[key] = value
                elif key == "$schema":
                    node.schema_uri = str(value)
            elif kind == _K_DEPENDENT_REQUIRED:
                self._fill_dependent_required(node, value, f"{rel}/{key}")
            elif kind == _K_DEPENDENCIES:
                lazy = self._fill_dependencies(node, value, f"{rel}/{key}") or lazy
            elif kind == _K_OPAQUE:
                node.opaque[key] = value
        own = self.dialect.keywords
        if not raw.keys() <= own:
            borrowed = {k for k in raw if k in KNOWN and k not in own and k not in INERT}
            if borrowed:
                node.borrowed = frozenset(borrowed)
        if draft04:
            for key, exclusive in _DRAFT04_EXCLUSIVE:
                if raw.get(exclusive) is True:
                    node.bounds.pop(key, None)
        if lazy:
            node._lazy = Lazy(self, rel, depth, folded)
        else:
            no_children(node)
        if "$ref" in raw:
            node.ref = self._resolve(raw["$ref"], f"{rel}/$ref", depth)
            node.ref_only = not node.opaque and raw.keys() - {"$ref"} <= INERT

    def _fill_scalar(self, node: Node, key: str, value: Any, rel: str) -> None:
        if key == "type":
            single = _SINGLE_TYPES.get(value) if isinstance(value, str) else None
            if single is not None:
                node.types = single
                return
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not all(
                isinstance(n, str) and n in JSON_TYPES for n in names
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
            node.required = self._names(value, f"{rel}/required")
        elif key == "pattern":
            if not isinstance(value, str):
                raise ClassificationError("'pattern' must be a string", f"{self.base}{rel}/pattern")
            node.pattern = value
        elif key == "format":
            node.format = str(value)
        elif key == "uniqueItems":
            node.unique_items = value is True

    def _names(self, value: Any, at: str) -> frozenset[str]:
        if not isinstance(value, list) or not all(map(isinstance, value, repeat(str))):
            raise ClassificationError(
                f"'{at.rsplit('/', 1)[-1]}' must be an array of strings", f"{self.base}{at}"
            )
        return frozenset(value)

    def _fill_dependent_required(self, node: Node, value: Any, at: str) -> None:
        if not isinstance(value, dict):
            raise ClassificationError("'dependentRequired' must be an object", self.base + at)
        for name, needed in value.items():
            node.dependent_required[name] = self._names(needed, f"{at}/{escape(name)}")

    def _fill_dependencies(self, node: Node, value: Any, at: str) -> bool:
        """draft-04 to 07 `dependencies`: arrays are `dependentRequired`, schemas
        `dependentSchemas` (parsed later); True when there are schemas."""
        if not isinstance(value, dict):
            raise ClassificationError("'dependencies' must be an object", self.base + at)
        schemas = False
        for name, needed in value.items():
            if isinstance(needed, list):
                node.dependent_required[name] = self._names(needed, f"{at}/{escape(name)}")
            else:
                schemas = True
        return schemas

    def _check_container(self, key: str, value: Any, rel: str) -> None:
        """The shape of a keyword holding child schemas, checked before they are parsed."""
        if key in MAP_KEYWORDS:
            if not isinstance(value, dict):
                raise ClassificationError(f"'{key}' must be an object", f"{self.base}{rel}/{key}")
        elif key in UNIONS:
            if not isinstance(value, list) or not value:
                raise ClassificationError(
                    f"'{key}' must be a non-empty array", f"{self.base}{rel}/{key}"
                )
        elif key == "prefixItems" and not isinstance(value, list):
            raise ClassificationError(
                "'prefixItems' must be an array", f"{self.base}{rel}/prefixItems"
            )

    def fill_children(
        self, node: Node, raw: dict[str, Any], rel: str, depth: int, folded: Folded | None
    ) -> None:
        """Parse the child schemas of `node` (called once, on first access)."""
        origins = folded.origins if folded is not None else {}

        def child(key: str, suffix: str = "") -> Node:
            return self.parse(
                _at(raw[key], suffix), f"{origins.get(key, rel)}/{key}{suffix}", depth + 1
            )

        kinds = self.kinds
        if kinds.get("properties") == _K_CHILD and isinstance(raw.get("properties"), dict):
            homes = folded.names if folded is not None else None
            node.properties = Properties(
                self, raw["properties"], origins.get("properties", rel), depth, "properties", homes
            )
        if "patternProperties" in raw and kinds.get("patternProperties") == _K_CHILD:
            home = origins.get("patternProperties", rel)
            node.pattern_properties = Properties(
                self, raw["patternProperties"], home, depth, "patternProperties"
            )
        node.dependent_schemas = self._dependent_schemas(raw, origins.get, rel, depth)
        for key, field in (
            ("additionalProperties", "additional_properties"),
            ("unevaluatedProperties", "unevaluated_properties"),
            ("propertyNames", "property_names"),
            ("unevaluatedItems", "unevaluated_items"),
            ("contains", "contains"),
            ("not", "not_"),
        ):
            if key in raw and kinds.get(key) == _K_CHILD:
                setattr(node, field, child(key))
        items = raw.get("items", MISSING)
        if "prefixItems" in raw and kinds.get("prefixItems") == _K_CHILD:
            node.prefix_items = tuple(
                child("prefixItems", f"/{i}") for i in range(len(raw["prefixItems"]))
            )
            if items is not MISSING:
                node.rest_items = child("items")
        elif isinstance(items, list):  # the array form (up to 2019-09)
            node.prefix_items = tuple(child("items", f"/{i}") for i in range(len(items)))
            if "additionalItems" in raw:
                node.rest_items = child("additionalItems")
        elif items is not MISSING:
            node.rest_items = child("items")
        for key, field in (("anyOf", "any_of"), ("oneOf", "one_of")):
            if key in raw:
                setattr(node, field, tuple(child(key, f"/{i}") for i in range(len(raw[key]))))
        if "allOf" in raw:
            branches = folded.branches if folded is not None else []
            node.all_of = tuple(
                self.parse(
                    branch, branches[i] if i < len(branches) else f"{rel}/allOf/{i}", depth + 1
                )
                for i, branch in enumerate(raw["allOf"])
            )

    def _dependent_schemas(
        self, raw: dict[str, Any], origin: Any, rel: str, depth: int
    ) -> Mapping[str, Node]:
        """`dependentSchemas`, and the schema entries of draft-07 `dependencies`."""
        kinds = self.kinds
        if "dependentSchemas" in raw and kinds.get("dependentSchemas") == _K_CHILD:
            home = origin("dependentSchemas", rel)
            return Properties(self, raw["dependentSchemas"], home, depth, "dependentSchemas")
        legacy = raw.get("dependencies")
        if isinstance(legacy, dict) and kinds.get("dependencies") == _K_DEPENDENCIES:
            schemas = {k: v for k, v in legacy.items() if not isinstance(v, list)}
            if schemas:
                home = origin("dependencies", rel)
                return Properties(self, schemas, home, depth, "dependencies")
        return {}

    def _fill_bound(self, node: Node, key: str, value: Any, raw: dict[str, Any], rel: str) -> bool:
        """A bound that is not a plain finite number; True for a draft-04 boolean."""
        if key.startswith("exclusive") and isinstance(value, bool):
            # draft-04: a boolean that makes minimum/maximum exclusive
            plain = BY_KEYWORD[key].exclusive_of
            if value and plain in raw:
                node.bounds[key] = raw[plain]
            return True
        if not is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
            raise ClassificationError(f"'{key}' must be a finite number", f"{self.base}{rel}/{key}")
        node.bounds[key] = value
        return False

    def _target(self, ref: str) -> tuple[Any, str] | None:
        """The raw target of a local `$ref` and its relative pointer, or None."""
        return local_target(self.document, ref)

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
        found = local_target(self.document, ref)
        if found is None:
            raise ClassificationError(f"$ref to missing target {ref}", pointer)
        target, rel = found
        return self.parse(target, rel, depth + 1)


def _holds_ref(raw: dict[str, Any]) -> bool:
    code = encode(raw)
    return code is None or b'"$ref"' in code


def _at(value: Any, suffix: str) -> Any:
    """The element `suffix` (`/3`) names in an array value, or the value itself."""
    return value[int(suffix[1:])] if suffix else value


def parse_schema(raw: Any, pointer: str, limits: Limits, *, encoded: bytes | None = None) -> Node:
    """Parse the schema at `pointer` (e.g. `/inputSchema`) of a definition, in
    the dialect its `$schema` names (absent or unknown: 2020-12).

    Only the root is parsed here; child schemas are parsed when first read.
    The nesting of the document itself (not counting `$ref` hops, which are
    counted as they are followed) is checked up front so that no deep raw
    subtree reaches a report. `encoded`, the document's JSON when the caller
    has it, lets a small document without `$ref` skip that walk.
    """
    check_depth(raw, pointer, limits, encoded)
    uri = raw.get("$schema") if isinstance(raw, dict) else None
    parser = _Parser(raw, pointer, limits, dialect_of(uri) or DEFAULT)
    return parser.parse(raw, "", 0)


def check_depth(raw: Any, pointer: str, limits: Limits, encoded: bytes | None = None) -> None:
    """Refuse (`ClassificationError`) a document whose schemas nest deeper than
    `limits.max_depth`, wherever that is: what every classification of it
    does, walked or settled by the cheap pass."""
    if not _shallow(encoded, limits.max_depth):
        check_nesting(raw, pointer, limits.max_depth)


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
