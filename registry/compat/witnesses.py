"""The witness search: candidate arguments for a breaking finding, kept only
when python-jsonschema confirms them.

A finding's own leaf comes first (the rule knows what breaks), then values
the two versions mention and typical ones, at the position the finding
concerns, skipping those whose JSON type the old schema refuses there, then
objects with one unlisted property more, at most `MAX_CANDIDATES` in all.

python-jsonschema (with RE2 for `pattern`, and a format checker where a
`format` appears) confirms every witness before it is shown: valid under old
and refused by new. Each verdict is asked first of the plain check
(validity.py), which reads the keywords it knows as that validator does,
from the raw schema along the value (no validator to build: a few
microseconds); what it does not read goes to python-jsonschema.

A property removed or renamed is often still accepted, and silently ignored
(seed 000): its witness must be refused by new with the object that held it
closed to names it does not declare (as the gate reads a version-less call),
which shows the value is not read; that closed schema is compiled with
jsonschema-rs where it is installed (python-jsonschema otherwise), each
removal's check then costing a microsecond. A default's witness leaves the
property out: valid under old, absent where the default applies, read with
another default. Its validators are made once per classification, on the first
candidate. A search that has checked `PYTHON_FIRST` candidates in vain compiles
both schemas with jsonschema-rs, where it is installed, and lets it screen the
rest: only a candidate jsonschema-rs finds valid under old (and refused by new)
goes on to python-jsonschema, so a disagreement between the two can cost a
witness but never lets a wrong one through.

The search is bounded: the JSON of the candidates checked per classification
is at most `Limits.max_witness_bytes`; past it, changes carry no witness.
`properties` is checked per property of the instance, not of the schema, so a
small witness of a schema with thousands of properties checks in its own time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from itertools import chain
from types import ModuleType
from typing import Any

from jsonschema import FormatChecker
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, extend, validator_for

from registry.compat.bounds import NUMERIC
from registry.compat.instances import build, instance_of
from registry.compat.jsonvalues import encode, json_key, json_type
from registry.compat.kinds import READ_DIFFERENTLY, Kind
from registry.compat.schema import ANYTHING, Node, local_target
from registry.compat.validity import Unsupported, plain_checker
from registry.compat.walk import ABSENT, Finding, Leaf, Route, deref
from registry.patterns import linear_validator
from registry.pointers import unescape

jsonschema_rs: ModuleType | None
try:
    import jsonschema_rs
except ImportError:  # pragma: no cover - platforms without a wheel
    jsonschema_rs = None

__all__ = ["MAX_CANDIDATES", "PYTHON_FIRST", "WitnessSearch"]

MAX_CANDIDATES = 40
PYTHON_FIRST = 6
_TYPICAL: tuple[Any, ...] = ("", "x", 0, 1, -1, 0.5, True, False, None, {}, [])
_BOUNDS = frozenset(bound.keyword for bound in NUMERIC)
MAX_BOUNDS = 8
_UNSET: Any = object()


class WitnessSearch:
    """Witnesses for the findings of one classification of `old` -> `new`;
    each schema is given as `(schema, its JSON encoding)`, `budget` is the JSON
    of the candidates it may check (`Limits.max_witness_bytes`)."""

    def __init__(
        self,
        old_root: Node,
        old: tuple[Any, bytes | None],
        new: tuple[Any, bytes | None],
        budget: int = 1 << 62,
    ) -> None:
        self.old_root = old_root
        self.schemas = (old, new)
        self.python: list[Validator | None] = [None, None]  # old, new: made when first needed
        self.plain: list[Any] = [_UNSET, _UNSET]  # old, new: validity.plain_checker's
        self.fast: tuple[Any, Any] | None = _UNSET
        self.misses = 0
        self.verdicts: dict[tuple[int, bytes | None], bool] = {}
        self.broken = False  # a schema python-jsonschema cannot run, or the budget spent
        self.bounds: list[int | float] | None = None
        self.budget = budget
        # holder pointer -> is a value valid under new, closed there?
        self.closed: dict[str, Callable[[Any], bool] | None] = {}

    def find(self, finding: Finding) -> Any:
        """A confirmed witness for `finding`, or None."""
        if finding.route is None or finding.leaf is None or self.broken:
            return None
        node = _node_at(self.old_root, finding.route)
        for leaf in chain((finding.leaf,), _candidates(finding, node, self._just_past_bounds)):
            value = build(self.old_root, finding.route, leaf)
            if value is None:
                continue  # a bare null cannot be told from no witness at all
            if self._holds(finding, value):
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

    def _holds(self, finding: Finding, value: Any) -> bool:
        """Whether python-jsonschema confirms `value` as `finding`'s witness
        (the rules in the module docstring)."""
        code = encode(value)
        self.budget -= len(code) if code is not None else 0
        if self.budget < 0:
            self.broken = True
            return False
        kind = finding.kind
        read_differently = kind in READ_DIFFERENTLY and not finding.refused
        if self.misses >= PYTHON_FIRST and not self._screen(value, read_differently):
            return False
        try:
            if not self._valid(0, value, code):
                holds = False
            elif kind in (Kind.PROPERTY_REMOVED, Kind.PROPERTY_RENAMED):
                holds = self._unread(finding, value, code)
            elif not read_differently:
                holds = not self._valid(1, value, code)
            else:  # a default: the property left out where the default applies
                holds = finding.leaf is not None and _left_out(
                    value, finding.route or (), finding.leaf.name
                )
        except Exception:  # a schema python-jsonschema cannot run
            self.broken = True
            return False
        if not holds:
            self.misses += 1
        return holds

    def _valid(self, side: int, value: Any, code: bytes | None) -> bool:
        """python-jsonschema's verdict on `value` under old (0) or new (1),
        remembered: findings of one classification often try the same value."""
        key = (side, code)
        verdict = self.verdicts.get(key)
        if verdict is None:
            verdict = self.verdicts[key] = self._verdict(side, value)
        return verdict

    def _verdict(self, side: int, value: Any) -> bool:
        """The plain check's answer where it reads what `value` reaches (validity.py),
        else python-jsonschema's."""
        plain = self.plain[side]
        if plain is _UNSET:
            plain = self.plain[side] = plain_checker(*self.schemas[side])
        if plain is not None:
            try:
                return bool(plain(value))
            except Unsupported:
                pass
        return bool(self._python(side).is_valid(value))

    def _unread(self, finding: Finding, value: Any, code: bytes | None) -> bool:
        """Whether new, closed where `finding.holder` no longer declares the
        property, refuses `value`. Where the object is reached through plain
        `properties` and `items` alone, nothing but that schema evaluates its
        names and the answer is its `properties` (what a validator would
        compute); elsewhere a validator says: of new itself where it refuses
        the value outright (`finding.refused`), else of new closed there."""
        route, holder = finding.route or (), finding.holder
        if holder is not None and route and route[-1].via == "prop":
            plain = _plain_object(self.schemas[1][0], holder, route[:-1])
            if plain is not None:
                found = _at_route(value, route[:-1])
                name = str(route[-1].key)
                return isinstance(found, dict) and name in found and name not in plain
        if finding.refused:
            return not self._valid(1, value, code)
        closed = self._closed(holder)
        return closed is not None and not closed(value)

    def _closed(self, holder: str | None) -> Callable[[Any], bool] | None:
        """Whether a value is valid under new with the object schema at `holder`
        (a JSON Pointer into the definition) closed to the names it does not
        declare; None where that cannot be said (a folded place, a map schema,
        composition in a dialect without `unevaluatedProperties`). Compiled
        with jsonschema-rs where it is installed (a closed reading costs one
        compile per object, and each witness a microsecond), else python-jsonschema."""
        if holder is None:
            return None
        if holder not in self.closed:
            schema = _closed_at(self.schemas[1][0], holder)
            self.closed[holder] = None if schema is None else _checker(schema, self.schemas[1][1])
        return self.closed[holder]

    def _python(self, side: int) -> Validator:
        validator = self.python[side]
        if validator is None:
            validator = self.python[side] = _validator(*self.schemas[side])
        return validator

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
        linear = _LINEAR[cls] = _by_instance(linear_validator(cls))
    validator: Validator = linear(schema, format_checker=formats)
    return validator


