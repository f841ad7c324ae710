"""Pairs old and new schema nodes once, so that each rule sees one (old, new) pair.

`Walk.compare` dereferences `$ref`s, remembers the (old, new) pairs it has
entered (recursive schemas end), and hands the pair to each rule family in
turn. Rules report `Finding`s: a kind, a JSON Pointer and the values; the
wording comes from `kinds.MESSAGES`, the severity from `kinds.SEVERITY`.

A `Route` is how an arguments object reaches the node (property names, array
positions, union branches); the witness builder follows it from the old root.

Work is bounded (`Limits`): every pair compared, by the walk or by one of its
probes, spends a step of one `Budget` per side, and comparisons nest no deeper
than `max_walk_depth`. When either runs out, the walk stops and the side's
report ends with one `unanalyzable` at the node where it ran out, naming the
bound: the same input gives the same report on any machine. A probe that is
already running for the same pair (a recursive schema comparing itself through
a union) answers as the walk's `seen` does: nothing found, assumed to hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from registry.compat.kinds import READ_DIFFERENTLY, Kind, Severity, Side, severity_of
from registry.compat.schema import Node, Properties, encode
from registry.pointers import join

__all__ = [
    "ABSENT",
    "Budget",
    "Finding",
    "Leaf",
    "OutOfBudget",
    "Route",
    "Step",
    "Walk",
    "budget_finding",
    "deref",
]


class _Absent:
    """The value of a keyword or field that is not there (JSON `null` is `None`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


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


class Finding(msgspec.Struct, kw_only=True):
    """`old` and `new` are the values before and after, `ABSENT` where there is none
    (`None` is JSON's null). `refused`: a property removed or renamed whose old
    value the new version refuses outright (its content model is closed to the
    name), rather than keeping it unread; `holder`: the pointer of the new
    object schema that no longer declares it (where its witness is checked)."""

    kind: Kind
    pointer: str
    name: str = ""
    old: Any = ABSENT
    new: Any = ABSENT
    route: Route | None = None
    leaf: Leaf | None = None
    suggested_op: dict[str, Any] | None = None
    extra: dict[str, Any] | None = None  # `new_name` of a rename; `bound` of a budget run out
    refused: bool = False
    holder: str | None = None


def deref(node: Node) -> Node:
    """Follow `$ref`s that carry nothing but the reference (and annotations)."""
    while node.ref is not None and node.ref_only:
        node = node.ref
    return node


Rule = Callable[["Walk", Node, Node, str, Route], None]


class OutOfBudget(Exception):
    """The work budget of a side ran out (`Budget.spent` says which bound, where)."""


@dataclass(slots=True)
class Budget:
    """The work one side of a classification may do, shared by its walk and probes.

    `steps`: pairs still to compare (`Limits.max_steps`); `max_depth`: how deep
    comparisons may nest (`Limits.max_walk_depth`). `spent` names the bound that
    ran out and `where` the pointer of the node being compared then. `fitted`
    remembers what `Walk.fits` found; `active` is the stack of probes running,
    and `tainted` the lowest position in it that a probe assumed to hold
    (a result resting on such an assumption is not remembered)."""

    steps: int
    max_depth: int
    max_pairs: int = 1 << 62  # union branches tried against each other (`max_branch_pairs`)
    depth: int = 0
    spent: str | None = None
    where: str = ""
    fitted: dict[tuple[int, int, bool], bool] = field(default_factory=dict)
    active: list[tuple[int, int, bool, bool]] = field(default_factory=list)
    tainted: int = 1 << 30

    def run_out(self, bound: str, pointer: str) -> OutOfBudget:
        if self.spent is None:
            self.spent, self.where = bound, pointer
        return OutOfBudget()


def budget_finding(bound: str, value: int | None, pointer: str, name: str) -> Finding:
    """`unanalyzable` where a bound of `Limits` ran out (`value` None: where the
    comparison could not finish for another reason, Python's recursion
    limit). Example: two `anyOf`s of 1,000 object branches, every branch
    changed, try more branch pairs than `max_branch_pairs`: `unanalyzable` at
    `/inputSchema/properties/v/anyOf`."""
    if value is None:
        message = f"the engine could not finish the comparison here ({bound})"
    else:
        message = f"the engine's work budget ran out here ({bound} = {value:,}, Limits)"
    return Finding(kind=Kind.UNANALYZABLE, pointer=pointer, name=name, extra={"bound": message})


def unlimited() -> Budget:
    """A budget that never runs out (a walk made outside `classify`, in tests)."""
    return Budget(steps=1 << 62, max_depth=1 << 30)


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
    # The rules for a plain schema against a bare union (`Node.bare_union`): the
    # union rule alone pairs it with the branches (and the documentation rules).
    union_rules: tuple[Rule, ...] = ()
    # The rules for a pair whose old node accepted no value (`Node.unsatisfiable`).
    empty_rules: tuple[Rule, ...] = ()
    # The rule for `$ref` holders that carry annotations (or the root's `$schema`)
    # beside the reference (`rules_docs.holders_changed`): given the holders, it
    # compares what each position carries, and may mark the targets' own as
    # compared already (`covered`: their ids, old and new).
    holder_rule: Rule | None = None
    covered: tuple[int, int] = (0, 0)
    budget: Budget = field(default_factory=unlimited)

    def emit(self, finding: Finding) -> None:
        self.findings.append(finding)
        if self.decide and self.counts(finding):
            raise _Decided

    def counts(self, finding: Finding) -> bool:
        """Whether a probe of this walk's kind reports `finding`."""
        return severity_of(finding.kind, self.side) is Severity.BREAKING and not (
            self.validity and finding.kind in READ_DIFFERENTLY and not finding.refused
        )

    def compare(self, old: Node, new: Node, pointer: str, route: Route) -> None:
        old_node, new_node = deref(old), deref(new)
        if old_node is not old or new_node is not new:
            if self.holder_rule is not None and (
                _annotated(old, old_node) or _annotated(new, new_node)
            ):
                holders = (id(old), id(new))
                if holders not in self.seen:
                    self.seen.add(holders)
                    self.holder_rule(self, old, new, pointer, route)
            if old_node is not old and new_node is not new and old.raw["$ref"] == new.raw["$ref"]:
                pointer = new_node.pointer  # both sides point at the same definition
        key = (id(old_node), id(new_node))
        if key in self.seen:
            return
        self.seen.add(key)
        if self.same(old_node.raw, new_node.raw):
            return  # equal subtrees without a `$ref` below are skipped unparsed
        budget = self.budget
        budget.steps -= 1
        if budget.steps < 0 or budget.spent is not None:
            raise budget.run_out("max_steps", new_node.pointer)
        if budget.depth >= budget.max_depth:
            raise budget.run_out("max_walk_depth", new_node.pointer)
        if old_node.unsatisfiable():
            # no value was valid here: nothing old callers sent can break
            for rule in self.empty_rules:
                rule(self, old_node, new_node, pointer, route)
            return
        rules = self.rules
        old_raw, new_raw = old_node.raw, new_node.raw
        if self.union_rules and _holds_union(old_raw) != _holds_union(new_raw):
            union_side, plain = (
                (old_node, new_node) if _holds_union(old_raw) else (new_node, old_node)
            )
            if type(plain.raw) is dict and union_side.bare_union():
                rules = self.union_rules
        budget.depth += 1
        try:
            for rule in rules:
                rule(self, old_node, new_node, pointer, route)
        finally:
            budget.depth -= 1

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

    def plain_code(self, raw: Any) -> bytes | None:
        """The JSON of a raw schema when it holds no `$ref` (equal codes: `same`), else None."""
        code = self._code(raw)
        return code if code is not None and self._plain(code) else None

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
        `decide`, the first of them only. A probe of a pair already being probed
        (a recursive schema) finds nothing; one that runs out of budget stops
        the whole walk (`OutOfBudget`: the side's report says where)."""
        key = (id(deref(old)), id(deref(new)), validity, decide)
        return self._probe(old, new, route, key, validity=validity, decide=decide)

    def _probe(
        self,
        old: Node,
        new: Node,
        route: Route,
        key: tuple[int, int, bool, bool],
        *,
        validity: bool,
        decide: bool,
    ) -> list[Finding]:
        budget = self.budget
        for position, running in enumerate(budget.active):
            if running == key:
                budget.tainted = min(budget.tainted, position)
                return []
        probe = Walk(
            side=self.side,
            rules=self.rules,
            codes=self.codes,
            unsafe=self.unsafe,
            validity=validity,
            decide=decide,
            union_rules=self.union_rules,
            empty_rules=self.empty_rules,
            holder_rule=self.holder_rule,
            budget=budget,
        )
        budget.active.append(key)
        try:
            probe.compare(old, new, new.pointer, route)
        except _Decided:
            pass
        finally:
            budget.active.pop()
        return [f for f in probe.findings if probe.counts(f)]

    def fits(self, old: Node, new: Node, *, validity: bool = False) -> bool:
        """Whether every value valid under `old` is read the same under `new`
        (or, with `validity`, is valid under `new`). Remembered per pair, unless
        the answer rests on a probe still running further up."""
        budget = self.budget
        pair = (id(deref(old)), id(deref(new)))
        key = (*pair, validity)
        known = budget.fitted.get(key)
        if known is not None:
            return known
        depth = len(budget.active)
        found = self._probe(old, new, (), (*pair, validity, True), validity=validity, decide=True)
        if budget.tainted >= depth:
            budget.tainted = 1 << 30  # assumptions made inside this probe were its own
            budget.fitted[key] = not found
        elif found:
            budget.fitted[key] = False  # more assumptions can only find more
        return not found


def _annotated(holder: Node, target: Node) -> bool:
    """Whether a `$ref` holder on the way from `holder` to `target` carries
    annotations or a `$schema` beside its reference."""
    node: Node | None = holder
    while node is not None and node is not target:
        if node.annotations or node.schema_uri is not None:
            return True
        node = node.ref
    return False


def _holds_union(raw: Any) -> bool:
    return type(raw) is dict and ("anyOf" in raw or "oneOf" in raw)


class _Decided(Exception):
    """A deciding probe found what it counts: the rest of its walk is moot."""


def arguments_pointer(route: Route) -> str | None:
    """The JSON Pointer into the arguments object, when the route is all properties."""
    if any(step.via != "prop" for step in route):
        return None
    return join(step.key for step in route)
