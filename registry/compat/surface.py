"""The cheap pass: where two schemas differ only on their surface, the walk's
findings without the walk.

Most real changes to a tool's schema rewrite a description, add an optional
property or allow one more value. `surface_changes` recognises these when they
are all there is, and leaves everything else to the walk:

- annotations (`description`, `title`, `examples`, `$comment`, ...) at schema
  positions: the values accepted and how they are read stay the same;
- properties added to a plain object: one reached from the root through
  `properties` and `items` alone, declaring nothing but `type: "object"`,
  `properties`, `required`, a boolean `additionalProperties`, property-count
  bounds and annotations, each added property neither required nor given a
  default (nor a `$ref` or combinator that could carry one); on such an
  object, names no longer `required`;
- values added to the `enum` of a plain scalar schema (`type`, `enum`,
  `default` and annotations only) that keep the JSON types its values can
  have (a new type is the type rule's business too).

It decides no kind: each finding is made by the rule that owns its kind
(`rules_docs.annotation_changes`, `rules_objects.property_added` and
`required_removed`, `rules_values.enum_widened`), and only where the walk
would make the same one and nothing else; tests/test_surface.py checks that
its reports are the walk's on the corpus and on generated pairs. It honours
`Limits`: where the walk could run out of a bound (its nesting, the nodes it
parses, its steps) the pass leaves the pair to the walk, and the classifier
refuses a document nested past `max_depth` either way.

It walks both documents side by side, descending only where the JSON differs,
and gives up at the first difference of any other kind. It knows where schemas
sit: a property named `description` or a `default` holding a `title` key is
data, not an annotation.
"""

from __future__ import annotations

from itertools import filterfalse
from typing import Any

import msgspec

from registry.compat.bounds import BOUNDS
from registry.compat.dialects import ANNOTATIONS
from registry.compat.jsonvalues import json_equal, json_missing, json_same, json_types
from registry.compat.nesting import check_nesting
from registry.compat.parser import check_depth
from registry.compat.report import ClassificationError
from registry.compat.rules_docs import annotation_changes
from registry.compat.rules_objects import property_added, required_removed
from registry.compat.rules_values import enum_widened
from registry.compat.schema import CHILD_KEYWORDS, MAP_KEYWORDS, Limits
from registry.compat.walk import Finding
from registry.pointers import escape

__all__ = ["surface_changes"]

# Keywords whose value maps names to schemas, holds a list of schemas, or is one.
_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SINGLE = frozenset(
    {
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "items",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "not",
        "if",
        "then",
        "else",
    }
)
_MAX_DEPTH = 64  # deeper, the walk decides (and bounds its own descent)
# The keywords below which the nesting check (nesting.py) finds schemas, and
# those of them that map names to schemas.
_HOLDERS = CHILD_KEYWORDS | {"if", "then", "else", "dependencies", "$ref"}
_SCHEMA_MAPS = MAP_KEYWORDS | {"dependencies", "$defs", "definitions"}
_IS_DICT = dict.__instancecheck__

# What a plain object or array may declare (annotations aside).
_OBJECT_KEYS = ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "default",
    "$schema",
    *(b.keyword for b in BOUNDS if b.measures == "properties"),
}
_ARRAY_KEYS = ANNOTATIONS | {
    "type",
    "items",
    "uniqueItems",
    "default",
    *(b.keyword for b in BOUNDS if b.measures == "items"),
}
# What a plain scalar schema whose `enum` grows may declare.
_SCALAR_KEYS = ANNOTATIONS | {"type", "enum", "default"}
_SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})
# What an added property may not carry: a default, or what could bring one in.
_NOT_ADDED = frozenset(
    {"default", "$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf"}
)


class _Other(Exception):
    """A difference the surface does not settle: the walk decides."""


