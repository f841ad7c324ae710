"""`classify(old, new)`: the change report between two tool definitions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jsonschema import FormatChecker
from jsonschema.protocols import Validator
from jsonschema.validators import Draft202012Validator, validator_for

from registry.compat import (
    rules_arrays,
    rules_bounds,
    rules_combinators,
    rules_docs,
    rules_objects,
    rules_values,
)
from registry.compat.kinds import MESSAGES, Kind, Severity, Side, severity_of, worst
from registry.compat.report import Change, ChangeReport, ClassificationError
from registry.compat.rules_tool import tool_changes
from registry.compat.schema import Limits, Node, parse_schema
from registry.compat.shape import json_equal
from registry.compat.walk import Finding, Leaf, Walk
from registry.compat.witness import build

__all__ = ["LIMITS", "classify", "classify_schemas"]

LIMITS = Limits()

RULES = (
    *rules_docs.RULES,
    *rules_values.RULES,
    *rules_bounds.RULES,
    *rules_objects.RULES,
    *rules_arrays.RULES,
    *rules_combinators.RULES,
)

# Kinds whose witness is valid under both versions by design: the value is
# kept by the new schema's open content model but dropped or read differently.
_READ_DIFFERENTLY = {
    Kind.PROPERTY_REMOVED,
    Kind.PROPERTY_RENAMED,
    Kind.DEFAULT_ADDED,
    Kind.DEFAULT_CHANGED,
    Kind.DEFAULT_REMOVED,
}

_EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}


def classify(
    old: Mapping[str, Any], new: Mapping[str, Any], *, limits: Limits = LIMITS
) -> ChangeReport:
    """Classify the change from tool definition `old` to `new`.

    Raises `ClassificationError` for a definition that is not an object or a
    schema the engine refuses (remote or missing `$ref`, too deep, too large).
    """
    for label, definition in (("old", old), ("new", new)):
        if not isinstance(definition, Mapping):
            raise ClassificationError(
                f"the {label} tool definition is a JSON object, not {type(definition).__name__}"
            )
    if json_equal(old, new):
        return ChangeReport(severity=Severity.IDENTICAL, changes=[])
    old_def, new_def = dict(old), dict(new)
    findings = [(Side.TOOL, f) for f in tool_changes(old_def, new_def)]
    changes = [_change(Side.TOOL, f, None) for _, f in findings]
    # Some servers list `inputSchema: null` for a tool without arguments.
    old_input = old_def.get("inputSchema") or _EMPTY_OBJECT_SCHEMA
    new_input = new_def.get("inputSchema") or _EMPTY_OBJECT_SCHEMA
    changes += _compare_side(old_input, new_input, "/inputSchema", Side.INPUT, limits)
    if "outputSchema" in old_def or "outputSchema" in new_def:
        changes += _compare_output(old_def.get("outputSchema"), new_def.get("outputSchema"), limits)
    return _report(changes)


def classify_schemas(
    old: Any, new: Any, side: Side = Side.INPUT, *, limits: Limits = LIMITS
) -> ChangeReport:
    """Classify two bare JSON Schemas as the input (or output) schema of a tool."""
    pointer = "/outputSchema" if side is Side.OUTPUT else "/inputSchema"
    return _report(_compare_side(old, new, pointer, side, limits))


def _compare_output(old: Any, new: Any, limits: Limits) -> list[Change]:
    if old is None:
        finding = Finding(Kind.PROPERTY_ADDED, "/outputSchema", "outputSchema", None, new)
        return [_change(Side.OUTPUT, finding, None)]
    if new is None:
        finding = Finding(Kind.PROPERTY_REMOVED, "/outputSchema", "outputSchema", old, None)
        return [_change(Side.OUTPUT, finding, None)]
    return _compare_side(old, new, "/outputSchema", Side.OUTPUT, limits)


def _compare_side(old: Any, new: Any, pointer: str, side: Side, limits: Limits) -> list[Change]:
    if json_equal(old, new):
        return []  # equal sides are identical; definitions are validated before storage
    old_root = parse_schema(old, pointer, limits)
    new_root = parse_schema(new, pointer, limits)
    walk = Walk(side=side, rules=RULES)
    walk.compare(old_root, new_root, pointer, ())
    witnesses = _WitnessCheck(old, new) if side is Side.INPUT else None
    return [_change(side, f, witnesses, old_root) for f in walk.findings]


class _WitnessCheck:
    """Keeps a witness only when it is valid under old and the new version
    refuses it (or, for removals, renames and defaults, reads it differently)."""

    def __init__(self, old: Any, new: Any) -> None:
        self.old = _validator(_freeze(old))
        self.new = _validator(_freeze(new))

    def accept(self, kind: Kind, witness: Any) -> bool:
        try:
            if not self.old.is_valid(witness):
                return False
            return kind in _READ_DIFFERENTLY or not self.new.is_valid(witness)
        except Exception:  # a schema python-jsonschema cannot run: no witness
            return False


def _freeze(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True)


@lru_cache(maxsize=256)
def _validator(frozen: str) -> Validator:
    schema = json.loads(frozen)
    cls = validator_for(schema, default=Draft202012Validator)
    validator: Validator = cls(schema, format_checker=FormatChecker())
    return validator


def _change(
    side: Side, finding: Finding, witnesses: _WitnessCheck | None, old_root: Node | None = None
) -> Change:
    severity = severity_of(finding.kind, side)
    witness = None
    if (
        witnesses is not None
        and old_root is not None
        and severity is Severity.BREAKING
        and finding.route is not None
        and finding.leaf is not None
    ):
        for leaf in (finding.leaf, *_alternatives(finding)):
            candidate = build(old_root, finding.route, leaf)
            if witnesses.accept(finding.kind, candidate):
                witness = candidate
                break
    return Change(
        kind=finding.kind,
        severity=severity,
        path=finding.pointer,
        message=_message(finding),
        old=finding.old,
        new=finding.new,
        witness=witness,
        suggested_op=finding.suggested_op if severity is Severity.BREAKING else None,
    )


_TYPICAL: tuple[Any, ...] = ("", "x", 0, 1, -1, 0.5, True, False, None, {}, [])


def _alternatives(finding: Finding) -> list[Leaf]:
    """Further values to try at the end of the route when the rule's own leaf
    does not make a witness: the scalars both versions mention, then typical ones."""
    seen: set[str] = set()
    leaves: list[Leaf] = []
    for value in (*_scalars(finding.old), *_scalars(finding.new), *_TYPICAL):
        key = json.dumps(value, sort_keys=True)
        if key not in seen:
            seen.add(key)
            leaves.append(Leaf("value", value))
    return leaves[:40]


def _scalars(value: Any, depth: int = 0) -> list[Any]:
    if depth > 8:
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v, depth + 1)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v, depth + 1)]
    return [value]


def _message(finding: Finding) -> str:
    def show(value: Any) -> str:
        return "(absent)" if value is None else json.dumps(value, sort_keys=True, default=str)

    template = MESSAGES[finding.kind]
    return template.format(
        name=finding.name,
        old=show(finding.old),
        new=show(finding.new),
        new_name=finding.extra.get("new_name", ""),
    )


def _report(changes: list[Change]) -> ChangeReport:
    ordered = sorted(changes, key=lambda c: (c.path, c.kind.value))
    return ChangeReport(severity=worst([c.severity for c in ordered]), changes=ordered)
