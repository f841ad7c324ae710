"""`classify(old, new)`: the change report between two tool definitions."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from registry.compat import (
    rules_arrays,
    rules_bounds,
    rules_combinators,
    rules_dependencies,
    rules_docs,
    rules_objects,
    rules_values,
)
from registry.compat.dialects import DEFAULT, dialect_of
from registry.compat.jsonvalues import encode, json_same
from registry.compat.kinds import Kind, Severity, Side, message_of, severity_of, worst
from registry.compat.parser import parse_schema
from registry.compat.report import Change, ChangeReport, ClassificationError
from registry.compat.rules_tool import output_schema_changed, tool_changes
from registry.compat.schema import INERT, Limits, Node
from registry.compat.surface import surface_changes
from registry.compat.walk import ABSENT, Budget, Finding, OutOfBudget, Walk, budget_finding
from registry.compat.witnesses import WitnessSearch

__all__ = ["LIMITS", "change_of", "classify", "classify_schemas", "rewritten", "show"]

LIMITS = Limits()

RULES = (
    *rules_docs.RULES,
    *rules_values.RULES,
    *rules_bounds.RULES,
    *rules_objects.RULES,
    *rules_arrays.RULES,
    *rules_dependencies.RULES,
    *rules_combinators.RULES,
)

# A plain schema against a bare union: the union rule pairs it with the branches.
UNION_RULES = (*rules_docs.RULES, rules_combinators.union_changed)

_EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}


def classify(
    old: Mapping[str, Any], new: Mapping[str, Any], *, limits: Limits = LIMITS
) -> ChangeReport:
    """Classify the change from tool definition `old` to `new`.

    Raises `ClassificationError` for a definition that is not an object or a
    schema the engine refuses (remote or missing `$ref`, too deep, too large),
    and nothing else: work past `limits`' budget is reported `unanalyzable`.
    """
    try:  # (costs nothing until raised)
        old_def = old if type(old) is dict else _definition(old, "old")
        new_def = new if type(new) is dict else _definition(new, "new")
        # the top-level fields that differ, each settled by Python's equality first
        # (a loop: equal strings, most fields, need no call)
        keys: Iterable[str] = old_def.keys()
        if keys != new_def.keys():
            keys = old_def.keys() | new_def.keys()
        differ = set()
        for key in keys:
            before, after = old_def.get(key, _ABSENT), new_def.get(key, _ABSENT)
            if before is after or (type(before) is str and before == after):
                continue
            if not json_same(before, after):
                differ.add(key)
        if not differ:
            return ChangeReport(severity=Severity.IDENTICAL, changes=[])
        changes = []
        if not differ <= _SCHEMA_KEYS:
            changes = [_change(Side.TOOL, f) for f in tool_changes(old_def, new_def, differ)]
        if "inputSchema" in differ:
            # Some servers list `inputSchema: null` for a tool without arguments.
            old_input = old_def.get("inputSchema") or _EMPTY_OBJECT_SCHEMA
            new_input = new_def.get("inputSchema") or _EMPTY_OBJECT_SCHEMA
            substituted = old_input is _EMPTY_OBJECT_SCHEMA or new_input is _EMPTY_OBJECT_SCHEMA
            if not (substituted and json_same(old_input, new_input)):
                changes += _compare_side(old_input, new_input, "/inputSchema", Side.INPUT, limits)
        if "outputSchema" in differ:
            changes += _compare_output(old_def, new_def, limits)
        return _report(changes)
    except RecursionError:  # a last resort: every walk of the engine is bounded shallower
        raise ClassificationError(
            "the definitions nest too deeply to be compared within Python's recursion limit"
        ) from None


def _definition(definition: Any, label: str) -> dict[str, Any]:
    if not isinstance(definition, Mapping):
        raise ClassificationError(
            f"the {label} tool definition is a JSON object, not {type(definition).__name__}"
        )
    return dict(definition)


_SCHEMA_KEYS = frozenset({"inputSchema", "outputSchema"})
_ABSENT: Any = object()


def classify_schemas(
    old: Any, new: Any, side: Side = Side.INPUT, *, limits: Limits = LIMITS
) -> ChangeReport:
    """Classify two bare JSON Schemas as the input (or output) schema of a tool."""
    if json_same(old, new):
        return ChangeReport(severity=Severity.IDENTICAL, changes=[])
    pointer = "/outputSchema" if side is Side.OUTPUT else "/inputSchema"
    try:
        return _report(_compare_side(old, new, pointer, side, limits))
    except RecursionError:  # a last resort, as in `classify`
        raise ClassificationError(
            "the schemas nest too deeply to be compared within Python's recursion limit"
        ) from None


def _compare_output(
    old_def: dict[str, Any], new_def: dict[str, Any], limits: Limits
) -> list[Change]:
    old, new = old_def.get("outputSchema"), new_def.get("outputSchema")
    if old is None or new is None:
        return [_change(Side.OUTPUT, finding) for finding in output_schema_changed(old, new)]
    return _compare_side(old, new, "/outputSchema", Side.OUTPUT, limits)


def _compare_side(old: Any, new: Any, pointer: str, side: Side, limits: Limits) -> list[Change]:
    """The changes between two schemas the caller has found to differ as JSON."""
    if _default_dialect_written(old, new):
        # MCP reads a schema without `$schema` as 2020-12: writing it out is no change
        old, new = _without_dialect(old), _without_dialect(new)
        if json_same(old, new):
            return []
    surface = surface_changes(old, new, pointer, limits)
    if surface is not None:  # surface changes alone (surface.py): the walk would say the same
        return [_change(side, f) for f in surface or [rewritten(pointer)]]
    return _walked(old, new, pointer, side, limits)


def _default_dialect_written(old: Any, new: Any) -> bool:
    """Whether one side leaves `$schema` out and the other names the default
    dialect (2020-12, MCP's default for a schema without one)."""
    if type(old) is not dict or type(new) is not dict or ("$schema" in old) == ("$schema" in new):
        return False
    written = old.get("$schema", new.get("$schema"))
    return dialect_of(written) is DEFAULT


def _without_dialect(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key != "$schema"}


def _walked(old: Any, new: Any, pointer: str, side: Side, limits: Limits) -> list[Change]:
    """The changes the walk finds (what `surface_changes` settles must equal it)."""
    old_code, new_code = encode(old), encode(new)
    old_root = parse_schema(old, pointer, limits, encoded=old_code)
    new_root = parse_schema(new, pointer, limits, encoded=new_code)
    # work in proportion to the documents is always allowed; `max_steps` bounds the rest
    size = (old_code or b"").count(b"{") + (new_code or b"").count(b"{")
    budget = Budget(
        steps=limits.max_steps + size,
        max_depth=limits.max_walk_depth,
        max_pairs=limits.max_branch_pairs,
    )
    walk = Walk(
        side=side,
        rules=RULES,
        unsafe=_unsafe(old_root, new_root),
        union_rules=UNION_RULES,
        empty_rules=rules_values.EMPTY_RULES,
        holder_rule=rules_docs.holders_changed,
        budget=budget,
    )
    walk.codes[id(old)], walk.codes[id(new)] = old_code, new_code
    try:
        walk.compare(old_root, new_root, pointer, ())
    except OutOfBudget:
        pass
    except RecursionError:  # a last resort: the bounds above keep the walk shallower
        walk.findings = []
        budget.spent, budget.where = budget.spent or "Python's recursion limit", pointer
    if budget.spent is not None:
        bound = budget.spent or ""
        value = getattr(limits, bound, None)
        walk.findings.append(
            budget_finding(bound, value if isinstance(value, int) else None, budget.where, bound)
        )
    if not walk.findings:
        walk.emit(rewritten(pointer))
    witnesses = (
        WitnessSearch(old_root, (old, old_code), (new, new_code), limits.max_witness_bytes)
        if side is Side.INPUT
        else None
    )
    return [_change(side, f, witnesses) for f in walk.findings]


def rewritten(pointer: str) -> Finding:
    """`schema-rewritten`: different JSON with the same meaning (`$id`, a
    definition moved, `allOf[A]` for `A`, ...), where no rule found anything.
    Example: `{"allOf": [{"type": "string"}, {"maxLength": 5}]}` ->
    `{"type": "string", "maxLength": 5}`."""
    return Finding(kind=Kind.SCHEMA_REWRITTEN, pointer=pointer, name=pointer.lstrip("/"))


def _unsafe(old: Node, new: Node) -> tuple[bytes, ...]:
    """What makes equal JSON on both sides mean different things: a `$ref`,
    and across two dialects, the keywords only one of them defines."""
    if old.dialect is new.dialect:
        return (b'"$ref"',)
    apart = (old.dialect.keywords ^ new.dialect.keywords) - INERT
    return (b'"$ref"', *(f'"{keyword}"'.encode() for keyword in sorted(apart)))


def change_of(side: Side, finding: Finding, witnesses: WitnessSearch | None = None) -> Change:
    """The reported change of a finding on `side`: its severity there, its message,
    and (for a breaking input change, given `witnesses`) a confirmed witness."""
    kind = finding.kind
    severity, template = _BY_SIDE[side][kind]
    breaking = severity is _BREAKING
    old, new = finding.old, finding.new
    return Change(
        kind=kind,
        severity=severity,
        path=finding.pointer,
        message=_message(finding, template),
        old_value=_UNSET if old is ABSENT else old,
        new_value=_UNSET if new is ABSENT else new,
        witness=witnesses.find(finding) if witnesses is not None and breaking else None,
        suggested_op=finding.suggested_op if breaking else None,
    )


_change = change_of
_BREAKING = Severity.BREAKING
# side -> kind -> (its severity there, its message template): one lookup per change
_BY_SIDE: dict[Side, dict[Kind, tuple[Severity, str]]] = {
    side: {kind: (severity_of(kind, side), message_of(kind, side)) for kind in Kind}
    for side in Side
}


def _message(finding: Finding, template: str) -> str:
    extra = finding.extra
    if extra and "bound" in extra:
        return str(extra["bound"])
    if "{" not in template:
        return template
    return template.format(
        name=finding.name,
        # rendered only where the message shows them (a schema can be large)
        old=show(finding.old) if "{old}" in template else "",
        new=show(finding.new) if "{new}" in template else "",
        new_name=extra.get("new_name", "") if extra else "",
    )


def show(value: Any) -> str:
    """A value as a message shows it: JSON (`null` for JSON's null), `(absent)` for none."""
    return "(absent)" if value is ABSENT or value is _UNSET else _RENDER.encode(value)


_UNSET = msgspec.UNSET


# what `json.dumps(value, sort_keys=True, default=str)` writes, without a new
# encoder per call (json.dumps makes one whenever an option is given)
_RENDER = json.JSONEncoder(sort_keys=True, default=str)


def _report(changes: list[Change]) -> ChangeReport:
    if len(changes) == 1:
        return ChangeReport(severity=changes[0].severity, changes=changes)
    ordered = sorted(changes, key=lambda c: (c.path, c.kind.value))
    return ChangeReport(severity=worst([c.severity for c in ordered]), changes=ordered)
