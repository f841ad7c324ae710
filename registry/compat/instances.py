"""Instances: values valid under a schema node, made from the schemas, and the
candidate witnesses built from them (arguments the old version accepts that
the new one refuses or reads differently); `witnesses.py` keeps a candidate
only once python-jsonschema confirms it.

`build` starts from the old root, follows the finding's route (property
names, array positions, union branches) building the smallest instance valid
under each old node, and puts the finding's leaf at the end. The caller keeps
a witness only when python-jsonschema accepts it under the old schema.
"""

from __future__ import annotations

from typing import Any

from registry.compat.schema import ANYTHING, Node, Properties
from registry.compat.walk import Leaf, Route, deref
from registry.patterns import PatternError, search

__all__ = ["build", "instance_of"]

_TYPE_ORDER = ("object", "string", "integer", "number", "boolean", "array", "null")

_FORMAT_SAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "idn-email": "a@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "duration": "P1D",
    "regex": "a",
    "json-pointer": "/a",
}

_MAX_DEPTH = 24


def instance_of(node: Node, depth: int = 0, of_type: str | None = None) -> Any:
    """The smallest value valid under `node` the generator can find (best
    effort), of JSON type `of_type` when given. Worked out once per node, depth
    and type (each witness of a classification starts from the same root); an
    object or array comes back as a fresh copy of its top level, which callers
    may change, sharing the values below it."""
    node = deref(node)
    key = f"instance {depth} {of_type}"
    found = node.memo.get(key, _NOT_YET)
    if found is _NOT_YET:
        found = node.memo[key] = _instance_of(node, depth, of_type)
    kind = type(found)
    if kind is dict or kind is list:
        return found.copy()
    return found


_NOT_YET: Any = object()


def _instance_of(node: Node, depth: int, of_type: str | None) -> Any:
    if depth > _MAX_DEPTH or node.unsatisfiable():
        return None
    if node.has_const:
        return node.const
    if node.enum:
        return node.enum[0]
    if node.all_of:
        merged: Any = None
        for branch in node.all_of:
            part = instance_of(branch, depth + 1)
            if isinstance(merged, dict) and isinstance(part, dict):
                merged = {**part, **merged}
            elif merged is None:
                merged = part
        if node.types is None and not node.properties:
            return merged
    branches = node.any_of or node.one_of
    if branches and node.types is None and not node.properties:
        return instance_of(branches[0], depth + 1)
    kind = of_type or _pick_type(node)
    if kind == "object":
        out = _object(node, depth)
        for branch in (*(node.all_of or ()), *(branches or ())[:1]):
            # a conjunct beside the node's own keywords: what it asks of the object too
            part = instance_of(branch, depth + 1, "object")
            if isinstance(part, dict):
                out = {**part, **out} if branch in (node.all_of or ()) else {**out, **part}
        for name, schema in node.dependent_schemas.items():
            if name in out:
                part = instance_of(schema, depth + 1, "object")
                if isinstance(part, dict):
                    out = {**part, **out}
        return out
    if kind == "array":
        return _array(node, depth)
    if kind == "string":
        return _string(node)
    if kind in ("integer", "number"):
        return _number(node, kind)
    if kind == "boolean":
        return False
    return None


def _pick_type(node: Node) -> str:
    if node.types is not None:
        refused = deref(node.not_).effective_types() if node.not_ is not None else frozenset()
        usable = [t for t in _TYPE_ORDER if t in node.types]
        return next((t for t in usable if t not in refused), usable[0] if usable else "null")
    if node.properties or node.required or node.additional_properties is not None:
        return "object"
    if node.prefix_items or node.rest_items is not None:
        return "array"
    if node.pattern is not None or node.format is not None or "minLength" in node.bounds:
        return "string"
    if "minimum" in node.bounds or "maximum" in node.bounds or "multipleOf" in node.bounds:
        return "number"
    return "string"


def _object(node: Node, depth: int) -> dict[str, Any]:
    properties = node.properties
    raws = properties.schemas if type(properties) is Properties and depth < _MAX_DEPTH else None
    out = {}
    for name in sorted(node.required):
        if name not in properties:
            out[name] = "x"
            continue
        quick = _plain_sample(raws[name]) if raws is not None else _NOT_YET
        out[name] = quick if quick is not _NOT_YET else instance_of(properties[name], depth + 1)
    want = int(node.bounds.get("minProperties", 0))
    for name, sub in node.properties.items():
        if len(out) >= want:
            break
        out.setdefault(name, instance_of(sub, depth + 1))
    n = 0
    while len(out) < want:
        out[f"extra_{n}"] = "x"
        n += 1
    for name in list(out):
        for needed in sorted(node.dependent_required.get(name, ())):
            if needed not in out:
                out[needed] = _value_for(node, needed, depth)
    return out


