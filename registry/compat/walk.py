"""Pairs old and new schema nodes once, so that each rule sees one (old, new) pair.

`Walk.compare` dereferences `$ref`s, remembers the (old, new) pairs it has
entered (recursive schemas end), and hands the pair to each rule family in
turn. Rules report `Finding`s: a kind, a JSON Pointer and the values; the
wording comes from `kinds.MESSAGES`, the severity from `kinds.SEVERITY`.

A `Route` is how an arguments object reaches the node (property names, array
positions, union branches); the witness builder follows it from the old root.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from registry.compat.kinds import READ_DIFFERENTLY, Kind, Severity, Side, severity_of
from registry.compat.schema import Node, Properties, encode

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
    extra: dict[str, Any] | None = None  # `new_name` of a rename


def deref(node: Node) -> Node:
    """Follow `$ref`s that carry nothing but the reference (and annotations)."""
    while node.ref is not None and node.ref_only:
        node = node.ref
    return node


Rule = Callable[["Walk", Node, Node, str, Route], None]


@dataclass(slots=True)
class Walk:
    side: Side
    rules: tuple[Rule, ...]
    findings: list[Finding] = field(default_factory=list)
    seen: set[tuple[int, int]] = field(default_factory=set)
    # id(raw) -> its JSON encoding, keys sorted, so that a raw subtree is encoded
    # once per walk (the documents outlive the walk, so no id is reused meanwhile)
    codes: dict[int, bytes | None] = field(default_factory=dict)
    # Equal JSON is the same schema unless it holds one of these: a `$ref` (the
    # targets may differ), or, across two dialects, a keyword they read apart.
    unsafe: tuple[bytes, ...] = (b'"$ref"',)
    # A probe's walk: `validity` counts only findings about which values are
    # valid (rules may skip the others); `decide` stops at the first one counted.
    validity: bool = False
    decide: bool = False

    def emit(self, finding: Finding) -> None:
        self.findings.append(finding)
        if self.decide and self.counts(finding):
            raise _Decided

    def counts(self, finding: Finding) -> bool:
        """Whether a probe of this walk's kind reports `finding`."""
        return severity_of(finding.kind, self.side) is Severity.BREAKING and not (
            self.validity and finding.kind in READ_DIFFERENTLY
        )

    def compare(self, old: Node, new: Node, pointer: str, route: Route) -> None:
        old_node, new_node = deref(old), deref(new)
        if old_node is not old and new_node is not new and old.raw["$ref"] == new.raw["$ref"]:
            pointer = new_node.pointer  # both sides point at the same definition
        key = (id(old_node), id(new_node))
        if key in self.seen:
            return
        self.seen.add(key)
        if self.same(old_node.raw, new_node.raw):
            return  # equal subtrees without a `$ref` below are skipped unparsed
        if old_node.unsatisfiable():
            # no value was valid here: nothing old callers sent can break
            if not new_node.unsatisfiable():
                self.emit(Finding(Kind.TYPE_WIDENED, pointer, "type", False, new_node.raw))
            return
        for rule in self.rules:
            rule(self, old_node, new_node, pointer, route)

    def same(self, old: Any, new: Any) -> bool:
        """Whether two raw schemas are the same JSON with no `$ref` in it: no
        rule can find anything below them."""
        old_code = self._code(old)
        if old_code is None or not self._plain(old_code):
            return False
        return old is new or old_code == self._code(new)

    def _plain(self, code: bytes) -> bool:
        for marker in self.unsafe:  # noqa: SIM110 (a loop: `all` over a generator costs more here)
            if marker in code:
                return False
        return True

    def changed_properties(self, old: Node, new: Node) -> list[str]:
        """The properties both nodes list whose schemas are not `same`, in old's
        order; read from the raw JSON, so an unchanged property's nodes are never made."""
        old_props, new_props = old.properties, new.properties
        if not (isinstance(old_props, Properties) and isinstance(new_props, Properties)):
            return [name for name in old_props if name in new_props]
        schemas, others = old_props.schemas, new_props.schemas
        common = [name for name in schemas if name in others]
        # Schemas unequal in Python are unequal as JSON: changed, no encoding
        # needed. Those Python finds equal (most of them) are confirmed by one
        # encoding of all of them per side (array items delimit themselves),
        # else one at a time.
        try:
            unequal = {name for name in common if schemas[name] != others[name]}
        except RecursionError:  # nested past Python's limit: one at a time
            unequal = set()
        equal = [name for name in common if name not in unequal]
        if equal:
            everything = encode([schemas[name] for name in equal])
            if not (
                everything is not None
                and self._plain(everything)
                and everything == encode([others[name] for name in equal])
            ):
                unequal.update(self._not_same(equal, schemas, others))
        return [name for name in common if name in unequal]

    def _not_same(
        self, names: list[str], schemas: dict[str, Any], others: dict[str, Any]
    ) -> list[str]:
        """Of `names`, those whose two schemas are not `same`, encoded one at a time."""
        codes = self.codes
        changed = []
        for name in names:
            schema, other = schemas[name], others[name]
            old_code = encode(schema)
            if old_code is not None and self._plain(old_code):
                if schema is other:
                    continue
                new_code = encode(other)
                if old_code == new_code:
                    continue
                # kept for `compare`, which looks at this pair next
                codes[id(schema)], codes[id(other)] = old_code, new_code
            changed.append(name)
        return changed

    def _code(self, raw: Any) -> bytes | None:
        codes, key = self.codes, id(raw)
        if key in codes:
            return codes[key]
        code = codes[key] = encode(raw)
        return code

    def probe(
        self,
        old: Node,
        new: Node,
        route: Route = (),
        *,
        validity: bool = False,
        decide: bool = False,
    ) -> list[Finding]:
        """The breaking findings of a separate walk over (old, new) on this side,
        at `route`. With `validity`, only those about which values are valid
        (a value dropped or read with another default is not counted); with
        `decide`, the first of them only."""
        probe = Walk(
            side=self.side,
            rules=self.rules,
            codes=self.codes,
            unsafe=self.unsafe,
            validity=validity,
            decide=decide,
        )
        with contextlib.suppress(_Decided):
            probe.compare(old, new, new.pointer, route)
        return [f for f in probe.findings if probe.counts(f)]

    def fits(self, old: Node, new: Node, *, validity: bool = False) -> bool:
        """Whether every value valid under `old` is read the same under `new`
        (or, with `validity`, is valid under `new`)."""
        return not self.probe(old, new, validity=validity, decide=True)


class _Decided(Exception):
    """A deciding probe found what it counts: the rest of its walk is moot."""


def arguments_pointer(route: Route) -> str | None:
    """The JSON Pointer into the arguments object, when the route is all properties."""
    if any(step.via != "prop" for step in route):
        return None
    return "".join("/" + str(step.key).replace("~", "~0").replace("/", "~1") for step in route)
