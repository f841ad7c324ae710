"""The call gate: the decision boundary of seed 000 plus the alias rule of seed 002.

    gate = Gate(toolset, on_decision=metrics_hook)   # compiles every validator once
    decision = gate.check("db.query", arguments, meta)
    if decision.accepted:
        handler(decision.tool, decision.arguments)   # exactly these arguments
    elif decision.error.model_text is not None and revision >= "2025-11-25":
        reply_result(is_error=True, text=decision.error.model_text,
                     structured=structured_content(decision.error))
    else:
        reply_error(decision.error.code, decision.error.message, decision.error.data)

`check` reads the raw request `_meta` and the raw arguments. It never fills a
default, never drops or coerces a value; accepted arguments are the caller's
own object (declared current or nothing declared) or the converter's output.

One rule for undeclared properties, every call and every gate: a call is
validated against the STRICT form of the version it speaks (registry/sdk/
strict.py: every object schema whose `additionalProperties` is absent or `true`
is closed; one whose `additionalProperties` is a schema is a map and keeps its
keys), whether it declares that version, declares nothing (current), or calls
an alias (its contract); converted arguments meet the strict form of current.
So a property the version does not declare (a v4 caller's `extra`, a stale
caller's renamed `timeout_ms`) is refused naming it, never passed through,
dropped by a framework or silently ignored. Every `inputSchema` a refusal
carries, and the schema its text shows, is that strict form: the one a retry
must meet.

Decision table (the branches in the order `check` takes them). "declared" is
`_meta.schemaVersion` ("v4", 4 or "4") and/or `_meta.schemaHash` (a digest); a
call through an alias declares the alias's contract. Versions in `data` are in
wire form ("v4"). Surface: `rpc` = a JSON-RPC error on every revision; `arg` =
a refusal of the arguments themselves, a JSON-RPC error before 2025-11-25 and
an `isError` tool result (text `model_text`, `structuredContent` from
registry/sdk/refusals.py) from 2025-11-25 on (adapters: `refusals="auto"`).

Row: inputs -> decision, code reason, `data` beyond reason/tool/declaredVersion/
currentVersion/retired, action, surface. Codes, surfaces, actions and every
word said (message, model text, `data.detail`) come from the refusal catalogue
registry/sdk/refusals.json, which the TypeScript gate reads too.
tests/golden/gate_decisions.json holds these rows as language-neutral cases
(every SDK runs them, words included); docs/gate.md says why the surfaces,
the relist rule and the listing TTL are what they are.

 1. name neither a tool nor an alias -> refuse, -32602 unknown_tool,
    data {reason, tool} only, no action, rpc.
 2. alias; the call declares something other than its contract -> refuse,
    -31002 schema_version_unknown, + target, contractVersion; no action; rpc.
 3. alias; no route from its contract to current -> refuse,
    -31004 schema_version_mismatch, + target, contractVersion; no action; rpc.
 4. alias; arguments invalid under the contract -> refuse, -32602
    invalid_arguments, + target, contractVersion, errors, inputSchema (the
    contract's); no action; arg.
 5. alias; a converter's `reject` refuses a value -> refuse, -32602
    conversion_rejected, + path, value, detail; no action; arg.
 6. alias; converted arguments invalid under current (a broken converter) ->
    refuse, -31004 schema_version_mismatch, + errors; relist; rpc.
 7. alias; otherwise -> accept, arguments converted along the route.
 8. declared unreadable, a hash never served, or version and hash disagreeing
    -> refuse, -31002 schema_version_unknown, + detail (declaredHash); no
    action; rpc.
 9. declared retired -> refuse, -31001 schema_version_retired, + changes
    (declared -> current), inputSchema (current's); relist; rpc.
10. declared never served -> refuse, -31002 schema_version_unknown, + detail;
    no action; rpc.
11. declared served; arguments invalid under its strict form (a property it
    does not declare included) -> refuse, -32602 invalid_arguments, + errors,
    inputSchema (the declared version's); no action; arg.
12. declared current; valid under its strict form -> accept, the caller's own
    object.
13. declared older served; a converter's `reject` refuses a value -> refuse,
    -32602 conversion_rejected, + path, value, detail; no action; arg.
14. declared older served; converted invalid under strict current -> refuse, -31004
    schema_version_mismatch, + errors; relist; rpc.
15. declared older served; otherwise -> accept, arguments converted.
16. nothing declared; the strict form of current accepts -> accept, the
    caller's own object.
17. nothing declared; strict current refuses; the strict form of an older
    version (served or retired) accepts -> refuse, -31003
    strict_validation_failed, + errors, inferredVersion (the newest such),
    changes (inferred -> current), inputSchema (current's); relist; arg.
18. nothing declared; strict current refuses; no version accepts -> refuse,
    -31003 strict_validation_failed, + errors, inferredVersion null, changes
    [], inputSchema (current's); no action; arg.
19. the namespace's policy turned gating off (`"gating": false`, an
    `UngatedGate`, below): a tool or an alias (dispatched to its target) ->
    accept, the caller's own object, whatever it declares, unvalidated and
    unconverted; arguments not an object -> refuse, -32602 invalid_arguments,
    data {reason, tool} only, no action, arg; any other name as row 1.

`action: "relist"` is set only where a fresh listing tells the caller something
new: an older version was inferred (17), the declared version is retired (9),
or a converter is broken, so the caller must speak current (6, 14). Never
where re-listing shows the contract the call was just refused under (18: v4
listed with `additionalProperties: true`, a version-less call with one extra
property is refused naming the property as not part of v4, with no relist; 11:
the caller's own contract). A version never served is refused hard (seed 000:
forward-dated or forged).

Inference (17, 18) only explains a refusal: it never accepts or converts a
call (seed 000: a version-less call is never coerced). The strict validators
of the retired versions are compiled on the first refusal that needs them and
kept for the toolset's life (the served ones are the gate's own); an accepted
call never reaches them. Refusals that
a retry can fix carry the contract to retry under (`inputSchema`, `changes`),
so a client whose listing is cached (2026-07-28 `ttlMs`) needs no re-list.

Validation runs on jsonschema-rs where registry/sdk/validators.py shows it
agrees with python-jsonschema (decided per schema when the gate compiles), on
python-jsonschema elsewhere; refusals are always explained by python-jsonschema.
No log line is formatted for an accepted call unless the application enables
the level (DEBUG for declared calls, INFO for version-less ones) on the
`registry.sdk.gate` logger.

Gating off. A toolset whose namespace policy turned gating off
(`toolset.gating` False, `"gating": false` in the payload) gets an
`UngatedGate` (registry/sdk/ungated.py) from `Gate(toolset)`: calls pass
through with the caller's own arguments, unvalidated and unconverted. A gated
namespace's toolset gets this class, its hot path unchanged.

An accepted break (a route step marked `accepted`: the publisher accepted the
breaking change instead of writing a converter) is an identity step: a call
declaring the older version is validated against it, then against current
unconverted, and refused with -31004 (relist) when current refuses it (row 14),
logged as `gate.accepted_break` at INFO rather than as a broken converter.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from registry.compat import ConversionRejected, Op, apply
from registry.sdk._compiled import (
    CompiledAlias,
    CompiledTool,
    Served,
    compile_toolset,
    error_details,
    wire,
)
from registry.sdk._logging import get_logger
from registry.sdk.refusals import (
    bullets,
    caller_name,
    catalogue_entry,
    change_lines,
    problems,
    render,
    schema_shown,
    show,
    summary,
)
from registry.sdk.strict import strict_schema
from registry.sdk.toolset import Toolset

__all__ = [
    "CONVERSION_REJECTED",
    "INVALID_PARAMS",
    "SCHEMA_VERSION_MISMATCH",
    "SCHEMA_VERSION_RETIRED",
    "SCHEMA_VERSION_UNKNOWN",
    "STRICT_VALIDATION_FAILED",
    "Decision",
    "Declared",
    "Gate",
    "GateError",
    "refusal_error",
    "strict_schema",
]

SCHEMA_VERSION_RETIRED = -31001
SCHEMA_VERSION_UNKNOWN = -31002
STRICT_VALIDATION_FAILED = -31003
SCHEMA_VERSION_MISMATCH = -31004
INVALID_PARAMS = -32602
CONVERSION_REJECTED = INVALID_PARAMS

_VERSION = re.compile(r"^v?(0|[1-9][0-9]*)\Z")
_DEBUG = logging.DEBUG
_INFO = logging.INFO

_log = get_logger("registry.sdk.gate")


class GateError(msgspec.Struct, frozen=True):
    """A refusal: send `code`, `message` and `data` as a JSON-RPC error as they are.

    `model_text` is set on refusals of the arguments themselves (rows 4, 5, 11,
    13, 17, 18 of the table): the refusal written for the model, which from
    2025-11-25 on is answered as an `isError` tool result instead.
    """

    code: int
    message: str
    data: dict[str, Any]
    model_text: str | None = None


class Decision(msgspec.Struct, frozen=True):
    """The gate's answer for one `tools/call`.

    Accepted: `tool` is the tool to dispatch (the target for an alias),
    `version` its current version, `arguments` what the handler receives.
    Refused: `error` is set, `arguments` is None, `tool` names the called tool
    (the target for an alias) and `version` is its current version when known.
    """

    accepted: bool
    tool: str
    version: int | None
    arguments: dict[str, Any] | None
    error: GateError | None = None


class Declared(msgspec.Struct, frozen=True):
    """What a call declared, as read from its `_meta` (or its alias)."""

    version: int | None = None
    schema_version: Any = None
    schema_hash: str | None = None
    alias: str | None = None

    @property
    def present(self) -> bool:
        return self.schema_version is not None or self.schema_hash is not None or bool(self.alias)


OnDecision = Callable[[Decision, Declared], None]

_NOTHING = Declared()


def _read_version(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        match = _VERSION.match(value)
        if match:
            return int(match.group(1))
    return None


def _shown(value: Any) -> Any:
    """A declared version for `data`: wire form when it reads as one, else as sent."""
    version = _read_version(value)
    return wire(version) if version is not None else value


class Gate:
    """Gates `tools/call` requests against one toolset snapshot.

    Every validator accepted calls need (declared versions, current, the strict
    form of current, alias contracts) is compiled here, once; `check` only
    looks them up. A toolset swap builds a new Gate; a call in flight finishes
    on the old one.
    """

    __slots__ = ("_aliases", "_logger", "_on_decision", "_tools", "toolset")

    def __new__(cls, toolset: Toolset, *args: Any, **kwargs: Any) -> Gate:
        if cls is Gate and not toolset.gating:
            # the namespace's policy turned gating off: the pass-through gate
            from registry.sdk.ungated import UngatedGate

            return super().__new__(UngatedGate)
        return super().__new__(cls)

    def __init__(
        self,
        toolset: Toolset,
        *,
        on_decision: OnDecision | None = None,
        fast_validation: bool = True,
    ) -> None:
        """`fast_validation=False` validates with python-jsonschema alone (see validators.py)."""
        self.toolset = toolset
        self._on_decision = on_decision
        # the standard library logger: its level is asked per call, before any formatting
        self._logger = logging.getLogger("registry.sdk.gate")
        self._tools, self._aliases = self._compile(toolset, fast_validation)

    def _compile(
        self, toolset: Toolset, fast: bool
    ) -> tuple[dict[str, CompiledTool], dict[str, CompiledAlias]]:
        return compile_toolset(toolset, fast=fast)

    def check(self, name: str, arguments: Any, meta: Mapping[str, Any] | None = None) -> Decision:
        """Decide one call: `arguments` and `meta` exactly as they came on the wire."""
        tool = self._tools.get(name)
        if tool is None:
            alias = self._aliases.get(name)
            if alias is None:
                return self._finish(
                    _refuse(name, None, "unknown_tool", "unknown", None, {"tool": name}),
                    _NOTHING,
                    None,
                )
            return self._check_alias(alias, arguments, meta)
        if arguments is None:
            arguments = {}
        if type(meta) is dict or isinstance(meta, Mapping):
            schema_version = meta.get("schemaVersion")
            schema_hash = meta.get("schemaHash")
        else:
            schema_version = schema_hash = None
        if schema_hash is None:
            if schema_version is None:
                return self._check_undeclared(tool, arguments)
            # the hot path: a version and no hash
            kind = type(schema_version)
            if kind is int:
                version: int | None = schema_version
            elif kind is str:
                version = tool.spellings.get(schema_version)
                if version is None:
                    version = _read_version(schema_version)
            else:
                version = _read_version(schema_version)
            if version is not None:
                return self._check_declared(
                    tool, version, arguments, Declared(version, schema_version)
                )
        version = _read_version(schema_version)
        by_hash = tool.digests.get(schema_hash) if isinstance(schema_hash, str) else None
        declared = Declared(
            version=version if schema_version is not None else by_hash,
            schema_version=schema_version,
            schema_hash=schema_hash if isinstance(schema_hash, str) else None,
        )
        if schema_version is not None and version is None:
            return self._unknown(tool, declared, "unreadable", show(schema_version))
        if schema_hash is not None and by_hash is None:
            return self._unknown(tool, declared, "hash_unknown", show(schema_hash))
        if schema_version is not None and schema_hash is not None and version != by_hash:
            assert by_hash is not None
            return self._unknown(
                tool, declared, "disagree", show(schema_version), hashed=wire(by_hash)
            )
        assert declared.version is not None
        return self._check_declared(tool, declared.version, arguments, declared)

    # ------------------------------------------------------------ branches

    def _check_declared(
        self, tool: CompiledTool, version: int, arguments: Any, declared: Declared
    ) -> Decision:
        current = tool.current.version
        if version in tool.retired:
            data = _version_data(tool, version)
            changes = tool.changes_to_current(version) if version in tool.definitions else []
            data.update(changes=changes, inputSchema=tool.schema(current, strict=True))
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    "schema_version_retired",
                    "retired",
                    data,
                    _values(tool, declared=wire(version)),
                ),
                declared,
                current,
            )
        served = tool.served.get(version)
        if served is None:
            return self._unknown(tool, declared, "never_served", wire(version))
        if not isinstance(arguments, dict) or not served.validator.is_valid(arguments):
            return self._invalid(tool, served, arguments, declared, None)
        if version == current:
            decision = Decision(True, tool.name, current, arguments)
            if self._logger.isEnabledFor(_DEBUG):
                _log.debug(
                    "gate.decision",
                    tool=tool.name,
                    declared=version,
                    current=current,
                    decision="accept",
                    reason="declared",
                )
            if self._on_decision is not None:
                self._notify(decision, declared)
            return decision
        return self._convert(tool, served.ops, arguments, declared, version, None)

    def _check_undeclared(self, tool: CompiledTool, arguments: Any) -> Decision:
        current = tool.current.version
        errors = error_details(tool.strict, arguments)
        if not errors:
            return self._finish(Decision(True, tool.name, current, arguments), _NOTHING, current)
        inferred = tool.infer(arguments)
        changes = tool.changes_to_current(inferred) if inferred is not None else []
        data = _version_data(tool, None)
        data.update(
            errors=errors,
            inferredVersion=wire(inferred) if inferred is not None else None,
            changes=changes,
            inputSchema=tool.schema(current, strict=True),
        )
        lines = problems(tool.name, wire(current), errors, tool.strict_input, arguments)
        values = _values(
            tool,
            problems=bullets(lines),
            first_problem=summary(lines),
            schema=schema_shown(tool.strict_input, tool.schema_text(current), errors, changes),
        )
        if inferred is None:
            variant = "unmatched"
        else:
            variant = "inferred_retired" if inferred in tool.retired else "inferred_served"
            values.update(
                inferred=wire(inferred),
                changes=change_lines(wire(inferred), wire(current), changes),
            )
        return self._finish(
            _refuse(tool.name, current, "strict_validation_failed", variant, data, values),
            _NOTHING,
            current,
        )

    def _check_alias(
        self, alias: CompiledAlias, arguments: Any, meta: Mapping[str, Any] | None
    ) -> Decision:
        tool = alias.target
        current = tool.current.version
        declared = Declared(version=alias.contract_version, alias=alias.name)
        if arguments is None:
            arguments = {}
        schema_version = meta.get("schemaVersion") if isinstance(meta, Mapping) else None
        schema_hash = meta.get("schemaHash") if isinstance(meta, Mapping) else None
        if (
            schema_version is not None and _read_version(schema_version) != alias.contract_version
        ) or (schema_hash is not None and schema_hash != alias.contract_digest):
            said = schema_version if schema_version is not None else schema_hash
            values = _alias_values(alias, declared=show(said))
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    "schema_version_unknown",
                    "alias_declares_other",
                    _alias_data(alias, said),
                    values,
                ),
                declared,
                current,
            )
        if alias.ops is None:
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    "schema_version_mismatch",
                    "alias_unrouted",
                    _alias_data(alias, alias.contract_version),
                    _alias_values(alias),
                ),
                declared,
                current,
            )
        if not isinstance(arguments, dict) or not alias.validator.is_valid(arguments):
            served = Served(alias.contract_version, alias.validator, alias.ops)
            return self._invalid(tool, served, arguments, declared, alias)
        return self._convert(
            tool, alias.ops, arguments, declared, alias.contract_version, alias.name
        )

    def _convert(
        self,
        tool: CompiledTool,
        ops: tuple[Op, ...],
        arguments: dict[str, Any],
        declared: Declared,
        version: int,
        alias: str | None,
    ) -> Decision:
        current = tool.current.version
        try:
            converted = apply(ops, arguments)
        except ConversionRejected as exc:
            data = _version_data(tool, version)
            _name_alias(data, tool, alias, version)
            data.update(path=exc.path, value=exc.value)
            values = _values(tool, called=alias or tool.name, declared=wire(version))
            values.update(path=caller_name(exc.path), value=show(exc.value), converter=exc.message)
            return self._finish(
                _refuse(tool.name, current, "conversion_rejected", "rejected", data, values),
                declared,
                current,
            )
        if not tool.current.validator.is_valid(converted):
            errors = error_details(tool.current.validator, converted)
            data = _version_data(tool, version)
            _name_alias(data, tool, alias, version)
            data["errors"] = errors
            lines = problems(tool.name, wire(current), errors, tool.strict_input, converted)
            values = _values(
                tool,
                called=alias or tool.name,
                declared=wire(version),
                first_problem=summary(lines),
            )
            if version in tool.accepted_from:
                _log.info("gate.accepted_break", tool=tool.name, declared=version, current=current)
            else:
                _log.error(
                    "gate.converter_broken", tool=tool.name, declared=version, current=current
                )
            return self._finish(
                _refuse(
                    tool.name, current, "schema_version_mismatch", "converted_invalid", data, values
                ),
                declared,
                current,
            )
        return self._finish(Decision(True, tool.name, current, converted), declared, current)

    def _invalid(
        self,
        tool: CompiledTool,
        served: Served,
        arguments: Any,
        declared: Declared,
        alias: CompiledAlias | None,
    ) -> Decision:
        current = tool.current.version
        version = served.version
        errors = error_details(served.validator, arguments)
        data = _version_data(tool, version)
        _name_alias(data, tool, alias.name if alias is not None else None, version)
        if alias is not None:
            schema, text = alias.schema, alias.schema_text
        else:
            schema, text = tool.schema(version, strict=True), tool.schema_text(version)
        data.update(errors=errors, inputSchema=schema)
        lines = problems(tool.name, wire(version), errors, schema, arguments)
        values = _values(
            tool,
            called=alias.name if alias is not None else tool.name,
            declared=wire(version),
            problems=bullets(lines),
            first_problem=summary(lines),
            schema=schema_shown(schema, text, errors, ()),
        )
        return self._finish(
            _refuse(
                tool.name,
                current,
                "invalid_arguments",
                "alias" if alias is not None else "declared",
                data,
                values,
            ),
            declared,
            current,
        )

    def _unknown(
        self, tool: CompiledTool, declared: Declared, variant: str, said: str, hashed: str = ""
    ) -> Decision:
        current = tool.current.version
        shown = declared.schema_version if declared.version is None else declared.version
        data = _version_data(tool, shown if shown is not None else declared.schema_hash)
        if declared.schema_hash is not None:
            data["declaredHash"] = declared.schema_hash
        return self._finish(
            _refuse(
                tool.name,
                current,
                "schema_version_unknown",
                variant,
                data,
                _values(tool, declared=said, hashed=hashed),
            ),
            declared,
            current,
        )

    def _finish(self, decision: Decision, declared: Declared, current: int | None) -> Decision:
        error = decision.error
        if decision.accepted:
            level = _DEBUG if declared.present else _INFO
            if self._logger.isEnabledFor(level):
                _log.log(
                    level,
                    "gate.decision",
                    tool=decision.tool,
                    declared=declared.version if declared.present else None,
                    current=current,
                    decision="accept",
                    reason="declared" if declared.present else "undeclared_strict_ok",
                )
        elif self._logger.isEnabledFor(_INFO):
            assert error is not None
            _log.info(
                "gate.decision",
                tool=decision.tool,
                declared=declared.version if declared.present else None,
                current=current,
                decision="reject",
                reason=error.data.get("reason"),
                code=error.code,
            )
        if self._on_decision is not None:
            self._notify(decision, declared)
        return decision

    def _notify(self, decision: Decision, declared: Declared) -> None:
        assert self._on_decision is not None
        try:
            self._on_decision(decision, declared)
        except Exception:
            _log.exception("gate.on_decision_failed", tool=decision.tool)


def _version_data(tool: CompiledTool, declared: Any) -> dict[str, Any]:
    return {
        "tool": tool.name,
        "declaredVersion": _shown(declared),
        "currentVersion": wire(tool.current.version),
        "retired": list(tool.retired_wire),
    }


def _values(tool: CompiledTool, **values: str) -> dict[str, str]:
    """The template values every refusal of `tool` may name, plus `values`."""
    return {
        "tool": tool.name,
        "called": tool.name,
        "current": wire(tool.current.version),
        "served": ", ".join(wire(v) for v in sorted(tool.served)),
        **values,
    }


def _alias_values(alias: CompiledAlias, **values: str) -> dict[str, str]:
    return _values(alias.target, called=alias.name, contract=wire(alias.contract_version), **values)


def _alias_data(alias: CompiledAlias, declared: Any) -> dict[str, Any]:
    data = _version_data(alias.target, declared)
    _name_alias(data, alias.target, alias.name, alias.contract_version)
    return data


def _name_alias(data: dict[str, Any], tool: CompiledTool, alias: str | None, contract: int) -> None:
    """A refusal of a call through an alias names the alias, its target and contract."""
    if alias is not None:
        data.update(tool=alias, target=tool.name, contractVersion=wire(contract))


def refusal_error(
    reason: str, variant: str, data: Mapping[str, Any], values: Mapping[str, str]
) -> GateError:
    """The refusal the catalogue (registry/sdk/refusals.json) writes for `reason`
    and `variant`: its code; `data` with `reason`, the action and the detail; the
    message; the model's text on the arguments surface. Adapters refusing on the
    gate's behalf (a handler's mismatch) build theirs here too."""
    entry = catalogue_entry(reason, variant)
    payload = {"reason": reason, **data}
    if entry.action is not None:
        payload["action"] = entry.action
    if entry.detail is not None:
        detail = render(entry.detail, values)
        payload["detail"] = detail
        values = {**values, "detail": detail}
    model_text = render(entry.model_text, values) if entry.model_text is not None else None
    return GateError(entry.code, render(entry.message, values), payload, model_text)


def _refuse(
    tool: str,
    current: int | None,
    reason: str,
    variant: str,
    data: dict[str, Any] | None,
    values: Mapping[str, str],
) -> Decision:
    error = refusal_error(reason, variant, data if data is not None else {"tool": tool}, values)
    return Decision(False, tool, current, None, error)
