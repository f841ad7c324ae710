"""`surface_changes` (annotations, plain property additions, widened enums
and names no longer required, settled without a walk) reports exactly what
the walk reports, wherever it answers: on every corpus pair, on the soundness
suites' random pairs, and on random edits made for it, some of which it must
leave to the walk (a required or defaulted addition, a `$ref`, an object with
`patternProperties`, an enum added or gaining a value of a new type).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.compat import LIMITS, ClassificationError, Limits, Side
from registry.compat.classifier import _change, _walked, classify_schemas, rewritten
from registry.compat.dialects import ANNOTATIONS
from registry.compat.surface import surface_changes
from tests.corpus import load_pairs
from tests.test_soundness import mutated, object_schemas, objects_in

POINTER = "/inputSchema"


def _as_walked(old: Any, new: Any) -> list[tuple[Any, ...]]:
    return _key(_walked(old, new, POINTER, Side.INPUT, LIMITS))


def _key(changes: list[Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (c.kind.value, c.path, c.severity.value, c.message, repr(c.old), repr(c.new))
        for c in changes
    )


def _as_surfaced(old: Any, new: Any) -> list[tuple[Any, ...]] | None:
    found = surface_changes(old, new, POINTER, LIMITS)
    if found is None:
        return None
    # as `classify` reads it: no finding at all is a rewrite with the same meaning
    return _key([_change(Side.INPUT, finding) for finding in found or [rewritten(POINTER)]])


def test_corpus_pairs_surface_as_the_walk_reports() -> None:
    settled = 0
    for pair in load_pairs():
        if pair.new is None:
            continue
        old, new = pair.old.get("inputSchema"), pair.new.get("inputSchema")
        if not isinstance(old, dict) or not isinstance(new, dict) or old == new:
            continue
        surfaced = _as_surfaced(old, new)
        if surfaced is not None and surfaced:
            assert surfaced == _as_walked(old, new), pair.id
            settled += 1
    assert settled >= 50  # the shortcut does answer for real changes


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_mutations_surface_as_the_walk_reports(data: st.DataObject) -> None:
    old = data.draw(object_schemas())
    new = data.draw(mutated(old))
    surfaced = _as_surfaced(old, new)
    if surfaced:
        assert surfaced == _as_walked(old, new)


ADDED = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "integer", "description": "n"}),
    st.just({"type": "object", "properties": {"z": {"type": "string"}}}),
    st.just({"type": "array", "items": {"type": "integer"}}),
    st.just(True),
    st.just(False),
    st.just({"type": "integer", "default": 3}),  # default-added: the walk's
    st.just({"$ref": "#/$defs/d"}),  # may carry a default: the walk's
    st.just({"allOf": [{"type": "string", "default": "x"}]}),
    st.just({"anyOf": [{"type": "string", "default": "x"}]}),
)


@st.composite
def surface_edits(draw: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """Properties added to some objects of `schema` (required now and then),
    descriptions edited, now and then a keyword the surface leaves alone."""
    new = copy.deepcopy(schema)
    objects = objects_in(new, through_items=True)
    for target in draw(st.lists(st.sampled_from(objects), min_size=1, max_size=3)):
        edit = draw(
            st.sampled_from(["add", "add", "describe", "require", "pattern", "widen", "unrequire"])
        )
        name = draw(st.sampled_from(["n1", "n2", "a", "b"]))
        if edit == "add" and name not in target["properties"]:
            target["properties"][name] = draw(ADDED)
        elif edit == "describe":
            key = draw(st.sampled_from(sorted(target["properties"])))
            sub = target["properties"][key]
            if isinstance(sub, dict):
                annotation = draw(st.sampled_from(sorted(ANNOTATIONS)))
                sub[annotation] = draw(st.sampled_from(["one", "two", True, 1]))
        elif edit == "require" and name not in target["properties"]:
            target["properties"][name] = {"type": "string"}
            target.setdefault("required", []).append(name)
        elif edit == "pattern":
            target["patternProperties"] = {"^x": {"type": "string"}}
        elif edit == "widen":
            leaves = [p for p in target["properties"].values() if isinstance(p, dict)]
            leaf = draw(st.sampled_from(leaves)) if leaves else {}
            if "enum" in leaf:
                leaf["enum"] = [*leaf["enum"], draw(st.sampled_from(["z", "r", 5, None, 1.0]))]
            elif leaf.get("type") == "string":
                leaf["enum"] = ["r", "w"]  # an enum added narrows: the walk's
        elif edit == "unrequire" and target.get("required"):
            target["required"] = target["required"][: draw(st.integers(0, 1))]
    if draw(st.booleans()):
        new["$defs"] = {"d": {"type": "string", "default": "x"}}
    return new


ITEMS_OF_OBJECTS = st.builds(
    lambda inner: {
        "type": "object",
        "properties": {"list": {"type": "array", "items": inner}, "q": {"type": "string"}},
    },
    object_schemas(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_additions_and_edits_surface_as_the_walk_reports(data: st.DataObject) -> None:
    old = data.draw(st.one_of(object_schemas(), ITEMS_OF_OBJECTS))
    if data.draw(st.booleans()):
        old = {**old, "$defs": {"d": {"type": "string", "default": "x"}}}
    new = data.draw(surface_edits(old))
    if "$defs" in new and "$defs" not in old:
        old = {**old, "$defs": new["$defs"]}
    surfaced = _as_surfaced(old, new)
    if surfaced is not None:
        assert surfaced == _as_walked(old, new)


@pytest.mark.parametrize(
    ("added", "settled"),
    [
        ({"type": "string"}, True),
        (True, True),
        ({"type": "string", "default": "x"}, False),
        ({"$ref": "#/$defs/d"}, False),
    ],
)
def test_an_optional_addition_is_settled_and_a_defaulted_one_walked(
    added: Any, settled: bool
) -> None:
    old: dict[str, Any] = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }
    if isinstance(added, dict) and "$ref" in added:
        old["$defs"] = {"d": {"type": "string"}}
    new = copy.deepcopy(old)
    new["properties"]["limit"] = added
    surfaced = _as_surfaced(old, new)
    assert (surfaced is not None) is settled
    walked = _as_walked(old, new)
    if settled:
        assert surfaced == walked
        assert [kind for kind, *_ in walked] == ["property-added"]


def test_an_addition_beside_pattern_properties_or_required_is_walked() -> None:
    old = {"type": "object", "properties": {"q": {"type": "string"}}}
    with_pattern = {**old, "patternProperties": {"^l": {"type": "integer"}}}
    added = {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "string"}}}
    assert (
        _as_surfaced(with_pattern, {**added, "patternProperties": {"^l": {"type": "integer"}}})
        is None
    )
    assert _as_surfaced(old, {**added, "required": ["limit"]}) is None
    assert _as_surfaced(old, added) == _as_walked(old, added)


ENUM_VALUES = st.sampled_from(["a", "b", "z", 0, 1, 2, 1.0, 1.5, None, True, False])
SCALAR_TYPES = st.sampled_from(
    ["string", "integer", "number", "boolean", "null", ["string", "null"], ["integer", "string"]]
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    SCALAR_TYPES,
    st.lists(ENUM_VALUES, min_size=1, max_size=4),
    st.lists(ENUM_VALUES, max_size=3),
    st.booleans(),
    st.booleans(),
)
def test_grown_enums_surface_as_the_walk_reports(
    types: Any, values: list[Any], more: list[Any], in_items: bool, with_default: bool
) -> None:
    """Values added to an enum: widened when they keep its value types (a
    repeated value, a new type or one `type` refuses are the walk's)."""
    leaf: dict[str, Any] = {"type": types, "enum": values}
    if with_default:
        leaf["default"] = values[0]

    def tool(schema: dict[str, Any]) -> dict[str, Any]:
        held = {"type": "array", "items": schema} if in_items else schema
        return {"type": "object", "properties": {"x": held, "q": {"type": "string"}}}

    old, new = tool(leaf), tool({**leaf, "enum": values + more})
    surfaced = _as_surfaced(old, new)
    if old != new and surfaced is not None:
        assert surfaced == _as_walked(old, new)


def test_a_widened_enum_and_a_name_no_longer_required_are_settled() -> None:
    old = {
        "type": "object",
        "properties": {"mode": {"type": "string", "enum": ["r"]}, "q": {"type": "string"}},
        "required": ["q", "mode"],
    }
    new = copy.deepcopy(old)
    new["properties"]["mode"]["enum"] = ["r", "w"]
    new["required"] = ["q"]
    surfaced = _as_surfaced(old, new)
    assert surfaced is not None
    assert surfaced == _as_walked(old, new)
    assert [kind for kind, *_ in surfaced] == ["enum-widened", "required-removed"]


def _deep(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    schema = leaf
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _wide(description: str) -> dict[str, Any]:
    branches = [{"type": "object", "properties": {f"k{i}": {"type": "string"}}} for i in range(40)]
    branches[7] = {**branches[7], "description": description}
    return {"type": "object", "properties": {"v": {"anyOf": branches}}}


def _many_and_one_deep(description: str) -> dict[str, Any]:
    """Many plain properties, arrays among them, and one that nests 20 deep
    (the pass tells the deep one apart level by level); the first is described."""
    properties: dict[str, Any] = {
        f"p{i}": {"type": "array", "items": {"type": "string"}} if i % 5 else {"type": "string"}
        for i in range(120)
    }
    properties["p0"] = {"type": "string", "description": description}
    properties["deep"] = _deep(20, {})
    return {"type": "object", "properties": properties}


def _ref_beside(description: str) -> dict[str, Any]:
    """A schema that holds a `$ref` beside the property whose description changes."""
    return {
        "$ref": "#/$defs/d",
        "type": "object",
        "properties": {"q": {"type": "string", "description": description}},
        "$defs": {"d": _deep(20, {})},
    }


def _referring(hops: int, description: str) -> dict[str, Any]:
    """A property whose schema reaches a string through `hops` `$defs`, each a `$ref`."""
    defs = {
        f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}}}
        for i in range(hops)
    }
    defs[f"d{hops}"] = {"type": "string"}
    return {
        "type": "object",
        "description": description,
        "properties": {"p": {"$ref": "#/$defs/d0"}},
        "$defs": defs,
    }


