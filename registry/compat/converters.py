"""Converters: declarative operations that turn arguments valid under version A
into arguments valid under version B, and their verification.

    ops = parse_ops([{"op": "rename", "from": "/timeout_ms", "to": "/timeout"}])
    apply(ops, {"timeout_ms": 5000})          # -> {"timeout": 5000}
    verify(ops, v3_definition, v4_definition) # -> ChangeReport; breaking = refused

`verify` applies the operations to A's input schema (a renamed property moves,
a filled one becomes always present with the filled value allowed, a dropped
one disappears, mapped and rejected enum values leave) and classifies the
result against B. A converter is sound when nothing breaking remains.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import msgspec
from jsonschema.validators import Draft202012Validator, validator_for

from registry.compat.classify import classify_schemas
from registry.compat.jsonvalues import json_key
from registry.compat.kinds import Side
from registry.compat.report import ChangeReport
from registry.pointers import join, unescape

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
    "describe",
    "parse_ops",
    "parse_pointer",
    "suggested_converter",
    "verify",
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


def _as_ops(ops: Sequence[Op | Mapping[str, Any]]) -> Sequence[Op]:
    """`ops` as given when parsed, else read from their JSON form (what
    `suggested_converter`, manifests and the API hold), naming the first problem."""
    if all(isinstance(op, _OP_TYPES) for op in ops):
        return cast(Sequence[Op], ops)
    return parse_ops([msgspec.to_builtins(op) if isinstance(op, _OP_TYPES) else op for op in ops])


def _pointers(op: Op) -> list[str]:
    if isinstance(op, Rename):
        return [op.from_, op.to]
    return [op.path]


# ---------------------------------------------------------------- applying


def apply(ops: Sequence[Op | Mapping[str, Any]], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run `ops` (parsed, or in their JSON form) over call arguments; a new
    object, the input untouched.

    Raises `ConversionRejected` when a `reject` operation matches.
    """
    result: dict[str, Any] = copy.deepcopy(dict(arguments))
    for op in _as_ops(ops):
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
                parent[tokens[-1]] = _mapped(parent[tokens[-1]], op.values)
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