def surface_changes(old: Any, new: Any, pointer: str, limits: Limits) -> list[Finding] | None:
    """The annotation changes, plain property additions, names no longer
    required and widened enums between two schemas, or None when they differ
    in anything else (or the walk could run out of a bound of `limits` on
    them). Only the parts that differ are visited; an equal part is confirmed
    by its MessagePack encoding, which tells `1` from `true` (and `1.0`)
    where Python's equality does not, and copies strings as they are (JSON
    would scan each for escapes: long descriptions are most of the bytes).
    Raises `ClassificationError` for a document nested past
    `limits.max_depth`, as the walk does.

    Example: `{"type": "object", "properties": {"q": {"type": "string"}}}` ->
    the same with `"limit": {"type": "integer"}` added and `q` described is
    `property-added` at `/properties/limit` and `description-changed` at
    `/properties/q/description`.
    """
    findings: list[Finding] = []
    # in step: the parts Python finds equal, the schemas of added properties
    # that hold schemas (on both sides: measured with the rest), and a `"$ref"`
    # for each entered schema with one (`_within` reads them)
    olds: list[Any] = []
    news: list[Any] = []
    try:
        _schema(old, new, pointer, findings, olds, news, 0, True)
    except _Other:
        return None
    # confirmed last, all at once: packed alike, position by position, is equal
    # JSON (packed apart may still be: keys in another order, `1` for `1.0`)
    try:
        equal = _PACK.encode(olds)
        if equal != _PACK.encode(news) and not json_equal(olds, news):
            return None
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None  # not JSON as it is: the walk decides
    return findings if _within(findings, equal, olds, pointer, limits, old, new) else None


def _within(
    findings: list[Finding],
    equal: bytes,
    parts: list[Any],
    pointer: str,
    limits: Limits,
    old: Any,
    new: Any,
) -> bool:
    """Whether the walk would stay within `limits` on what the pass settled,
    bounded without walking the documents (each step here is a few bytecodes:
    the pass answers in microseconds). Every schema the pass entered lies on
    the path of a finding (one that differs and yields none is the walk's),
    with a pointer token per level at least: the findings bound how deep it
    went and how many schemas the walk would compare. What it did not enter is
    in `equal`, packed (the parts found equal, the added properties' schemas
    that hold schemas, and a `"$ref"` for each entered schema with one): each
    schema there is a map or a boolean, whose first byte is one of `_NODES`
    (counted with whatever else has those values: a bound), and each level
    below a part's first takes a map and 4 bytes at least (`"if": {}`), so
    that no part nests deeper than `1 + len(equal) // 4` levels, nor than all
    the maps (counted only where a bound needs them), nor than `_shallow`
    finds, level by level, where these leave too little room; only then are
    the documents walked. A `$ref` may hop as deep as `max_depth` allows.

    A document nested past `max_depth` is refused here, as by the walk."""
    deepest = base = pointer.count("/")
    for finding in findings:
        tokens = finding.pointer.count("/")
        if tokens > deepest:  # noqa: PLR1730 (max() costs a call per finding)
            deepest = tokens
    deepest -= base
    size = len(equal)
    room = limits.max_depth - deepest
    cap = limits.max_nodes if limits.max_nodes < limits.max_steps else limits.max_steps
    if _DOLLAR not in equal:  # (an int: memchr) no `$ref` among the parts
        work = 1 + deepest * len(findings)
        if work + size <= cap and deepest < limits.max_walk_depth:
            if 1 + size // 4 <= room:
                return True
            nodes = _nodes(equal)
            if nodes <= room:
                return True
        refs = 0
    else:
        refs = equal.count(_REF)
        work = 1 + deepest * len(findings) + refs * (limits.max_depth + 1)
    nodes = size  # (at most: counted below only where a bound needs it)
    if work + nodes > cap:
        nodes = _nodes(equal)
    if deepest >= limits.max_walk_depth or work + nodes > cap:
        return False
    if refs or (
        1 + size // 4 > room
        and (nodes if nodes < size else _nodes(equal)) > room
        and not _shallow(parts, room)
    ):
        # the walk refuses a document nested past `max_depth`, wherever that is
        check_depth(old, pointer, limits)
        check_depth(new, pointer, limits)
        if refs and limits.max_walk_depth <= limits.max_depth:
            # it follows a `$ref` into parts both hold, and decides past its own depth
            try:
                check_nesting(old, pointer, limits.max_walk_depth - 1)
                check_nesting(new, pointer, limits.max_walk_depth - 1)
            except ClassificationError:
                return False
    return True


