"""The gate of a namespace whose policy turned gating off (`"gating": false` in the payload).

    gate = Gate(toolset)        # an UngatedGate when toolset.gating is False
    gate.check("db.query", arguments, meta).arguments is arguments

Every call to a listed tool (or an alias, dispatched to its target) is accepted
with the caller's own arguments, whatever version it declares: no version
check, no validation, no conversion (the MCP framework still validates against
what it lists). Only a name that is neither a tool nor an alias (-32602
unknown_tool) and arguments that are not an object (-32602 invalid_arguments,
a refusal of the arguments: an `isError` result from 2025-11-25 on) are
refused. `on_decision` still hears every call with what it declared, so usage
counts keep attributing calls to versions. A gated namespace's `Gate` is
untouched: its `check` has no branch for this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.sdk._compiled import CompiledAlias, CompiledTool
from registry.sdk.gate import (
    _DEBUG,
    _NOTHING,
    Decision,
    Declared,
    Gate,
    _log,
    _read_version,
    _refuse,
)
from registry.sdk.toolset import Toolset

__all__ = ["UngatedGate"]


class UngatedGate(Gate):
    """The gate of a namespace whose policy turned gating off: calls pass through with
    the caller's own arguments; nothing is compiled. `Gate(toolset)` makes one."""

    __slots__ = ()

    def _compile(
        self, toolset: Toolset, fast: bool
    ) -> tuple[dict[str, CompiledTool], dict[str, CompiledAlias]]:
        _log.warning(
            "gate.gating_off",
            namespace=toolset.namespace,
            detail="the namespace policy turned gating off: calls are not checked",
        )
        return {}, {}

    def check(self, name: str, arguments: Any, meta: Mapping[str, Any] | None = None) -> Decision:
        entry = self.toolset.tool(name)
        declared = _NOTHING
        if entry is None:
            alias = self.toolset.alias(name)
            entry = self.toolset.tool(alias.target) if alias is not None else None
            if alias is None or entry is None:
                return self._finish(
                    _refuse(name, None, "unknown_tool", "unknown", None, {"tool": name}),
                    _NOTHING,
                    None,
                )
            declared = Declared(version=alias.contract.version, alias=alias.name)
        elif isinstance(meta, Mapping):
            schema_version, schema_hash = meta.get("schemaVersion"), meta.get("schemaHash")
            if schema_version is not None or schema_hash is not None:
                hashed = schema_hash if isinstance(schema_hash, str) else None
                declared = Declared(
                    version=_read_version(schema_version)
                    if schema_version is not None
                    else entry.version_of_digest(hashed or ""),
                    schema_version=schema_version,
                    schema_hash=hashed,
                )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return self._finish(
                _refuse(
                    entry.name,
                    entry.current,
                    "invalid_arguments",
                    "not_an_object",
                    None,
                    {"tool": entry.name},
                ),
                declared,
                entry.current,
            )
        decision = Decision(True, entry.name, entry.current, arguments)
        if self._logger.isEnabledFor(_DEBUG):
            _log.debug(
                "gate.decision",
                tool=entry.name,
                declared=declared.version if declared.present else None,
                current=entry.current,
                decision="accept",
                reason="gating_off",
            )
        if self._on_decision is not None:
            self._notify(decision, declared)
        return decision