def _mapped(value: Any, table: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [_mapped(v, table) for v in value]
    if isinstance(value, str) and value in table:
        return copy.deepcopy(table[value])
    return value


def _refuse(value: Any, op: Reject) -> None:
    refused = {json_key(v) for v in op.values}
    for candidate in value if isinstance(value, list) else [value]:
        if json_key(candidate) in refused:
            raise ConversionRejected(op.path, candidate, op.message)


# ---------------------------------------------------------------- suggesting


def suggested_converter(suggested: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The `suggested_op`s of a report's breaking changes as one converter, in
    an order that applies and verifies.

    The engine writes each operation against the old arguments, with the
    new name only where the operation puts a value: `reject`, `map` and
    `drop` name old properties, so they run first; `rename` and `fill` run
    deepest first (a property inside a renamed object is handled before the
    object moves), a rename before a fill of the same depth (the fill then
    supplies the value a caller sent under neither name, seed 000's
    `timeout`). A repeated operation is kept once, a second fill of the same
    place dropped (the first, from the report's order, stands).
    """
    early: list[dict[str, Any]] = []
    late: list[tuple[int, int, int, dict[str, Any]]] = []
    seen: set[str] = set()
    filled: set[str] = set()
    for position, raw in enumerate(suggested):
        op = dict(raw)
        key = json_key(op)
        if key in seen:
            continue
        seen.add(key)
        kind = op.get("op")
        if kind == "fill":
            if op.get("path") in filled:
                continue
            filled.add(str(op.get("path")))
        if kind in ("rename", "fill"):
            pointer = str(op.get("from" if kind == "rename" else "path", ""))
            depth = pointer.count("/")
            late.append((-depth, 0 if kind == "rename" else 1, position, op))
        else:
            early.append(op)
    return early + [op for *_, op in sorted(late, key=lambda entry: entry[:3])]


# ---------------------------------------------------------------- verifying


def verify(
    ops: Sequence[Op | Mapping[str, Any]], old: Mapping[str, Any], new: Mapping[str, Any]
) -> ChangeReport:
    """The report of `ops` (parsed, or in their JSON form) applied to `old`'s
    input schema against `new`'s.

    The converter is verified when the report's severity is not `breaking`.
    Raises `ConverterError` naming the operation (`ops[1] (fill /timeout)`)
    when one cannot apply: a property the arguments do not have at that
    point, or a rename onto a property that is already there.
    """
    old_schema = copy.deepcopy(old.get("inputSchema") or {"type": "object"})
    new_schema = new.get("inputSchema") or {"type": "object"}
    history = _History()
    for index, op in enumerate(_as_ops(ops)):
        try:
            _transform(old_schema, new_schema, op)
        except _Missing as missing:
            raise ConverterError(
                f"ops[{index}] ({describe(op)}): {history.missing(missing)}"
            ) from None
        except _Taken as taken:
            raise ConverterError(f"ops[{index}] ({describe(op)}): {history.taken(taken)}") from None
        except ConverterError as exc:
            raise ConverterError(f"ops[{index}] ({describe(op)}): {exc}") from None
        history.record(index, op)
    return classify_schemas(old_schema, new_schema, Side.INPUT)


def describe(op: Op) -> str:
    """An operation in a few words: `rename /timeout_ms -> /timeout`."""
    if isinstance(op, Rename):
        return f"rename {op.from_} -> {op.to}"
    return f"{type(op).__name__.lower()} {op.path}"


class _Missing(ConverterError):
    """The property a pointer names is not there (`pointer` says which)."""

    def __init__(self, pointer: str) -> None:
        super().__init__(pointer)
        self.pointer = pointer


class _Taken(ConverterError):
    """A rename's target is already a property."""

    def __init__(self, pointer: str) -> None:
        super().__init__(pointer)
        self.pointer = pointer


class _History:
    """Which earlier operation made or moved away each property, for messages."""

    def __init__(self) -> None:
        self.made: dict[str, tuple[int, Op]] = {}
        self.gone: dict[str, tuple[int, Op]] = {}

    def record(self, index: int, op: Op) -> None:
        if isinstance(op, Rename):
            self.gone[op.from_] = self.made[op.to] = (index, op)
        elif isinstance(op, Fill):
            self.made.setdefault(op.path, (index, op))
        elif isinstance(op, Drop):
            self.gone[op.path] = (index, op)

    def missing(self, error: _Missing) -> str:
        earlier = self.gone.get(error.pointer)
        if earlier is not None:
            index, op = earlier
            return (
                f"{error.pointer} is no longer there: ops[{index}] ({describe(op)}) "
                "already moved or dropped it"
            )
        return f"{error.pointer} is not a property of the old version"

    def taken(self, error: _Taken) -> str:
        earlier = self.made.get(error.pointer)
        if earlier is not None:
            index, op = earlier
            return (
                f"{error.pointer} already exists: ops[{index}] ({describe(op)}) made it; "
                "put the rename before it"
            )
        return f"{error.pointer} is already a property of the old version; drop or rename it first"


def _transform(schema: dict[str, Any], target: dict[str, Any], op: Op) -> None:
    if isinstance(op, Rename):
        source_tokens, to_tokens = parse_pointer(op.from_), parse_pointer(op.to)
        source = _object_schema(schema, source_tokens, op.from_)
        name = source_tokens[-1]
        if name not in source.get("properties", {}):
            raise _Missing(op.from_)
        destination = _object_schema(schema, to_tokens, op.to)
        if to_tokens[-1] in destination.get("properties", {}):
            raise _Taken(op.to)
        moved = source["properties"].pop(name)
        destination.setdefault("properties", {})[to_tokens[-1]] = moved
        if name in source.get("required", []):
            source["required"] = [r for r in source["required"] if r != name]
            destination.setdefault("required", []).append(to_tokens[-1])
    elif isinstance(op, Fill):
        tokens = parse_pointer(op.path)
        holder = _object_schema(schema, tokens, op.path)
        name = tokens[-1]
        properties = holder.setdefault("properties", {})
        if name in properties:
            kept = {k: v for k, v in _inline(schema, properties[name]).items() if k != "default"}
            if not _valid(op.value, kept, schema):
                kept = {"anyOf": [kept, {"const": op.value}]}
            properties[name] = kept
        else:
            filled = _filled_schema(target, tokens, op.value)
            if filled is not None:  # (a name the new version requires undescribed stays so)
                properties[name] = filled
        if name not in holder.get("required", []):
            holder.setdefault("required", []).append(name)
    elif isinstance(op, Drop):
        tokens = parse_pointer(op.path)
        holder = _object_schema(schema, tokens, op.path)
        if tokens[-1] not in holder.get("properties", {}):
            raise _Missing(op.path)
        holder["properties"].pop(tokens[-1])
        if tokens[-1] in holder.get("required", []):
            holder["required"] = [r for r in holder["required"] if r != tokens[-1]]
    else:
        tokens = parse_pointer(op.path)
        holder = _object_schema(schema, tokens, op.path)
        if tokens[-1] not in holder.get("properties", {}):
            raise _Missing(op.path)
        prop = _inline(schema, holder["properties"][tokens[-1]])
        holder["properties"][tokens[-1]] = prop
        _rewrite_values(prop, op)


def _rewrite_values(prop: dict[str, Any], op: Map | Reject) -> None:
    def rewrite(values: list[Any]) -> list[Any]:
        if isinstance(op, Map):
            out: list[Any] = []
            for value in values:
                mapped = _mapped(value, op.values)
                if json_key(mapped) not in {json_key(v) for v in out}:
                    out.append(mapped)
            return out
        refused = {json_key(v) for v in op.values}
        return [v for v in values if json_key(v) not in refused]

    for holder in (prop, prop.get("items") if isinstance(prop.get("items"), dict) else None):
        if holder is None:
            continue
        if "enum" in holder:
            holder["enum"] = rewrite(list(holder["enum"]))
        if "const" in holder:
            remaining = rewrite([holder["const"]])
            if remaining:
                holder["const"] = remaining[0]
            else:
                holder.pop("const")
                holder["enum"] = []


def _object_schema(root: dict[str, Any], tokens: list[str], pointer: str) -> dict[str, Any]:
    """The (mutable) object schema holding the last token, `$ref`s inlined."""
    node = root
    for depth, token in enumerate(tokens[:-1]):
        properties = node.get("properties", {})
        if token not in properties:
            raise _Missing(join(tokens[: depth + 1]))
        properties[token] = _inline(root, properties[token])
        node = properties[token]
    return node


def _inline(root: dict[str, Any], schema: Any) -> dict[str, Any]:
    """A copy of `schema` with a top-level local `$ref` replaced by its target."""
    if not isinstance(schema, dict):
        return {} if schema is True else {"not": {}}
    seen: set[str] = set()
    out = dict(schema)
    while "$ref" in out and isinstance(out["$ref"], str) and out["$ref"].startswith("#"):
        ref = out.pop("$ref")
        if ref in seen:
            break
        seen.add(ref)
        target: Any = root
        for token in ref[2:].split("/") if ref != "#" else []:
            target = target.get(unescape(token), {}) if isinstance(target, dict) else {}
        if isinstance(target, dict):
            out = {**copy.deepcopy(target), **out}
    return out


def _filled_schema(
    target_root: Mapping[str, Any], tokens: list[str], value: Any
) -> dict[str, Any] | None:
    """The schema of a property the converter always fills: the new version's
    own schema for it (so that only `const` differs) when the value fits it;
    None where the new version does not describe the property."""
    node: Any = target_root
    for token in tokens:
        properties = node.get("properties", {}) if isinstance(node, dict) else {}
        node = _inline(dict(target_root), properties.get(token)) if token in properties else None
        if node is None:
            return None
    kept = {k: v for k, v in node.items() if k != "default"}
    if _valid(value, kept, target_root):
        return {**kept, "const": value}
    return {"const": value}


def _valid(value: Any, schema: dict[str, Any], root: Mapping[str, Any]) -> bool:
    standalone = dict(schema)
    for container in ("$defs", "definitions"):
        if container in root and container not in standalone:
            standalone[container] = root[container]
    try:
        cls = validator_for(standalone, default=Draft202012Validator)
        return bool(cls(standalone).is_valid(value))
    except Exception:
        return False
