"""Pairs that an earlier engine got wrong, each with the reason it breaks."""

from __future__ import annotations

from typing import Any

import pytest

from registry.compat import Kind, Severity, classify


def tool(schema: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": schema}


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        # JSON true is not 1: Python equality must not decide JSON equality
        (
            {"type": "object", "properties": {"a": {"const": 1}}},
            {"type": "object", "properties": {"a": {"const": True}}},
            Kind.CONST_CHANGED,
        ),
        (
            {"type": "object", "properties": {"a": {"enum": [0, 1]}}},
            {"type": "object", "properties": {"a": {"enum": [False, True]}}},
            Kind.ENUM_NARROWED,
        ),
        (
            {"type": "object", "properties": {"a": {"default": 0}}},
            {"type": "object", "properties": {"a": {"default": False}}},
            Kind.DEFAULT_CHANGED,
        ),
        # a required name old never described accepted anything
        (
            {"type": "object", "required": ["a"]},
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            Kind.TYPE_NARROWED,
        ),
        # a map's keys were described by its value schema
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "additionalProperties": {"type": "integer"},
            },
            Kind.TYPE_NARROWED,
        ),
    ],
)
def test_breaking_pairs(old: Any, new: Any, kind: Kind) -> None:
    report = classify(tool(old), tool(new))
    assert report.severity is Severity.BREAKING
    assert kind in report.kinds()


def test_optional_property_declared_under_an_open_model_stays_additive() -> None:
    old = {"type": "object", "properties": {"q": {"type": "string"}}}
    new = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}
    assert classify(tool(old), tool(new)).severity is Severity.ADDITIVE


def test_tightened_maximum_witness_respects_the_old_minimum() -> None:
    old = {"type": "object", "properties": {"b": {"type": "integer", "minimum": 2}}}
    new = {"type": "object", "properties": {"b": {"type": "integer", "maximum": 0}}}
    report = classify(tool(old), tool(new))
    change = next(c for c in report.changes if c.path.endswith("/maximum"))
    assert change.witness == {"b": 2}


def test_removed_branch_witness_past_a_bound_the_new_schema_adds() -> None:
    """Found by test_soundness's property: the integer branch of an `anyOf` is
    removed in favour of integers >= -1; no typical value (0, 1, -1) breaks it,
    the number just past the new bound does."""
    old = {
        "type": "object",
        "properties": {"d": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
    }
    new = {"type": "object", "properties": {"d": {"type": "integer", "minimum": -1}}}
    report = classify(tool(old), tool(new))
    removed = [c for c in report.breaking if c.kind is Kind.BRANCH_REMOVED]
    assert len(removed) == 2
    assert all(c.witness is not None for c in removed)
    integer_branch = next(c for c in removed if c.old == {"type": "integer"})
    assert integer_branch.witness == {"d": -2}