def _checker(schema: Any, encoded: bytes | None) -> Callable[[Any], bool]:
    """`is_valid` of `schema`: jsonschema-rs where it compiles it, else python-jsonschema."""
    if jsonschema_rs is not None:
        try:
            compiled = jsonschema_rs.validator_for(schema, validate_formats=True)
        except Exception:  # a schema it refuses to compile: python-jsonschema decides
            pass
        else:

            def is_valid(value: Any) -> bool:
                try:
                    return bool(compiled.is_valid(value))
                except Exception:  # a value it cannot read: python-jsonschema decides
                    return bool(_validator(schema, encoded).is_valid(value))

            return is_valid
    validator = _validator(schema, encoded)
    return lambda value: bool(validator.is_valid(value))


def _by_instance(cls: type[Validator]) -> type[Validator]:
    """`cls` checking `properties` per property of the instance when it has fewer
    than the schema declares (the same errors, found without visiting every
    declared name: a witness of a 30,000-property schema is a few properties)."""
    by_schema = cls.VALIDATORS["properties"]

    def properties(validator: Any, declared: Any, instance: Any, schema: Any) -> Any:
        if not isinstance(instance, dict) or len(instance) >= len(declared):
            yield from by_schema(validator, declared, instance, schema)
            return
        for name, value in instance.items():
            if name in declared:
                yield from validator.descend(value, declared[name], path=name, schema_path=name)

    extended: type[Validator] = _extend(cls, {"properties": properties})
    return extended


_extend: Any = extend  # untyped in types-jsonschema


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


