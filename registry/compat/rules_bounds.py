"""Rules on constraint keywords: the min/max family from one table, then
`multipleOf`, `pattern`, `format` and `uniqueItems`.

Every finding is `constraint-tightened` or `constraint-relaxed` named after
its keyword, so a grep for the keyword lands here.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from registry.compat.bounds import BOUNDS, BY_KEYWORD, NUMERIC, Bound
from registry.compat.jsonvalues import is_number, json_key
from registry.compat.kinds import Kind
from registry.compat.schema import Node
from registry.compat.walk import ABSENT, Finding, Leaf, Route, Walk
from registry.patterns import PatternError, search

__all__ = ["RULES"]

# The JSON type each constraint keyword applies to: a keyword only matters where
# both versions admit that type (a type change is the type rule's finding).
APPLIES_TO: dict[str, str] = {
    **{bound.keyword: bound.applies_to for bound in BOUNDS if bound.measures != "contains"},
    "pattern": "string",
    "format": "string",
    "uniqueItems": "array",
}


def _applies(keyword: str, old: Node, new: Node) -> bool:
    if not (old.admits(APPLIES_TO[keyword]) and new.admits(APPLIES_TO[keyword])):
        return False
    values = old.allowed_values()
    # An old enum/const is a finite list: when each value keeps the new
    # constraint, nothing old-valid is refused.
    return values is None or not all(_holds(keyword, new, v) for v in values)


def _holds(keyword: str, new: Node, value: Any) -> bool:
    """Whether `value` meets `new`'s `keyword` (a value of another type does)."""
    bound = BY_KEYWORD.get(keyword)
    if bound is not None:
        return bound.holds(new.bounds.get(keyword), value)
    if keyword == "pattern":
        return not isinstance(value, str) or new.pattern is None or _search(new.pattern, value)
    if keyword == "uniqueItems":
        return not isinstance(value, list) or len({json_key(v) for v in value}) == len(value)
    return not isinstance(value, str)  # a `format`: not proven to hold


def _search(pattern: str, value: str) -> bool:
    """RE2 (linear time): `default` and `enum` values come from the publisher."""
    try:
        return search(pattern, value)
    except PatternError:
        return False


# The bounds this rule compares one keyword at a time (`contains` counts are
# `rules_arrays`'s, `multipleOf` has its own rule).
_BY_VALUE = tuple(b for b in BOUNDS if b.direction != "multiple" and b.measures != "contains")


