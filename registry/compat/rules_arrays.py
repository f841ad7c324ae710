"""Rules on array schemas: `items`, `prefixItems` (and the array form of
`items` with `additionalItems`), `unevaluatedItems`, compared position by
position, and `contains` with `minContains` / `maxContains`.
"""

from __future__ import annotations

from registry.compat.bounds import BOUNDS
from registry.compat.kinds import Kind
from registry.compat.schema import ANYTHING, Node
from registry.compat.walk import ABSENT, Finding, Leaf, Route, Step, Walk

__all__ = ["RULES", "rest_of"]

# Keywords of a subschema that evaluate array items (what `unevaluatedItems` waits for).
_EVALUATES_ITEMS = frozenset(
    {"items", "prefixItems", "additionalItems", "unevaluatedItems", "contains", "$ref"}
)


def rest_of(node: Node) -> Node | None:
    """The schema of items past the prefix: `items` (or `additionalItems`), else
    `unevaluatedItems` read the same way where nothing beside it evaluates items."""
    if node.rest_items is not None or node.unevaluated_items is None:
        return node.rest_items
    if node.contains is not None or _items_evaluated_elsewhere(node):
        return None
    return node.unevaluated_items


def _items_evaluated_elsewhere(node: Node) -> bool:
    branches = [*(node.all_of or ()), *(node.any_of or ()), *(node.one_of or ())]
    if node.ref is not None and not node.ref_only:
        return True
    return any(
        isinstance(b.raw, dict) and (b.raw.keys() & _EVALUATES_ITEMS or b.has_applicators())
        for b in branches
    )


def _dynamic(node: Node) -> bool:
    """`unevaluatedItems` whose reach depends on the instance (beside `contains`
    or subschemas that evaluate items)."""
    return (
        node.rest_items is None
        and node.unevaluated_items is not None
        and node.unevaluated_items.raw is not True
        and (node.contains is not None or _items_evaluated_elsewhere(node))
    )


def items_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """Positions are paired: tuple position i with tuple position i, the rest
    with the rest, a position one side lists against the other's rest schema.
    `unevaluatedItems` counts as the rest where nothing beside it evaluates
    items; beside `contains` or subschemas that do, a change of it is
    `unanalyzable` (which items it reaches depends on the instance).

    Example: `{"items": {"type": "string"}}` -> `{"items": {"type":
    "integer"}}` reports type-narrowed at `/items/type`; the witness is an
    array holding a string. Removing a `prefixItems` entry under
    `"unevaluatedItems": {"type": "string"}` narrows that position to strings.
    """
    old_rest, new_rest = rest_of(old), rest_of(new)
    if not (
        old.prefix_items
        or new.prefix_items
        or old_rest
        or new_rest
        or old.unevaluated_items
        or new.unevaluated_items
    ):
        return
    if not (old.admits("array") and new.admits("array")):
        return
    if _dynamic(old) or _dynamic(new):
        if (old.unevaluated_items and old.unevaluated_items.raw) != (
            new.unevaluated_items and new.unevaluated_items.raw
        ):
            walk.emit(
                Finding(
                    kind=Kind.UNANALYZABLE,
                    pointer=f"{pointer}/unevaluatedItems",
                    name="unevaluatedItems",
                    old=old.unevaluated_items.raw if old.unevaluated_items else ABSENT,
                    new=new.unevaluated_items.raw if new.unevaluated_items else ABSENT,
                    route=route,
                    leaf=Leaf("sample"),
                )
            )
        return
    rest_keyword = "items" if new.rest_items is not None or new_rest is None else "unevaluatedItems"
    positions = max(len(old.prefix_items), len(new.prefix_items))
    for i in range(positions):
        old_item = old.prefix_items[i] if i < len(old.prefix_items) else old_rest
        new_item = new.prefix_items[i] if i < len(new.prefix_items) else new_rest
        at = (
            new_item.pointer
            if i < len(new.prefix_items) and new_item
            else f"{pointer}/{rest_keyword}"
        )
        walk.compare(old_item or ANYTHING, new_item or ANYTHING, at, (*route, Step("item", i)))
    if old_rest is not None or new_rest is not None:
        walk.compare(
            old_rest or ANYTHING,
            new_rest or ANYTHING,
            f"{pointer}/{rest_keyword}",
            (*route, Step("item", positions)),
        )


# `minContains` / `maxContains`: how many items must match `contains`
_COUNTS = tuple(bound for bound in BOUNDS if bound.measures == "contains")


def contains_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`constraint-tightened` / `constraint-relaxed` for `contains` with
    `minContains` / `maxContains` (`bounds.BOUNDS`): an array must hold between
    min (1) and max matching items. A `contains` added, a narrower one, a
    larger `minContains` or a smaller `maxContains` tighten; the reverse
    relaxes; a wider `contains` under a `maxContains` may count more items and
    tightens. Example: absent -> `{"contains": {"const": "admin"}}` is
    constraint-tightened (`[]` was valid)."""
    before, after = old.contains, new.contains
    if before is None and after is None:
        return
    if not (old.admits("array") and new.admits("array")):
        return
    at = f"{pointer}/contains"
    if after is None:
        assert before is not None
        walk.emit(
            Finding(kind=Kind.CONSTRAINT_RELAXED, pointer=at, name="contains", old=before.raw)
        )
        return
    if before is None:
        if new.bounds.get("minContains", 1) != 0 or "maxContains" in new.bounds:
            walk.emit(
                Finding(
                    kind=Kind.CONSTRAINT_TIGHTENED,
                    pointer=at,
                    name="contains",
                    old=ABSENT,
                    new=after.raw,
                    route=route,
                    leaf=Leaf("value", []),
                )
            )
        return
    narrower = not walk.fits(before, after, validity=True)
    wider = "maxContains" in new.bounds and not walk.fits(after, before, validity=True)
    if narrower or wider:
        walk.emit(
            Finding(
                kind=Kind.CONSTRAINT_TIGHTENED,
                pointer=at,
                name="contains",
                old=before.raw,
                new=after.raw,
                route=route,
                leaf=Leaf("sample"),
            )
        )
    for bound in _COUNTS:
        keyword = bound.keyword
        was = old.bounds.get(keyword, bound.absent)
        now = new.bounds.get(keyword, bound.absent)
        if was == now:
            continue
        old_bound = ABSENT if was is None else was
        new_bound = ABSENT if now is None else now
        at = f"{pointer}/{keyword}"
        if bound.tightens(was, now):
            walk.emit(
                Finding(
                    kind=Kind.CONSTRAINT_TIGHTENED,
                    pointer=at,
                    name=keyword,
                    old=old_bound,
                    new=new_bound,
                    route=route,
                    leaf=Leaf("sample"),
                )
            )
        else:
            walk.emit(
                Finding(
                    kind=Kind.CONSTRAINT_RELAXED,
                    pointer=at,
                    name=keyword,
                    old=old_bound,
                    new=new_bound,
                )
            )


RULES = (items_changed, contains_changed)
