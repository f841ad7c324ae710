"""Structural identity of a schema, ignoring annotations and `default`.

Two property schemas with the same shape accept the same values, which is what
rename detection and union-branch matching need. References are kept as the
pointer they name, so recursive schemas have a finite shape.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from registry.compat.schema import Node

__all__ = ["json_equal", "json_key", "same_shape", "shape"]


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values encode the same (keys sorted). Python's `1 == True`
    does not hold here; `1` and `1.0` count as different, which only costs a
    caller that uses this as a shortcut a closer look."""
    if a is b:
        return True
    try:
        return _ENCODER.encode(a) == _ENCODER.encode(b)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return False


_ENCODER = msgspec.json.Encoder(order="sorted")


def json_key(value: Any) -> str:
    """A hashable key with JSON equality (`1 == 1.0`, but `1 != true`)."""

    def normal(v: Any) -> Any:
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, int | float):
            return float(v) if float(v) != int(v) or abs(v) > 2**53 else int(v)
        if isinstance(v, dict):
            return {k: normal(x) for k, x in v.items()}
        if isinstance(v, list):
            return [normal(x) for x in v]
        return v

    return json.dumps(normal(value), sort_keys=True, separators=(",", ":"))


def shape(node: Node, *, without_union: bool = False) -> str:
    """A canonical string of what `node` accepts (annotations and default removed);
    `without_union` leaves the node's own `anyOf`/`oneOf` out."""
    return json_key(_shape(node, set(), without_union))


def same_shape(a: Node, b: Node) -> bool:
    return shape(a) == shape(b)


def _shape(node: Node, active: set[int], without_union: bool = False) -> Any:
    if isinstance(node.raw, bool):
        return node.raw
    if node.ref is not None and node.is_ref_only():
        return {"$ref": node.ref.pointer}
    if id(node) in active:
        return {"$cycle": node.pointer}
    active = active | {id(node)}
    out: dict[str, Any] = {}
    if node.ref is not None:
        out["$ref"] = node.ref.pointer
    if node.types is not None:
        out["type"] = sorted(node.types)
    if node.enum is not None:
        out["enum"] = sorted(json_key(v) for v in node.enum)
    if node.has_const:
        out["const"] = json_key(node.const)
    if node.properties:
        out["properties"] = {k: _shape(v, active) for k, v in sorted(node.properties.items())}
    if node.required:
        out["required"] = sorted(node.required)
    for name, child in (
        ("additionalProperties", node.additional_properties),
        ("unevaluatedProperties", node.unevaluated_properties),
        ("items", node.rest_items),
    ):
        if child is not None:
            out[name] = _shape(child, active)
    if node.prefix_items:
        out["prefixItems"] = [_shape(c, active) for c in node.prefix_items]
    for name, branches in (("anyOf", node.any_of), ("oneOf", node.one_of), ("allOf", node.all_of)):
        if branches is not None and not (without_union and name != "allOf"):
            out[name] = [_shape(c, active) for c in branches]
    if node.bounds:
        out["bounds"] = dict(sorted(node.bounds.items()))
    if node.pattern is not None:
        out["pattern"] = node.pattern
    if node.format is not None:
        out["format"] = node.format
    if node.unique_items:
        out["uniqueItems"] = True
    if node.opaque:
        out["opaque"] = node.opaque
    return out
