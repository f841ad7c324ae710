"""The witness search: candidate arguments for a breaking finding, kept only
when python-jsonschema confirms them.

A finding's own leaf comes first (the rule knows what breaks), then values
the two versions mention and typical ones, at the position the finding
concerns, skipping those whose JSON type the old schema refuses there, then
objects with one unlisted property more, at most `MAX_CANDIDATES` in all.

python-jsonschema (with RE2 for `pattern`, and a format checker where a
`format` appears) confirms every witness: valid under old, refused by new
(or, for removals, renames and defaults, valid under both and read
differently). Its validators are made once per classification, on the first
candidate. A search that has checked `PYTHON_FIRST` candidates in vain
compiles both schemas with jsonschema-rs, where it is installed, and lets it
screen the rest: only a candidate jsonschema-rs finds valid under old (and
refused by new) goes on to python-jsonschema, so a disagreement between the
two can cost a witness but never lets a wrong one through.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from itertools import chain
from types import ModuleType
from typing import Any

from jsonschema import FormatChecker
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for

from registry.compat.jsonvalues import encode, json_key, json_type
from registry.compat.kinds import READ_DIFFERENTLY, Kind
from registry.compat.schema import ANYTHING, Node
from registry.compat.walk import Finding, Leaf, Route, deref
from registry.compat.witness import build, instance_of
from registry.patterns import linear_validator

jsonschema_rs: ModuleType | None
try:
    import jsonschema_rs
except ImportError:  # pragma: no cover - platforms without a wheel
    jsonschema_rs = None

__all__ = ["MAX_CANDIDATES", "PYTHON_FIRST", "WitnessSearch"]

MAX_CANDIDATES = 40
PYTHON_FIRST = 6
_TYPICAL: tuple[Any, ...] = ("", "x", 0, 1, -1, 0.5, True, False, None, {}, [])
_BOUNDS = frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
MAX_BOUNDS = 8
_UNSET: Any = object()


class WitnessSearch:
    """Witnesses for the findings of one classification of `old` -> `new`;
    each schema is given as `(schema, its JSON encoding)`."""

    def __init__(
        self, old_root: Node, old: tuple[Any, bytes | None], new: tuple[Any, bytes | None]
    ) -> None:
        self.old_root = old_root
        self.schemas = (old, new)
        self.python: tuple[Validator, Validator] | None = None
        self.fast: tuple[Any, Any] | None = _UNSET
        self.misses = 0
        self.verdicts: dict[tuple[int, bytes | None], bool] = {}
        self.broken = False  # a schema python-jsonschema cannot run: no witnesses
        self.bounds: list[int | float] | None = None

    def find(self, finding: Finding) -> Any:
        """A confirmed witness for `finding`, or None."""
        if finding.route is None or finding.leaf is None or self.broken:
            return None
        node = _node_at(self.old_root, finding.route)
        for leaf in chain((finding.leaf,), _candidates(finding, node, self._just_past_bounds)):
            value = build(self.old_root, finding.route, leaf)
            if value is None:
                continue  # a bare null cannot be told from no witness at all
            if self._holds(finding.kind, value):
                return value
            if self.broken:
                return None
        return None

    def _just_past_bounds(self) -> list[int | float]:
        """Numbers on either side of the numeric bounds the new schema names
        (a removed branch whose values new bounds now refuse: `anyOf [string,
        integer]` -> `{"type": "integer", "minimum": -1}` is broken by -2, which
        no typical value is), found once per classification."""
        if self.bounds is None:
            found: list[int | float] = []
            _collect_bounds(self.schemas[1][0], found, 0)
            self.bounds = [
                near
                for bound in found
                for near in (bound - 1, bound + 1, math.floor(bound) - 1, math.ceil(bound) + 1)
            ]
        return self.bounds

    def _holds(self, kind: Kind, value: Any) -> bool:
        read_differently = kind in READ_DIFFERENTLY
        if self.misses >= PYTHON_FIRST and not self._screen(value, read_differently):
            return False
        try:
            holds = self._valid(0, value) and (read_differently or not self._valid(1, value))
        except Exception:  # a schema python-jsonschema cannot run
            self.broken = True
            return False
        if not holds:
            self.misses += 1
        return holds

    def _valid(self, side: int, value: Any) -> bool:
        """python-jsonschema's verdict on `value` under old (0) or new (1),
        remembered: findings of one classification often try the same value."""
        key = (side, encode(value))
        verdict = self.verdicts.get(key)
        if verdict is None:
            verdict = self.verdicts[key] = bool(self._python()[side].is_valid(value))
        return verdict

    def _python(self) -> tuple[Validator, Validator]:
        if self.python is None:
            old, new = self.schemas
            self.python = (_validator(*old), _validator(*new))
        return self.python

    def _screen(self, value: Any, read_differently: bool) -> bool:
        """jsonschema-rs's verdict on a candidate (True where it cannot say)."""
        if self.fast is _UNSET:
            self.fast = _compiled(self.schemas[0][0], self.schemas[1][0])
        if self.fast is None:
            return True
        old_fast, new_fast = self.fast
        try:
            return bool(old_fast.is_valid(value)) and (
                read_differently or not new_fast.is_valid(value)
            )
        except Exception:  # a value it cannot read: let python-jsonschema decide
            return True


