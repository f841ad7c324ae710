"""Conjunctions folded into one schema before a node is made.

`allOf` branches, a one-branch `anyOf` / `oneOf`, and a branch that is only a
`$ref` are merged into the schema that holds them wherever the merged schema
accepts exactly the same instances, so that `A`, `allOf[A]`, `allOf[A, A]`,
`oneOf[A]` and a reordered `allOf` read alike (Confluent's schema registry
and Karapace call reordering or duplicating a branch no change too). A branch
that cannot be merged without changing the meaning stays in `allOf`, where
the rules match branches as a set.

Merging is keyword by keyword: `type` and `enum` intersect, `required`
unites, lower bounds take the larger, upper bounds the smaller, `properties`
unite (a name on both sides becomes `allOf` of its two schemas), equal values
merge, annotations of the holder win. Keywords whose meaning depends on their
neighbours stop a merge: `additionalProperties` and `patternProperties` beside
another `properties`, two array shapes, anything unevaluated, identifiers and
conditionals, and keywords of no known dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from registry.compat.bounds import KEYWORDS as BOUND_KEYWORDS
from registry.compat.bounds import tightest
from registry.compat.dialects import ANNOTATIONS, UNANALYZABLE, Dialect
from registry.compat.jsonvalues import json_key

__all__ = ["Folded", "fold"]


@dataclass(slots=True)
class Folded:
    """A folded schema: its keywords, and where each one's child schemas live.

    `origins`: keyword -> the relative pointer of the schema the value came
    from (the holder, a branch `.../allOf/1`, or a `$ref` target); `names`:
    property name -> the same for `properties`; `branches`: the pointers of
    the branches left in `allOf`. Merged values get the pointer
    `<holder>/allOf`, which no `$ref` can name.
    """

    raw: dict[str, Any] | bool
    origins: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    branches: list[str] = field(default_factory=list)  # where each kept `allOf` branch lives


_OBJECT = frozenset({"properties", "patternProperties", "additionalProperties"})
_OBJECT_CLOSERS = frozenset({"patternProperties", "additionalProperties"})
_ARRAY = frozenset(
    {"items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains"}
)
# A schema holding one of these is never merged into another, nor receives one.
_NEVER = frozenset(
    {"$ref", "$id", "id", "$anchor", "$schema", "unevaluatedProperties", "unevaluatedItems"}
    | UNANALYZABLE
)
_CONTAINERS = frozenset({"$defs", "definitions"})
# Keywords a branch may carry without constraining anything.
_INERT = ANNOTATIONS | _CONTAINERS
# ... and a schema beside its `$ref`.
_IDLE = _INERT | {"$schema", "$id", "id", "$anchor"}
_MAX_DEPTH = 16
_CONFLICT: Any = object()
_ENCODER = msgspec.json.Encoder(order="sorted")

Resolve = Callable[[str], tuple[Any, str] | None]


def fold(raw: dict[str, Any], rel: str, resolve: Resolve, dialect: Dialect) -> Folded | None:
    """`raw` with its conjunctions merged, or None when it holds none (the
    common case). `resolve(ref)` gives a local `$ref`'s target and pointer."""
    if dialect.ref_overrides_siblings and "$ref" in raw:
        return None  # up to draft-07 a `$ref` makes its neighbours inert
    if "allOf" not in raw and not _one_branch(raw) and not _ref_beside(raw):
        return None
    return _Folder(resolve, dialect).fold(raw, rel, 0, frozenset())


def _ref_beside(raw: dict[str, Any]) -> bool:
    """A `$ref` beside keywords that constrain (2019-09 on: both apply)."""
    return "$ref" in raw and not (raw.keys() - {"$ref"}) <= _IDLE


def _one_branch(raw: dict[str, Any]) -> bool:
    for key in ("anyOf", "oneOf"):
        value = raw.get(key)
        if isinstance(value, list) and len(value) == 1:
            return True
    return False


