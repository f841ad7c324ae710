"""Suggested operations verify: a report whose breaking changes each carry a
`suggested_op` yields, through `suggested_converter`, a converter that
`verify` accepts. Checked on the seed pairs, on every such corpus pair, and on
random object schemas and mutations of them; and the errors of a converter
that cannot apply name the operation and what is wrong."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.compat import (
    ChangeReport,
    ConverterError,
    Severity,
    apply,
    classify,
    parse_ops,
    suggested_converter,
    verify,
)
from tests.corpus import load_pairs
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2
from tests.test_soundness import mutated, object_schemas


def convertible(report: ChangeReport) -> bool:
    return bool(report.breaking) and all(c.suggested_op for c in report.breaking)


def assert_suggestion_verifies(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    report = classify(old, new)
    ops = suggested_converter(c.suggested_op for c in report.breaking if c.suggested_op)
    verified = verify(parse_ops(ops), old, new)
    assert verified.severity is not Severity.BREAKING, (ops, verified.breaking)
    return ops


def test_seed_000_suggestion_in_an_order_that_verifies() -> None:
    ops = assert_suggestion_verifies(DB_QUERY_V3, DB_QUERY_V4)
    assert [op["op"] for op in ops] == ["reject", "rename", "fill"]
    assert ops[1] == {"op": "rename", "from": "/timeout_ms", "to": "/timeout"}
    assert ops[2] == {"op": "fill", "path": "/timeout", "value": 30000}
    converted = apply(parse_ops(ops), {"query": "select 1"})
    assert converted == {"query": "select 1", "timeout": 30000}
    assert apply(parse_ops(ops), {"query": "q", "timeout_ms": 5})["timeout"] == 5


def test_seed_002_suggestion_verifies() -> None:
    ops = assert_suggestion_verifies(SEARCH_V1, SEARCH_V2)
    assert sorted(op["path"] for op in ops) == ["/filters", "/limit"]


CORPUS_CONVERTIBLE = [
    pair
    for pair in load_pairs()
    if pair.new is not None and convertible(classify(pair.old, pair.new))
]


@pytest.mark.corpus
def test_the_corpus_has_convertible_breaking_pairs() -> None:
    assert len(CORPUS_CONVERTIBLE) >= 20


@pytest.mark.corpus
@pytest.mark.parametrize("pair", CORPUS_CONVERTIBLE, ids=[p.id for p in CORPUS_CONVERTIBLE])
def test_corpus_suggestions_verify(pair: Any) -> None:
    assert_suggestion_verifies(pair.old, pair.new)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_random_suggestions_verify(data: st.DataObject) -> None:
    old_schema = data.draw(object_schemas())
    new_schema = data.draw(mutated(old_schema))
    old = {"name": "t", "inputSchema": old_schema}
    new = {"name": "t", "inputSchema": new_schema}
    if convertible(classify(old, new)):
        assert_suggestion_verifies(old, new)


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
