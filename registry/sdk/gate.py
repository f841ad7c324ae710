"""The call gate: the decision boundary of seed 000 plus the alias rule of seed 002.

    gate = Gate(toolset, on_decision=metrics_hook)   # compiles every validator once
    decision = gate.check("db.query", arguments, meta)
    if decision.accepted:
        handler(decision.tool, decision.arguments)   # exactly these arguments
    else:
        reply_error(decision.error.code, decision.error.message, decision.error.data)

`check` reads the raw request `_meta` and the raw arguments. It never fills a
default, never drops or coerces a value; accepted arguments are the caller's
own object (declared current or nothing declared) or the converter's output.

Error codes (JSON-RPC):

| code | reason | when | action |
|---|---|---|---|
| -31001 | schema_version_retired | declared version retired | relist |
| -31002 | schema_version_unknown | declared never served / unreadable / conflicting | - |
| -31003 | strict_validation_failed | nothing declared, strict validation fails | relist |
| -31004 | schema_version_mismatch | alias without a route | - |
| -31004 | schema_version_mismatch | converted arguments invalid under current | relist |
| -32602 | invalid_arguments | invalid under the declared version (caller's contract) | - |
| -32602 | conversion_rejected | a converter's `reject` operation refused a value | - |
| -32602 | unknown_tool | neither a tool nor an alias | - |

`action: "relist"` is set only where re-listing and retrying once can succeed:
a retired version (the new listing carries the current contract), a version-less
call (the listing carries the version to declare) and a broken conversion (the
caller can speak current directly). A version never served is refused hard
(seed 000: forward-dated or forged). Invalid arguments under a contract the
server still serves and rejected values are the call's fault, not the version's:
the protocol's -32602, with structured data naming the version and the path.

Validation runs on jsonschema-rs where registry/sdk/validators.py shows it
agrees with python-jsonschema (decided per schema when the gate compiles), on
python-jsonschema elsewhere; refusals are always explained by python-jsonschema.
The accepted call with a declared version formats no log line unless debug
logging is enabled, and reads only precomputed tables.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.validators import validator_for

from registry.canonical import canonical_json, digest
from registry.compat import ConversionRejected, Op, apply
from registry.patterns import linear_validator
from registry.sdk.toolset import AliasEntry, RouteStep, ToolEntry, Toolset, ToolsetError
from registry.sdk.validators import SchemaValidator, compile_validator

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
    "strict_schema",
]

SCHEMA_VERSION_RETIRED = -31001
SCHEMA_VERSION_UNKNOWN = -31002
STRICT_VALIDATION_FAILED = -31003
SCHEMA_VERSION_MISMATCH = -31004
INVALID_PARAMS = -32602
CONVERSION_REJECTED = INVALID_PARAMS

_MAX_ERRORS = 10
_VERSION = re.compile(r"^v?(0|[1-9][0-9]*)\Z")
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("then", "else")
_UNEVALUATED_DIALECTS = (
    "https://json-schema.org/draft/2020-12/",
    "https://json-schema.org/draft/2019-09/",
)

_DEBUG = logging.DEBUG
_INFO = logging.INFO

_log = structlog.get_logger("registry.sdk.gate")


class GateError(msgspec.Struct, frozen=True):
    """A JSON-RPC error object: send `code`, `message` and `data` as they are."""

    code: int
    message: str
    data: dict[str, Any]


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


# ---------------------------------------------------------------- strict schemas


def strict_schema(schema: Any) -> Any:
    """A copy of `schema` in which every object schema whose
    `additionalProperties` is absent or true is closed; an object whose
    `additionalProperties` is a schema is a map and keeps its keys.

    An object schema composed with `allOf`/`anyOf`/`oneOf`/`then`/`else`
    (properties spread over branches) is closed once with
    `unevaluatedProperties: false` where the dialect has it, so that the
    branches' properties still count. `not` and `if` are left alone: closing
    inside them would make the schema more lenient, or change the branch taken.
    """
    result = copy.deepcopy(schema)
    dialect = result.get("$schema", "") if isinstance(result, dict) else ""
    unevaluated = not dialect or str(dialect).startswith(_UNEVALUATED_DIALECTS)
    _close(result, unevaluated, in_place=False)
    return result


def _objectish(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind is not None:
        return kind == "object" or (isinstance(kind, list) and "object" in kind)
    return any(k in node for k in ("properties", "patternProperties", "additionalProperties"))


def _branches(node: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for key in _IN_PLACE_LISTS:
        if isinstance(node.get(key), list):
            found.extend(node[key])
    found.extend(node[key] for key in _IN_PLACE_ONE if key in node)
    return found


def _has_object_branch(node: dict[str, Any]) -> bool:
    return any(
        isinstance(b, dict) and (_objectish(b) or _has_object_branch(b)) for b in _branches(node)
    )


def _close(node: Any, unevaluated: bool, *, in_place: bool) -> None:
    if not isinstance(node, dict):
        return
    composed = unevaluated and _has_object_branch(node)
    additional = node.get("additionalProperties", True)
    if in_place or composed:
        # closed by the enclosing unevaluatedProperties: an explicit `true`
        # would mark every property evaluated and open it again
        if additional is True:
            node.pop("additionalProperties", None)
        if composed and not in_place and node.get("unevaluatedProperties", True) is True:
            node["unevaluatedProperties"] = False
    elif _objectish(node) and additional is True:
        node["additionalProperties"] = False
    for branch in _branches(node):
        _close(branch, unevaluated, in_place=composed or in_place)
    for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        children = node.get(key)
        if isinstance(children, dict):
            for child in children.values():
                _close(child, unevaluated, in_place=key == "dependentSchemas" and composed)
    for key in ("items", "additionalItems", "unevaluatedItems"):
        child = node.get(key)
        if isinstance(child, list):
            for item in child:
                _close(item, unevaluated, in_place=False)
        else:
            _close(child, unevaluated, in_place=False)
    if isinstance(node.get("prefixItems"), list):
        for item in node["prefixItems"]:
            _close(item, unevaluated, in_place=False)
    if isinstance(node.get("additionalProperties"), dict):
        _close(node["additionalProperties"], unevaluated, in_place=False)


# ---------------------------------------------------------------- compiled toolset


@dataclass(frozen=True, slots=True)
class _Served:
    version: int
    validator: SchemaValidator
    ops: tuple[Op, ...]


@dataclass(frozen=True, slots=True)
class _Tool:
    name: str
    current: _Served
    served: Mapping[int, _Served]
    strict: SchemaValidator
    digests: Mapping[str, int]
    retired: frozenset[int]
    retired_list: tuple[int, ...]
    # "v4" and "4" for every version served or retired: the common spellings
    # skip the regex; any other string still goes through _read_version
    spellings: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class _Alias:
    name: str
    target: _Tool
    contract_version: int
    contract_digest: str
    validator: SchemaValidator
    ops: tuple[Op, ...] | None


def _flatten(route: Iterable[RouteStep]) -> tuple[Op, ...]:
    return tuple(op for step in route for op in step.ops)


class _Compiler:
    """Builds validators once, sharing one per distinct schema."""

    def __init__(self, *, fast: bool = True) -> None:
        self._fast = fast
        self._cache: dict[bytes, SchemaValidator] = {}

    def validator(self, schema: Any, where: str) -> SchemaValidator:
        key = canonical_json(schema)
        found = self._cache.get(key)
        if found is None:
            cls = validator_for(schema, default=Draft202012Validator)
            try:
                cls.check_schema(schema)
            except SchemaError as exc:
                raise ToolsetError(f"{where}: inputSchema is not a valid schema: {exc}") from exc
            # no format_checker: `format` is an annotation, as the dialect's default
            # `pattern` runs on RE2: linear time whatever the pattern and the value.
            found = compile_validator(schema, linear_validator(cls)(schema), fast=self._fast)
            self._cache[key] = found
        return found


def _input_schema(definition: Mapping[str, Any]) -> Any:
    return definition.get("inputSchema", {"type": "object"})


def _compile_tool(entry: ToolEntry, compiler: _Compiler) -> _Tool:
    served = {
        v.version: _Served(
            v.version,
            compiler.validator(_input_schema(v.definition), f"{entry.name} v{v.version}"),
            _flatten(v.route),
        )
        for v in entry.versions
    }
    current = served[entry.current]
    strict = compiler.validator(
        strict_schema(_input_schema(entry.current_version.definition)),
        f"{entry.name} v{entry.current} (strict)",
    )
    digests = {v.digest: v.version for v in entry.versions}
    digests.update({r.digest: r.version for r in entry.retired})
    retired = tuple(sorted(r.version for r in entry.retired))
    spellings = {
        spelled: version
        for version in (*served, *retired)
        for spelled in (f"v{version}", str(version))
    }
    return _Tool(
        entry.name, current, served, strict, digests, frozenset(retired), retired, spellings
    )


def _compile_alias(entry: AliasEntry, target: _Tool, compiler: _Compiler) -> _Alias:
    return _Alias(
        name=entry.name,
        target=target,
        contract_version=entry.contract.version,
        contract_digest=digest(entry.definition),
        validator=compiler.validator(_input_schema(entry.definition), f"alias {entry.name}"),
        ops=None if entry.route is None else _flatten(entry.route),
    )


# ---------------------------------------------------------------- validation detail


def _pointer(parts: Iterable[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _detail(error: ValidationError) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": _pointer(error.absolute_path),
        "keyword": error.validator,
        "message": error.message,
        "schemaPath": _pointer(error.absolute_schema_path),
    }
    schema, instance = error.schema, error.instance
    if (
        error.validator == "additionalProperties"
        and isinstance(schema, dict)
        and isinstance(instance, dict)
    ):
        known = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        out["unexpected"] = sorted(
            key
            for key in instance
            if key not in known and not any(re.search(p, key) for p in patterns)
        )
    return out


def _validation_failure(
    validator: SchemaValidator, instance: Any
) -> tuple[str, list[dict[str, Any]]]:
    if not isinstance(instance, dict):
        return "arguments must be an object", []
    errors = list(validator.iter_errors(instance))
    best = best_match(errors)
    located = f" at {_pointer(best.absolute_path)}" if best.absolute_path else ""
    return f"{best.message}{located}", [_detail(e) for e in errors[:_MAX_ERRORS]]


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


# ---------------------------------------------------------------- the gate


class Gate:
    """Gates `tools/call` requests against one toolset snapshot.

    Every validator (declared versions, current, the strict form of current,
    alias contracts) is compiled here, once; `check` only looks them up. A
    toolset swap builds a new Gate; a call in flight finishes on the old one.
    """

    __slots__ = ("_aliases", "_enabled", "_log", "_on_decision", "_tools", "toolset")

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
        # resolved once: structlog's lazy proxy would rebuild the logger on every call
        self._log: Any = _log.bind()
        # asked per call (a stdlib logger's level may change at run time); a
        # wrapper class without the method logs everything, as before
        self._enabled: Callable[[int], bool] = getattr(self._log, "is_enabled_for", _always_enabled)
        compiler = _Compiler(fast=fast_validation)
        self._tools = {t.name: _compile_tool(t, compiler) for t in toolset.tools}
        self._aliases = {
            a.name: _compile_alias(a, self._tools[a.target], compiler) for a in toolset.aliases
        }

    def check(self, name: str, arguments: Any, meta: Mapping[str, Any] | None = None) -> Decision:
        """Decide one call: `arguments` and `meta` exactly as they came on the wire."""
        tool = self._tools.get(name)
        if tool is None:
            alias = self._aliases.get(name)
            if alias is None:
                return self._finish(
                    _refuse(name, None, INVALID_PARAMS, f"Unknown tool: {name}", "unknown_tool"),
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
        problem = None
        if schema_version is not None and version is None:
            problem = f"schemaVersion {schema_version!r} is not a version (write 'v4', 4 or '4')"
        elif schema_hash is not None and by_hash is None:
            problem = f"schemaHash {schema_hash!r} is no version of {tool.name} ever served"
        elif schema_version is not None and schema_hash is not None and version != by_hash:
            problem = f"schemaVersion {schema_version!r} and schemaHash (v{by_hash}) disagree"
        if problem is not None:
            return self._unknown(tool, declared, problem)
        assert declared.version is not None
        return self._check_declared(tool, declared.version, arguments, declared)

    # ------------------------------------------------------------ branches

    def _check_declared(
        self, tool: _Tool, version: int, arguments: Any, declared: Declared
    ) -> Decision:
        current = tool.current.version
        if version in tool.retired:
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    SCHEMA_VERSION_RETIRED,
                    f"{tool.name} v{version} is retired; the current version is v{current}. "
                    "Re-issue tools/list and retry once.",
                    "schema_version_retired",
                    _version_data(tool, version, relist=True),
                ),
                declared,
                current,
            )
        served = tool.served.get(version)
        if served is None:
            return self._unknown(tool, declared, f"{tool.name} v{version} was never served")
        if not isinstance(arguments, dict) or not served.validator.is_valid(arguments):
            return self._invalid(tool, served, arguments, declared, version)
        if version == current:
            decision = Decision(True, tool.name, current, arguments)
            if self._enabled(_DEBUG):
                self._log.debug(
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
        return self._convert(tool, served.ops, arguments, declared, version)

    def _check_undeclared(self, tool: _Tool, arguments: Any) -> Decision:
        current = tool.current.version
        if isinstance(arguments, dict) and tool.strict.is_valid(arguments):
            return self._finish(Decision(True, tool.name, current, arguments), _NOTHING, current)
        message, errors = _validation_failure(tool.strict, arguments)
        data = _version_data(tool, None, relist=True)
        data["errors"] = errors
        return self._finish(
            _refuse(
                tool.name,
                current,
                STRICT_VALIDATION_FAILED,
                f"{tool.name}: the call declares no schemaVersion and fails strict validation "
                f"against v{current}: {message}. Re-issue tools/list, then call again "
                "declaring _meta.schemaVersion.",
                "strict_validation_failed",
                data,
            ),
            _NOTHING,
            current,
        )

    def _check_alias(
        self, alias: _Alias, arguments: Any, meta: Mapping[str, Any] | None
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
            data = _version_data(tool, schema_version or schema_hash, relist=False)
            data.update(tool=alias.name, target=tool.name, contractVersion=alias.contract_version)
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    SCHEMA_VERSION_UNKNOWN,
                    f"{alias.name} speaks {tool.name} v{alias.contract_version}; the call "
                    f"declares {schema_version or schema_hash!r}",
                    "schema_version_unknown",
                    data,
                ),
                declared,
                current,
            )
        if alias.ops is None:
            data = _version_data(tool, alias.contract_version, relist=False)
            data.update(tool=alias.name, target=tool.name, contractVersion=alias.contract_version)
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    SCHEMA_VERSION_MISMATCH,
                    f"{alias.name} speaks {tool.name} v{alias.contract_version} and no verified "
                    f"converter leads from it to the current v{current}; the call is refused "
                    "rather than run under a contract the caller did not choose.",
                    "schema_version_mismatch",
                    data,
                ),
                declared,
                current,
            )
        if not isinstance(arguments, dict) or not alias.validator.is_valid(arguments):
            served = _Served(alias.contract_version, alias.validator, alias.ops)
            return self._invalid(tool, served, arguments, declared, alias.contract_version)
        return self._convert(tool, alias.ops, arguments, declared, alias.contract_version)

    def _convert(
        self,
        tool: _Tool,
        ops: tuple[Op, ...],
        arguments: dict[str, Any],
        declared: Declared,
        version: int,
    ) -> Decision:
        current = tool.current.version
        try:
            converted = apply(list(ops), arguments)
        except ConversionRejected as exc:
            data = _version_data(tool, version, relist=False)
            data.update(path=exc.path, value=exc.value, detail=exc.message)
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    CONVERSION_REJECTED,
                    f"{tool.name}: value {msgspec.json.encode(exc.value).decode()} at {exc.path} "
                    f"is refused: {exc.message}",
                    "conversion_rejected",
                    data,
                ),
                declared,
                current,
            )
        if not tool.current.validator.is_valid(converted):
            message, errors = _validation_failure(tool.current.validator, converted)
            data = _version_data(tool, version, relist=True)
            data["errors"] = errors
            self._log.error(
                "gate.converter_broken", tool=tool.name, declared=version, current=current
            )
            return self._finish(
                _refuse(
                    tool.name,
                    current,
                    SCHEMA_VERSION_MISMATCH,
                    f"{tool.name}: arguments converted from v{version} do not validate against "
                    f"v{current} ({message}); re-list and call with v{current}.",
                    "schema_version_mismatch",
                    data,
                ),
                declared,
                current,
            )
        return self._finish(Decision(True, tool.name, current, converted), declared, current)

    def _invalid(
        self, tool: _Tool, served: _Served, arguments: Any, declared: Declared, version: int
    ) -> Decision:
        current = tool.current.version
        message, errors = _validation_failure(served.validator, arguments)
        data = _version_data(tool, version, relist=False)
        data["errors"] = errors
        return self._finish(
            _refuse(
                tool.name,
                current,
                INVALID_PARAMS,
                f"Invalid arguments for {tool.name} v{version}: {message}",
                "invalid_arguments",
                data,
            ),
            declared,
            current,
        )

    def _unknown(self, tool: _Tool, declared: Declared, problem: str) -> Decision:
        current = tool.current.version
        shown = declared.schema_version if declared.version is None else declared.version
        data = _version_data(tool, shown if shown is not None else declared.schema_hash, False)
        if declared.schema_hash is not None:
            data["declaredHash"] = declared.schema_hash
        data["detail"] = problem
        return self._finish(
            _refuse(
                tool.name,
                current,
                SCHEMA_VERSION_UNKNOWN,
                f"{problem}; this server serves {tool.name} "
                f"{', '.join(f'v{v}' for v in sorted(tool.served))} (current v{current}).",
                "schema_version_unknown",
                data,
            ),
            declared,
            current,
        )

    def _finish(self, decision: Decision, declared: Declared, current: int | None) -> Decision:
        error = decision.error
        if decision.accepted:
            if declared.present:
                if self._enabled(_DEBUG):
                    self._log.debug(
                        "gate.decision",
                        tool=decision.tool,
                        declared=declared.version,
                        current=current,
                        decision="accept",
                        reason="declared",
                    )
            elif self._enabled(_INFO):
                self._log.info(
                    "gate.decision",
                    tool=decision.tool,
                    declared=None,
                    current=current,
                    decision="accept",
                    reason="undeclared_strict_ok",
                )
        elif self._enabled(_INFO):
            assert error is not None
            self._log.info(
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
            self._log.exception("gate.on_decision_failed", tool=decision.tool)


def _always_enabled(level: int) -> bool:
    return True


def _version_data(tool: _Tool, declared: Any, relist: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tool": tool.name,
        "declaredVersion": declared,
        "currentVersion": tool.current.version,
        "retired": list(tool.retired_list),
    }
    if relist:
        data["action"] = "relist"
    return data


def _refuse(
    tool: str,
    current: int | None,
    code: int,
    message: str,
    reason: str,
    data: dict[str, Any] | None = None,
) -> Decision:
    payload = {"reason": reason, **(data if data is not None else {"tool": tool})}
    return Decision(False, tool, current, None, GateError(code, message, payload))