class _Folder:
    def __init__(self, resolve: Resolve, dialect: Dialect) -> None:
        self.resolve = resolve
        self.dialect = dialect

    def fold(self, raw: dict[str, Any], rel: str, depth: int, active: frozenset[str]) -> Folded:
        base: dict[str, Any] = {}
        conjuncts: list[tuple[Any, str]] = []
        for key, value in raw.items():
            if key == "allOf" and isinstance(value, list) and value:
                conjuncts += [(branch, f"{rel}/allOf/{i}") for i, branch in enumerate(value)]
            elif key in ("anyOf", "oneOf") and isinstance(value, list) and len(value) == 1:
                conjuncts.append((value[0], f"{rel}/{key}/0"))
            elif key == "$ref" and _ref_beside(raw):
                conjuncts.append(({"$ref": value}, f"{rel}/$ref"))
            else:
                base[key] = value
        folded = Folded(base, dict.fromkeys(base, rel), {})
        properties = base.get("properties")
        if isinstance(properties, dict):
            folded.names = dict.fromkeys(properties, rel)
        kept: dict[bytes, tuple[Any, str]] = {}
        lone: Folded | None = None  # the expanded form of a branch kept unmerged
        for branch, at in conjuncts:
            part = self._expand(branch, at, depth, active)
            if part is None:
                kept.setdefault(_code(branch), (branch, at))
            elif part.raw is False:
                return Folded(False)
            elif part.raw is not True and not self._merge(folded, part, rel):
                kept.setdefault(_code(part.raw), (branch, at))
                lone = part
        if len(kept) == 1 and lone is not None and base.keys() <= _IDLE:
            # nothing beside one branch: the schema is that branch
            assert isinstance(lone.raw, dict)
            lone.raw = {**base, **lone.raw}
            lone.origins = {**dict.fromkeys(base, rel), **lone.origins}
            return lone
        if kept:
            assert isinstance(folded.raw, dict)
            ordered = [kept[code] for code in sorted(kept)]  # a reordered `allOf` folds alike
            folded.raw["allOf"] = [branch for branch, _ in ordered]
            folded.branches = [at for _, at in ordered]
        return folded

    def _expand(self, branch: Any, at: str, depth: int, active: frozenset[str]) -> Folded | None:
        """The branch ready to merge: `True` for one that constrains nothing,
        a `$ref` replaced by its target; None for one that must stay a branch."""
        if isinstance(branch, bool):
            return Folded(branch)
        if not isinstance(branch, dict) or depth >= _MAX_DEPTH:
            return None
        if branch.keys() <= _INERT:
            return Folded(True)
        ref = branch.get("$ref")
        if ref is not None:
            if (
                not isinstance(ref, str)
                or ref in active
                or not (branch.keys() - {"$ref"}) <= _INERT
            ):
                return None
            target = self.resolve(ref)
            if target is None:
                return None
            raw, target_rel = target
            if isinstance(raw, bool):
                return Folded(raw)
            if not isinstance(raw, dict):
                return None
            return self._expand(raw, target_rel, depth + 1, active | {ref})
        if "allOf" in branch or _one_branch(branch):
            return self.fold(branch, at, depth + 1, active)
        return Folded(branch, dict.fromkeys(branch, at), _names(branch, at))

    def _merge(self, folded: Folded, part: Folded, rel: str) -> bool:
        """Merge `part` into `folded` when the result means the same; all or nothing."""
        base, extra = folded.raw, part.raw
        assert isinstance(base, dict) and isinstance(extra, dict)
        # in `extra`'s order (a set's would follow the process's hash seed into the report)
        keys = [key for key in extra if key not in _CONTAINERS]
        # the holder may keep its `$ref` (2019-09 on) and, at the root, its identity
        allowed = {"$ref", "$schema", "$id", "id"} if rel == "" else {"$ref"}
        if not _NEVER.isdisjoint(keys) or base.keys() & (_NEVER - allowed) or "allOf" in keys:
            return False
        if not self.dialect.keywords.issuperset(keys):
            return False
        base_object, extra_object = base.keys() & _OBJECT, _OBJECT.intersection(keys)
        if base_object and extra_object and (base_object | extra_object) & _OBJECT_CLOSERS:
            return False
        if base.keys() & _ARRAY and not _ARRAY.isdisjoint(keys):
            return False
        merged: dict[str, Any] = {}
        names: dict[str, str] = {}
        for key in keys:
            value = extra[key]
            if key not in base:
                merged[key] = value
            elif key == "properties":
                combined = _properties(base[key], value, folded.names, part.names, rel, names)
                if combined is _CONFLICT:
                    return False
                merged[key] = combined
            else:
                combined = _combine(key, base[key], value)
                if combined is _CONFLICT:
                    return False
                merged[key] = combined
        for key, value in merged.items():
            if key not in base:
                folded.origins[key] = part.origins.get(key, rel)
                if key == "properties":
                    folded.names.update(part.names)
            base[key] = value
        folded.names.update(names)
        return True


def _names(raw: dict[str, Any], at: str) -> dict[str, str]:
    properties = raw.get("properties")
    return dict.fromkeys(properties, at) if isinstance(properties, dict) else {}


def _properties(
    mine: Any,
    theirs: Any,
    my_names: dict[str, str],
    their_names: dict[str, str],
    rel: str,
    names: dict[str, str],
) -> Any:
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return _CONFLICT
    out = dict(mine)
    for name, schema in theirs.items():
        if name not in out:
            out[name] = schema
            names[name] = their_names.get(name, rel)
        elif _code(out[name]) != _code(schema):
            out[name] = {"allOf": [out[name], schema]}
            names[name] = f"{rel}/allOf"
        else:
            names[name] = my_names.get(name, rel)
    return out


def _combine(key: str, mine: Any, theirs: Any) -> Any:
    """One keyword present on both sides of a conjunction, or `_CONFLICT`."""
    if _code(mine) == _code(theirs) or key in ANNOTATIONS:
        return mine
    if key == "type":
        return _types(mine, theirs)
    if key == "required" and isinstance(mine, list) and isinstance(theirs, list):
        return [*mine, *(name for name in theirs if name not in mine)]
    if key == "enum" and isinstance(mine, list) and isinstance(theirs, list):
        allowed = {json_key(v) for v in theirs}
        return [v for v in mine if json_key(v) in allowed]
    if key in BOUND_KEYWORDS:
        combined = tightest(key, mine, theirs)
        return _CONFLICT if combined is None else combined
    if key == "uniqueItems" and isinstance(mine, bool) and isinstance(theirs, bool):
        return mine or theirs
    if key == "dependentRequired" and isinstance(mine, dict) and isinstance(theirs, dict):
        out = dict(mine)
        for name, needed in theirs.items():
            before = out.get(name, [])
            if not isinstance(before, list) or not isinstance(needed, list):
                return _CONFLICT
            out[name] = [*before, *(n for n in needed if n not in before)]
        return out
    return _CONFLICT


def _types(mine: Any, theirs: Any) -> Any:
    first = [mine] if isinstance(mine, str) else mine
    second = [theirs] if isinstance(theirs, str) else theirs
    if not isinstance(first, list) or not isinstance(second, list):
        return _CONFLICT
    out = [t for t in first if t in second or (t == "integer" and "number" in second)]
    out += [t for t in second if t == "integer" and "number" in first and t not in out]
    return out[0] if len(out) == 1 else out


def _code(value: Any) -> bytes:
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError):
        return repr(value).encode()