def _shallow(parts: list[Any], room: int) -> bool:
    """Whether no schema among `parts` nests more than `room` levels deep,
    told level by level: at each, the schemas holding a schema keyword (or a
    `$ref`) are picked in C, and only their child schemas make the next level
    (most of a wide schema's properties hold none). A boolean schema and
    what is not a schema end where they are; a `$ref` is not followed (False)."""
    level = list(filter(_IS_DICT, parts))
    for _ in range(room):
        holders = list(filterfalse(_HOLDERS.isdisjoint, level))
        if not holders:
            return True
        level = []
        for holder in holders:
            for key in _HOLDERS.intersection(holder):
                value = holder[key]
                if key == "$ref":
                    return False
                if key in _SCHEMA_MAPS and type(value) is dict:
                    level += filter(_IS_DICT, value.values())
                elif type(value) is list:
                    level += filter(_IS_DICT, value)
                elif type(value) is dict:
                    level.append(value)
    return False


def _nodes(packed: bytes) -> int:
    """How many maps and booleans `packed` may hold (bytes that may start one)."""
    return len(packed.translate(None, _NOT_NODES))  # (one pass in C)


def _schema(
    old: Any,
    new: Any,
    pointer: str,
    findings: list[Finding],
    olds: list[Any],
    news: list[Any],
    depth: int,
    plain: bool,
) -> None:
    """`plain`: reached from the root through `properties` and `items` of plain
    objects and arrays only (where the walk pairs old and new by position)."""
    if type(old) is not dict or type(new) is not dict or depth > _MAX_DEPTH:
        raise _Other
    keys = old.keys() | new.keys() if old.keys() != new.keys() else old.keys()
    annotations: list[str] | None = None
    for key in keys:
        before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if before is after:
            if key == "$ref":
                olds.append(key)  # (marked for `_within`)
                news.append(key)
            elif type(before) is dict or type(before) is list:
                _held(key, before, after, olds, news)  # (a part both hold: measured too)
            continue
        if key in ANNOTATIONS:
            if before != after or (type(before) is not str and not json_same(before, after)):
                # (worded by the rule that owns the kind)
                annotations = [key] if annotations is None else [*annotations, key]
            continue
        if before == after:
            if type(before) is not str:  # equal strings are the same JSON
                if key in _EXPANDED:
                    _held(key, before, after, olds, news)
                else:
                    olds.append(before)
                    news.append(after)
            elif key == "$ref":
                olds.append(key)  # (marked for `_within`)
                news.append(key)
            continue
        at = f"{pointer}/{escape(key)}"
        gained = _widening(old, new) if plain and key == "enum" else None
        if gained:
            findings.append(enum_widened(at, "enum", list(before), gained))
        elif plain and key == "required" and _plain_objects(old, new):
            was, now = old.get("required", _NO_NAMES), new.get("required", _NO_NAMES)
            if not set(was) > set(now) or not all(type(name) is str for name in was):
                raise _Other  # a name required now is the walk's (it breaks)
            for name in sorted(set(was) - set(now)):
                findings.append(required_removed(at, name))
        elif key == "properties":
            adds = plain and _plain_objects(old, new)
            required = old.get("required", _NO_NAMES)
            _map(before, after, at, findings, olds, news, depth, adds, required)
        elif key in _MAPS or key == "dependencies":
            _map(before, after, at, findings, olds, news, depth)
        elif key in _LISTS and type(before) is list and type(after) is list:
            if len(before) != len(after):
                raise _Other
            for i, (first, second) in enumerate(zip(before, after, strict=True)):
                if first is not second and first != second:
                    _schema(first, second, f"{at}/{i}", findings, olds, news, depth + 1, False)
                else:
                    olds.append(first)
                    news.append(second)
        elif key in _SINGLE:
            deeper = plain and key == "items" and _plain_array(old) and _plain_array(new)
            _schema(before, after, at, findings, olds, news, depth + 1, deeper)
        else:
            raise _Other
    if annotations is not None:
        findings += annotation_changes(pointer, old, new, annotations)


def _held(key: str, before: Any, after: Any, olds: list[Any], news: list[Any]) -> None:
    """An equal keyword's value among the parts; a map or a list of schemas
    as its schemas, in old's order on both sides (each part is then a schema
    or data, never a map or list of them: `_shallow` reads a part's keys as
    keywords, and takes a list part for data)."""
    if key in _SCHEMA_MAPS and type(before) is dict and type(after) is dict:
        olds += before.values()
        news += map(after.__getitem__, before)  # (equal maps: the same names)
    elif key in _LISTS and type(before) is list and type(after) is list:
        olds += before  # (equal lists: the same length)
        news += after
    else:
        olds.append(before)
        news.append(after)


