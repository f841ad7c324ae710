"""Rules on array schemas: `items`, `prefixItems` (and draft-07's array form
of `items` with `additionalItems`), compared position by position.
"""

from __future__ import annotations

from registry.compat.schema import ANYTHING, Node
from registry.compat.walk import Route, Step, Walk

__all__ = ["RULES"]


def items_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """Positions are paired: tuple position i with tuple position i, the rest
    with the rest, a position one side lists against the other's rest schema.

    Example: `{"items": {"type": "string"}}` -> `{"items": {"type":
    "integer"}}` reports type-narrowed at `/items/type`; the witness is an
    array holding a string.
    """
    if not (old.prefix_items or new.prefix_items or old.rest_items or new.rest_items):
        return
    if not (old.admits("array") and new.admits("array")):
        return
    positions = max(len(old.prefix_items), len(new.prefix_items))
    for i in range(positions):
        old_item = old.prefix_items[i] if i < len(old.prefix_items) else old.rest_items
        new_item = new.prefix_items[i] if i < len(new.prefix_items) else new.rest_items
        at = new_item.pointer if i < len(new.prefix_items) and new_item else f"{pointer}/items"
        walk.compare(old_item or ANYTHING, new_item or ANYTHING, at, (*route, Step("item", i)))
    if old.rest_items is not None or new.rest_items is not None:
        walk.compare(
            old.rest_items or ANYTHING,
            new.rest_items or ANYTHING,
            f"{pointer}/items",
            (*route, Step("item", positions)),
        )


RULES = (items_changed,)
