"""Rules on object schemas: properties, `required`, defaults, renames and the
content model (`additionalProperties`, `unevaluatedProperties`).

The seed 000 point lives here: a property removed or renamed breaks callers
even when `additionalProperties` still lets them send it (the value is then
silently ignored), and a default added, changed or removed breaks them
because an absent value is now read differently.
"""

from __future__ import annotations

from typing import Any

from registry.compat.kinds import Kind
from registry.compat.schema import ANYTHING, Node
from registry.compat.shape import json_key, shape
from registry.compat.walk import Finding, Leaf, Route, Step, Walk, arguments_pointer, deref

__all__ = ["RULES"]


def _both_objects(old: Node, new: Node) -> bool:
    """Object keywords matter only where old and new both admit objects; a type
    change is reported by the type rule."""
    return old.admits("object") and new.admits("object")


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _renames(old: Node, new: Node) -> dict[str, str]:
    """Pair each removed property with the one added property of the same shape.

    Ambiguous pairs (several candidates on either side) are not renames.
    """
    old_names, new_names = old.properties.keys(), new.properties.keys()
    removed = [n for n in old_names if n not in new_names]
    added = [n for n in new_names if n not in old_names]
    if not removed or not added:
        return {}
    old_shapes = {name: shape(deref(old.properties[name])) for name in removed}
    new_shapes = {name: shape(deref(new.properties[name])) for name in added}
    pairs: dict[str, str] = {}
    for name, old_shape in old_shapes.items():
        candidates = [a for a, s in new_shapes.items() if s == old_shape]
        if len(candidates) != 1:
            continue
        rivals = [r for r, s in old_shapes.items() if s == new_shapes[candidates[0]]]
        if rivals == [name]:
            pairs[name] = candidates[0]
    return pairs


def object_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """Properties, then `required`, sharing one rename pairing."""
    if not _both_objects(old, new):
        return
    renames = _renames(old, new)
    properties_changed(walk, old, new, pointer, route, renames)
    required_changed(walk, old, new, pointer, route, renames)


def properties_changed(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route, renames: dict[str, str]
) -> None:
    """`property-removed`, `property-added`, `property-renamed`, then each
    common property compared in depth.

    Example: `{"timeout_ms": {"type": "integer"}}` -> `{"timeout": {"type":
    "integer"}}` is property-renamed with suggested op
    `{"op": "rename", "from": "/timeout_ms", "to": "/timeout"}`; removing
    `mode` alone is property-removed even under `additionalProperties: true`.
    """
    old_names, new_names = old.properties.keys(), new.properties.keys()
    removed = [n for n in old_names if n not in new_names]
    added = [n for n in new_names if n not in old_names]
    renamed_to = set(renames.values())
    for name in removed:
        at = f"{pointer}/properties/{_escape(name)}"
        target = arguments_pointer((*route, Step("prop", name)))
        if name in renames:
            new_name = renames[name]
            op = (
                {
                    "op": "rename",
                    "from": target,
                    "to": arguments_pointer((*route, Step("prop", new_name))),
                }
                if target
                else None
            )
            walk.emit(
                Finding(
                    Kind.PROPERTY_RENAMED,
                    at,
                    name,
                    name,
                    new_name,
                    (*route, Step("prop", name)),
                    Leaf("sample"),
                    op,
                    {"new_name": new_name},
                )
            )
            new_at = f"{pointer}/properties/{_escape(new_name)}"
            _default_changed(walk, old, new, name, new_name, new_at, route)
            walk.compare(
                old.properties[name], new.properties[new_name], new_at, (*route, Step("prop", name))
            )
            continue
        op = {"op": "drop", "path": target} if target else None
        walk.emit(
            Finding(
                Kind.PROPERTY_REMOVED,
                at,
                name,
                _raw(old.properties[name]),
                None,
                (*route, Step("prop", name)),
                Leaf("sample"),
                op,
            )
        )
    for name in added:
        if name in renamed_to:
            continue
        at = f"{pointer}/properties/{_escape(name)}"
        walk.emit(Finding(Kind.PROPERTY_ADDED, at, name, None, _raw(new.properties[name])))
        _default_changed(walk, old, new, None, name, at, route)
        unlisted = _unlisted_schema(old, name)
        if unlisted is not None:
            walk.compare(unlisted, new.properties[name], at, (*route, Step("prop", name)))
    # A property with the same schema on both sides (no `$ref`) has the same
    # default and nothing below it differs: only the others are compared.
    for name in walk.changed_properties(old, new):
        at = f"{pointer}/properties/{_escape(name)}"
        _default_changed(walk, old, new, name, name, at, route)
        walk.compare(old.properties[name], new.properties[name], at, (*route, Step("prop", name)))


def _unlisted_schema(old: Node, name: str) -> Node | None:
    """What old said of a property it did not list, where callers relied on it:
    the map schema (`additionalProperties` as a schema), or anything at all
    for a name old required. An optional name under an open content model was
    no contract: declaring it is additive (DESIGN.md)."""
    extra = old.additional_properties
    if extra is not None and extra.raw is not True:
        return None if extra.accepts_nothing else extra
    return ANYTHING if name in old.required else None


