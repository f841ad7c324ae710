"""The nesting check of a raw schema document, done before any parsing.

A document whose schemas nest deeper than the limit is refused up front,
naming the JSON Pointer of the first too-deep place, so that no deep raw
subtree reaches a report. Hops into `$defs`/`definitions` through `$ref` are
counted (each target once); other local targets are walked in place.
"""

from __future__ import annotations

from typing import Any

from registry.compat.report import ClassificationError
from registry.compat.schema import CHILD_KEYWORDS, CONTAINERS, MAP_KEYWORDS, local_target
from registry.pointers import escape

__all__ = ["check_nesting"]

# Keywords whose values hold child schemas (what the walk descends into).
_DESCENDS = CHILD_KEYWORDS | {"if", "then", "else", "dependencies"}
_MAPS = MAP_KEYWORDS | {"dependencies"}


class _TooDeep(Exception):
    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[str] = []
        self.at: str | None = None  # set once unwinding crosses a `$ref` hop


def check_nesting(raw: Any, base: str, limit: int) -> None:
    """Refuse a document whose schemas nest deeper than `limit`, counting the
    hops into `$defs`/`definitions` (other local targets are walked in place)."""
    if type(raw) is not dict:
        return
    try:
        _Nesting(raw, limit).walk(raw, 0)
    except _TooDeep as exc:
        pointer = (exc.at or "") + "".join("/" + t for t in reversed(exc.tokens))
        raise ClassificationError(
            f"schema nested deeper than {limit} levels", base + pointer
        ) from None


_CHILDREN_OR_REF = _DESCENDS | {"$ref"}


def _never(_: Any) -> bool:
    return False


class _Nesting:
    def __init__(self, document: dict[str, Any], limit: int) -> None:
        self.document = document
        self.limit = limit
        self.entered: set[str] = set()

    def walk(self, raw: dict[str, Any], depth: int) -> None:
        if depth > self.limit:
            raise _TooDeep
        below = depth + 1
        # a schema with no child schemas and no `$ref` ends here unless it is too deep
        ends = _CHILDREN_OR_REF.isdisjoint if below <= self.limit else _never
        for key, value in raw.items():
            if key == "$ref":
                self._hop(value, below)
            elif key not in _DESCENDS:
                continue
            elif key in _MAPS:
                if isinstance(value, dict):
                    for name, sub in value.items():
                        if type(sub) is dict and not ends(sub):
                            self._enter(sub, below, f"{key}/", name)
            elif isinstance(value, list):
                for i, sub in enumerate(value):
                    if type(sub) is dict and not ends(sub):
                        self._enter(sub, below, f"{key}/", str(i))
            elif type(value) is dict:
                self._enter(value, below, key, "")

    def _enter(self, sub: dict[str, Any], depth: int, keyword: str, name: str) -> None:
        """Walk a child schema; on the way out of a too-deep one, name the step
        (formatted only then: most walks never fail)."""
        try:
            self.walk(sub, depth)
        except _TooDeep as exc:
            if exc.at is None:
                exc.tokens.append(keyword + escape(name))
            raise

    def _hop(self, ref: Any, depth: int) -> None:
        """Follow a `$ref` into a definitions container, once per target."""
        if not isinstance(ref, str) or ref in self.entered:
            return
        tokens = ref[2:].split("/") if ref.startswith("#/") else []
        if not tokens or tokens[0] not in CONTAINERS:
            return
        self.entered.add(ref)
        found = local_target(self.document, ref)
        if found is None or type(found[0]) is not dict:
            return  # reported by the parser if it is ever reached
        target, pointer = found
        try:
            self.walk(target, depth)
        except _TooDeep as exc:
            if exc.at is None:
                exc.at = pointer
            raise