def _closed_at(document: Any, holder: str) -> Any:
    """`document` (a new input schema; `holder` points into its definition, e.g.
    `/inputSchema/properties/a`) with the object schema at `holder` closed to
    the names it does not declare, the way the gate reads a version-less call:
    `additionalProperties: false`, or `unevaluatedProperties: false` where
    subschemas beside it may declare names (they still count). Only the
    objects on the way there are copied. None where it cannot be said."""
    _, _, rel = holder.lstrip("/").partition("/")
    found = local_target(document, "#/" + rel if rel else "#")
    if found is None or not isinstance(found[0], dict):
        return None
    target = found[0]
    if target.get("additionalProperties", True) is not True:
        return None  # a map schema or closed already: the engine compared the values
    composed = any(key in target for key in _COMPOSING)
    if composed:
        if not _has_unevaluated(document) or target.get("unevaluatedProperties", True) is not True:
            return None
        closing = {"unevaluatedProperties": False}
    else:
        closing = {"additionalProperties": False}
    tokens = [unescape(t) for t in rel.split("/")] if rel else []
    return _replaced(document, tokens, {**target, **closing})


_COMPOSING = ("allOf", "anyOf", "oneOf", "$ref", "if", "dependentSchemas", "$dynamicRef")
# Keywords by which a schema on the way to an object evaluates its names besides
# its own `properties` (or makes it reached some other way).
_NOT_PLAIN = frozenset(
    {
        *_COMPOSING,
        "then",
        "else",
        "not",
        "dependencies",
        "patternProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "prefixItems",
        "$recursiveRef",
    }
)


def _plain_object(document: Any, holder: str, route: Route) -> Any:
    """The `properties` of the object schema at `holder` when it is reached from
    the root through `properties` and `items` alone, along the same names as
    `route` (the witness's way there), with nothing on the way or there that
    evaluates names otherwise, and unlisted names free or refused there (not
    read by a map schema); else None."""
    _, _, rel = holder.lstrip("/").partition("/")
    tokens = [unescape(t) for t in rel.split("/")] if rel else []
    node: Any = document
    steps = iter(route)
    position = 0
    while True:
        if not isinstance(node, dict) or not _NOT_PLAIN.isdisjoint(node):
            return None
        if position == len(tokens):
            break
        step = next(steps, None)
        token = tokens[position]
        if token == "properties" and position + 1 < len(tokens):
            name = tokens[position + 1]
            if step is None or step.via != "prop" or str(step.key) != name:
                return None
            children = node.get("properties")
            node = children.get(name) if isinstance(children, dict) else None
            position += 2
        elif token == "items" and step is not None and step.via == "item":
            node = node.get("items")
            position += 1
        else:
            return None
    if next(steps, None) is not None or node.get("additionalProperties", True) not in (True, False):
        return None  # (a map schema reads unlisted names: the engine compared the values)
    declared = node.get("properties", {})
    return declared if isinstance(declared, dict) else None


def _at_route(value: Any, route: Route) -> Any:
    """What `route` (properties and items) leads to in `value`, or None."""
    for step in route:
        if step.via == "prop" and isinstance(value, dict):
            value = value.get(str(step.key))
        elif step.via == "item" and isinstance(value, list) and int(step.key) < len(value):
            value = value[int(step.key)]
        else:
            return None
    return value


def _has_unevaluated(document: Any) -> bool:
    """Whether the document's dialect has `unevaluatedProperties` (2019-09 on; absent: 2020-12)."""
    uri = document.get("$schema") if isinstance(document, dict) else None
    return uri is None or "2019-09" in str(uri) or "2020-12" in str(uri)


def _replaced(value: Any, tokens: list[str], replacement: Any) -> Any:
    """`value` with the place `tokens` name replaced, the containers on the way copied."""
    if not tokens:
        return replacement
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, list):
        copy = list(value)
        copy[int(head)] = _replaced(value[int(head)], rest, replacement)
        return copy
    return {**value, head: _replaced(value[head], rest, replacement)}


def _left_out(value: Any, route: Route, name: str) -> bool:
    """Whether the object `route` leads to in `value` lacks property `name` (a
    route through anything but properties, items and branches cannot be told)."""
    for step in route:
        if step.via == "branch":
            continue
        if step.via in ("prop", "extra") and isinstance(value, dict) and str(step.key) in value:
            value = value[str(step.key)]
        elif step.via == "item" and isinstance(value, list) and int(step.key) < len(value):
            value = value[int(step.key)]
        else:
            return False
    return isinstance(value, dict) and name not in value


def _unlisted(node: Node) -> str:
    name, n = "unlisted", 0
    while name in node.properties:
        n += 1
        name = f"unlisted_{n}"
    return name


def _scalars(value: Any, depth: int = 0) -> list[Any]:
    if depth > 8 or value is ABSENT:
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v, depth + 1)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v, depth + 1)]
    return [value]