def bound_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`constraint-tightened` / `constraint-relaxed` for the min/max family
    (`bounds.BOUNDS`).

    Example: `{"maxLength": 10}` -> `{"maxLength": 5}` is tightened (a
    10-character string was valid; it is the witness); `{"minimum": 1}` ->
    absent is relaxed. A bound that appears tightens, one that goes relaxes.
    """
    if not old.bounds and not new.bounds:
        return
    settled = _swapped_bounds(walk, old, new, pointer, route)
    for bound in _BY_VALUE:
        keyword = bound.keyword
        before = old.bounds.get(keyword)
        after = new.bounds.get(keyword)
        if before == after or keyword in settled or not _applies(keyword, old, new):
            continue
        at = f"{pointer}/{keyword}"
        if bound.tightens(before, after):
            witness = _bound_witness(old, bound, before, after)
            leaf = (
                Leaf("value", witness)
                if witness is not _NONE
                else Leaf("size", (keyword, before, after))
            )
            walk.emit(_tightened(at, keyword, _shown(before), after, route, leaf))
        else:
            walk.emit(_relaxed(at, keyword, _shown(before), _shown(after)))


def _tightened(at: str, keyword: str, before: Any, after: Any, route: Route, leaf: Leaf) -> Finding:
    return Finding(
        kind=Kind.CONSTRAINT_TIGHTENED,
        pointer=at,
        name=keyword,
        old=before,
        new=after,
        route=route,
        leaf=leaf,
    )


def _relaxed(at: str, keyword: str, before: Any, after: Any = ABSENT) -> Finding:
    return Finding(kind=Kind.CONSTRAINT_RELAXED, pointer=at, name=keyword, old=before, new=after)


def _shown(bound: Any) -> Any:
    """A bound as a finding carries it: `ABSENT` where the keyword is not there."""
    return ABSENT if bound is None else bound


_NONE: Any = object()

# The numeric bounds written two ways: (inclusive keyword, exclusive keyword, side).
_PAIRS = tuple((b.exclusive_of, b.keyword, b.direction) for b in BOUNDS if b.exclusive_of)
# side -> the inclusive numeric bound of that side (`minimum`, `maximum`)
_INCLUSIVE = {b.direction: b.keyword for b in NUMERIC if not b.exclusive_of}


def _swapped_bounds(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> set[str]:
    """`constraint-tightened` / `constraint-relaxed` (or nothing) where a bound moved
    from one spelling to the other (`exclusiveMinimum` -> `minimum`), judged by the
    values it lets through; the keywords it settled, which the table leaves alone.

    Example: `{"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum":
    1000000}` -> `{"type": "integer", "minimum": 1, "maximum": 999999}` (pydantic's
    `gt`/`lt` become `ge`/`le`) lets the same integers through: no change. For
    numbers, `exclusiveMinimum: 0` -> `minimum: 1` is constraint-tightened (0.5 was valid).
    """
    settled: set[str] = set()
    if not old.admits("number") or not new.admits("number"):
        return settled
    integers = "number" not in old.effective_types()
    for inclusive, exclusive, side in _PAIRS:
        was = [k for k in (inclusive, exclusive) if k in old.bounds]
        now = [k for k in (inclusive, exclusive) if k in new.bounds]
        if not was or not now or was == now:
            continue  # a bound that appears, goes or keeps its spelling: the table's
        settled.update((inclusive, exclusive))
        values = old.allowed_values()
        if values is not None and all(_holds(k, new, v) for k in now for v in values):
            continue  # every value old allowed keeps the new bound
        before = _effective(old, inclusive, exclusive, side, integers)
        after = _effective(new, inclusive, exclusive, side, integers)
        if before == after:
            continue
        keyword = now[-1] if len(now) == 1 else exclusive
        at = f"{pointer}/{keyword}"
        shown = {k: old.bounds[k] for k in was}
        if (after > before) if side == "lower" else (after < before):
            value = _between(before, after, integers=integers)
            leaf = Leaf("value", value)
            walk.emit(_tightened(at, keyword, shown, new.bounds[keyword], route, leaf))
        else:
            walk.emit(_relaxed(at, keyword, shown, new.bounds[keyword]))
    return settled


def _effective(
    node: Node, inclusive: str, exclusive: str, side: str, integers: bool
) -> tuple[Fraction, int]:
    """A node's bound on one side as (value, 0 inclusive / 1 exclusive), ordered so
    that a larger lower bound (or a smaller upper one) lets fewer values through;
    over the integers, an exclusive bound is the next integer inclusive."""
    lower = side == "lower"
    found: list[tuple[Fraction, int]] = []
    for keyword, excluded in ((inclusive, 0), (exclusive, 1)):
        if keyword not in node.bounds:
            continue
        value = Fraction(str(node.bounds[keyword]))
        strict = excluded
        if integers:
            if lower:
                value = Fraction(math.floor(value) + 1 if excluded else math.ceil(value))
            else:
                value = Fraction(math.ceil(value) - 1 if excluded else math.floor(value))
            strict = 0
        # as a key: the exclusive lower bound is above its value, the exclusive upper below
        found.append((value, strict if lower else -strict))
    return max(found) if lower else min(found)


def _between(
    before: tuple[Fraction, int], after: tuple[Fraction, int], *, integers: bool
) -> int | float:
    """A value the old bound lets through and the tighter new one does not: the old
    bound itself where it was inclusive (or over the integers), else halfway."""
    value, strict = before
    result = value if integers or strict == 0 else (value + after[0]) / 2
    return int(result) if result.denominator == 1 else float(result)


def _bound_witness(old: Node, bound: Bound, before: Any, after: Any) -> Any:
    """A value at the old edge that the new bound refuses (a multiple of the
    old `multipleOf`, moved away from the new bound, or from an old one up to it)."""
    lower = bound.direction == "lower"
    if bound.applies_to == "number":
        integer = old.types is not None and "number" not in old.types
        step = old.bounds.get("multipleOf")
        value = before if before is not None else (after - 1 if lower else after + 1)
        if bound.exclusive_of and before is None:
            value = after
        # the old bound on the other side: the value stays within it, and old-valid
        other = old.bounds.get(_INCLUSIVE["upper" if lower else "lower"])
        if before is None and other is not None and (value > other if lower else value < other):
            value = other
        if step:
            value = _multiple(value, step, down=(before is None) == lower)
        return int(value) if integer and float(value).is_integer() else value
    if bound.applies_to == "string":
        if before is not None:
            return "a" * int(before)
        return "a" * int(max(after - 1, 0) if lower else after + 1)
    return _NONE  # sizes of arrays and objects: built by `instances.build` from the old node


def _multiple(value: Any, step: Any, *, down: bool) -> Any:
    """The multiple of `step` nearest `value` downwards (or upwards)."""
    ratio = Fraction(str(value)) / Fraction(str(step))
    count = math.floor(ratio) if down else math.ceil(ratio)
    if count == ratio:
        return value
    result = count * Fraction(str(step))
    return int(result) if result.denominator == 1 else float(result)


def multiple_of_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`constraint-tightened` / `constraint-relaxed` for `multipleOf`: added or
    changed to a value that old multiples do not all satisfy is tightened.
    Example: `{"multipleOf": 2}` -> `{"multipleOf": 4}` is tightened (2 was
    valid); 4 -> 2 is relaxed (every multiple of 4 is one of 2).
    """
    before = old.bounds.get("multipleOf")
    after = new.bounds.get("multipleOf")
    if before == after or not _applies("multipleOf", old, new):
        return
    at = f"{pointer}/multipleOf"
    if after is None:
        walk.emit(_relaxed(at, "multipleOf", before))
        return
    if before is None and "number" not in old.effective_types():
        before = 1  # integers are the multiples of 1 (shown absent)
        shown = ABSENT
    else:
        shown = _shown(before)
    if before is not None and _MULTIPLE.meets(before, after):
        walk.emit(_relaxed(at, "multipleOf", shown, after))
        return
    witness = _multiple_witness(old, None if shown is ABSENT else before, after)
    walk.emit(_tightened(at, "multipleOf", shown, after, route, Leaf("value", witness)))


