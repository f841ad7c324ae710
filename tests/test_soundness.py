"""Soundness, property-based: the engine never calls a change safe that lets an
old-valid call be refused, lose a value or have an absent value re-defaulted.

Schema pairs come from random object schemas and random mutations of them;
instances of the old schema come from hypothesis-jsonschema. Every witness is
checked with python-jsonschema.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from registry.compat import Kind, Severity, classify

NAMES = ["a", "b", "c", "d", "e"]

leaf_schemas = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "integer"}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": ["string", "null"]}),
    st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(1, 6)),
    st.builds(lambda n: {"type": "integer", "minimum": n}, st.integers(-3, 3)),
    st.builds(lambda n: {"type": "integer", "maximum": n}, st.integers(-3, 3)),
    st.builds(
        lambda values: {"type": "string", "enum": sorted(values)},
        st.sets(st.sampled_from(["r", "w", "x", "y"]), min_size=1, max_size=4),
    ),
    st.builds(lambda n: {"type": "integer", "multipleOf": n}, st.sampled_from([1, 2, 3, 4])),
    st.just({"type": "array", "items": {"type": "integer"}}),
    st.builds(
        lambda n: {"type": "array", "items": {"type": "string"}, "maxItems": n}, st.integers(0, 3)
    ),
    st.just({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
    st.just({"const": "k"}),
)


def with_default(schema: dict[str, Any], draw: Any) -> dict[str, Any]:
    if draw(st.booleans()) and schema.get("type") == "integer" and "multipleOf" not in schema:
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 5)
        if low <= high:
            return {**schema, "default": low}
    return schema


@st.composite
def object_schemas(draw: Any, depth: int = 0) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    properties: dict[str, Any] = {}
    for name in names:
        if depth < 1 and draw(st.integers(0, 4)) == 0:
            properties[name] = draw(object_schemas(depth + 1))
        else:
            properties[name] = with_default(draw(leaf_schemas), draw)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [n for n in names if draw(st.booleans())]
    if required:
        schema["required"] = required
    closing = draw(st.sampled_from([None, True, False]))
    if closing is not None:
        schema["additionalProperties"] = closing
    return schema


def objects_in(schema: dict[str, Any], *, through_items: bool = False) -> list[dict[str, Any]]:
    """`schema` and the object schemas among its properties, nested; with
    `through_items`, those that are the `items` of an array property too."""
    found = [schema]
    for sub in schema.get("properties", {}).values():
        if not isinstance(sub, dict):
            continue
        if sub.get("type") == "object":
            found += objects_in(sub, through_items=through_items)
        items = sub.get("items") if through_items else None
        if isinstance(items, dict) and items.get("type") == "object":
            found += objects_in(items, through_items=through_items)
    return found


@st.composite
def mutated(draw: Any, schema: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(schema)
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(objects_in(new)))
        props = target.setdefault("properties", {})
        action = draw(
            st.sampled_from(
                [
                    "remove",
                    "rename",
                    "add",
                    "add-default",
                    "require",
                    "unrequire",
                    "replace",
                    "close",
                    "open",
                    "default",
                    "enum",
                ]
            )
        )
        names = list(props)
        if action == "remove" and names:
            name = draw(st.sampled_from(names))
            props.pop(name)
            target["required"] = [r for r in target.get("required", []) if r != name]
        elif action == "rename" and names:
            name = draw(st.sampled_from(names))
            free = [n for n in ["p", "q", "s"] if n not in props]
            props[free[0]] = props.pop(name)
        elif action in ("add", "add-default"):
            free = [n for n in [*NAMES, "f", "g"] if n not in props]
            if free:
                leaf = draw(leaf_schemas)
                if action == "add-default" and leaf.get("type") == "integer":
                    leaf = {**leaf, "default": leaf.get("minimum", leaf.get("maximum", 0))}
                props[free[0]] = leaf
        elif action == "require" and names:
            target["required"] = sorted({*target.get("required", []), draw(st.sampled_from(names))})
        elif action == "unrequire" and target.get("required"):
            target["required"] = target["required"][1:]
        elif action == "replace" and names:
            props[draw(st.sampled_from(names))] = draw(leaf_schemas)
        elif action == "close":
            target["additionalProperties"] = False
        elif action == "open":
            target.pop("additionalProperties", None)
        elif action == "default" and names:
            name = draw(st.sampled_from(names))
            sub = props[name]
            if isinstance(sub, dict) and sub.get("type") == "integer":
                if "default" in sub:
                    sub.pop("default")
                else:
                    sub["default"] = sub.get("minimum", 0)
        elif action == "enum" and names:
            name = draw(st.sampled_from(names))
            sub = props[name]
            if isinstance(sub, dict) and "enum" in sub:
                values = draw(st.sets(st.sampled_from(["r", "w", "x", "y"]), min_size=1))
                sub["enum"] = sorted(values)
        if target.get("required") == []:
            target.pop("required")
    return new


def closed(schema: Any) -> Any:
    """`schema` with every open object closed: callers send declared properties
    (the closed-world reading of the corpus README; adding an optional property
    to an open object is additive by docs/contract.md)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") == "object" and out.get("additionalProperties", True) is True:
        out["additionalProperties"] = False
    if "properties" in out:
        out["properties"] = {k: closed(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = closed(out["items"])
    return out


def _lost_or_redefaulted(old: dict[str, Any], new: dict[str, Any], value: Any) -> str | None:
    """Why an old-valid `value` is read differently by `new`, or None."""
    if not isinstance(value, dict) or old.get("type") != "object":
        return None
    old_props = old.get("properties", {})
    new_props = new.get("properties", {}) if isinstance(new, dict) else {}
    for name in old_props:
        if name in value and name not in new_props:
            return f"value of {name!r} is dropped"
        if name not in value and name in new_props:
            before = old_props[name].get("default") if isinstance(old_props[name], dict) else None
            after = new_props[name].get("default") if isinstance(new_props[name], dict) else None
            if before != after:
                return f"absent {name!r} read as {after!r} instead of {before!r}"
        if name in value and name in new_props and isinstance(old_props[name], dict):
            reason = _lost_or_redefaulted(old_props[name], new_props[name], value[name])
            if reason:
                return reason
    return None


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_nothing_breaking_means_old_calls_still_hold(data: st.DataObject) -> None:
    old = data.draw(object_schemas())
    new = data.draw(mutated(old))
    report = classify({"name": "t", "inputSchema": old}, {"name": "t", "inputSchema": new})
    old_validator = Draft202012Validator(old)
    new_validator = Draft202012Validator(new)
    for change in report.breaking:
        if change.witness is not None:
            assert old_validator.is_valid(change.witness), (change, old)
    if report.severity is Severity.BREAKING:
        return
    for _ in range(3):
        instance = data.draw(from_schema(closed(old)))
        assume(old_validator.is_valid(instance))
        assert new_validator.is_valid(instance), (old, new, instance, report)
        assert _lost_or_redefaulted(old, new, instance) is None, (old, new, instance, report)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=object_schemas())
def test_every_schema_compared_with_itself_is_identical(schema: dict[str, Any]) -> None:
    definition = {"name": "t", "inputSchema": schema}
    assert classify(definition, copy.deepcopy(definition)).changes == []


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_breaking_input_changes_carry_a_checked_witness(data: st.DataObject) -> None:
    old = data.draw(object_schemas())
    new = data.draw(mutated(old))
    report = classify({"name": "t", "inputSchema": old}, {"name": "t", "inputSchema": new})
    old_validator = Draft202012Validator(old)
    for change in report.breaking:
        # `unanalyzable` fails closed: the change may have no counterexample at all
        if change.kind is not Kind.UNANALYZABLE:
            assert change.witness is not None, (change, old, new)
        if change.witness is not None:
            assert old_validator.is_valid(change.witness), (change, old, new)
