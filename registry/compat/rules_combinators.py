"""Rules on `anyOf`, `oneOf`, `allOf`, `not`, and on `$ref` beside other keywords.

Conjunctions are folded before the walk (`fold.py`): `A`, `allOf[A]` and
`oneOf[A]` arrive here as the same node. Union branches are matched as a set:
by shape first, then an old branch that some new branch accepts entirely, then
a lone unmatched old and new branch of the same type compared in depth (so a
property added inside the object branch of a union is reported as such); the
rest are `branch-removed` / `branch-added`. A branch that accepts nothing is
left out on both sides: it never accepted a value. `oneOf` whose branches
admit no common type is read as `anyOf`.
"""

from __future__ import annotations

from typing import Any

from registry.compat.kinds import Kind
from registry.compat.schema import Node
from registry.compat.shape import shape
from registry.compat.walk import ABSENT, Finding, Leaf, Route, Step, Walk, budget_finding, deref

__all__ = ["RULES"]


# A union keyword and its satisfiable branches with their positions.
_Union = tuple[str, list[tuple[int, Node]]]


def _union(node: Node) -> _Union | None:
    """The node's union keyword and its satisfiable branches with their positions."""
    for keyword, branches in (("anyOf", node.any_of), ("oneOf", node.one_of)):
        if branches is not None:
            return keyword, [(i, b) for i, b in enumerate(branches) if not deref(b).unsatisfiable()]
    return None


def _own(node: Node) -> bool:
    """Whether the node constrains values by keywords of its own beside its union."""
    return node.own_keywords()


def _exclusive(keyword: str, branches: list[tuple[int, Node]]) -> bool:
    """A `oneOf` whose branches may overlap: a value matching two is refused."""
    return keyword == "oneOf" and not _disjoint([b for _, b in branches])


