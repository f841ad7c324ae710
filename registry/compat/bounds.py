"""The min/max family of constraint keywords, as one table.

Each `Bound` names a keyword, the JSON type of the values it constrains and
its direction: `lower` (a larger value lets fewer values through: `minimum`,
`minLength`, ...), `upper` (a smaller one does: `maximum`, `maxItems`, ...),
or `multiple` (`multipleOf`). As Karapace's `AssertionCheck` table, but read by
every part of the engine that knows the family: the parser (which keywords
are bounds, draft-04's boolean `exclusiveMinimum`), the rules (which change
tightens, whether an old `enum` value keeps a new bound), the folding of
`allOf` (a conjunction keeps the tighter of two bounds), the witness search
(numbers just past a numeric bound) and the cheap pass (what a plain object
or array may declare).

    BY_KEYWORD["maxLength"].tightens(10, 5)     # True: "aaaaaaaaaa" was valid
    BY_KEYWORD["minimum"].holds(1, 0)           # False: 0 is under the bound
"""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

from registry.compat.jsonvalues import is_number

__all__ = ["BOUNDS", "BY_KEYWORD", "KEYWORDS", "NUMERIC", "Bound", "tightest"]

# JSON type -> the Python classes of its values (a bool is no number)
_CLASSES: dict[str, type | tuple[type, ...]] = {
    "number": (int, float),
    "string": str,
    "array": list,
    "object": dict,
}


@dataclass(frozen=True, slots=True)
class Bound:
    """One keyword of the min/max family.

    `applies_to`: the JSON type it constrains (a value of another type meets
    it); `direction`: `lower`, `upper` or `multiple`; `measures`: what of a
    value it bounds (`value`, `length` in characters, `items`, `properties`,
    or `contains`: the items matching `contains`, which only a schema can
    count); `exclusive_of`: for `exclusiveMinimum` / `exclusiveMaximum`, the
    inclusive spelling of the same bound; `absent`: what an absent keyword
    reads as where that is not "no bound" (`minContains`: 1).
    """

    keyword: str
    applies_to: str
    direction: str
    measures: str = "value"
    exclusive_of: str = ""
    absent: int | None = None

    def tightens(self, before: Any, after: Any) -> bool:
        """Whether the bound going from `before` to `after` (None: absent) lets
        fewer values through; the caller has found the two to differ. A bound
        that appears tightens, one that goes relaxes (`multipleOf` is its own
        rule's business: a new step need not divide the old)."""
        if after is None:
            return False
        if before is None:
            return True
        return bool(after > before if self.direction == "lower" else after < before)

    def meets(self, measure: Any, limit: Any) -> bool:
        """Whether a measure (a number, a length, a count) is within `limit`."""
        if self.direction == "multiple":
            return (Fraction(str(measure)) / Fraction(str(limit))).denominator == 1
        if self.direction == "lower":
            return bool(measure > limit if self.exclusive_of else measure >= limit)
        return bool(measure < limit if self.exclusive_of else measure <= limit)

    def holds(self, limit: Any, value: Any) -> bool:
        """Whether the JSON value `value` meets this bound at `limit` (None: no
        bound); a value of a type the bound does not constrain always does."""
        if limit is None or self.measures == "contains":
            return True
        if self.applies_to == "number":
            if not is_number(value):
                return True
            return self.meets(value, limit)
        if not isinstance(value, _CLASSES[self.applies_to]):
            return True
        return self.meets(len(cast(Sized, value)), limit)


BOUNDS: tuple[Bound, ...] = (
    Bound("minimum", "number", "lower"),
    Bound("exclusiveMinimum", "number", "lower", exclusive_of="minimum"),
    Bound("minLength", "string", "lower", "length"),
    Bound("minItems", "array", "lower", "items"),
    Bound("minProperties", "object", "lower", "properties"),
    Bound("maximum", "number", "upper"),
    Bound("exclusiveMaximum", "number", "upper", exclusive_of="maximum"),
    Bound("maxLength", "string", "upper", "length"),
    Bound("maxItems", "array", "upper", "items"),
    Bound("maxProperties", "object", "upper", "properties"),
    Bound("multipleOf", "number", "multiple"),
    Bound("minContains", "array", "lower", "contains", absent=1),
    Bound("maxContains", "array", "upper", "contains"),
)
BY_KEYWORD: dict[str, Bound] = {bound.keyword: bound for bound in BOUNDS}
KEYWORDS = frozenset(BY_KEYWORD)
# The bounds of a number's value (what the witness search steps just past).
NUMERIC = tuple(b for b in BOUNDS if b.applies_to == "number" and b.direction != "multiple")


def tightest(keyword: str, mine: Any, theirs: Any) -> Any:
    """The bound a conjunction of two `keyword` bounds keeps (the larger lower
    bound, the smaller upper one); None where the two do not combine so
    (`multipleOf`, or a value that is no number)."""
    bound = BY_KEYWORD.get(keyword)
    if bound is None or bound.direction == "multiple":
        return None
    if not (is_number(mine) and is_number(theirs)):
        return None
    return max(mine, theirs) if bound.direction == "lower" else min(mine, theirs)
