"""Pairs old and new schema nodes once, so that each rule sees one (old, new) pair.

`Walk.compare` dereferences `$ref`s, remembers the (old, new) pairs it has
entered (recursive schemas end), and hands the pair to each rule family in
turn. Rules report `Finding`s: a kind, a JSON Pointer and the values; the
wording comes from `kinds.MESSAGES`, the severity from `kinds.SEVERITY`.

A `Route` is how an arguments object reaches the node (property names, array
positions, union branches); the witness builder follows it from the old root.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from registry.compat.kinds import Kind, Side
from registry.compat.schema import Node, encode

__all__ = ["Finding", "Leaf", "Route", "Step", "Walk", "deref"]


@dataclass(frozen=True, slots=True)
class Step:
    """One hop of an instance route: `prop` (name), `item` (index), `extra`
    (an unlisted property name), or `branch` (the old union branch to satisfy)."""

    via: str
    key: str | int = ""
    branch: Node | None = None


Route = tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Leaf:
    """What the witness holds at the end of its route.

    `sample`: any value valid under the old node; `value`: exactly `value`;
    `absent`: an object valid under the old node without property `name`;
    `with`: an object valid under the old node plus `name: value`.
    """

    how: str
    value: Any = None
    name: str = ""


@dataclass(slots=True)
class Finding:
    kind: Kind
    pointer: str
    name: str = ""
    old: Any = None
    new: Any = None
    route: Route | None = None
    leaf: Leaf | None = None
    suggested_op: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def deref(node: Node) -> Node:
    """Follow `$ref`s that carry nothing but the reference (and annotations)."""
    while node.ref is not None and node.is_ref_only():
        node = node.ref
    return node


Rule = Callable[["Walk", Node, Node, str, Route], None]


@dataclass(slots=True)
class Walk:
    side: Side
    rules: tuple[Rule, ...]
    findings: list[Finding] = field(default_factory=list)
    seen: set[tuple[int, int]] = field(default_factory=set)

    def emit(self, finding: Finding) -> None:
        self.findings.append(finding)

    def compare(self, old: Node, new: Node, pointer: str, route: Route) -> None:
        old_node, new_node = deref(old), deref(new)
        if old_node is not old and new_node is not new and old.raw["$ref"] == new.raw["$ref"]:
            pointer = new_node.pointer  # both sides point at the same definition
        key = (id(old_node), id(new_node))
        if key in self.seen:
            return
        self.seen.add(key)
        if old_node.raw is new_node.raw:
            if not old_node.has_ref_below:
                return
        else:
            # Equal subtrees without a `$ref` below are skipped unparsed.
            old_code = encode(old_node.raw)
            if (
                old_code is not None
                and b'"$ref"' not in old_code
                and old_code == encode(new_node.raw)
            ):
                return
        for rule in self.rules:
            rule(self, old_node, new_node, pointer, route)

    def fits(self, old: Node, new: Node) -> bool:
        """Whether every value valid under `old` is read the same under `new`
        (a separate walk over the pair finds nothing breaking on this side)."""
        from registry.compat.kinds import Severity, severity_of

        probe = Walk(side=self.side, rules=self.rules)
        probe.compare(old, new, new.pointer, ())
        return all(severity_of(f.kind, self.side) is not Severity.BREAKING for f in probe.findings)


def arguments_pointer(route: Route) -> str | None:
    """The JSON Pointer into the arguments object, when the route is all properties."""
    if any(step.via != "prop" for step in route):
        return None
    return "".join("/" + str(step.key).replace("~", "~0").replace("/", "~1") for step in route)