def _plain_sample(raw: Any) -> Any:
    """What `instance_of` makes of a schema that names one scalar type and
    nothing else that constrains (`{"type": "string", "description": ...}`,
    most required arguments), read from the raw schema without making its
    node; `_NOT_YET` for any other schema."""
    if type(raw) is not dict or not raw.keys() <= _PLAIN_KEYS:
        return _NOT_YET
    kind = raw.get("type")
    return _PLAIN_SAMPLES.get(kind, _NOT_YET) if type(kind) is str else _NOT_YET


_PLAIN_KEYS = frozenset(
    {"type", "description", "title", "default", "examples", "$comment", "deprecated"}
)
# (as `_string`, `_number` and `_instance_of` make them for a lone type)
_PLAIN_SAMPLES = {"string": "a", "integer": 0, "number": 0.5, "boolean": False, "null": None}


def _array(node: Node, depth: int) -> list[Any]:
    out = [instance_of(item, depth + 1) for item in node.prefix_items]
    if node.contains is not None:
        matching = instance_of(node.contains, depth + 1)
        out += [matching] * int(node.bounds.get("minContains", 1))
    want = int(node.bounds.get("minItems", 0))
    while len(out) < want:
        sample = instance_of(node.rest_items, depth + 1) if node.rest_items else len(out)
        if node.unique_items and isinstance(sample, int | float) and not isinstance(sample, bool):
            sample = len(out)
        out.append(sample)
    return out


def _string(node: Node) -> str:
    if node.format in _FORMAT_SAMPLES:
        return _FORMAT_SAMPLES[node.format]
    longest = node.bounds.get("maxLength")
    length = int(node.bounds.get("minLength", 1 if longest is None or longest >= 1 else 0))
    if node.pattern is not None:
        for candidate in _pattern_candidates(node.pattern, length):
            return candidate
    return "a" * length


def _pattern_candidates(pattern: str, length: int) -> list[str]:
    pool = [
        "a" * max(length, 1),
        "a",
        "0",
        "A",
        "a-b",
        "a_b",
        "a.b",
        "a1",
        "1",
        "x" * 8,
        "https://example.com",
        "a@example.com",
        "2024-01-01",
        "owner/repo",
        "",
    ]
    try:  # RE2, linear: a publisher's pattern never runs on a backtracking engine
        return [c for c in pool if len(c) >= length and search(pattern, c)][:1]
    except PatternError:
        return []


