"""The bounds table (registry/compat/bounds.py), as every reader of it sees it:
each bound is a keyword the dialects define, read by the parser as a bound;
a tighter one is reported with a witness python-jsonschema confirms, a looser
one relaxes; a conjunction of two keeps the tighter (fold); an old `enum`
whose values all keep a new bound sees no change."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from registry.compat import Kind, Severity, classify
from registry.compat.bounds import BOUNDS, BY_KEYWORD, Bound
from registry.compat.dialects import DIALECTS

# (a value of the bound's type, the schema of such values)
SAMPLE: dict[str, dict[str, Any]] = {
    "number": {"type": "number"},
    "string": {"type": "string"},
    "array": {"type": "array", "items": {"type": "integer"}},
    "object": {"type": "object"},
}
# what tightens each direction: (before, after)
TIGHTER = {"lower": (1, 3), "upper": (3, 1)}
BY_VALUE = [b for b in BOUNDS if b.direction != "multiple" and b.measures != "contains"]


def tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": {"v": schema}}}


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: b.keyword)
def test_each_bound_is_a_keyword_of_a_supported_dialect(bound: Bound) -> None:
    assert any(bound.keyword in dialect.keywords for dialect in DIALECTS)
    assert bound.applies_to in SAMPLE
    assert bound.direction in ("lower", "upper", "multiple")


@pytest.mark.parametrize("bound", BY_VALUE, ids=lambda b: b.keyword)
def test_a_tighter_bound_is_tightened_with_a_witness_and_a_looser_one_relaxed(
    bound: Bound,
) -> None:
    before, after = TIGHTER[bound.direction]
    base = SAMPLE[bound.applies_to]
    old = tool({**base, bound.keyword: before})
    new = tool({**base, bound.keyword: after})
    assert bound.tightens(before, after) and not bound.tightens(after, before)
    [change] = classify(old, new).changes
    assert (change.kind, change.path) == (
        Kind.CONSTRAINT_TIGHTENED,
        f"/inputSchema/properties/v/{bound.keyword}",
    )
    assert Draft202012Validator(old["inputSchema"]).is_valid(change.witness)
    assert not Draft202012Validator(new["inputSchema"]).is_valid(change.witness)
    [back] = classify(new, old).changes
    assert (back.kind, back.severity) == (Kind.CONSTRAINT_RELAXED, Severity.ADDITIVE)


@pytest.mark.parametrize("bound", BY_VALUE, ids=lambda b: b.keyword)
def test_a_conjunction_of_two_bounds_keeps_the_tighter(bound: Bound) -> None:
    loose, tight = TIGHTER[bound.direction]
    base = SAMPLE[bound.applies_to]
    both = tool({**base, "allOf": [{bound.keyword: loose}, {bound.keyword: tight}]})
    report = classify(both, tool({**base, bound.keyword: tight}))
    assert report.severity in (Severity.IDENTICAL, Severity.COSMETIC), report.changes
    looser = classify(both, tool({**base, bound.keyword: loose}))
    assert [c.kind for c in looser.changes] == [Kind.CONSTRAINT_RELAXED]


@pytest.mark.parametrize(
    ("keyword", "kept", "broken"),
    [
        ("minimum", 5, 0),
        ("exclusiveMaximum", 0, 5),
        ("maxLength", "ab", "abcd"),
        ("minItems", [1, 2, 3], []),
        ("maxProperties", {}, {"a": 1, "b": 2, "c": 3, "d": 4}),
        ("multipleOf", 6, 5),
    ],
)
def test_an_old_enum_is_judged_by_its_values(keyword: str, kept: Any, broken: Any) -> None:
    """`holds`: every old value keeps the new bound, no change; one does not, tightened."""
    limit = 3
    assert BY_KEYWORD[keyword].holds(limit, kept) and not BY_KEYWORD[keyword].holds(limit, broken)
    assert classify(tool({"enum": [kept]}), tool({"enum": [kept], keyword: limit})).severity in (
        Severity.IDENTICAL,
        Severity.COSMETIC,
    )
    [change] = classify(
        tool({"enum": [kept, broken]}), tool({"enum": [kept, broken], keyword: limit})
    ).changes
    assert change.kind is Kind.CONSTRAINT_TIGHTENED


def test_a_value_of_another_type_meets_every_bound() -> None:
    for bound in BOUNDS:
        other = "x" if bound.applies_to != "string" else 7
        assert bound.holds(1, other), bound.keyword


def test_min_contains_reads_one_where_it_is_absent() -> None:
    array = {"type": "array", "contains": {"const": "a"}}
    assert classify(tool(array), tool({**array, "minContains": 1})).severity in (
        Severity.IDENTICAL,
        Severity.COSMETIC,
    )
    [change] = classify(tool(array), tool({**array, "minContains": 2})).changes
    assert (change.kind, change.old, change.new) == (Kind.CONSTRAINT_TIGHTENED, 1, 2)
