"""The gate's compiled toolset: validators built once per toolset, and what a refusal needs.

`compile_toolset(toolset)` builds, for every tool, the validators of its served
versions, of the strict form of current and of every alias contract (eagerly:
accepted calls only look them up). Every validator is of the strict form of
its schema (registry/sdk/strict.py): a call is judged by the strict form of the
version it speaks, declared or not. What only a refusal needs is built on the
first refusal that needs it and kept for the toolset's life: the strict
validators of the retired versions that name the contract a version-less call
speaks, the engine's report between an older version and current, and the
strict input schemas as JSON text.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from registry.canonical import canonical_json, digest
from registry.compat import Op
from registry.sdk._logging import get_logger
from registry.sdk.refusals import show
from registry.sdk.strict import strict_schema
from registry.sdk.toolset import (
    AliasEntry,
    ContractChange,
    RouteStep,
    ToolEntry,
    Toolset,
    ToolsetError,
    contract_changes,
)
from registry.sdk.validators import SchemaValidator, compile_validator

__all__ = [
    "CompiledAlias",
    "CompiledTool",
    "Compiler",
    "Served",
    "compile_toolset",
    "error_details",
    "wire",
]

MAX_ERRORS = 10

_log = get_logger("registry.sdk.gate")


def wire(version: int) -> str:
    """A version as the MCP wire writes it: `"v4"`."""
    return f"v{version}"


@dataclass(frozen=True, slots=True)
class Served:
    version: int
    validator: SchemaValidator
    """Of the strict form of the version's input schema."""
    ops: tuple[Op, ...]


class Compiler:
    """Builds validators, sharing one per distinct schema; safe to call from any thread."""

    def __init__(self, *, fast: bool = True) -> None:
        self._fast = fast
        self._cache: dict[bytes, SchemaValidator] = {}
        self._lock = threading.Lock()

    def validator(self, schema: Any, where: str) -> SchemaValidator:
        key = canonical_json(schema)
        found = self._cache.get(key)
        if found is None:
            found = self._build(schema, where)
            with self._lock:
                found = self._cache.setdefault(key, found)
        return found

    def _build(self, schema: Any, where: str) -> SchemaValidator:
        # python-jsonschema and RE2 are loaded by the first compile, not by importing the gate
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        from registry.patterns import linear_validator

        cls = validator_for(schema, default=Draft202012Validator)
        try:
            cls.check_schema(schema)
        except SchemaError as exc:
            raise ToolsetError(f"{where}: inputSchema is not a valid schema: {exc}") from exc
        # no format_checker: `format` is an annotation, as the dialect's default
        # `pattern` runs on RE2: linear time whatever the pattern and the value.
        return compile_validator(schema, linear_validator(cls)(schema), fast=self._fast)


def input_schema(definition: Mapping[str, Any]) -> Any:
    return definition.get("inputSchema", {"type": "object"})


@dataclass(slots=True)
class CompiledTool:
    """One tool: eager validators for accepted calls, lazy state for refusals."""

    name: str
    current: Served
    served: Mapping[int, Served]
    strict: SchemaValidator
    digests: Mapping[str, int]
    retired: frozenset[int]
    retired_wire: tuple[str, ...]
    # "v4" and "4" for every version served or retired: the common spellings
    # skip the regex; any other string still goes through the gate's parser
    spellings: Mapping[str, int]
    # every served and retired version whose definition the toolset carries
    definitions: Mapping[int, Mapping[str, Any]]
    compiler: Compiler
    strict_input: Any
    """The strict form of current's input schema (what calls of current meet)."""
    accepted_from: frozenset[int] = frozenset()
    """Served versions whose route crosses a break accepted on purpose (no converter)."""
    # the registry's own `changes` per older version, where the payload carries them
    carried_changes: Mapping[int, tuple[ContractChange, ...]] = field(default_factory=dict)
    _older: tuple[tuple[int, SchemaValidator], ...] | None = None
    _changes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    _strict_schemas: dict[int, Any] = field(default_factory=dict)
    _schema_text: dict[int, str] = field(default_factory=dict)

    def schema(self, version: int, *, strict: bool = False) -> Any:
        """The input schema of `version` as published; `strict`: its strict form,
        the one the gate applies (cached)."""
        if not strict:
            return input_schema(self.definitions[version])
        if version == self.current.version:
            return self.strict_input
        found = self._strict_schemas.get(version)
        if found is None:
            found = self._strict_schemas[version] = strict_schema(self.schema(version))
        return found

    def schema_text(self, version: int) -> str:
        """The strict input schema of `version` as compact JSON (cached)."""
        text = self._schema_text.get(version)
        if text is None:
            text = show(self.schema(version, strict=True))
            self._schema_text[version] = text
        return text

    def infer(self, arguments: Any) -> int | None:
        """The newest older version (served or retired) whose strict form accepts
        `arguments`; None when none does. Only for calls current refused strictly.

        Strict forms, because the open form of a version whose objects leave
        `additionalProperties` absent or true accepts any stray property: every
        version would match seed 000's `timeout_ms` call, current included.
        """
        if not isinstance(arguments, dict):
            return None
        for version, validator in self._older_validators():
            if validator.matches(arguments):
                return version
        return None

    def _older_validators(self) -> tuple[tuple[int, SchemaValidator], ...]:
        older = self._older
        if older is None:
            built = []
            for version in sorted(self.definitions, reverse=True):
                if version == self.current.version:
                    continue
                try:
                    built.append(
                        (
                            version,
                            self.compiler.validator(
                                self.schema(version, strict=True),
                                f"{self.name} v{version} (strict)",
                            ),
                        )
                    )
                except ToolsetError as exc:
                    # a retired definition no engine reads: it can name no call
                    _log.warning(
                        "gate.inference_skipped", tool=self.name, version=version, error=str(exc)
                    )
            older = self._older = tuple(built)
        return older

    def changes_to_current(self, version: int) -> list[dict[str, Any]]:
        """What changed in the input schema from `version` to current, in the
        engine's words: `{kind, path, message, old, new}`, cosmetic kinds left out.
        The payload's own `changes` where it carries them (every SDK then names
        the same ones), else the engine's report, computed once."""
        found = self._changes.get(version)
        if found is None:
            carried = self.carried_changes.get(version)
            if carried is not None:
                found = [msgspec.structs.asdict(change) for change in carried]
            else:
                found = self._engine_changes(version)
            self._changes[version] = found
        return found

    def _engine_changes(self, version: int) -> list[dict[str, Any]]:
        # the engine, only for a refusal that needs it (a server's start does not load it)
        from registry.compat import classify

        try:
            report = classify(
                dict(self.definitions[version]), dict(self.definitions[self.current.version])
            )
        except Exception as exc:  # an engine failure must not turn a refusal into a crash
            _log.warning(
                "gate.changes_unavailable", tool=self.name, version=version, error=str(exc)
            )
            return []
        return [msgspec.structs.asdict(change) for change in contract_changes(report)]


