"""Converter operations: apply (pure) and verify (against the engine)."""

from __future__ import annotations

import pytest

from registry.compat import (
    ConversionRejected,
    ConverterError,
    Severity,
    apply,
    classify,
    parse_ops,
    suggested_converter,
    verify,
)
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2


def test_apply_every_operation_returns_a_new_object() -> None:
    ops = parse_ops(
        [
            {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
            {"op": "fill", "path": "/limit", "value": 20},
            {"op": "drop", "path": "/legacy"},
            {"op": "map", "path": "/mode", "values": {"write": "read"}},
        ]
    )
    arguments = {"timeout_ms": 5, "legacy": True, "mode": "write"}
    result = apply(ops, arguments)
    assert result == {"timeout": 5, "limit": 20, "mode": "read"}
    assert arguments == {"timeout_ms": 5, "legacy": True, "mode": "write"}


def test_fill_never_overwrites_a_value_the_caller_sent() -> None:
    ops = parse_ops([{"op": "fill", "path": "/limit", "value": 20}])
    assert apply(ops, {"limit": 3}) == {"limit": 3}


def test_nested_paths() -> None:
    ops = parse_ops([{"op": "rename", "from": "/a/b", "to": "/a/c"}])
    assert apply(ops, {"a": {"b": 1}}) == {"a": {"c": 1}}
    assert apply(ops, {"x": 1}) == {"x": 1}


def test_reject_names_the_value_and_the_message() -> None:
    ops = parse_ops(
        [{"op": "reject", "path": "/mode", "values": ["write"], "message": "replica is read-only"}]
    )
    with pytest.raises(ConversionRejected) as caught:
        apply(ops, {"mode": "write"})
    assert caught.value.path == "/mode"
    assert caught.value.value == "write"
    assert "replica is read-only" in str(caught.value)
    assert '"write"' in str(caught.value)
    assert apply(ops, {"mode": "read"}) == {"mode": "read"}


@pytest.mark.parametrize(
    "raw",
    [
        [{"op": "teleport", "path": "/a"}],
        [{"op": "rename", "from": "/a"}],
        [{"op": "drop", "path": "a"}],
        [{"op": "drop", "path": "/a~2"}],
        [{"op": "drop", "path": "/a", "extra": 1}],
        {"op": "drop"},
    ],
)
def test_bad_operations_are_refused_with_a_reason(raw: object) -> None:
    with pytest.raises(ConverterError) as caught:
        parse_ops(raw)
    assert str(caught.value)


def test_verify_seed_002_fill_filters_only_is_refused_default_added_remains() -> None:
    report = verify(
        parse_ops([{"op": "fill", "path": "/filters", "value": {}}]), SEARCH_V1, SEARCH_V2
    )
    assert report.severity is Severity.BREAKING
    assert [c.kind.value for c in report.breaking] == ["default-added"]


def test_verify_seed_002_fill_filters_and_limit_is_accepted() -> None:
    ops = parse_ops(
        [
            {"op": "fill", "path": "/filters", "value": {}},
            {"op": "fill", "path": "/limit", "value": 20},
        ]
    )
    assert verify(ops, SEARCH_V1, SEARCH_V2).severity is not Severity.BREAKING
    assert apply(ops, {"query": "foo"}) == {"query": "foo", "filters": {}, "limit": 20}


def test_verify_seed_000_rename_alone_leaves_default_and_enum() -> None:
    report = verify(
        parse_ops([{"op": "rename", "from": "/timeout_ms", "to": "/timeout"}]),
        DB_QUERY_V3,
        DB_QUERY_V4,
    )
    assert {c.kind.value for c in report.breaking} == {"default-removed", "enum-narrowed"}


def test_verify_seed_000_full_converter_with_reject_is_accepted() -> None:
    ops = parse_ops(
        [
            {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
            {"op": "fill", "path": "/timeout", "value": 30000},
            {"op": "reject", "path": "/mode", "values": ["write"], "message": "read only"},
        ]
    )
    assert verify(ops, DB_QUERY_V3, DB_QUERY_V4).severity is not Severity.BREAKING


def test_verify_map_repairs_a_narrowed_enum() -> None:
    old = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"m": {"enum": ["a", "b"]}}},
    }
    new = {"name": "t", "inputSchema": {"type": "object", "properties": {"m": {"enum": ["a"]}}}}
    assert verify([], old, new).severity is Severity.BREAKING
    ops = parse_ops([{"op": "map", "path": "/m", "values": {"b": "a"}}])
    assert verify(ops, old, new).severity is not Severity.BREAKING


def test_verify_refuses_operations_on_properties_the_old_version_lacks() -> None:
    with pytest.raises(ConverterError, match="not a property"):
        verify(parse_ops([{"op": "rename", "from": "/nope", "to": "/x"}]), SEARCH_V1, SEARCH_V2)


def test_apply_and_verify_take_the_json_form_a_report_suggests() -> None:
    """A report's suggested converter (plain dicts, as manifests and the API
    hold them) goes to `verify` and `apply` as is; a bad one is named."""
    report = classify(DB_QUERY_V3, DB_QUERY_V4)
    ops = suggested_converter(c.suggested_op for c in report.breaking if c.suggested_op)
    assert all(isinstance(op, dict) for op in ops)
    assert verify(ops, DB_QUERY_V3, DB_QUERY_V4).severity is not Severity.BREAKING
    assert apply(ops, {"query": "q", "timeout_ms": 5}) == apply(
        parse_ops(ops), {"query": "q", "timeout_ms": 5}
    )
    with pytest.raises(ConverterError, match="invalid converter operations"):
        apply([{"op": "rename", "from": "/a"}], {"a": 1})
