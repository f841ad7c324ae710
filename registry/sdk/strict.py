"""Strict validation of version-less calls: every open object schema closed.

    strict_schema(schema)   # a copy: objects with additionalProperties absent or true closed

Seed 000's v4 said `additionalProperties: true`, and that is how `timeout_ms`
slipped through: a call that declares no version is judged by the strict form
of current (and, to name the contract it speaks, by the strict forms of the
older versions; see `CompiledTool.infer` in registry/sdk/_compiled.py).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["strict_schema"]

_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("then", "else")
_UNEVALUATED_DIALECTS = (
    "https://json-schema.org/draft/2020-12/",
    "https://json-schema.org/draft/2019-09/",
)


def strict_schema(schema: Any, *, close_true: bool = True) -> Any:
    """A copy of `schema` in which every object schema whose
    `additionalProperties` is absent or true is closed; an object whose
    `additionalProperties` is a schema is a map and keeps its keys.

    `close_true=False` keeps an explicit `additionalProperties: true` open (a
    framework's handler schema: pydantic lists `dict[str, Any]` so, and takes
    any key there) and closes only the objects that leave it out.

    An object schema composed with `allOf`/`anyOf`/`oneOf`/`then`/`else`
    (properties spread over branches) is closed once with
    `unevaluatedProperties: false` where the dialect has it, so that the
    branches' properties still count. `not` and `if` are left alone: closing
    inside them would make the schema more lenient, or change the branch taken.
    """
    result = copy.deepcopy(schema)
    dialect = result.get("$schema", "") if isinstance(result, dict) else ""
    unevaluated = not dialect or str(dialect).startswith(_UNEVALUATED_DIALECTS)
    _close(result, unevaluated, in_place=False, close_true=close_true)
    return result


def _objectish(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind is not None:
        return kind == "object" or (isinstance(kind, list) and "object" in kind)
    return any(k in node for k in ("properties", "patternProperties", "additionalProperties"))


def _branches(node: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for key in _IN_PLACE_LISTS:
        if isinstance(node.get(key), list):
            found.extend(node[key])
    found.extend(node[key] for key in _IN_PLACE_ONE if key in node)
    return found


def _has_object_branch(node: dict[str, Any]) -> bool:
    return any(
        isinstance(b, dict) and (_objectish(b) or _has_object_branch(b)) for b in _branches(node)
    )


def _close(node: Any, unevaluated: bool, *, in_place: bool, close_true: bool) -> None:
    if not isinstance(node, dict):
        return
    composed = unevaluated and _has_object_branch(node)
    additional = node.get("additionalProperties", True)
    if not close_true and node.get("additionalProperties") is True:
        pass  # open on purpose: left as it is
    elif in_place or composed:
        # closed by the enclosing unevaluatedProperties: an explicit `true`
        # would mark every property evaluated and open it again
        if additional is True:
            node.pop("additionalProperties", None)
        if composed and not in_place and node.get("unevaluatedProperties", True) is True:
            node["unevaluatedProperties"] = False
    elif _objectish(node) and additional is True:
        node["additionalProperties"] = False
    for branch in _branches(node):
        _close(branch, unevaluated, in_place=composed or in_place, close_true=close_true)
    for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        children = node.get(key)
        if isinstance(children, dict):
            for child in children.values():
                _close(
                    child,
                    unevaluated,
                    in_place=key == "dependentSchemas" and composed,
                    close_true=close_true,
                )
    for key in ("items", "additionalItems", "unevaluatedItems"):
        child = node.get(key)
        if isinstance(child, list):
            for item in child:
                _close(item, unevaluated, in_place=False, close_true=close_true)
        else:
            _close(child, unevaluated, in_place=False, close_true=close_true)
    if isinstance(node.get("prefixItems"), list):
        for item in node["prefixItems"]:
            _close(item, unevaluated, in_place=False, close_true=close_true)
    if isinstance(node.get("additionalProperties"), dict):
        _close(node["additionalProperties"], unevaluated, in_place=False, close_true=close_true)
