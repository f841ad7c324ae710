"""Soundness across the keywords the engine analyses beyond plain objects:
combinators (folded `allOf`, unions, `not`), `dependentRequired` /
`dependentSchemas` / `dependencies`, `propertyNames`, `patternProperties`,
`unevaluatedProperties` / `unevaluatedItems`, tuples, `contains`, `$ref`, and
dialect changes (draft-07 <-> 2020-12 with each dialect's spellings).

Random schemas are mutated at random; whenever the engine reports nothing
breaking, every old-valid instance drawn from a small universe of JSON values
must stay valid under the new schema (python-jsonschema, in each side's own
dialect). Objects are closed (`additionalProperties: false`, a map schema, or
`unevaluatedProperties: false`) so that docs/contract.md's reading of an open object
(an undeclared name was no contract) never decides a case. Every witness is
checked too: valid under old, and refused by new unless the kind reads it
differently.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import Draft202012Validator, validator_for

from registry.compat import Severity, classify
from registry.compat.kinds import READ_DIFFERENTLY

NAMES = ["a", "b", "c"]
KEYS = [*NAMES, "x1", "zz"]  # x1 matches the pattern below, zz nothing
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"

strings = st.sampled_from(["", "a", "b", "ab", "x1"])
numbers = st.sampled_from([0, 1, -1, 2, 1.5, 10])

leaves = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "integer"}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.just({"type": ["string", "null"]}),
    st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 2)),
    st.builds(lambda n: {"type": "integer", "minimum": n}, st.integers(-1, 2)),
    st.builds(lambda n: {"type": "number", "exclusiveMaximum": n}, st.integers(-1, 2)),
    st.builds(
        lambda v: {"enum": sorted(v)}, st.sets(st.sampled_from(["a", "b", "ab"]), min_size=1)
    ),
    st.builds(lambda v: {"const": v}, st.sampled_from(["a", 1, True, None])),
    st.just({"type": "string", "pattern": "^a"}),
    st.just({"not": {"type": "string"}, "type": ["integer", "string"]}),
).map(copy.deepcopy)  # edits below change drawn schemas in place


@st.composite
def objects(draw: Any, depth: int) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: draw(schemas(depth + 1)) for name in names},
    }
    if names and draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    closing = draw(st.sampled_from(["false", "map", "pattern", "unevaluated"]))
    if closing == "false":
        schema["additionalProperties"] = False
    elif closing == "map":
        schema["additionalProperties"] = draw(leaves)
    elif closing == "pattern":
        schema["patternProperties"] = {"^x": draw(leaves)}
        schema["additionalProperties"] = False
    else:
        schema["unevaluatedProperties"] = False
    extra = draw(st.sampled_from(["", "dependentRequired", "dependentSchemas", "propertyNames"]))
    if extra == "dependentRequired" and len(names) >= 2:
        schema["dependentRequired"] = {names[0]: [names[1]]}
    elif extra == "dependentSchemas" and names:
        schema["dependentSchemas"] = {names[0]: {"required": [draw(st.sampled_from(NAMES))]}}
    elif extra == "propertyNames":
        schema["propertyNames"] = draw(
            st.sampled_from([{"maxLength": 1}, {"pattern": "^[ab]"}, {"enum": ["a", "b", "x1"]}])
        )
    return schema


@st.composite
def arrays(draw: Any, depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    form = draw(st.sampled_from(["items", "tuple", "tuple-unevaluated", "contains"]))
    if form == "items":
        schema["items"] = draw(schemas(depth + 1))
    elif form.startswith("tuple"):
        schema["prefixItems"] = [draw(leaves) for _ in range(draw(st.integers(1, 2)))]
        rest = draw(st.one_of(st.just(False), leaves))
        schema["unevaluatedItems" if form == "tuple-unevaluated" else "items"] = rest
    else:
        schema["items"] = draw(leaves)
        schema["contains"] = draw(leaves)
        if draw(st.booleans()):
            schema["maxContains"] = draw(st.integers(1, 2))
    if draw(st.booleans()):
        schema["maxItems"] = draw(st.integers(0, 3))
    return schema


@st.composite
def schemas(draw: Any, depth: int = 0) -> dict[str, Any]:
    if depth >= 2:
        return draw(leaves)
    kind = draw(
        st.sampled_from(["leaf", "object", "array", "allOf", "anyOf", "oneOf", "not", "ref"])
    )
    if kind == "object":
        return draw(objects(depth))
    if kind == "array":
        return draw(arrays(depth))
    if kind in ("allOf", "anyOf", "oneOf"):
        branches = draw(st.lists(st.one_of(leaves, schemas(depth + 1)), min_size=1, max_size=3))
        return {kind: branches}
    if kind == "not":
        return {"type": ["string", "integer"], "not": draw(leaves)}
    if kind == "ref":
        return {"$ref": "#/$defs/shared"}
    return draw(leaves)


def _dicts(schema: Any, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(schema, dict):
        out.append(schema)
        for key, value in schema.items():
            if key in ("properties", "patternProperties", "dependentSchemas", "$defs"):
                for sub in value.values():
                    _dicts(sub, out)
            elif isinstance(value, list) and key in ("allOf", "anyOf", "oneOf", "prefixItems"):
                for sub in value:
                    _dicts(sub, out)
            elif isinstance(value, dict) and key not in ("dependentRequired",):
                _dicts(value, out)
    return out


EDITS = [
    "drop-keyword",
    "replace-leaf",
    "add-branch",
    "drop-branch",
    "reorder",
    "wrap-allOf",
    "wrap-anyOf",
    "swap-union",
    "require",
    "unrequire",
    "add-property",
    "drop-property",
    "bump",
    "respell",
    "open",
    "not",
]


@st.composite
def mutated(draw: Any, root: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(root)
    for _ in range(draw(st.integers(1, 2))):
        target = draw(st.sampled_from(_dicts(new, [])))
        edit = draw(st.sampled_from(EDITS))
        keys = [k for k in target if k not in ("$schema", "$defs")]
        unions = [k for k in ("allOf", "anyOf", "oneOf") if k in target]
        if edit == "drop-keyword" and keys:
            target.pop(draw(st.sampled_from(keys)))
        elif edit == "replace-leaf":
            leaf = draw(leaves)
            target.clear()
            target.update(leaf)
        elif edit == "add-branch" and unions:
            target[unions[0]].append(draw(leaves))
        elif edit == "drop-branch" and unions and len(target[unions[0]]) > 1:
            target[unions[0]].pop(draw(st.integers(0, len(target[unions[0]]) - 1)))
        elif edit == "reorder" and unions:
            target[unions[0]].reverse()
        elif edit in ("wrap-allOf", "wrap-anyOf") and keys:
            inner = {k: target.pop(k) for k in keys}
            target[edit.removeprefix("wrap-")] = [inner]
        elif edit == "swap-union" and unions:
            swapped = {"allOf": "anyOf", "anyOf": "oneOf", "oneOf": "anyOf"}[unions[0]]
            target[swapped] = target.pop(unions[0])
        elif edit == "require" and target.get("properties"):
            target["required"] = sorted({*target.get("required", []), *target["properties"]})
        elif edit == "unrequire" and target.get("required"):
            target["required"] = target["required"][1:] or target.pop("required")
        elif edit == "add-property" and "properties" in target:
            free = [n for n in NAMES if n not in target["properties"]]
            closed = "additionalProperties" in target or "unevaluatedProperties" in target
            if free and closed:
                target["properties"][free[0]] = draw(leaves)
        elif edit == "drop-property" and target.get("properties"):
            target["properties"].pop(draw(st.sampled_from(sorted(target["properties"]))))
        elif edit == "bump":
            for key in ("maxLength", "minimum", "exclusiveMaximum", "maxItems", "maxContains"):
                if key in target:
                    target[key] += draw(st.sampled_from([-1, 1]))
        elif edit == "respell":  # a bound written the other way (`gt` for `ge`), maybe moved
            for plain, strict in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
                shift = draw(st.sampled_from([-1, 0, 1]))
                if plain in target:
                    target[strict] = target.pop(plain) + shift
                elif strict in target:
                    target[plain] = target.pop(strict) + shift
        elif edit == "open" and "additionalProperties" in target:
            target["additionalProperties"] = draw(st.one_of(st.just(True), leaves))
        elif edit == "not":
            target["not"] = draw(leaves)
    return new


def in_dialect(schema: dict[str, Any], dialect: str) -> dict[str, Any]:
    """The 2020-12 spelling of `schema` rewritten for draft-07 where it has one."""
    if dialect == DRAFT_2020:
        return {"$schema": DRAFT_2020, **schema}

    def rewrite(node: Any) -> Any:
        if isinstance(node, list):
            return [rewrite(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: rewrite(v) for k, v in node.items()}
        if "prefixItems" in out:
            out["items"], rest = out.pop("prefixItems"), out.pop("items", None)
            if rest is not None:
                out["additionalItems"] = rest
        if "dependentRequired" in out or "dependentSchemas" in out:
            out["dependencies"] = {
                **out.pop("dependentRequired", {}),
                **out.pop("dependentSchemas", {}),
            }
        if "$defs" in out:
            out["definitions"] = out.pop("$defs")
        if isinstance(out.get("$ref"), str):
            out["$ref"] = out["$ref"].replace("#/$defs/", "#/definitions/")
        return out

    return {"$schema": DRAFT_07, **rewrite(schema)}


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, strings),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    ),
    max_leaves=6,
)


def _validator(schema: dict[str, Any]) -> Any:
    return validator_for(schema, default=Draft202012Validator)(schema)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_nothing_breaking_means_every_old_value_stays_valid(data: st.DataObject) -> None:
    body = data.draw(schemas())
    shared = data.draw(leaves)
    old_body = {"$defs": {"shared": shared}, **body}
    new_body = data.draw(mutated(old_body))
    old_dialect = data.draw(st.sampled_from([DRAFT_2020, DRAFT_07]))
    new_dialect = data.draw(st.sampled_from([old_dialect, DRAFT_2020, DRAFT_07]))
    old = in_dialect(old_body, old_dialect)
    new = in_dialect(new_body, new_dialect)
    report = classify({"name": "t", "inputSchema": old}, {"name": "t", "inputSchema": new})
    old_validator, new_validator = _validator(old), _validator(new)
    for change in report.breaking:
        if change.witness is not None:
            assert old_validator.is_valid(change.witness), (change, old, new)
            if change.kind not in READ_DIFFERENTLY:
                assert not new_validator.is_valid(change.witness), (change, old, new)
    if report.severity is Severity.BREAKING:
        return
    for value in data.draw(st.lists(json_values, min_size=20, max_size=20)):
        if old_validator.is_valid(value):
            assert new_validator.is_valid(value), (old, new, value, report)