def _map(
    old: Any,
    new: Any,
    at: str,
    findings: list[Finding],
    olds: list[Any],
    news: list[Any],
    depth: int,
    adds: bool = False,
    required: Any = (),
) -> None:
    """Entries of a map of schemas; with `adds` (the `properties` of a plain
    object) names new declares beyond old's are property-added."""
    if type(old) is not dict or type(new) is not dict:
        raise _Other
    if len(old) != len(new):  # (as many names, and one apart: see below)
        if not (adds and old.keys() < new.keys()):
            raise _Other
        for name in new.keys() - old.keys():
            schema = new[name]
            if not _plain_addition(schema) or name in required:
                raise _Other
            if not _flat(schema):
                olds.append(schema)
                news.append(schema)
            findings.append(property_added(f"{at}/{escape(name)}", name, schema))
    keep_old, keep_new, get = olds.append, news.append, new.get
    try:
        for name, first in old.items():
            second = get(name, _ABSENT)  # (absent: not a schema, `_schema` gives up)
            if first == second:
                keep_old(first)
                keep_new(second)
            else:
                _schema(
                    first, second, f"{at}/{escape(name)}", findings, olds, news, depth + 1, adds
                )
    except RecursionError:
        if old.keys() != new.keys():
            raise _Other from None  # (names apart: given up before comparing any)
        raise


def _plain_objects(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Both objects the walk reads as their own keywords only (no applicator,
    no pattern, no schema for unlisted names)."""
    return (
        old.keys() <= _OBJECT_KEYS
        and new.keys() <= _OBJECT_KEYS
        and old.get("type") == "object" == new.get("type")
        and type(old.get("additionalProperties", True)) is bool
        and type(new.get("additionalProperties", True)) is bool
        and type(old.get("required", _NO_NAMES)) is list
        and type(new.get("required", _NO_NAMES)) is list
    )


def _widening(old: dict[str, Any], new: dict[str, Any]) -> list[Any] | None:
    """The values `new` adds to the `enum` of a plain scalar schema, when that
    is all it does and the JSON types its values can have stay (else the type
    rule speaks too); None otherwise (a reordered enum gains none: the walk's)."""
    if not (old.keys() <= _SCALAR_KEYS and new.keys() <= _SCALAR_KEYS):
        return None
    before, after, types = old.get("enum"), new.get("enum"), old.get("type")
    if type(before) is not list or type(after) is not list:
        return None
    if type(types) is str:
        types = [types]
    if type(types) is not list or not types or not set(types) <= _SCALARS:
        return None
    if json_missing(before, after):
        return None  # a value dropped
    kinds = json_types(before, types)
    if not kinds or kinds != json_types(after, types):
        return None
    return json_missing(after, before)


def _plain_array(schema: dict[str, Any]) -> bool:
    return schema.keys() <= _ARRAY_KEYS and schema.get("type") == "array"


def _flat(schema: Any) -> bool:
    """A schema holding no other schema: one level, no `$ref` below (a list
    elsewhere than under `items` or `prefixItems` holds values, not schemas)."""
    if type(schema) is dict:
        for key, value in schema.items():
            if type(value) is dict or (type(value) is list and key in _LISTS):
                return False
    return True


def _plain_addition(schema: Any) -> bool:
    """A schema of an added property that brings no default with it."""
    kind = type(schema)
    return kind is bool or (kind is dict and not schema.keys() & _NOT_ADDED)


_NO_NAMES: list[str] = []
# equal values `_held` takes apart: maps and lists of schemas
_EXPANDED = _SCHEMA_MAPS | _LISTS
_ABSENT: Any = object()
_DOLLAR = ord("$")  # rare outside `$ref`, `$defs` and `$schema`
_PACK = msgspec.msgpack.Encoder()  # in the order written: equal bytes are equal JSON
_REF = msgspec.msgpack.encode("$ref")  # as a key packs
# the first byte of a packed map (fixmap, map16, map32) or boolean: every schema's
_NODES = bytes([*range(0x80, 0x90), 0xDE, 0xDF, 0xC2, 0xC3])
_NOT_NODES = bytes(b for b in range(256) if b not in _NODES)
