"""The seed pairs: seed 000 (`db.query` v3 -> v4) and seed 002 (`search` v1 -> v2)."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from registry.compat import Kind, Severity, classify
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2


def test_seed_000_rename_default_removed_and_enum_narrowed() -> None:
    report = classify(DB_QUERY_V3, DB_QUERY_V4)
    assert report.severity is Severity.BREAKING
    by_kind = {c.kind: c for c in report.changes}
    assert {Kind.PROPERTY_RENAMED, Kind.DEFAULT_REMOVED, Kind.ENUM_NARROWED} <= by_kind.keys()
    renamed = by_kind[Kind.PROPERTY_RENAMED]
    assert renamed.path == "/inputSchema/properties/timeout_ms"
    assert renamed.suggested_op == {"op": "rename", "from": "/timeout_ms", "to": "/timeout"}
    # the value a v3 caller sends is what v4 silently ignores
    assert "timeout_ms" in renamed.witness
    assert by_kind[Kind.DEFAULT_REMOVED].old == 30000
    assert by_kind[Kind.DEFAULT_REMOVED].path == "/inputSchema/properties/timeout/default"
    narrowed = by_kind[Kind.ENUM_NARROWED]
    assert narrowed.old == ["write"]
    assert narrowed.witness["mode"] == "write"
    assert not Draft202012Validator(DB_QUERY_V4["inputSchema"]).is_valid(narrowed.witness)
    for change in report.breaking:
        assert Draft202012Validator(DB_QUERY_V3["inputSchema"]).is_valid(change.witness)
    # not reported as a removal plus an addition
    assert Kind.PROPERTY_REMOVED not in by_kind


def test_seed_002_required_filters_and_default_limit() -> None:
    report = classify(SEARCH_V1, SEARCH_V2)
    assert report.severity is Severity.BREAKING
    found = {(c.kind, c.path) for c in report.changes}
    assert (Kind.REQUIRED_ADDED, "/inputSchema/required") in found
    assert (Kind.DEFAULT_ADDED, "/inputSchema/properties/limit/default") in found
    required = next(c for c in report.changes if c.kind is Kind.REQUIRED_ADDED)
    assert required.new == "filters"
    default = next(c for c in report.changes if c.kind is Kind.DEFAULT_ADDED)
    assert default.suggested_op == {"op": "fill", "path": "/limit", "value": 20}
    assert "limit" not in default.witness
