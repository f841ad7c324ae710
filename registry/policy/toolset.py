"""The sync payload of `GET /v1/namespaces/{ns}/toolset`, built from a namespace snapshot.

Its shape is `schemas/toolset.schema.json`; the SDK's `Toolset.from_json`
reads it. The payload's digest (its ETag) is the SHA-256 of its canonical
JSON without `digest`, so two replicas building from the same rows answer the
same bytes' digest. `"gating": false` is written only for a namespace whose
policy turned gating off (so every other payload, and its digest, is as before);
a route step that is an identity step only because its breaking changes were
accepted on purpose says `"accepted": true`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from itertools import groupby
from typing import Any, Protocol

import msgspec

from registry.policy.publishing import AliasLike
from registry.policy.routes import ConverterLike, RouteFinder, RouteStep, VersionLike
from registry.sdk.toolset import contract_changes, payload_digest

__all__ = ["BuiltToolset", "StoredVersionLike", "ToolConverterLike", "build_toolset", "rfc3339"]

_log = logging.getLogger(__name__)


class StoredVersionLike(VersionLike, Protocol):
    @property
    def tool(self) -> str: ...
    @property
    def sunset(self) -> datetime | None: ...


class ToolConverterLike(ConverterLike, Protocol):
    @property
    def tool(self) -> str: ...


class BuiltToolset(msgspec.Struct, frozen=True):
    body: bytes
    digest: str
    tools: int


def rfc3339(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.isoformat().replace("+00:00", "Z")


def _route(steps: list[RouteStep] | None) -> list[dict[str, Any]] | None:
    if steps is None:
        return None
    return [
        {"from": s.from_, "to": s.to, "ops": s.ops, **({"accepted": True} if s.accepted else {})}
        for s in steps
    ]


def _changes(finder: RouteFinder, version: VersionLike, current: VersionLike) -> dict[str, Any]:
    """`{"changes": [...]}` from `version` to `current` (the engine's report, cached
    by digests in the finder), or nothing when the engine cannot tell: a gate
    then computes them itself (Python) or names none (TypeScript)."""
    if version.version == current.version:
        return {}
    try:
        report = finder.report(version, current)
    except Exception:  # the payload still serves; the refusal text only loses the changes
        _log.warning("toolset.changes_unavailable", exc_info=True)
        return {}
    return {"changes": [msgspec.to_builtins(c) for c in contract_changes(report)]}


def build_toolset(
    namespace: str,
    versions: Sequence[StoredVersionLike],
    converters: Sequence[ToolConverterLike],
    aliases: Sequence[AliasLike],
    finder: RouteFinder,
    *,
    gating: bool = True,
) -> BuiltToolset:
    """The payload: tools by name (those with a served version), aliases by name;
    `gating=False`: the namespace policy turned gating off (gates pass calls through).

    `versions` come ordered by tool, then version (as `load_namespace` reads them).
    """
    by_tool: dict[str, list[StoredVersionLike]] = {
        tool: list(group) for tool, group in groupby(versions, key=lambda v: v.tool)
    }
    converters_of: dict[str, list[ToolConverterLike]] = {}
    for converter in converters:
        converters_of.setdefault(converter.tool, []).append(converter)
    current_of: dict[str, int] = {}
    tools: list[dict[str, Any]] = []
    for tool in sorted(by_tool):
        history = by_tool[tool]
        served = [v for v in history if v.state != "retired"]
        if not served:
            continue
        current_version = served[-1]
        current = current_version.version
        current_of[tool] = current
        entries = []
        for version in reversed(served):
            route = finder.route(
                history, converters_of.get(tool, []), start=version.version, target=current
            )
            if route is None:
                # The publish rule never lets this happen; a version reached only
                # by hand-edited rows is left out rather than served without a route.
                continue
            entries.append(
                {
                    "version": version.version,
                    "digest": version.digest,
                    "state": version.state,
                    "sunset": rfc3339(version.sunset),
                    "definition": version.definition,
                    "route": _route(route),
                    **_changes(finder, version, current_version),
                }
            )
        tools.append(
            {
                "name": tool,
                "current": current,
                "versions": entries,
                # definitions included: a gate names the retired contract a
                # version-less call still speaks (inferredVersion)
                # and what changed from each to current, in the engine's words
                "retired": [
                    {
                        "version": v.version,
                        "digest": v.digest,
                        "definition": v.definition,
                        **_changes(finder, v, current_version),
                    }
                    for v in history
                    if v.state == "retired"
                ],
            }
        )
    alias_entries = []
    for alias in sorted(aliases, key=lambda a: a.name):
        contract_history = by_tool.get(alias.contract_tool, [])
        contract = next((v for v in contract_history if v.version == alias.contract_version), None)
        if contract is None:
            continue
        alias_route: list[RouteStep] | None = None
        target_current = current_of.get(alias.target_tool)
        if alias.contract_tool == alias.target_tool and target_current is not None:
            alias_route = finder.route(
                contract_history,
                converters_of.get(alias.target_tool, []),
                start=alias.contract_version,
                target=target_current,
            )
        alias_entries.append(
            {
                "name": alias.name,
                "target": alias.target_tool,
                "contract": {"tool": alias.contract_tool, "version": alias.contract_version},
                "definition": contract.definition,
                "route": _route(alias_route),
            }
        )
    payload: dict[str, Any] = {"namespace": namespace, "tools": tools, "aliases": alias_entries}
    if not gating:
        payload["gating"] = False
    payload["digest"] = payload_digest(payload)
    return BuiltToolset(
        body=msgspec.json.encode(payload), digest=payload["digest"], tools=len(tools)
    )
