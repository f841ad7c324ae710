"""Structural identity of a schema, ignoring annotations and `default`.

Two property schemas with the same shape accept the same values, which is what
rename detection and union-branch matching need. References are kept as the
pointer they name, so recursive schemas have a finite shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from registry.compat.jsonvalues import json_key

if TYPE_CHECKING:
    from registry.compat.schema import Node

__all__ = ["shape"]


def shape(node: Node, *, without_union: bool = False) -> str:
    """A canonical string of what `node` accepts (annotations and default removed);
    `without_union` leaves the node's own `anyOf`/`oneOf` out. Worked out once per node."""
    key = "bare shape" if without_union else "shape"
    found = node.memo.get(key)
    if found is None:
        found = node.memo[key] = json_key(_shape(node, set(), without_union))
    return found


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
    for name, children in (
        ("patternProperties", node.pattern_properties),
        ("dependentSchemas", node.dependent_schemas),
    ):
        if children:
            out[name] = {k: _shape(v, active) for k, v in sorted(children.items())}
    if node.dependent_required:
        out["dependentRequired"] = {
            k: sorted(v) for k, v in sorted(node.dependent_required.items())
        }
    for name, child in (
        ("additionalProperties", node.additional_properties),
        ("unevaluatedProperties", node.unevaluated_properties),
        ("propertyNames", node.property_names),
        ("items", node.rest_items),
        ("unevaluatedItems", node.unevaluated_items),
        ("contains", node.contains),
        ("not", node.not_),
    ):
        if child is not None:
            out[name] = _shape(child, active)
    if node.prefix_items:
        out["prefixItems"] = [_shape(c, active) for c in node.prefix_items]
    for name, branches in (("anyOf", node.any_of), ("oneOf", node.one_of), ("allOf", node.all_of)):
        if branches is not None and not (without_union and name != "allOf"):
            # branch order never changes what a union accepts; a repeated
            # branch changes nothing in anyOf and allOf (oneOf then refuses it)
            shapes = [json_key(_shape(c, active)) for c in branches]
            out[name] = sorted(shapes if name == "oneOf" else set(shapes))
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