def union_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`branch-removed`, `branch-added` for `anyOf` / `oneOf`; a union added or
    removed beside keywords of its own is a conjunct, `constraint-tightened`
    or `constraint-relaxed` (`_union_added`, `_union_removed`); a `oneOf`
    whose branches may overlap, changed, is `unanalyzable`, and so are two
    unions whose unmatched branches are more pairs than `max_branch_pairs`.

    Example: `{"anyOf": [{"type": "string"}, {"type": "null"}]}` ->
    `{"anyOf": [{"type": "string"}]}` is branch-removed (null was valid).
    A plain schema becoming a union that keeps it as a branch is
    branch-added; `oneOf[A]` -> `anyOf[A, B]` is branch-added too; a `oneOf`
    branch added that overlaps another's types is unanalyzable (old values
    may now match twice).
    """
    old_union, new_union = _union(old), _union(new)
    if old_union is None and new_union is None:
        return
    if old_union is None:
        assert new_union is not None
        _union_added(walk, old, new, pointer, route, new_union)
        return
    if new_union is None:
        _union_removed(walk, old, new, pointer, route, old_union)
        return
    (old_keyword, old_branches), (new_keyword, new_branches) = old_union, new_union
    at = f"{pointer}/{new_keyword}"
    new_exclusive = _exclusive(new_keyword, new_branches)
    if new_exclusive and not _exclusive(old_keyword, old_branches) and len(old_branches) > 1:
        # values that matched two old branches were valid; the new oneOf refuses them
        _unanalyzable(walk, at, new_keyword, old_keyword, new_keyword, route)
        return
    by_position = dict(new_branches)
    # a branch left as it was (equal JSON, no `$ref`) pairs up before any shape
    # is made, then branches of equal shape: each found by its key, not by a scan
    by_code: dict[bytes, list[int]] = {}
    for j, branch in new_branches:
        code = walk.plain_code(branch.raw)
        if code is not None:
            by_code.setdefault(code, []).append(j)
    matched: set[int] = set()
    unmatched_old: list[tuple[int, Node]] = []
    for i, branch in old_branches:
        code = walk.plain_code(branch.raw)
        equal = by_code.get(code) if code is not None else None
        if equal:
            matched.add(equal.pop(0))
        else:
            unmatched_old.append((i, branch))
    unmatched_new = [j for j, _ in new_branches if j not in matched]
    if (
        not new_exclusive
        and len(unmatched_old) == 1
        and len(unmatched_new) == 1
        and deref(unmatched_old[0][1]).effective_types()
        == deref(by_position[unmatched_new[0]]).effective_types()
    ):
        # one branch changed, keeping its types: each matching stage below
        # would pair these two and compare them in depth
        (i, branch), target = unmatched_old[0], by_position[unmatched_new[0]]
        walk.compare(branch, target, target.pointer, (*route, Step("branch", i, branch)))
        return
    by_shape: dict[str, list[int]] = {}
    for j in unmatched_new:
        by_shape.setdefault(shape(deref(by_position[j])), []).append(j)
    still_old: list[tuple[int, Node]] = []
    for i, branch in unmatched_old:
        alike = by_shape.get(shape(deref(branch)))
        if not alike:
            still_old.append((i, branch))
            continue
        match = alike.pop(0)
        matched.add(match)
        target = by_position[match]
        walk.compare(branch, target, target.pointer, (*route, Step("branch", i, branch)))
    unmatched_old = still_old
    unmatched_new = [j for j in unmatched_new if j not in matched]
    if len(unmatched_old) * len(new_branches) > walk.budget.max_pairs:
        # each branch left would be tried against every new one: past the budget
        walk.emit(budget_finding("max_branch_pairs", walk.budget.max_pairs, at, new_keyword))
        return
    if new_exclusive and (unmatched_old or unmatched_new):
        # a branch changed inside a oneOf whose branches overlap: a value may
        # now match two branches (or none) where it matched one
        _unanalyzable(walk, at, new_keyword, old_keyword, new_keyword, route)
        return
    for i, branch in list(unmatched_old):
        fitting = next((j for j in unmatched_new if walk.fits(branch, by_position[j])), None)
        if fitting is None:
            continue
        unmatched_old.remove((i, branch))
        unmatched_new.remove(fitting)
        target = by_position[fitting]
        walk.compare(branch, target, target.pointer, (*route, Step("branch", i, branch)))
    for i, branch in list(unmatched_old):
        types = deref(branch).effective_types()
        candidates = [j for j in unmatched_new if deref(by_position[j]).effective_types() == types]
        rivals = [k for k, b in unmatched_old if deref(b).effective_types() == types]
        if len(candidates) == 1 and rivals == [i]:
            j = candidates[0]
            unmatched_old.remove((i, branch))
            unmatched_new.remove(j)
            target = by_position[j]
            walk.compare(branch, target, target.pointer, (*route, Step("branch", i, branch)))
    for i, branch in unmatched_old:
        if any(walk.fits(branch, other, validity=True) for _, other in new_branches):
            continue  # every value it took, a branch still takes (merged into a wider one)
        walk.emit(
            Finding(
                kind=Kind.BRANCH_REMOVED,
                pointer=at,
                name=new_keyword,
                old=branch.raw,
                new=ABSENT,
                route=(*route, Step("branch", i, branch)),
                leaf=Leaf("sample"),
            )
        )
    if new_exclusive and unmatched_new:
        _unanalyzable(
            walk, at, new_keyword, ABSENT, [by_position[j].raw for j in unmatched_new], route
        )
        return
    for j in unmatched_new:
        walk.emit(
            Finding(kind=Kind.BRANCH_ADDED, pointer=at, name=new_keyword, new=by_position[j].raw)
        )


def _union_added(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route, union: _Union
) -> None:
    """A plain schema gained a union. Beside keywords of its own (or beside
    the same schema) the union is one more conjunct: harmless when one branch
    accepts every old value, else constraint-tightened. A bare union replaces
    the schema: the branches accepting every old value are kept and the others
    are branch-added (a lone one kept is compared with old in depth, so that
    what it adds shows: an object that became `anyOf` of itself with one more
    optional property and of another object is property-added inside its
    branch and branch-added, not a removal of every property); else the one
    branch sharing old's types is compared with it in depth (`{"type":
    "string"}` -> `{"anyOf": [{"type": "string", "minLength": 1}, {"type":
    "null"}]}` is constraint-tightened on `minLength`, witness `""`, and
    branch-added for null)."""
    keyword, branches = union
    nodes = [b for _, b in branches]
    exclusive = _exclusive(keyword, branches)
    at = f"{pointer}/{keyword}"
    if _own(new) or not _own(old):
        # (a value of an overlapping oneOf may match two branches: never proven harmless)
        if exclusive or not any(walk.fits(old, b, validity=True) for b in nodes):
            walk.emit(
                Finding(
                    kind=Kind.CONSTRAINT_TIGHTENED,
                    pointer=at,
                    name=keyword,
                    old=ABSENT,
                    new=[b.raw for b in nodes],
                    route=route,
                    leaf=Leaf("sample"),
                )
            )
        return
    if exclusive:
        # a value of an overlapping oneOf may match two branches: never proven harmless
        _unanalyzable(walk, at, keyword, ABSENT, [b.raw for b in nodes], route)
        return
    kept = [b for b in nodes if walk.fits(old, b)]
    if len(kept) == 1:
        walk.compare(old, kept[0], kept[0].pointer, route)
    if not kept:
        types = old.effective_types()
        sharing = [b for b in nodes if deref(b).effective_types() & types]
        if len(sharing) == 1:
            walk.compare(old, sharing[0], sharing[0].pointer, route)
            kept = sharing
    if kept:
        for branch in nodes:
            if branch not in kept:
                walk.emit(Finding(kind=Kind.BRANCH_ADDED, pointer=at, name=keyword, new=branch.raw))
        return
    _unanalyzable(walk, at, keyword, ABSENT, [b.raw for b in nodes], route)


def _union_removed(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route, union: _Union
) -> None:
    """A union went away. Beside keywords of its own it was a conjunct: its
    removal relaxes. A bare union became a plain schema: each old branch must
    fit it, or it is branch-removed (a lone branch that fits is compared with
    it in depth, so that what the plain schema relaxes shows)."""
    keyword, branches = union
    if _own(old) or not _own(new):
        walk.emit(
            Finding(
                kind=Kind.CONSTRAINT_RELAXED,
                pointer=f"{pointer}/{keyword}",
                name=keyword,
                old=[b.raw for _, b in branches],
            )
        )
        return
    fitting = [(i, b) for i, b in branches if walk.fits(b, new)]
    if len(fitting) == 1:
        i, branch = fitting[0]
        walk.compare(branch, new, branch.pointer, (*route, Step("branch", i, branch)))
    for i, branch in branches:
        if (i, branch) not in fitting:
            walk.emit(
                Finding(
                    kind=Kind.BRANCH_REMOVED,
                    pointer=f"{pointer}/{keyword}",
                    name=keyword,
                    old=branch.raw,
                    new=ABSENT,
                    route=(*route, Step("branch", i, branch)),
                    leaf=Leaf("sample"),
                )
            )


def _unanalyzable(walk: Walk, at: str, keyword: str, old: Any, new: Any, route: Route) -> None:
    walk.emit(
        Finding(
            kind=Kind.UNANALYZABLE,
            pointer=at,
            name=keyword,
            old=old,
            new=new,
            route=route,
            leaf=Leaf("sample"),
        )
    )


def _disjoint(branches: list[Node]) -> bool:
    """True when no two branches admit a common JSON type (oneOf stays exclusive)."""
    seen: set[str] = set()
    for branch in branches:
        types = deref(branch).effective_types()
        widened = set(types) | ({"integer"} if "number" in types else set())
        if "integer" in types:
            widened.add("number")
        if seen & widened:
            return False
        seen |= widened
    return True


def all_of_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`allOf` branches that folding could not merge, matched as a set: equal
    branches pair up; a branch gone is `constraint-relaxed`; a branch added is
    harmless when an old branch (or the old schema as a whole) already
    implies it, else its breaking differences from the old schema are
    reported. Example: `{"allOf": [{"type": "string"}, {"enum": ["red"]}]}`
    -> `{"allOf": [{"type": "string"}, {"enum": ["blue"]}]}` folds to
    `{"type": "string", "enum": [...]}` on each side: enum-narrowed."""
    if old.all_of is None and new.all_of is None:
        return
    at = f"{pointer}/allOf"
    old_left = [b for b in old.all_of or () if not deref(b).unsatisfiable()]
    new_left = list(new.all_of or ())
    new_shapes = [shape(deref(b)) for b in new_left]
    for branch in list(old_left):
        old_shape = shape(deref(branch))
        match = next((j for j, s in enumerate(new_shapes) if s == old_shape), None)
        if match is None:
            continue
        old_left.remove(branch)
        target = new_left.pop(match)
        new_shapes.pop(match)
        walk.compare(branch, target, target.pointer, route)
    for target in new_left:
        source = next((b for b in old_left if walk.fits(b, target, validity=True)), None)
        if source is not None:
            old_left.remove(source)
            walk.compare(source, target, target.pointer, route)
        elif len(old_left) == 1 and len(new_left) == 1:
            source = old_left.pop()
            walk.compare(source, target, target.pointer, route)
        else:
            for finding in walk.probe(old, target, route, validity=True):
                walk.emit(finding)
    for branch in old_left:
        walk.emit(Finding(kind=Kind.CONSTRAINT_RELAXED, pointer=at, name="allOf", old=branch.raw))


def not_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`constraint-tightened` / `constraint-relaxed` for `not`: what `not B`
    accepts grows as B shrinks, so the new `not` schema is compared against
    the old one with the sides swapped. A `not` added tightens unless no old
    value can meet it (disjoint types); one removed relaxes. Example: `{"not":
    {"type": "number"}}` -> `{"not": {"type": "integer"}}` relaxes; the
    reverse is constraint-tightened with witness 1.5."""
    before, after = old.not_, new.not_
    if before is None and after is None:
        return
    at = f"{pointer}/not"
    if after is None:
        assert before is not None
        walk.emit(Finding(kind=Kind.CONSTRAINT_RELAXED, pointer=at, name="not", old=before.raw))
        return
    if before is None:
        if _types_meet(old, after):
            leaf = Leaf("value", _instance(after))
            walk.emit(
                Finding(
                    kind=Kind.CONSTRAINT_TIGHTENED,
                    pointer=at,
                    name="not",
                    old=ABSENT,
                    new=after.raw,
                    route=route,
                    leaf=leaf,
                )
            )
        return
    refused = walk.probe(after, before, validity=True)
    if not refused:
        if shape(deref(before)) != shape(deref(after)):
            walk.emit(
                Finding(
                    kind=Kind.CONSTRAINT_RELAXED,
                    pointer=at,
                    name="not",
                    old=before.raw,
                    new=after.raw,
                )
            )
        return
    from registry.compat.instances import build

    first = refused[0]
    value = build(after, first.route or (), first.leaf) if first.leaf else _instance(after)
    walk.emit(
        Finding(
            kind=Kind.CONSTRAINT_TIGHTENED,
            pointer=at,
            name="not",
            old=before.raw,
            new=after.raw,
            route=route,
            leaf=Leaf("value", value),
        )
    )


def _types_meet(old: Node, refused: Node) -> bool:
    """Whether a value of a type `old` admits may meet `refused`."""
    return any(old.admits(t) for t in deref(refused).effective_types())


def _instance(node: Node) -> Any:
    from registry.compat.instances import instance_of

    return instance_of(node)


def ref_with_siblings(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """A `$ref` beside other keywords applies both (folded where it can be);
    the referenced schemas are compared in depth. A `$ref` on one side only is
    `unanalyzable` there. Example: under draft-07, `{"$ref": "#/definitions/s",
    "minLength": 1}` -> `{"type": "string", "minLength": 1}` (draft-07
    validators ignore what sits beside a `$ref`)."""
    if old.ref is None and new.ref is None:
        return
    if old.ref is not None and new.ref is not None:
        walk.compare(old.ref, new.ref, new.ref.pointer, route)
        return
    walk.emit(
        Finding(
            kind=Kind.UNANALYZABLE,
            pointer=f"{pointer}/$ref",
            name="$ref",
            old=old.raw.get("$ref") if old.ref else ABSENT,
            new=new.raw.get("$ref") if new.ref else ABSENT,
            route=route,
            leaf=Leaf("sample"),
        )
    )


RULES = (union_changed, all_of_changed, not_changed, ref_with_siblings)
