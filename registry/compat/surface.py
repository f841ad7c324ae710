"""Changes on the surface of a schema, settled without a walk.

Most real changes to a tool's schema rewrite a description, add an optional
property or allow one more value. `surface_changes` finds these when they are
all there is:

- annotations (`description`, `title`, `examples`, `$comment`, ...) at schema
  positions: the values accepted and how they are read stay the same;
- properties added to a plain object: one reached from the root through
  `properties` and `items` alone, declaring nothing but `type: "object"`,
  `properties`, `required`, a boolean `additionalProperties`, property-count
  bounds and annotations, each added property neither required nor given a
  default (nor a `$ref` or combinator that could carry one). Such an object
  is what the walk reports as `property-added` alone (docs/contract.md: an
  optional property added to an object is additive); on such an object, names
  no longer `required` (`required-removed`);
- values added to the `enum` of a plain scalar schema (`type`, `enum`,
  `default` and annotations only) that keep the JSON types its values can
  have (`enum-widened`; a new type is the type rule's business too).

It walks both documents side by side, descending only where the JSON differs,
and gives up at the first difference of any other kind; the walk then decides.
It knows where schemas sit: a property named `description` or a `default`
holding a `title` key is data, not an annotation. tests/test_surface.py checks
that its reports are the walk's on the corpus and on generated pairs.
"""

from __future__ import annotations

from typing import Any

from registry.compat.bounds import BOUNDS
from registry.compat.dialects import ANNOTATIONS
from registry.compat.jsonvalues import json_equal, json_missing, json_same, json_types
from registry.compat.kinds import Kind
from registry.compat.walk import ABSENT, Finding
from registry.pointers import escape

__all__ = ["KINDS", "surface_changes"]

# annotation keyword -> the kind its change is reported as
KINDS: dict[str, Kind] = {
    "description": Kind.DESCRIPTION_CHANGED,
    "title": Kind.TITLE_CHANGED,
    "examples": Kind.EXAMPLES_CHANGED,
    "$comment": Kind.COMMENT_CHANGED,
    # No validation effect; reported as documentation changes.
    "deprecated": Kind.DESCRIPTION_CHANGED,
    "readOnly": Kind.DESCRIPTION_CHANGED,
    "writeOnly": Kind.DESCRIPTION_CHANGED,
    "contentMediaType": Kind.DESCRIPTION_CHANGED,
    "contentEncoding": Kind.DESCRIPTION_CHANGED,
    "contentSchema": Kind.DESCRIPTION_CHANGED,
}
assert KINDS.keys() == ANNOTATIONS

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
_MAX_DEPTH = 64  # deeper documents take the walk, which refuses them

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


def surface_changes(old: Any, new: Any, pointer: str) -> list[Finding] | None:
    """The annotation changes, plain property additions, names no longer
    required and widened enums between two schemas, or None when they differ
    in anything else. Only the parts that differ are visited; an equal part is
    confirmed by its JSON encoding, which tells `1` from `true` where Python's
    equality does not.

    Example: `{"type": "object", "properties": {"q": {"type": "string"}}}` ->
    the same with `"limit": {"type": "integer"}` added and `q` described is
    `property-added` at `/properties/limit` and `description-changed` at
    `/properties/q/description`.
    """
    findings: list[Finding] = []
    olds: list[Any] = []  # parts Python finds equal, in step with `news`
    news: list[Any] = []
    try:
        _schema(old, new, pointer, findings, olds, news, 0, True)
    except _Other:
        return None
    # confirmed last, all at once: equal JSON encodes alike, position by position
    if olds and not json_equal(olds, news):
        return None
    return findings


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
    for key in keys:
        before, after = old.get(key, ABSENT), new.get(key, ABSENT)
        if before is after:
            continue
        if key in ANNOTATIONS:
            if before != after or not json_same(before, after):
                findings.append(
                    Finding(
                        kind=KINDS[key],
                        pointer=f"{pointer}/{escape(key)}",
                        name=key,
                        old=before,
                        new=after,
                    )
                )
            continue
        if before == after:
            if type(before) is not str:  # equal strings are the same JSON
                olds.append(before)
                news.append(after)
            continue
        at = f"{pointer}/{escape(key)}"
        gained = _widening(old, new) if plain and key == "enum" else None
        if gained:
            findings.append(
                Finding(
                    kind=Kind.ENUM_WIDENED, pointer=at, name="enum", old=list(before), new=gained
                )
            )
        elif plain and key == "required" and _plain_object(old) and _plain_object(new):
            was, now = old.get("required", _NO_NAMES), new.get("required", _NO_NAMES)
            if not set(was) > set(now) or not all(type(name) is str for name in was):
                raise _Other  # a name required now is the walk's (it breaks)
            for name in sorted(set(was) - set(now)):
                findings.append(
                    Finding(kind=Kind.REQUIRED_REMOVED, pointer=at, name=name, old=name)
                )
        elif key == "properties":
            adds = plain and _plain_object(old) and _plain_object(new)
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
    if old.keys() != new.keys():
        if not (adds and old.keys() < new.keys()):
            raise _Other
        for name in new.keys() - old.keys():
            schema = new[name]
            if not _plain_addition(schema) or name in required:
                raise _Other
            at_name = f"{at}/{escape(name)}"
            findings.append(
                Finding(kind=Kind.PROPERTY_ADDED, pointer=at_name, name=name, new=schema)
            )
    for name, first in old.items():
        second = new[name]
        if first == second:
            olds.append(first)
            news.append(second)
        else:
            _schema(first, second, f"{at}/{escape(name)}", findings, olds, news, depth + 1, adds)


def _plain_object(schema: dict[str, Any]) -> bool:
    """An object the walk reads as its own keywords only (no applicator, no
    pattern, no schema for unlisted names)."""
    return (
        schema.keys() <= _OBJECT_KEYS
        and schema.get("type") == "object"
        and type(schema.get("additionalProperties", True)) is bool
        and type(schema.get("required", _NO_NAMES)) is list
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


def _plain_addition(schema: Any) -> bool:
    """A schema of an added property that brings no default with it."""
    kind = type(schema)
    return kind is bool or (kind is dict and not schema.keys() & _NOT_ADDED)


_NO_NAMES: list[str] = []
