"""Two schemas that differ only in annotations, settled without a walk.

Most real changes to a tool's schema rewrite a description. When the two
documents are the same JSON but for annotations (`description`, `title`,
`examples`, `$comment`, ...) at schema positions, they accept the same values
and read them alike, so the report is the annotation changes alone.
`annotation_changes` finds them by walking both documents side by side,
descending only where the JSON differs, and gives up at the first difference
elsewhere. It knows where schemas sit: a property named `description` or a
`default` holding a `title` key is data, not an annotation.
"""

from __future__ import annotations

from typing import Any

from registry.compat.dialects import ANNOTATIONS
from registry.compat.jsonvalues import json_equal, json_same
from registry.compat.kinds import Kind
from registry.compat.walk import Finding

__all__ = ["KINDS", "annotation_changes"]

# annotation keyword -> the kind its change is reported as
KINDS: dict[str, Kind] = {
    "description": Kind.DESCRIPTION_CHANGED,
    "title": Kind.TITLE_CHANGED,
    "examples": Kind.EXAMPLES_CHANGED,
    "$comment": Kind.COMMENT_CHANGED,
    # No validation effect; reported as documentation changes.
    "deprecated": Kind.DESCRIPTION_CHANGED,
    "readOnly": Kind.DESCRIPTION_CHANGED,
    "writeOnly": Kind.DESCRIPTION_CHANGED,
    "contentMediaType": Kind.DESCRIPTION_CHANGED,
    "contentEncoding": Kind.DESCRIPTION_CHANGED,
    "contentSchema": Kind.DESCRIPTION_CHANGED,
}
assert KINDS.keys() == ANNOTATIONS

# Keywords whose value maps names to schemas, holds a list of schemas, or is one.
_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SINGLE = frozenset(
    {
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "items",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "not",
        "if",
        "then",
        "else",
    }
)
_MAX_DEPTH = 64  # deeper documents take the walk, which refuses them


class _Other(Exception):
    """A difference outside annotations: the fast path gives up."""


def annotation_changes(old: Any, new: Any, pointer: str) -> list[Finding] | None:
    """The annotation changes between two schemas, or None when they differ in
    anything else (then the walk decides). Only the parts that differ are
    visited; an equal part is confirmed by its JSON encoding, which tells `1`
    from `true` where Python's equality does not."""
    findings: list[Finding] = []
    olds: list[Any] = []  # parts Python finds equal, in step with `news`
    news: list[Any] = []
    try:
        _schema(old, new, pointer, findings, olds, news, 0)
    except _Other:
        return None
    # confirmed last, all at once: equal JSON encodes alike, position by position
    if olds and not json_equal(olds, news):
        return None
    return findings


def _schema(
    old: Any,
    new: Any,
    pointer: str,
    findings: list[Finding],
    olds: list[Any],
    news: list[Any],
    depth: int,
) -> None:
    if type(old) is not dict or type(new) is not dict or depth > _MAX_DEPTH:
        raise _Other
    for key in old.keys() | new.keys():
        before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if before is after:
            continue
        if key in ANNOTATIONS:
            if before != after or not json_same(before, after):
                findings.append(
                    Finding(
                        KINDS[key],
                        f"{pointer}/{_escape(key)}",
                        key,
                        None if before is _ABSENT else before,
                        None if after is _ABSENT else after,
                    )
                )
            continue
        if before == after:
            if type(before) is not str:  # equal strings are the same JSON
                olds.append(before)
                news.append(after)
            continue
        at = f"{pointer}/{_escape(key)}"
        if key in _MAPS or key == "dependencies":
            _map(before, after, at, findings, olds, news, depth)
        elif key in _LISTS and type(before) is list and type(after) is list:
            if len(before) != len(after):
                raise _Other
            for i, (first, second) in enumerate(zip(before, after, strict=True)):
                if first is not second and first != second:
                    _schema(first, second, f"{at}/{i}", findings, olds, news, depth + 1)
                else:
                    olds.append(first)
                    news.append(second)
        elif key in _SINGLE:
            _schema(before, after, at, findings, olds, news, depth + 1)
        else:
            raise _Other


def _map(
    old: Any,
    new: Any,
    at: str,
    findings: list[Finding],
    olds: list[Any],
    news: list[Any],
    depth: int,
) -> None:
    if type(old) is not dict or type(new) is not dict or old.keys() != new.keys():
        raise _Other
    for name, first in old.items():
        second = new[name]
        if first == second:
            olds.append(first)
            news.append(second)
        else:
            _schema(first, second, f"{at}/{_escape(name)}", findings, olds, news, depth + 1)


_ABSENT: Any = object()


def _escape(token: str) -> str:
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")
