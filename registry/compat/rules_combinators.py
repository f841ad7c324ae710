"""Rules on `anyOf`, `oneOf` and `allOf`, and on `$ref` beside other keywords.

Branches are matched by shape first; a lone unmatched old branch and a lone
unmatched new branch of the same type are compared in depth (so a property
added inside the object branch of a union is reported as such); the rest are
`branch-removed` / `branch-added`.
"""

from __future__ import annotations

from registry.compat.kinds import Kind
from registry.compat.schema import Node
from registry.compat.shape import shape
from registry.compat.walk import Finding, Leaf, Route, Step, Walk, deref

__all__ = ["RULES"]


def _union(node: Node) -> tuple[str, tuple[Node, ...]] | None:
    if node.any_of is not None:
        return "anyOf", node.any_of
    if node.one_of is not None:
        return "oneOf", node.one_of
    return None


def _bare(node: Node) -> str:
    """The shape of a node with its own union keywords left out."""
    return shape(node, without_union=True)


def union_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`branch-removed`, `branch-added` for `anyOf` / `oneOf`.

    Example: `{"anyOf": [{"type": "string"}, {"type": "null"}]}` ->
    `{"anyOf": [{"type": "string"}]}` is branch-removed (null was valid).
    A plain schema becoming a union that keeps it as a branch is
    branch-added; `anyOf` turning into `oneOf`, or a `oneOf` branch added that
    overlaps another's types, is unanalyzable (old values may now match twice).
    """
    old_union, new_union = _union(old), _union(new)
    if old_union is None and new_union is None:
        return
    if old_union is None:
        assert new_union is not None
        keyword, branches = new_union
        if _bare(old) == _bare(new):
            # The same schema with a union added beside it: one more conjunct.
            walk.emit(
                Finding(
                    Kind.CONSTRAINT_TIGHTENED,
                    f"{pointer}/{keyword}",
                    keyword,
                    None,
                    [b.raw for b in branches],
                    route,
                    Leaf("sample"),
                )
            )
            return
        kept = [b for b in branches if walk.fits(old, b)]
        if kept and (keyword == "anyOf" or _disjoint(branches)):
            for branch in branches:
                if branch not in kept:
                    walk.emit(
                        Finding(
                            Kind.BRANCH_ADDED, f"{pointer}/{keyword}", keyword, None, branch.raw
                        )
                    )
            return
        walk.emit(
            Finding(
                Kind.UNANALYZABLE,
                f"{pointer}/{keyword}",
                keyword,
                None,
                [b.raw for b in branches],
                route,
                Leaf("sample"),
            )
        )
        return
    if new_union is None:
        keyword, branches = old_union
        if _bare(new) == _bare(old):
            walk.emit(
                Finding(
                    Kind.CONSTRAINT_RELAXED,
                    f"{pointer}/{keyword}",
                    keyword,
                    [b.raw for b in branches],
                    None,
                )
            )
            return
        for i, branch in enumerate(branches):
            if not walk.fits(branch, new):
                walk.emit(
                    Finding(
                        Kind.BRANCH_REMOVED,
                        f"{pointer}/{keyword}",
                        keyword,
                        branch.raw,
                        None,
                        (*route, Step("branch", i, branch)),
                        Leaf("sample"),
                    )
                )
        return
    (old_keyword, old_branches), (new_keyword, new_branches) = old_union, new_union
    if old_keyword != new_keyword:
        walk.emit(
            Finding(
                Kind.UNANALYZABLE,
                f"{pointer}/{new_keyword}",
                new_keyword,
                old_keyword,
                new_keyword,
                route,
                Leaf("sample"),
            )
        )
        return
    at = f"{pointer}/{new_keyword}"
    new_shapes = [shape(deref(b)) for b in new_branches]
    unmatched_new = list(range(len(new_branches)))
    unmatched_old: list[int] = []
    for i, branch in enumerate(old_branches):
        old_shape = shape(deref(branch))
        match = next((j for j in unmatched_new if new_shapes[j] == old_shape), None)
        if match is None:
            unmatched_old.append(i)
        else:
            unmatched_new.remove(match)
            walk.compare(
                branch,
                new_branches[match],
                new_branches[match].pointer,
                (*route, Step("branch", i, branch)),
            )
    for i in list(unmatched_old):
        candidates = [
            j for j in unmatched_new if deref(new_branches[j]).types == deref(old_branches[i]).types
        ]
        rivals = [
            k for k in unmatched_old if deref(old_branches[k]).types == deref(old_branches[i]).types
        ]
        if len(candidates) == 1 and rivals == [i]:
            j = candidates[0]
            unmatched_old.remove(i)
            unmatched_new.remove(j)
            walk.compare(
                old_branches[i],
                new_branches[j],
                new_branches[j].pointer,
                (*route, Step("branch", i, old_branches[i])),
            )
    for i in unmatched_old:
        walk.emit(
            Finding(
                Kind.BRANCH_REMOVED,
                at,
                new_keyword,
                old_branches[i].raw,
                None,
                (*route, Step("branch", i, old_branches[i])),
                Leaf("sample"),
            )
        )
    if new_keyword == "oneOf" and unmatched_new and not _disjoint(new_branches):
        walk.emit(
            Finding(
                Kind.UNANALYZABLE,
                at,
                new_keyword,
                None,
                [new_branches[j].raw for j in unmatched_new],
                route,
                Leaf("sample"),
            )
        )
        return
    for j in unmatched_new:
        walk.emit(Finding(Kind.BRANCH_ADDED, at, new_keyword, None, new_branches[j].raw))


def _disjoint(branches: tuple[Node, ...]) -> bool:
    """True when no two branches admit a common JSON type (oneOf stays exclusive)."""
    seen: set[str] = set()
    for branch in branches:
        types = deref(branch).types
        if types is None:
            return False
        widened = set(types) | ({"integer"} if "number" in types else set())
        if "integer" in types:
            widened.add("number")
        if seen & widened:
            return False
        seen |= widened
    return True


def all_of_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`allOf` branches are compared position by position; a different number
    of branches is unanalyzable. Example: `{"allOf": [A]}` -> `{"allOf": [A']}`
    reports the changes of A -> A' at `/allOf/0/...`."""
    if old.all_of is None and new.all_of is None:
        return
    old_all, new_all = old.all_of or (), new.all_of or ()
    if len(old_all) != len(new_all):
        walk.emit(
            Finding(
                Kind.UNANALYZABLE,
                f"{pointer}/allOf",
                "allOf",
                [b.raw for b in old_all] or None,
                [b.raw for b in new_all] or None,
                route,
                Leaf("sample"),
            )
        )
        return
    for i, (a, b) in enumerate(zip(old_all, new_all, strict=True)):
        walk.compare(a, b, f"{pointer}/allOf/{i}", route)


def ref_with_siblings(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """A `$ref` beside other keywords applies both; the referenced schemas are
    compared in depth. A `$ref` on one side only is unanalyzable there."""
    if old.ref is None and new.ref is None:
        return
    if old.ref is not None and new.ref is not None:
        walk.compare(old.ref, new.ref, new.ref.pointer, route)
        return
    walk.emit(
        Finding(
            Kind.UNANALYZABLE,
            f"{pointer}/$ref",
            "$ref",
            old.raw.get("$ref") if old.ref else None,
            new.raw.get("$ref") if new.ref else None,
            route,
            Leaf("sample"),
        )
    )


RULES = (union_changed, all_of_changed, ref_with_siblings)
