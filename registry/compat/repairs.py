"""Repairs: the converter the engine suggests for a breaking change, and the proof.

    ops = suggested_converter(c.suggested_op for c in report.breaking if c.suggested_op)
    verify(ops, v3_definition, v4_definition)  # -> ChangeReport; breaking = refused
    repair(report, v3_definition, v4_definition)  # -> Repair(ops, unrepairable)

`verify` applies the operations to A's input schema (a renamed property moves,
a filled one becomes always present with the filled value allowed, a dropped
one disappears, mapped and rejected enum values leave) and classifies the
result against B. A converter is sound when nothing breaking remains.
`repair` offers the suggested converter only where `verify` proves it, and
names what it leaves: the changes no operation repairs.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import msgspec
from jsonschema.validators import Draft202012Validator, validator_for

from registry.compat import converters as operations
from registry.compat.classifier import classify_schemas
from registry.compat.converters import ConverterError, Op, as_ops, describe, parse_pointer
from registry.compat.jsonvalues import json_key
from registry.compat.kinds import Kind, Side
from registry.compat.report import ChangeReport
from registry.pointers import join, unescape

__all__ = ["Repair", "Unrepairable", "repair", "suggested_converter", "verify"]


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
    for index, op in enumerate(as_ops(ops)):
        try:
            _transform(old_schema, new_schema, op)
        except (_Missing, _Taken) as error:
            raise ConverterError(
                f"ops[{index}] ({describe(op)}): {history.explain(error)}"
            ) from None
        except ConverterError as exc:
            raise ConverterError(f"ops[{index}] ({describe(op)}): {exc}") from None
        history.record(index, op)
    return classify_schemas(old_schema, new_schema, Side.INPUT)


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
        if isinstance(op, operations.Rename):
            self.gone[op.from_] = self.made[op.to] = (index, op)
        elif isinstance(op, operations.Fill):
            self.made.setdefault(op.path, (index, op))
        elif isinstance(op, operations.Drop):
            self.gone[op.path] = (index, op)

    def explain(self, error: _Missing | _Taken) -> str:
        """`error`'s pointer and why, naming the earlier operation that made it so."""
        if isinstance(error, _Missing):
            found = self.gone.get(error.pointer)
            earlier = "is no longer there: {op} already moved or dropped it"
            otherwise = "is not a property of the old version"
        else:
            found = self.made.get(error.pointer)
            earlier = "already exists: {op} made it; put the rename before it"
            otherwise = "is already a property of the old version; drop or rename it first"
        if found is None:
            return f"{error.pointer} {otherwise}"
        index, op = found
        return f"{error.pointer} " + earlier.format(op=f"ops[{index}] ({describe(op)})")


def _transform(schema: dict[str, Any], target: dict[str, Any], op: Op) -> None:
    if isinstance(op, operations.Rename):
        source_tokens, to_tokens = (
            parse_pointer(op.from_),
            parse_pointer(op.to),
        )
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
    elif isinstance(op, operations.Fill):
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
    elif isinstance(op, operations.Drop):
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


def _rewrite_values(prop: dict[str, Any], op: operations.Map | operations.Reject) -> None:
    def rewrite(values: list[Any]) -> list[Any]:
        if isinstance(op, operations.Map):
            out: list[Any] = []
            for value in values:
                mapped = operations.map_values(value, op.values)
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


# ---------------------------------------------------------------- repairing


class Unrepairable(msgspec.Struct, frozen=True, kw_only=True):
    """A breaking change the suggested converter leaves, in the words of the
    report that proves it (`kind`, `path`, `message`). `fill`: the argument a
    `fill` with a value the publisher chooses would repair (a property now
    required that nothing gives a value to: the engine makes up none); None
    where no operation repairs the change (a tightened constraint, a narrowed
    type, anything callers read back)."""

    kind: Kind
    path: str
    message: str
    fill: str | None = None


class Repair(msgspec.Struct, frozen=True, kw_only=True):
    """What the engine offers for the breaking changes from one version to
    another: `ops`, a converter `verify` proves (empty when it would leave
    anything breaking), and `unrepairable`, what the suggested operations leave."""

    ops: list[dict[str, Any]]
    unrepairable: list[Unrepairable]


def repair(
    report: ChangeReport,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    accepted: Collection[tuple[str, str]] = (),
) -> Repair:
    """The converter suggested for `report`'s breaking changes from definition
    `old` to `new` (those whose `(kind, path)` is `accepted` left aside), as
    the publish verifies it: its operations are applied to `old`'s input
    schema and classified against `new`'s. What stays breaking is unrepairable
    by them, and so is every breaking change outside the input schema (no
    converter of arguments repairs what a caller reads back, or the tool's
    annotations); the operations are offered only when nothing is left.

    Example: `{"s": {"type": "string"}}` -> `{"s": {"type": "string",
    "maxLength": 3}}` has no operation: `constraint-tightened` at
    `/inputSchema/properties/s/maxLength` is unrepairable (retire the old
    version, or accept the change).
    """
    breaking = [c for c in report.breaking if (c.kind.value, c.path) not in accepted]
    left = [_unrepairable(c.kind, c.path, c.message) for c in breaking if not _input(c.path)]
    inputs = [c for c in breaking if _input(c.path)]
    ops = suggested_converter(c.suggested_op for c in inputs if c.suggested_op)
    if inputs:
        try:
            verified = verify(ops, old, new)
        except ConverterError:  # (suggestions that do not apply prove nothing)
            left += [_unrepairable(c.kind, c.path, c.message, c.new) for c in inputs]
        else:
            left += [
                _unrepairable(c.kind, c.path, c.message, c.new)
                for c in verified.breaking
                if (c.kind.value, c.path) not in accepted
            ]
    return Repair(ops=[] if left else ops, unrepairable=left)


def _input(path: str) -> bool:
    return path == "/inputSchema" or path.startswith("/inputSchema/")


def _unrepairable(kind: Kind, path: str, message: str, name: Any = None) -> Unrepairable:
    fill = None
    if kind is Kind.REQUIRED_ADDED and isinstance(name, str):
        fill = _argument(path, name)
    return Unrepairable(kind=kind, path=path, message=message, fill=fill)


def _argument(required_at: str, name: str) -> str | None:
    """The arguments pointer of property `name` of the object whose `required`
    is at `required_at` (`/inputSchema/properties/a/required` -> `/a/<name>`),
    where that object is reached through properties alone."""
    tokens = required_at.split("/")[2:-1]  # between `inputSchema` and `required`
    if len(tokens) % 2 or any(token != "properties" for token in tokens[::2]):
        return None
    return join([*(unescape(t) for t in tokens[1::2]), name])