LIMITED = [
    Limits(max_depth=5),
    Limits(max_walk_depth=5),
    Limits(max_nodes=3),
    Limits(max_nodes=30),
    Limits(max_steps=0),
    Limits(max_branch_pairs=1),
]
SURFACE_PAIRS = {
    "deep description": (
        _deep(20, {"type": "string"}),
        _deep(20, {"type": "string", "description": "d"}),
    ),
    "deep addition": (
        _deep(20, {"type": "object", "properties": {}}),
        _deep(20, {"type": "object", "properties": {"n": {"type": "integer"}}}),
    ),
    "wide union": (_wide("one"), _wide("two")),
    # the depth is where the pass does not go: a part both versions hold (a
    # map of schemas among them: "deep sibling"), an added property's schema,
    # `$ref` hops through `$defs`
    "deep sibling": (
        {**_deep(1, {"type": "string"}), "properties": {"b": _deep(20, {})}},
        {**_deep(1, {"type": "string"}), "properties": {"b": _deep(20, {})}, "title": "t"},
    ),
    "deep added schema": (
        _deep(1, {"type": "string"}),
        _deep(0, {"type": "object", "properties": {"a": {"type": "string"}, "n": _deep(20, {})}}),
    ),
    "ref beside the change": (_ref_beside("one"), _ref_beside("two")),
    # a list of schemas both versions hold: its schemas are measured one by one
    "deep union beside the change": (
        {"type": "object", "description": "one", "anyOf": [{}, _deep(20, {})]},
        {"type": "object", "description": "two", "anyOf": [{}, _deep(20, {})]},
    ),
    "many properties, one deep": (_many_and_one_deep("one"), _many_and_one_deep("two")),
    "deep through refs": (
        _referring(20, "one"),
        _referring(20, "two"),
    ),
}


def _outcome(run: Any) -> Any:
    try:
        return _key(run())
    except ClassificationError as refused:
        return str(refused)


@pytest.mark.parametrize("limits", LIMITED, ids=repr)
@pytest.mark.parametrize("pair", sorted(SURFACE_PAIRS))
def test_the_cheap_pass_honours_limits(limits: Limits, pair: str) -> None:
    """What the classifier answers under tight limits is what the walk alone
    answers under them: a report, or the same refusal (a 20-deep schema with
    `max_depth=5` is refused whether a description or a type changed)."""
    old, new = SURFACE_PAIRS[pair]
    assert _as_surfaced(old, new) is not None  # the cheap pass settles it under the defaults
    classified = _outcome(lambda: classify_schemas(old, new, Side.INPUT, limits=limits).changes)
    assert classified == _outcome(lambda: _walked(old, new, POINTER, Side.INPUT, limits))