def _default_changed(
    walk: Walk,
    old: Node,
    new: Node,
    old_name: str | None,
    new_name: str,
    at: str,
    route: Route,
) -> None:
    """`default-added`, `default-changed`, `default-removed` on one property.

    Example: `{"limit": {"type": "integer"}}` -> `{"limit": {"type":
    "integer", "default": 20}}` is default-added: a caller that left `limit`
    out is now read as asking for 20. Suggested op: fill the value the old
    version read. A property old required is always sent: its default never
    applied to old callers, so nothing is reported.
    """
    if old_name is not None and old_name in old.required:
        return
    old_node = deref(old.properties[old_name]) if old_name is not None else None
    new_node = deref(new.properties[new_name])
    has_old = old_node is not None and old_node.has_default
    has_new = new_node.has_default
    old_value = old_node.default if old_node is not None and has_old else None
    new_value = new_node.default if has_new else None
    if has_old and has_new and json_key(old_value) == json_key(new_value):
        return
    if not has_old and not has_new:
        return
    if has_new and not has_old:
        kind, fill = Kind.DEFAULT_ADDED, new_value
    elif has_old and not has_new:
        kind, fill = Kind.DEFAULT_REMOVED, old_value
    else:
        kind, fill = Kind.DEFAULT_CHANGED, old_value
    target = arguments_pointer((*route, Step("prop", new_name)))
    op = {"op": "fill", "path": target, "value": fill} if target else None
    leaf = Leaf("absent", name=old_name or new_name)
    walk.emit(Finding(kind, f"{at}/default", new_name, old_value, new_value, route, leaf, op))


def required_changed(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route, renames: dict[str, str]
) -> None:
    """`required-added`, `required-removed`.

    Example: `{"required": ["query"]}` -> `{"required": ["query",
    "filters"]}` is required-added for `filters` (an old call without it is
    refused); suggested op: fill it with a value the new version accepts.
    """
    renamed_from = {new_name: old_name for old_name, new_name in renames.items()}
    for name in sorted(new.required - old.required):
        source = renamed_from.get(name)
        if source is not None and source in old.required:
            continue
        target = arguments_pointer((*route, Step("prop", name)))
        sample = _fill_value(new.properties.get(name))
        op = {"op": "fill", "path": target, "value": sample} if target else None
        walk.emit(
            Finding(
                Kind.REQUIRED_ADDED,
                f"{pointer}/required",
                name,
                None,
                name,
                route,
                Leaf("absent", name=source or name),
                op,
            )
        )
    for name in sorted(old.required - new.required):
        if name in renames and renames[name] in new.required:
            continue
        walk.emit(Finding(Kind.REQUIRED_REMOVED, f"{pointer}/required", name, name, None))


def _fill_value(node: Node | None) -> Any:
    from registry.compat.witness import instance_of

    if node is None:
        return None
    return instance_of(deref(node))


def content_model_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`content-model-closed`, `content-model-opened` for `additionalProperties`
    and `unevaluatedProperties`.

    Example: `additionalProperties` absent -> `false` closes the content model
    (an old call carrying an unlisted property is refused); a schema replacing
    `true` narrows it the same way; `false` -> absent opens it. Two schemas
    are compared in depth as the values of a map.
    """
    if (
        old.additional_properties is None
        and new.additional_properties is None
        and old.unevaluated_properties is None
        and new.unevaluated_properties is None
    ):
        return  # open on both sides
    if not _both_objects(old, new):
        return
    for keyword, attr in (
        ("additionalProperties", "additional_properties"),
        ("unevaluatedProperties", "unevaluated_properties"),
    ):
        old_child: Node | None = getattr(old, attr)
        new_child: Node | None = getattr(new, attr)
        old_open = old_child is None or old_child.raw is True
        new_open = new_child is None or new_child.raw is True
        if old_open and new_open:
            continue
        extra = _unlisted_name(old, new)
        at = f"{pointer}/{keyword}"
        old_shown = None if old_child is None else _raw(old_child)
        new_shown = None if new_child is None else _raw(new_child)
        if old_open:
            walk.emit(
                Finding(
                    Kind.CONTENT_MODEL_CLOSED,
                    at,
                    keyword,
                    old_shown,
                    new_shown,
                    route,
                    Leaf("with", _unlisted_value(new_child), extra),
                )
            )
        elif new_open:
            walk.emit(Finding(Kind.CONTENT_MODEL_OPENED, at, keyword, old_shown, new_shown))
        else:
            assert old_child is not None and new_child is not None
            walk.compare(old_child, new_child, at, (*route, Step("extra", extra)))


def _unlisted_name(old: Node, new: Node) -> str:
    name, n = "unlisted", 0
    while name in old.properties or name in new.properties:
        n += 1
        name = f"unlisted_{n}"
    return name


def _unlisted_value(schema: Node | None) -> Any:
    """A value the new map schema likely refuses (the false schema refuses all)."""
    if schema is None or schema.accepts_nothing:
        return "x"
    types = schema.types or frozenset()
    return 0 if "string" in types else "x"


def _raw(node: Node) -> Any:
    return node.raw


RULES = (object_changed, content_model_changed)
