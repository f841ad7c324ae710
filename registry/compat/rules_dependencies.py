"""Rules on what one property makes of the others, and on property names:
`dependentRequired` and `dependentSchemas` (draft-07's `dependencies` reads
as both), and `propertyNames`.
"""

from __future__ import annotations

from registry.compat.kinds import Kind
from registry.compat.schema import ANY_STRING, ANYTHING, Node
from registry.compat.walk import Finding, Leaf, Route, Step, Walk, deref
from registry.pointers import escape

__all__ = ["RULES"]


def _both_objects(old: Node, new: Node) -> bool:
    return old.admits("object") and new.admits("object")


def _never_sent(node: Node, name: str) -> bool:
    """Whether no valid object can carry property `name`."""
    schema = node.properties.get(name)
    if schema is not None:
        return deref(schema).unsatisfiable()
    extra = node.additional_properties
    return (
        extra is not None
        and extra.accepts_nothing
        and not node.pattern_properties
        and not node.has_applicators()
    )


def dependent_required_changed(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route
) -> None:
    """`constraint-tightened` / `constraint-relaxed` for `dependentRequired`:
    when `name` is present, the listed properties must be too. A property
    newly needed (unless old always required it, or `name` could never be
    sent) tightens; one no longer needed relaxes.
    Example: `{"dependentRequired": {"card": ["cvv"]}}` -> `{"dependentRequired":
    {"card": ["cvv", "expiry"]}}` is constraint-tightened (`{"card": 1, "cvv": 1}`
    was valid)."""
    if not old.dependent_required and not new.dependent_required:
        return
    if not _both_objects(old, new):
        return
    at = f"{pointer}/dependentRequired"
    relaxed = False
    for name in sorted(old.dependent_required.keys() | new.dependent_required.keys()):
        before = old.dependent_required.get(name, frozenset())
        after = new.dependent_required.get(name, frozenset())
        added = sorted(after - before - old.required - {name})
        relaxed = relaxed or bool(before - after)
        if not added or _never_sent(old, name):
            continue
        walk.emit(
            Finding(
                kind=Kind.CONSTRAINT_TIGHTENED,
                pointer=f"{at}/{escape(name)}",
                name="dependentRequired",
                old=sorted(before),
                new=sorted(after),
                route=route,
                leaf=Leaf("present", added[0], name),
            )
        )
    if relaxed:
        walk.emit(
            Finding(
                kind=Kind.CONSTRAINT_RELAXED,
                pointer=at,
                name="dependentRequired",
                old={k: sorted(v) for k, v in sorted(old.dependent_required.items())},
                new={k: sorted(v) for k, v in sorted(new.dependent_required.items())},
            )
        )


def dependent_schemas_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`dependentSchemas`: when `name` is present, the whole object must also
    meet the schema. Each name's schemas are compared in depth on an object
    carrying `name` (an added one against `true`); a schema gone is
    `constraint-relaxed`.
    Example: `{"dependentSchemas": {"card": {"required": ["cvv"]}}}` ->
    `{"dependentSchemas": {"card": {"required": ["cvv", "zip"]}}}` is
    required-added for `zip`."""
    if not old.dependent_schemas and not new.dependent_schemas:
        return
    if not _both_objects(old, new):
        return
    for name in sorted(old.dependent_schemas.keys() | new.dependent_schemas.keys()):
        before = old.dependent_schemas.get(name)
        after = new.dependent_schemas.get(name)
        at = f"{pointer}/dependentSchemas/{escape(name)}"
        if after is None:
            assert before is not None
            walk.emit(
                Finding(
                    kind=Kind.CONSTRAINT_RELAXED,
                    pointer=at,
                    name="dependentSchemas",
                    old=before.raw,
                )
            )
            continue
        if _never_sent(old, name) or (before is not None and not before.admits("object")):
            continue  # no valid object carried `name`
        walk.compare(before or ANYTHING, after, at, (*route, Step("present", name, before)))


def property_names_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`propertyNames`: every property name must meet the schema. The names old
    allowed are compared with the names new allows, as strings.
    Example: absent -> `{"propertyNames": {"pattern": "^[a-z]+$"}}` is
    constraint-tightened (a property named `A` was valid)."""
    before, after = old.property_names, new.property_names
    if before is None and after is None:
        return
    if not _both_objects(old, new):
        return
    walk.compare(
        before or ANY_STRING,
        after or ANY_STRING,
        f"{pointer}/propertyNames",
        (*route, Step("name", "", before or ANY_STRING)),
    )


RULES = (dependent_required_changed, dependent_schemas_changed, property_names_changed)