def _validator(schema: Any, encoded: bytes | None) -> Validator:
    """A python-jsonschema validator of `schema` (used within this call only),
    checking formats only where the schema may name one: a format checker
    without a `format` keyword to serve does nothing."""
    formats = FormatChecker() if encoded is None or b'"format"' in encoded else None
    cls = validator_for(schema, default=Draft202012Validator)
    linear = _LINEAR.get(cls)
    if linear is None:  # a new class per call would cost milliseconds each time
        linear = _LINEAR[cls] = linear_validator(cls)
    validator: Validator = linear(schema, format_checker=formats)
    return validator


_LINEAR: dict[type[Validator], type[Validator]] = {}


def _compiled(old: Any, new: Any) -> tuple[Any, Any] | None:
    if jsonschema_rs is None:  # pragma: no cover - platforms without a wheel
        return None
    try:
        return (
            jsonschema_rs.validator_for(old, validate_formats=True),
            jsonschema_rs.validator_for(new, validate_formats=True),
        )
    except Exception:  # a schema it refuses to compile: python-jsonschema alone
        return None


def _node_at(root: Node, route: Route) -> Node | None:
    """The old node a route ends at (None where it cannot be followed)."""
    node = deref(root)
    for step in route:
        child: Node | None
        if step.via == "prop":
            child = node.properties.get(str(step.key))
        elif step.via == "item":
            index = int(step.key)
            child = node.prefix_items[index] if index < len(node.prefix_items) else node.rest_items
        elif step.via in ("branch", "present", "name"):
            child = step.branch
        else:  # an unlisted property
            child = node.additional_properties
        if child is None:
            return None if step.via != "extra" else ANYTHING
        node = deref(child)
    return node


def _candidates(
    finding: Finding, node: Node | None, past_bounds: Callable[[], list[int | float]]
) -> Iterator[Leaf]:
    """Further leaves to try when the rule's own does not make a witness."""
    allowed = node.allowed_values() if node is not None else None
    if allowed is not None:
        values: Iterator[Any] = iter(allowed)
    else:
        values = chain(_scalars(finding.old), _scalars(finding.new), _TYPICAL, _later(past_bounds))
    seen: set[str] = set()
    for value in values:
        if node is not None and not node.admits(json_type(value)):
            continue
        key = json_key(value)
        if key in seen:
            continue
        seen.add(key)
        yield Leaf("value", value)
        if len(seen) >= MAX_CANDIDATES:
            return
    if node is None:
        return
    if node.admits("object"):
        for extra in ("x", 0, None):
            yield Leaf("with", extra, _unlisted(node))
    if node.admits("array"):
        base = instance_of(node, of_type="array")
        base = base if isinstance(base, list) else []
        for extra in list(chain(_scalars(finding.old), _scalars(finding.new), _TYPICAL))[:8]:
            yield Leaf("value", [*base, extra])


def _later(make: Callable[[], list[int | float]]) -> Iterator[int | float]:
    """`make()`'s values, computed only if the candidates before them ran out."""
    yield from make()


def _collect_bounds(schema: Any, found: list[int | float], depth: int) -> None:
    """Up to `MAX_BOUNDS` numeric bounds of `schema`, in document order."""
    if depth > 64 or len(found) >= MAX_BOUNDS:
        return
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in _BOUNDS and isinstance(value, int | float) and not isinstance(value, bool):
                if math.isfinite(value) and value not in found:
                    found.append(value)
            elif isinstance(value, dict | list) and key not in (
                "enum",
                "const",
                "default",
                "examples",
            ):
                _collect_bounds(value, found, depth + 1)
            if len(found) >= MAX_BOUNDS:
                return
    elif isinstance(schema, list):
        for item in schema:
            _collect_bounds(item, found, depth + 1)


def _unlisted(node: Node) -> str:
    name, n = "unlisted", 0
    while name in node.properties:
        n += 1
        name = f"unlisted_{n}"
    return name


def _scalars(value: Any, depth: int = 0) -> list[Any]:
    if depth > 8:
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v, depth + 1)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v, depth + 1)]
    return [value]
