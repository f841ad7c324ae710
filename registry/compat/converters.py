"""Converters: declarative operations that turn arguments valid under version A
into arguments valid under version B, read and applied.

    ops = parse_ops([{"op": "rename", "from": "/timeout_ms", "to": "/timeout"}])
    apply(ops, {"timeout_ms": 5000})          # -> {"timeout": 5000}

What the gate needs at call time, and nothing more: no classifier, no
python-jsonschema. Suggesting a converter and proving it (`verify`) is
`repairs.py`'s business.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec

from registry.compat.jsonvalues import json_key
from registry.pointers import unescape

__all__ = [
    "ConversionRejected",
    "ConverterError",
    "Drop",
    "Fill",
    "Map",
    "Op",
    "Reject",
    "Rename",
    "apply",
    "as_ops",
    "describe",
    "map_values",
    "parse_ops",
    "parse_pointer",
]


class Rename(msgspec.Struct, tag="rename", tag_field="op", forbid_unknown_fields=True):
    """Move the value at `from` to `to`."""

    from_: str = msgspec.field(name="from")
    to: str


class Fill(msgspec.Struct, tag="fill", tag_field="op", forbid_unknown_fields=True):
    """Set `value` at `path` when the caller sent nothing there (a reviewed
    choice written down, never a silent default)."""

    path: str
    value: Any


class Drop(msgspec.Struct, tag="drop", tag_field="op", forbid_unknown_fields=True):
    """Remove the value at `path`."""

    path: str


class Map(msgspec.Struct, tag="map", tag_field="op", forbid_unknown_fields=True):
    """Replace enum values at `path`: `{"write": "read"}`."""

    path: str
    values: dict[str, Any]


class Reject(msgspec.Struct, tag="reject", tag_field="op", forbid_unknown_fields=True):
    """Refuse calls carrying one of `values` at `path`, with `message`."""

    path: str
    values: list[Any]
    message: str


Op = Rename | Fill | Drop | Map | Reject


class ConverterError(ValueError):
    """A converter that cannot be read or does not fit the schema it starts from."""


class ConversionRejected(Exception):
    """A `reject` operation refused the call's arguments."""

    def __init__(self, path: str, value: Any, message: str) -> None:
        self.path = path
        self.value = value
        self.message = message
        shown = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        super().__init__(f"value {shown} at {path} is refused: {message}")


def parse_pointer(pointer: str) -> list[str]:
    """RFC 6901 tokens of a JSON Pointer into the arguments object."""
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        raise ConverterError(f"{pointer!r} is not a JSON Pointer (it must start with '/')")
    tokens = pointer[1:].split("/")
    for token in tokens:
        stripped = token.replace("~0", "").replace("~1", "")
        if "~" in stripped:
            raise ConverterError(f"{pointer!r} is not a JSON Pointer ('~' must be ~0 or ~1)")
    return [unescape(t) for t in tokens]


def parse_ops(raw: Any) -> list[Op]:
    """Read a list of operations from parsed JSON, naming the first problem."""
    try:
        ops = msgspec.convert(raw, list[Op])
    except msgspec.ValidationError as exc:
        raise ConverterError(f"invalid converter operations: {exc}") from exc
    for op in ops:
        for pointer in _pointers(op):
            parse_pointer(pointer)
    return ops


_OP_TYPES = (Rename, Fill, Drop, Map, Reject)


def as_ops(ops: Sequence[Op | Mapping[str, Any]]) -> Sequence[Op]:
    """`ops` as given when parsed, else read from their JSON form (what
    `suggested_converter`, manifests and the API hold), naming the first problem."""
    if all(isinstance(op, _OP_TYPES) for op in ops):
        return cast(Sequence[Op], ops)
    return parse_ops([msgspec.to_builtins(op) if isinstance(op, _OP_TYPES) else op for op in ops])


def _pointers(op: Op) -> list[str]:
    if isinstance(op, Rename):
        return [op.from_, op.to]
    return [op.path]


def describe(op: Op) -> str:
    """An operation in a few words: `rename /timeout_ms -> /timeout`."""
    if isinstance(op, Rename):
        return f"rename {op.from_} -> {op.to}"
    return f"{type(op).__name__.lower()} {op.path}"


# ---------------------------------------------------------------- applying


def apply(ops: Sequence[Op | Mapping[str, Any]], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run `ops` (parsed, or in their JSON form) over call arguments; a new
    object, the input untouched.

    Raises `ConversionRejected` when a `reject` operation matches.
    """
    result: dict[str, Any] = copy.deepcopy(dict(arguments))
    for op in as_ops(ops):
        if isinstance(op, Rename):
            found, value = _take(result, parse_pointer(op.from_))
            if found:
                _put(result, parse_pointer(op.to), value)
        elif isinstance(op, Fill):
            tokens = parse_pointer(op.path)
            parent = _parent(result, tokens)
            if parent is not None and tokens[-1] not in parent:
                parent[tokens[-1]] = copy.deepcopy(op.value)
        elif isinstance(op, Drop):
            _take(result, parse_pointer(op.path))
        elif isinstance(op, Map):
            tokens = parse_pointer(op.path)
            parent = _parent(result, tokens)
            if parent is not None and tokens[-1] in parent:
                parent[tokens[-1]] = map_values(parent[tokens[-1]], op.values)
        else:
            tokens = parse_pointer(op.path)
            parent = _parent(result, tokens)
            if parent is not None and tokens[-1] in parent:
                _refuse(parent[tokens[-1]], op)
    return result


def _parent(document: dict[str, Any], tokens: list[str]) -> dict[str, Any] | None:
    node: Any = document
    for token in tokens[:-1]:
        if not isinstance(node, dict) or token not in node:
            return None
        node = node[token]
    return node if isinstance(node, dict) else None


def _take(document: dict[str, Any], tokens: list[str]) -> tuple[bool, Any]:
    parent = _parent(document, tokens)
    if parent is None or tokens[-1] not in parent:
        return False, None
    return True, parent.pop(tokens[-1])


def _put(document: dict[str, Any], tokens: list[str], value: Any) -> None:
    node = document
    for token in tokens[:-1]:
        child = node.setdefault(token, {})
        if not isinstance(child, dict):
            return
        node = child
    node[tokens[-1]] = value


def map_values(value: Any, table: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [map_values(v, table) for v in value]
    if isinstance(value, str) and value in table:
        return copy.deepcopy(table[value])
    return value


def _refuse(value: Any, op: Reject) -> None:
    refused = {json_key(v) for v in op.values}
    for candidate in value if isinstance(value, list) else [value]:
        if json_key(candidate) in refused:
            raise ConversionRejected(op.path, candidate, op.message)
