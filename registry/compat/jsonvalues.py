"""JSON values as JSON sees them: equality, hashable keys, types, encodings.

Python's `1 == True` and `{"a": 1} == {"a": 1.0}` are not JSON's answers;
every comparison of values in the engine goes through these.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import msgspec

__all__ = [
    "a_json_type",
    "article",
    "encode",
    "is_number",
    "json_equal",
    "json_key",
    "json_missing",
    "json_same",
    "json_type",
    "json_types",
]

_ENCODER = msgspec.json.Encoder(order="sorted")
# MessagePack, keys in insertion order: cheaper than sorted JSON, and two values
# that pack to the same bytes are the same JSON (it tells `true` from `1` and
# `1.0` from `1`); values that pack apart are compared by `encode`.
_PACKER = msgspec.msgpack.Encoder()


def encode(value: Any) -> bytes | None:
    """The JSON encoding of `value` with keys sorted, or None if it has none."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values encode the same (keys sorted). Python's `1 == True`
    does not hold here; `1` and `1.0` count as different, which only costs a
    caller that uses this as a shortcut a closer look."""
    if a is b:
        return True
    try:
        if _PACKER.encode(a) == _PACKER.encode(b):
            return True
    except (TypeError, ValueError, OverflowError, RecursionError):
        pass  # not packable (an integer past 64 bits): JSON decides
    first = encode(a)
    return first is not None and first == encode(b)


def json_same(a: Any, b: Any) -> bool:
    """JSON equality, settled by Python's (which stops at the first difference
    and builds nothing) unless that says equal: `1 == True` holds in Python
    only, so an equal pair that is not a plain string is confirmed by its
    encoding."""
    if a is b:
        return True
    try:
        if a != b:
            return False
    except RecursionError:  # nested past Python's limit: not worth a shortcut
        return False
    kind = type(a)
    if kind is str or (kind is type(b) and kind in (int, float)):
        return True
    return json_equal(a, b)


def json_key(value: Any) -> str:
    """A hashable key with JSON equality (`1 == 1.0`, but `1 != true`); a key,
    not a rendering (a plain string's key is shorter than its JSON)."""
    kind = type(value)
    if kind is str:
        return '"' + value if '"' not in value and "\\" not in value else _key(value)
    return _key(value)


def _key(value: Any) -> str:
    return _ENCODER.encode(_normal(value)).decode()


def _normal(v: Any) -> Any:
    kind = type(v)
    if kind is str or kind is bool or kind is int or v is None:
        return v
    if kind is float:
        return int(v) if v.is_integer() and abs(v) <= 2**53 else v
    if kind is dict:
        return {k: _normal(x) for k, x in v.items()}
    if kind is list:
        return [_normal(x) for x in v]
    return v


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


# A JSON type as a message names it.
_ARTICLES = {
    "array": "an array",
    "boolean": "a boolean",
    "integer": "an integer",
    "null": "null",
    "number": "a number",
    "object": "an object",
    "string": "a string",
}
_JSON_CLASSES = (type(None), bool, int, float, str, list, Mapping)


def article(type_name: str) -> str:
    """A JSON type's name as a message writes it: `an integer`, `null`."""
    return _ARTICLES.get(type_name, type_name)


def a_json_type(value: Any) -> str:
    """The JSON type of a value as a message names it (`must be a string, not an
    integer`); a value JSON has no type for, by its Python class."""
    if not isinstance(value, _JSON_CLASSES):
        return type(value).__name__
    return _ARTICLES[json_type(value) if not isinstance(value, Mapping) else "object"]


def json_types(values: Collection[Any], admitted: Collection[str] | None = None) -> frozenset[str]:
    """The JSON types of `values`, those `admitted` allows when given (an
    integer is a number): what a schema's `enum` or `const` lets a valid value be."""
    classes = set(map(type, values))  # (one pass in C: an enum is mostly of one class)
    found = frozenset(
        name
        for kind in classes
        for name in (
            (_CLASS_TYPES[kind],)
            if kind in _CLASS_TYPES
            else {json_type(v) for v in values if type(v) is kind}
        )
    )
    if admitted is None:
        return found
    return frozenset(t for t in found if t in admitted or (t == "integer" and "number" in admitted))


def json_missing(values: Collection[Any], among: Collection[Any]) -> list[Any]:
    """The values of `values`, in order, JSON-unequal to every one of `among`
    (what an enum lost, or gained)."""
    if set(map(type, values)) | set(map(type, among)) <= _STR:
        known: set[Any] = set(among)  # strings: Python's equality is JSON's
        return [value for value in values if value not in known]
    known = {json_key(value) for value in among}
    return [value for value in values if json_key(value) not in known]


_STR = frozenset({str})
# the JSON type of every value of a class (a float's depends on the value)
_CLASS_TYPES: dict[type, str] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    type(None): "null",
    list: "array",
    dict: "object",
}


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