def _number(node: Node, kind: str) -> int | float:
    low = node.bounds.get("minimum")
    if low is None and "exclusiveMinimum" in node.bounds:
        low = node.bounds["exclusiveMinimum"] + (1 if kind == "integer" else 0.5)
    high = node.bounds.get("maximum")
    if high is None and "exclusiveMaximum" in node.bounds:
        high = node.bounds["exclusiveMaximum"] - (1 if kind == "integer" else 0.5)
    value: int | float = 0
    if low is not None:
        value = low
    elif high is not None and high < 0:
        value = high
    step = node.bounds.get("multipleOf")
    if step:
        k = -(-value // step)
        value = k * step
    if kind == "integer" and float(value).is_integer():
        return int(value)
    if not step and (high is None or value + 0.5 <= high):
        return value + 0.5  # a number that is no integer
    return value


def build(root: Node, route: Route, leaf: Leaf, new_at_leaf: Node | None = None) -> Any:
    """The arguments object for a finding: the route from `root`, then `leaf`."""
    return _build(deref(root), list(route), leaf, 0)


def _build(node: Node, route: list[Any], leaf: Leaf, depth: int) -> Any:
    if depth > _MAX_DEPTH + 40:
        return None
    if not route:
        return _leaf(node, leaf)
    step, rest = route[0], route[1:]
    if step.via == "branch" and step.branch is not None:
        return _build(deref(step.branch), rest, leaf, depth + 1)
    base = instance_of(node, depth)
    if step.via == "present":
        # an object carrying `key`, then what the dependent schema asks of it
        base = base if isinstance(base, dict) else {}
        name = str(step.key)
        if name not in base:
            base[name] = _value_for(node, name, depth)
        inner = _build(deref(step.branch or ANYTHING), rest, leaf, depth + 1)
        return {**base, **inner, name: base[name]} if isinstance(inner, dict) else base
    if step.via == "name":
        base = base if isinstance(base, dict) else {}
        name = _build(deref(step.branch or ANYTHING), rest, leaf, depth + 1)
        if isinstance(name, str):
            base[name] = _value_for(node, name, depth)
        return base
    if step.via in ("prop", "extra"):
        if not isinstance(base, dict):
            base = {}
        child = node.properties.get(str(step.key)) if step.via == "prop" else None
        if child is None:
            child = next(
                (s for p, s in node.pattern_properties.items() if _matches(p, str(step.key))),
                None,
            )
        if child is None:
            child = node.additional_properties or node.unevaluated_properties or ANYTHING
        base[str(step.key)] = _build(deref(child), rest, leaf, depth + 1)
        return base
    if step.via == "item":
        index = int(step.key)
        items = base if isinstance(base, list) else []
        child = node.prefix_items[index] if index < len(node.prefix_items) else node.rest_items
        child = child or ANYTHING
        while len(items) < index:
            position = len(items)
            filler = (
                node.prefix_items[position]
                if position < len(node.prefix_items)
                else node.rest_items
            )
            items.append(instance_of(filler, depth + 1) if filler else 0)
        value = _build(deref(child), rest, leaf, depth + 1)
        if index < len(items):
            items[index] = value
        else:
            items.append(value)
        return items
    return base


def _value_for(node: Node, name: str, depth: int) -> Any:
    """A value old accepts for property `name` of `node` (listed, or unlisted)."""
    schema = node.properties.get(name)
    if schema is None:
        for pattern, candidate in node.pattern_properties.items():
            if _matches(pattern, name):
                schema = candidate
                break
    if schema is None:
        schema = node.additional_properties
    if schema is None or schema.raw is True:
        return "x"
    return instance_of(schema, depth + 1)


def _matches(pattern: str, text: str) -> bool:
    from registry.patterns import PatternError, search

    try:
        return search(pattern, text)
    except PatternError:
        return False


def _leaf(node: Node, leaf: Leaf) -> Any:
    if leaf.how == "value":
        return leaf.value
    if leaf.how == "present":
        # an object carrying property `name` (and what old asks with it),
        # without the one it now needs
        base = instance_of(node)
        base = base if isinstance(base, dict) else {}
        base[leaf.name] = _value_for(node, leaf.name, 0)
        for needed in node.dependent_required.get(leaf.name, ()):
            if needed != leaf.value and needed not in base:
                base[needed] = _value_for(node, needed, 0)
        base.pop(str(leaf.value), None)
        return base
    if leaf.how == "sample":
        return instance_of(node)
    if leaf.how == "typed":
        return instance_of(node, of_type=str(leaf.value))
    if leaf.how == "absent":
        base = instance_of(node)
        if isinstance(base, dict):
            base.pop(leaf.name, None)
            return base
        return {}
    if leaf.how == "with":
        base = instance_of(node)
        base = base if isinstance(base, dict) else {}
        base[leaf.name] = leaf.value
        return base
    if leaf.how == "duplicates":
        item = instance_of(node.rest_items) if node.rest_items else 0
        return [item, item]
    if leaf.how == "format":
        return "not a " + str(leaf.value).replace("-", " ")
    if leaf.how == "pattern":
        return _outside_pattern(node, str(leaf.value))
    if leaf.how == "size":
        return _sized(node, leaf.value)
    return instance_of(node)


def _outside_pattern(node: Node, new_pattern: str) -> Any:
    old_pattern = node.pattern
    length = int(node.bounds.get("minLength", 0))
    pool = [
        "",
        "a",
        "A",
        "0",
        "-",
        " ",
        "a b",
        "ab" * 4,
        "Z9",
        "a-b",
        "a_b",
        "a.b",
        "a/b",
        "x" * 40,
        "é",
    ]
    try:  # RE2, linear: a publisher's pattern never runs on a backtracking engine
        for candidate in pool:
            if len(candidate) < length:
                continue
            if old_pattern and not search(old_pattern, candidate):
                continue
            if not search(new_pattern, candidate):
                return candidate
    except PatternError:
        pass
    return instance_of(node)


def _sized(node: Node, spec: Any) -> Any:
    keyword, before, after = spec
    if keyword in ("minItems", "maxItems"):
        count = int(
            before if before is not None else (after - 1 if keyword == "minItems" else after + 1)
        )
        item = instance_of(node.rest_items) if node.rest_items else 0
        if node.unique_items and isinstance(item, int) and not isinstance(item, bool):
            return list(range(max(count, 0)))
        return [item] * max(count, 0)
    count = int(
        before if before is not None else (after - 1 if keyword == "minProperties" else after + 1)
    )
    base = instance_of(node)
    base = base if isinstance(base, dict) else {}
    names = [n for n in node.properties if n not in base]
    while len(base) > count and keyword == "minProperties":
        removable = [k for k in base if k not in node.required]
        if not removable:
            break
        base.pop(removable[-1])
    n = 0
    while len(base) < count:
        if names:
            name = names.pop(0)
            base[name] = instance_of(node.properties[name])
        else:
            base[f"extra_{n}"] = "x"
            n += 1
    return base
