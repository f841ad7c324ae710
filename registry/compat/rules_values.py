"""Rules on what values a node admits: `type`, `enum`, `const`.

Each rule is one function over an (old, new) pair of nodes.
"""

from __future__ import annotations

from typing import Any

from registry.compat.jsonvalues import json_key, json_missing
from registry.compat.kinds import Kind
from registry.compat.schema import Node
from registry.compat.walk import ABSENT, Finding, Leaf, Route, Walk, arguments_pointer

__all__ = ["EMPTY_RULES", "RULES", "enum_widened", "nothing_was_valid"]


_STRING = frozenset({"string"})


def _covered(type_name: str, types: frozenset[str]) -> bool:
    return type_name in types or (type_name == "integer" and "number" in types)


def type_narrowed_or_widened(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`type-narrowed` / `type-widened`.

    Example: `{"type": "number"}` -> `{"type": "integer"}` is type-narrowed
    (1.5 was valid); `{"type": "string"}` -> `{"type": ["string", "null"]}`
    is type-widened. The `false` schema accepts nothing: reaching it narrows
    (leaving it is `nothing_was_valid`'s).
    """
    if new.accepts_nothing and not old.accepts_nothing:
        walk.emit(
            Finding(
                kind=Kind.TYPE_NARROWED,
                pointer=pointer,
                name="type",
                old=True,
                new=False,
                route=route,
                leaf=Leaf("sample"),
            )
        )
        return
    if old.types is not None and old.types == new.types:
        return  # the same `type` keyword: the same types either way
    old_types = old.effective_types()
    new_types = new.effective_types()
    if route and route[-1].via == "name":
        # the schemas of property names: only strings ever meet them
        old_types, new_types = old_types & _STRING, new_types & _STRING
    lost = sorted(t for t in old_types if not _covered(t, new_types))
    if "number" in old_types and "number" not in new_types and "integer" in new_types:
        lost.append("number")
    gained = sorted(t for t in new_types if not _covered(t, old_types))
    old_shown = sorted(old.types) if old.types is not None else ABSENT
    new_shown = sorted(new.types) if new.types is not None else ABSENT
    if lost:
        walk.emit(
            Finding(
                kind=Kind.TYPE_NARROWED,
                pointer=f"{pointer}/type",
                name="type",
                old=old_shown,
                new=new_shown,
                route=route,
                leaf=Leaf("typed", lost[0]),
            )
        )
    if gained:
        walk.emit(
            Finding(
                kind=Kind.TYPE_WIDENED,
                pointer=f"{pointer}/type",
                name="type",
                old=old_shown,
                new=new_shown,
            )
        )


def nothing_was_valid(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`type-widened` where the old node accepted no value at all (`false`, no
    type left, an empty `enum`, a `const` outside its `type`): nothing old
    callers sent can break, and whatever the new node accepts is new. The walk
    runs this rule alone on such a pair. Example: `{"properties": {"a":
    false}}` -> `{"properties": {"a": {"type": "string"}}}` is type-widened at
    `/properties/a`."""
    if not new.unsatisfiable():
        walk.emit(
            Finding(kind=Kind.TYPE_WIDENED, pointer=pointer, name="type", old=False, new=new.raw)
        )


def enum_or_const_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`enum-narrowed`, `enum-widened`, `const-changed`.

    Example: `{"enum": ["read", "write"]}` -> `{"enum": ["read"]}` is
    enum-narrowed (old `write` is refused), suggested op: reject `write`.
    `{"const": "a"}` -> `{"const": "b"}` is const-changed; a const removed
    widens (enum-widened), an enum added where there was none narrows.
    """
    old_values = old.allowed_values()
    new_values = new.allowed_values()
    if old_values is None and new_values is None:
        return
    keyword = "const" if new.has_const or (new_values is None and old.has_const) else "enum"
    at = f"{pointer}/{keyword}"
    if old_values is None:
        assert new_values is not None
        kind = Kind.CONST_CHANGED if new.has_const else Kind.ENUM_NARROWED
        from registry.compat.instances import instance_of

        sample = instance_of(old)
        if json_key(sample) in {json_key(v) for v in new_values}:
            sample = _value_outside(old, new_values)
        walk.emit(
            Finding(
                kind=kind,
                pointer=at,
                name=keyword,
                old=ABSENT,
                new=list(new_values),
                route=route,
                leaf=Leaf("value", sample),
            )
        )
        return
    if new_values is None:
        walk.emit(enum_widened(at, keyword, list(old_values)))
        return
    lost = json_missing(old_values, new_values)
    gained = json_missing(new_values, old_values)
    if lost:
        if old.has_const and new.has_const:
            walk.emit(
                Finding(
                    kind=Kind.CONST_CHANGED,
                    pointer=at,
                    name=keyword,
                    old=old.const,
                    new=new.const,
                    route=route,
                    leaf=Leaf("value", old.const),
                )
            )
            return
        target = arguments_pointer(route)
        op = (
            {
                "op": "reject",
                "path": target,
                "values": lost,
                "message": f"{', '.join(map(str, lost))} is no longer accepted",
            }
            if target
            else None
        )
        walk.emit(
            Finding(
                kind=Kind.ENUM_NARROWED,
                pointer=at,
                name=keyword,
                old=lost,
                new=list(new_values),
                route=route,
                leaf=Leaf("value", lost[0]),
                suggested_op=op,
            )
        )
    if gained:
        walk.emit(enum_widened(at, keyword, list(old_values), gained))


def enum_widened(at: str, keyword: str, before: list[Any], gained: Any = ABSENT) -> Finding:
    """`enum-widened`: values an `enum` (or `const`) gained, or all of them
    where it went (`gained` absent). Example: `{"enum": ["r"]}` -> `{"enum":
    ["r", "w"]}` is enum-widened, `["r"] -> ["w"]`."""
    return Finding(kind=Kind.ENUM_WIDENED, pointer=at, name=keyword, old=before, new=gained)


def _value_outside(old: Node, allowed: tuple[Any, ...]) -> Any:
    keys = {json_key(v) for v in allowed}
    candidates: list[Any] = []
    samples: dict[str, list[Any]] = {
        "string": ["x", "other", ""],
        "integer": [0, 1, -1, 7],
        "number": [0.5, 0, 1],
        "boolean": [True, False],
        "null": [None],
        "object": [{}],
        "array": [[]],
    }
    for t in sorted(old.types or {"string", "integer", "boolean", "null"}):
        candidates += samples[t]
    for c in candidates:
        if json_key(c) not in keys:
            return c
    return None


RULES = (type_narrowed_or_widened, enum_or_const_changed)
# What the walk runs on a pair whose old node accepted nothing.
EMPTY_RULES = (nothing_was_valid,)