@dataclass(frozen=True, slots=True)
class CompiledAlias:
    name: str
    target: CompiledTool
    contract_version: int
    contract_digest: str
    validator: SchemaValidator
    """Of the strict form of the contract's input schema."""
    ops: tuple[Op, ...] | None
    schema: Any
    """The strict form of the contract's input schema (what the gate applies)."""
    schema_text: str


def _flatten(route: Iterable[RouteStep]) -> tuple[Op, ...]:
    return tuple(op for step in route for op in step.ops)


def _compile_tool(entry: ToolEntry, compiler: Compiler) -> CompiledTool:
    strict_inputs = {v.version: strict_schema(input_schema(v.definition)) for v in entry.versions}
    served = {
        v.version: Served(
            v.version,
            compiler.validator(strict_inputs[v.version], f"{entry.name} v{v.version}"),
            _flatten(v.route),
        )
        for v in entry.versions
    }
    strict_input = strict_inputs[entry.current]
    strict = served[entry.current].validator
    digests = {v.digest: v.version for v in entry.versions}
    digests.update({r.digest: r.version for r in entry.retired})
    retired = sorted(r.version for r in entry.retired)
    definitions: dict[int, Mapping[str, Any]] = {v.version: v.definition for v in entry.versions}
    definitions.update({r.version: r.definition for r in entry.retired if r.definition is not None})
    carried = {v.version: v.changes for v in entry.versions if v.changes is not None}
    carried.update(
        {
            r.version: r.changes
            for r in entry.retired
            if r.changes is not None and r.definition is not None
        }
    )
    return CompiledTool(
        name=entry.name,
        current=served[entry.current],
        served=served,
        strict=strict,
        digests=digests,
        retired=frozenset(retired),
        retired_wire=tuple(wire(v) for v in retired),
        spellings={
            spelled: version
            for version in (*served, *retired)
            for spelled in (wire(version), str(version))
        },
        definitions=definitions,
        compiler=compiler,
        strict_input=strict_input,
        accepted_from=frozenset(
            v.version for v in entry.versions if any(step.accepted for step in v.route)
        ),
        carried_changes=carried,
        _strict_schemas=strict_inputs,
    )


def _compile_alias(entry: AliasEntry, target: CompiledTool, compiler: Compiler) -> CompiledAlias:
    schema = strict_schema(input_schema(entry.definition))
    return CompiledAlias(
        name=entry.name,
        target=target,
        contract_version=entry.contract.version,
        contract_digest=digest(entry.definition),
        validator=compiler.validator(schema, f"alias {entry.name}"),
        ops=None if entry.route is None else _flatten(entry.route),
        schema=schema,
        schema_text=show(schema),
    )


def compile_toolset(
    toolset: Toolset, *, fast: bool = True
) -> tuple[dict[str, CompiledTool], dict[str, CompiledAlias]]:
    compiler = Compiler(fast=fast)
    tools = {t.name: _compile_tool(t, compiler) for t in toolset.tools}
    aliases = {a.name: _compile_alias(a, tools[a.target], compiler) for a in toolset.aliases}
    return tools, aliases


# ---------------------------------------------------------------- validation detail

_NOT_AN_OBJECT = {"path": "", "keyword": "type", "message": "arguments must be an object"}


def error_details(validator: SchemaValidator, instance: Any) -> list[dict[str, Any]]:
    """[] when `instance` is a valid arguments object, else up to MAX_ERRORS
    error details (`SchemaValidator.explain`)."""
    if not isinstance(instance, dict):
        return [dict(_NOT_AN_OBJECT, schemaPath="")]
    return validator.explain(instance, MAX_ERRORS)
