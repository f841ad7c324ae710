"""Soundness of unions inside arrays (issue 31): the items of an array (at any
depth) are an object or an `anyOf` / `oneOf` of objects, and random edits
widen them into a union (the released shape: old items a closed object, new
items `anyOf` of that same object and another; drawn by hand in
tests/test_release_shapes.py), drop, add, reorder or edit a branch, or unwrap a union.

Every witness the engine shows is confirmed by python-jsonschema: valid under
old, and refused by new; for a property removed or renamed (which new may
accept and ignore), refused by new read strictly, as the gate reads a
version-less call (`registry.sdk.strict.strict_schema`). Whenever nothing
breaking is reported, old values stay valid under new.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from registry.compat import Kind, Severity, classify
from registry.compat.kinds import READ_DIFFERENTLY
from registry.sdk.strict import strict_schema
from tests.test_soundness import leaf_schemas, mutated, object_schemas

UNIONS = ("anyOf", "oneOf")


@st.composite
def branch_objects(draw: Any) -> dict[str, Any]:
    schema = draw(object_schemas())
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


@st.composite
def item_schemas(draw: Any) -> dict[str, Any]:
    """An object, or a union of one to three objects."""
    if draw(st.booleans()):
        return draw(branch_objects())
    keyword = draw(st.sampled_from(UNIONS))
    return {keyword: draw(st.lists(branch_objects(), min_size=1, max_size=3))}


@st.composite
def arguments(draw: Any) -> dict[str, Any]:
    """Arguments holding an array of item schemas, maybe an array of such arrays."""
    items = draw(item_schemas())
    array: dict[str, Any] = {"type": "array", "items": items}
    if draw(st.booleans()):
        array = {"type": "array", "items": array}
    return {
        "type": "object",
        "properties": {"list": array, "note": draw(leaf_schemas)},
        "required": draw(st.sampled_from([[], ["list"]])) or [],
    }


def _items_holders(schema: Any, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The array schemas of `schema` (each holds an `items` to edit)."""
    if isinstance(schema, dict):
        if isinstance(schema.get("items"), dict):
            out.append(schema)
        for value in schema.values():
            if isinstance(value, dict):
                _items_holders(value, out)
            elif isinstance(value, list):
                for sub in value:
                    _items_holders(sub, out)
    return out


EDITS = ["widen", "widen-same", "drop", "add", "reorder", "swap", "unwrap", "edit-branch"]


@st.composite
def edited(draw: Any, old: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    holders = [h for h in _items_holders(new, []) if not isinstance(h["items"].get("items"), dict)]
    holder = draw(st.sampled_from(holders))
    items = holder["items"]
    keyword = next((k for k in UNIONS if k in items), None)
    edit = draw(st.sampled_from(EDITS))
    if edit in ("widen", "widen-same") and keyword is None:
        other = draw(branch_objects())
        same = copy.deepcopy(items) if edit == "widen-same" else draw(mutated(items))
        holder["items"] = {draw(st.sampled_from(UNIONS)): [same, other]}
    elif edit == "drop" and keyword is not None and len(items[keyword]) > 1:
        items[keyword].pop(draw(st.integers(0, len(items[keyword]) - 1)))
    elif edit == "add" and keyword is not None:
        items[keyword].append(draw(branch_objects()))
    elif edit == "reorder" and keyword is not None:
        items[keyword].reverse()
    elif edit == "swap" and keyword is not None:
        items[{"anyOf": "oneOf", "oneOf": "anyOf"}[keyword]] = items.pop(keyword)
    elif edit == "unwrap" and keyword is not None:
        holder["items"] = items[keyword][draw(st.integers(0, len(items[keyword]) - 1))]
    elif keyword is not None:
        position = draw(st.integers(0, len(items[keyword]) - 1))
        items[keyword][position] = draw(mutated(items[keyword][position]))
    else:
        holder["items"] = draw(mutated(items))
    return new


def closed(schema: Any) -> Any:
    """`schema` with every object closed, union branches included: values drawn
    from it carry declared properties only (an undeclared name under an open
    object was no contract, docs/contract.md)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) if k in ("items", *UNIONS) else v for k, v in schema.items()}
    if "properties" in out:
        out["properties"] = {k: closed(v) for k, v in out["properties"].items()}
    if out.get("type") == "object" and out.get("additionalProperties", True) is True:
        out["additionalProperties"] = False
    return out


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)


def _drawn(data: st.DataObject) -> tuple[dict[str, Any], dict[str, Any], Any, Any, Any]:
    """Old and new arguments schemas, the report between them, and their validators."""
    old = data.draw(arguments())
    new = data.draw(edited(old))
    report = classify({"name": "t", "inputSchema": old}, {"name": "t", "inputSchema": new})
    return old, new, report, Draft202012Validator(old), Draft202012Validator(new)


@SETTINGS
@given(data=st.data())
def test_every_witness_is_refused_by_the_new_version(data: st.DataObject) -> None:
    old, new, report, old_validator, new_validator = _drawn(data)
    strict = Draft202012Validator(strict_schema(new))
    for change in report.breaking:
        if change.witness is None:
            continue  # none confirmed (a value another branch still reads is no witness)
        assert old_validator.is_valid(change.witness), (change, old, new)
        if change.kind in (Kind.PROPERTY_REMOVED, Kind.PROPERTY_RENAMED):
            assert not strict.is_valid(change.witness), (change, old, new)
        elif change.kind not in READ_DIFFERENTLY:
            assert not new_validator.is_valid(change.witness), (change, old, new)


@SETTINGS
@given(data=st.data())
def test_nothing_breaking_means_old_values_hold(data: st.DataObject) -> None:
    old, new, report, old_validator, new_validator = _drawn(data)
    if report.severity is Severity.BREAKING:
        return
    for _ in range(3):
        value = data.draw(from_schema(closed(old)))
        assume(old_validator.is_valid(value))
        assert new_validator.is_valid(value), (old, new, value, report)
