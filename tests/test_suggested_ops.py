"""Suggestions that verify: for every breaking report, `repair` either offers a
converter the publish's own verification (`verify`) proves, or names the
changes the suggested operations leave, and then offers no operation at all;
no fill value is made up. Checked on the seed pairs, on every corpus pair,
and on random schemas and mutations of them; and the errors of a converter
that cannot apply name the operation and what is wrong."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.compat import (
    ClassificationError,
    ConverterError,
    Kind,
    Repair,
    Severity,
    apply,
    classify,
    parse_ops,
    repair,
    suggested_converter,
    verify,
)
from registry.compat.jsonvalues import json_equal
from tests.corpus import load_pairs
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2
from tests.test_soundness import mutated, object_schemas
from tests.test_soundness_keywords import mutated as keyword_mutated
from tests.test_soundness_keywords import schemas as keyword_schemas


def assert_repair_holds(old: dict[str, Any], new: dict[str, Any]) -> Repair:
    """`repair`'s promise on one pair: its converter verifies, or it offers none
    and names what is left, which is what the suggestions leave breaking."""
    report = classify(old, new)
    found = repair(report, old, new)
    if not report.breaking:
        assert found == Repair(ops=[], unrepairable=[])
        return found
    if not found.unrepairable:
        assert found.ops, "a breaking report repaired by no operation"
        verified = verify(parse_ops(found.ops), old, new)
        assert verified.severity is not Severity.BREAKING, (found.ops, verified.breaking)
    else:
        assert found.ops == []
        suggested = suggested_converter(c.suggested_op for c in report.breaking if c.suggested_op)
        left = [c for c in report.breaking if not c.path.startswith("/inputSchema")]
        try:
            left += verify(parse_ops(suggested), old, new).breaking
        except ConverterError:  # what the publish cannot apply repairs nothing
            left += [c for c in report.breaking if c.path.startswith("/inputSchema")]
        assert [(u.kind, u.path) for u in found.unrepairable] == [(c.kind, c.path) for c in left]
    for op in found.ops:
        if op["op"] == "fill":
            assert _known(old, new, op["path"], op["value"]), op
    return found


def _known(old: dict[str, Any], new: dict[str, Any], path: str, value: Any) -> bool:
    """Whether a filled value is one the versions name for the object holding
    it: a default of one of its properties (a renamed one's included), or the
    one value the new version allows there."""
    names = path.strip("/").split("/")
    known = []
    for definition in (old, new):
        schema: Any = definition.get("inputSchema") or {}
        for name in names[:-1]:
            held = schema.get("properties") if isinstance(schema, dict) else None
            schema = held.get(name) if isinstance(held, dict) else None
        held = schema.get("properties") if isinstance(schema, dict) else None
        for sub in held.values() if isinstance(held, dict) else ():
            if isinstance(sub, dict):
                known += [sub[k] for k in ("default", "const") if k in sub]
                if isinstance(sub.get("enum"), list) and len(sub["enum"]) == 1:
                    known.append(sub["enum"][0])
    return any(json_equal(value, candidate) for candidate in known)


def test_seed_000_suggestion_in_an_order_that_verifies() -> None:
    found = assert_repair_holds(DB_QUERY_V3, DB_QUERY_V4)
    ops = found.ops
    assert [op["op"] for op in ops] == ["reject", "rename", "fill"]
    assert ops[1] == {"op": "rename", "from": "/timeout_ms", "to": "/timeout"}
    assert ops[2] == {"op": "fill", "path": "/timeout", "value": 30000}
    converted = apply(parse_ops(ops), {"query": "select 1"})
    assert converted == {"query": "select 1", "timeout": 30000}
    assert apply(parse_ops(ops), {"query": "q", "timeout_ms": 5})["timeout"] == 5


def test_seed_002_makes_up_no_filters_and_says_what_a_fill_would_repair() -> None:
    """`filters` is now required and nothing gives it a value: the engine offers
    no converter and names the argument a fill of a chosen value repairs (the
    default-added `limit: 20` alone would not make the publish pass)."""
    found = assert_repair_holds(SEARCH_V1, SEARCH_V2)
    assert found.ops == []
    assert [(u.kind, u.path, u.fill) for u in found.unrepairable] == [
        (Kind.REQUIRED_ADDED, "/inputSchema/required", "/filters")
    ]
    chosen = [*suggested_converter([{"op": "fill", "path": "/limit", "value": 20}])]
    chosen.append({"op": "fill", "path": "/filters", "value": {}})
    assert verify(parse_ops(chosen), SEARCH_V1, SEARCH_V2).severity is not Severity.BREAKING


def tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", **schema}}


def test_a_required_property_is_filled_only_with_a_value_the_versions_name() -> None:
    """Found by the random suggestions below: `fill /a "a"` was a made-up value."""
    old = tool({"properties": {"a": {"const": "k"}}})
    new = tool({"properties": {"a": {"type": "string", "maxLength": 1}}, "required": ["a"]})
    found = assert_repair_holds(old, new)
    assert (found.ops, [(u.kind, u.fill) for u in found.unrepairable]) == (
        [],
        [(Kind.REQUIRED_ADDED, "/a")],
    )
    defaulted = tool({"properties": {"a": {"type": "string", "default": "x"}}})
    required = tool({"properties": {"a": {"type": "string"}}, "required": ["a"]})
    assert assert_repair_holds(defaulted, required).ops == [
        {"op": "fill", "path": "/a", "value": "x"}
    ]
    one_value = {"properties": {"a": {"enum": ["only"]}}}
    only = assert_repair_holds(tool(one_value), tool({**one_value, "required": ["a"]})).ops
    assert only == [{"op": "fill", "path": "/a", "value": "only"}]


def test_a_tightened_constraint_is_repaired_by_no_operation() -> None:
    """The rename has its operation, the tightened `maxLength` none: the converter
    of the rename alone would be refused, so none is offered."""
    old = tool({"properties": {"q": {"type": "string"}, "s": {"type": "string"}}})
    new = tool(
        {"properties": {"query": {"type": "string"}, "s": {"type": "string", "maxLength": 3}}}
    )
    report = classify(old, new)
    assert any(c.suggested_op for c in report.breaking)
    found = assert_repair_holds(old, new)
    assert found.ops == []
    assert [(u.kind, u.path, u.fill) for u in found.unrepairable] == [
        (Kind.CONSTRAINT_TIGHTENED, "/inputSchema/properties/s/maxLength", None)
    ]
    accepted = {("constraint-tightened", "/inputSchema/properties/s/maxLength")}
    assert repair(report, old, new, accepted) == Repair(
        ops=[{"op": "rename", "from": "/q", "to": "/query"}], unrepairable=[]
    )


BREAKING_PAIRS = [
    pair for pair in load_pairs() if pair.new is not None and classify(pair.old, pair.new).breaking
]


@pytest.mark.corpus
def test_the_corpus_has_breaking_pairs_of_both_outcomes() -> None:
    outcomes = [bool(repair(classify(p.old, p.new), p.old, p.new).ops) for p in BREAKING_PAIRS]
    assert outcomes.count(True) >= 20 and outcomes.count(False) >= 20


@pytest.mark.corpus
@pytest.mark.parametrize("pair", BREAKING_PAIRS, ids=[p.id for p in BREAKING_PAIRS])
def test_corpus_repairs_verify_or_name_what_is_left(pair: Any) -> None:
    assert_repair_holds(pair.old, pair.new)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data(), keywords=st.booleans())
def test_random_repairs_verify_or_name_what_is_left(data: st.DataObject, keywords: bool) -> None:
    old_schema = data.draw(keyword_schemas() if keywords else object_schemas())
    new_schema = data.draw(keyword_mutated(old_schema) if keywords else mutated(old_schema))
    with suppress(ClassificationError):  # (a generated schema the engine refuses)
        assert_repair_holds(
            {"name": "t", "inputSchema": old_schema}, {"name": "t", "inputSchema": new_schema}
        )


def test_the_order_does_not_depend_on_the_order_of_the_report() -> None:
    report = classify(DB_QUERY_V3, DB_QUERY_V4)
    suggested = [c.suggested_op for c in report.breaking if c.suggested_op]
    assert suggested_converter(reversed(suggested)) == suggested_converter(suggested)


def test_deeper_operations_run_before_their_parent_moves() -> None:
    ops = suggested_converter(
        [
            {"op": "rename", "from": "/a", "to": "/b"},
            {"op": "fill", "path": "/a/limit", "value": 20},
            {"op": "rename", "from": "/a/x", "to": "/a/y"},
            {"op": "drop", "path": "/a/z"},
        ]
    )
    assert [op.get("path", op.get("from")) for op in ops] == ["/a/z", "/a/x", "/a/limit", "/a"]


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [
                {"op": "fill", "path": "/timeout", "value": 30000},
                {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
            ],
            "ops[1] (rename /timeout_ms -> /timeout): /timeout already exists: "
            "ops[0] (fill /timeout) made it; put the rename before it",
        ),
        (
            [{"op": "rename", "from": "/timeout_ms", "to": "/query"}],
            "ops[0] (rename /timeout_ms -> /query): /query is already a property of the old "
            "version; drop or rename it first",
        ),
        (
            [
                {"op": "drop", "path": "/mode"},
                {"op": "reject", "path": "/mode", "values": ["write"], "message": "read only"},
            ],
            "ops[1] (reject /mode): /mode is no longer there: ops[0] (drop /mode) already "
            "moved or dropped it",
        ),
        (
            [{"op": "fill", "path": "/a/b", "value": 1}],
            "ops[0] (fill /a/b): /a is not a property of the old version",
        ),
    ],
)
def test_verification_errors_name_the_operation(ops: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ConverterError) as caught:
        verify(parse_ops(ops), DB_QUERY_V3, DB_QUERY_V4)
    assert str(caught.value) == message


def test_no_fill_is_suggested_with_a_value_the_new_schema_refuses() -> None:
    """A default is never checked against its schema: `default: 0` under
    `maximum: -1` cannot be filled into a call the new version accepts, so the
    change carries no suggested op (found by the random suggestions above)."""
    new_schema = {"type": "integer", "maximum": -1}
    old = {"name": "t", "inputSchema": {"type": "object", "properties": {"a": new_schema}}}
    refused = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"a": {**new_schema, "default": 0}}},
    }
    accepted = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"a": {**new_schema, "default": -5}}},
    }
    (change,) = classify(old, refused).breaking
    assert change.kind.value == "default-added" and change.suggested_op is None
    (change,) = classify(old, accepted).breaking
    assert change.suggested_op == {"op": "fill", "path": "/a", "value": -5}