_MULTIPLE = BY_KEYWORD["multipleOf"]


def _multiple_witness(old: Node, before: Any, after: Any) -> Any:
    """A value the old bounds accept (a multiple of the old `multipleOf`, an
    integer if only integers were allowed) that is no multiple of `after`.
    Example: old `{"type": "integer", "minimum": 2}`, new `multipleOf: 2` -> 3."""
    step = Fraction(str(before)) if before is not None else None
    integers_only = "number" not in old.effective_types()
    anchors = [0] + [old.bounds[b.keyword] for b in NUMERIC if is_number(old.bounds.get(b.keyword))]
    candidates: list[Fraction] = []
    for anchor in anchors:
        base = Fraction(str(anchor))
        if step is not None:
            base = (base // step) * step
            candidates += [base + k * step for k in range(-3, 4)]
        else:
            candidates += [base + k for k in range(-3, 4)]
            if not integers_only:
                candidates += [base + Fraction(1, 2), base - Fraction(1, 2)]
    target = Fraction(str(after))
    for candidate in candidates:
        if (candidate / target).denominator == 1:
            continue
        if integers_only and candidate.denominator != 1:
            continue
        if _within_old_bounds(old, candidate):
            return int(candidate) if candidate.denominator == 1 else float(candidate)
    return before if before is not None else _not_multiple(after)


def _within_old_bounds(old: Node, value: Fraction) -> bool:
    for bound in NUMERIC:
        limit = old.bounds.get(bound.keyword)
        if is_number(limit) and not bound.meets(value, Fraction(str(limit))):
            return False
    return True


def _not_multiple(step: Any) -> Any:
    fraction = Fraction(str(step))
    for candidate in (1, 3, 7, 0.5, 0.1):
        if (Fraction(str(candidate)) / fraction).denominator != 1:
            return candidate
    return 1


def pattern_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`constraint-tightened` / `constraint-relaxed` for `pattern`: added or
    changed is tightened (the engine does not prove one regular language
    contains another); removed is relaxed.
    Example: `{"pattern": "^[a-z]+$"}` -> `{"pattern": "^[a-z]{1,8}$"}`.
    """
    _string_constraint(walk, old, new, pointer, route, "pattern", old.pattern, new.pattern)


def format_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`constraint-tightened` / `constraint-relaxed` for `format`: added or
    changed is tightened, removed is relaxed.
    Example: absent -> `{"format": "email"}` (the witness `"x"` is no email).
    """
    _string_constraint(walk, old, new, pointer, route, "format", old.format, new.format)


def _string_constraint(
    walk: Walk,
    old: Node,
    new: Node,
    pointer: str,
    route: Route,
    keyword: str,
    before: str | None,
    after: str | None,
) -> None:
    """A `pattern` or `format` (each a leaf of its own kind for the witness)."""
    if before == after or not _applies(keyword, old, new):
        return
    at = f"{pointer}/{keyword}"
    if after is None:
        walk.emit(_relaxed(at, keyword, before))
    else:
        walk.emit(_tightened(at, keyword, _shown(before), after, route, Leaf(keyword, after)))


def unique_items_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`constraint-tightened` / `constraint-relaxed` for `uniqueItems`.
    Example: false -> true is tightened (a repeated item was valid, `[0, 0]`),
    true -> false is relaxed."""
    if old.unique_items == new.unique_items or not _applies("uniqueItems", old, new):
        return
    at = f"{pointer}/uniqueItems"
    if new.unique_items:
        walk.emit(_tightened(at, "uniqueItems", False, True, route, Leaf("duplicates")))
    else:
        walk.emit(_relaxed(at, "uniqueItems", True, False))


RULES = (bound_changed, multiple_of_changed, pattern_changed, format_changed, unique_items_changed)
