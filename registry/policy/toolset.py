"""The sync payload of `GET /v1/namespaces/{ns}/toolset`, built from a namespace's rows,
whole or one tool at a time.

Its shape is `schemas/toolset.schema.json`; the SDK's `Toolset.from_json`
reads it. The payload's digest (its ETag) is the SHA-256 of its canonical
JSON without `digest`, so two replicas building from the same rows answer the
same digest. The body is that canonical JSON with the `digest` member put in
its sorted place. `"gating": false` is written only for a namespace whose
policy turned gating off (so every other payload, and its digest, is as before);
a route step that is an identity step only because its breaking changes were
accepted on purpose says `"accepted": true`.

A payload is put together from parts (`ToolsetParts`): the canonical text of
each tool's entry and of the alias list. A write to one tool changes that
tool's part (and the alias list, which is rebuilt every time: aliases are few
and depend on their tools), so

    parts = build_parts("billing", versions, converters, aliases, finder, now)
    parts = update_parts(parts, {"db.query"}, versions, converters, aliases, finder, now)
    built = assemble(parts)           # body, digest

costs one tool's entry and a join of the others' text, whatever the size of
the namespace. `build_toolset` builds everything at once.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from itertools import groupby
from typing import Any, Protocol

import msgspec

from registry.canonical import canonical_json
from registry.policy.publishing import AliasLike
from registry.policy.routes import ConverterLike, RouteFinder, RouteStep, VersionLike
from registry.sdk.toolset import contract_changes

__all__ = [
    "BuiltToolset",
    "StoredVersionLike",
    "ToolConverterLike",
    "ToolPart",
    "ToolsetParts",
    "assemble",
    "build_parts",
    "build_toolset",
    "rfc3339",
    "update_parts",
]

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
    # the earliest future sunset of a served version: the payload goes stale then
    expires: datetime | None = None


class ToolPart(msgspec.Struct, frozen=True):
    """One tool's entry in the payload, as canonical JSON."""

    name: str
    current: int
    text: bytes
    next_sunset: datetime | None  # the entry goes stale then (a version turns retired)


class ToolsetParts(msgspec.Struct, frozen=True):
    """A namespace's payload in parts; never changed in place (`update_parts` makes new)."""

    namespace: str
    tools: Mapping[str, ToolPart]
    aliases: bytes  # canonical JSON of the alias list
    # the tools' names in payload order, and their entries' text in the same order,
    # kept so that putting a payload together is one join, whatever changed
    names: Sequence[str] = ()
    texts: Sequence[bytes] = ()
    gating: bool = True  # False: the namespace's policy turned gating off


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


def _by_tool(versions: Sequence[StoredVersionLike]) -> dict[str, list[StoredVersionLike]]:
    """`versions` come ordered by tool, then version (as the store reads them)."""
    return {tool: list(group) for tool, group in groupby(versions, key=lambda v: v.tool)}


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


def _converters_of(converters: Sequence[ToolConverterLike]) -> dict[str, list[ToolConverterLike]]:
    found: dict[str, list[ToolConverterLike]] = {}
    for converter in converters:
        found.setdefault(converter.tool, []).append(converter)
    return found


def tool_part(
    tool: str,
    history: Sequence[StoredVersionLike],
    converters: Sequence[ToolConverterLike],
    finder: RouteFinder,
    now: datetime | None,
) -> ToolPart | None:
    """The entry of a tool (its served versions, current first, each with its route,
    and its retired ones); None when it has no served version."""
    served = [v for v in history if v.state != "retired"]
    if not served:
        return None
    current_version = served[-1]
    current = current_version.version
    entries = []
    for version in reversed(served):
        route = finder.route(history, converters, start=version.version, target=current)
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
    entry = {
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
    sunsets = [v.sunset for v in served if v.sunset is not None and (now is None or v.sunset > now)]
    return ToolPart(tool, current, canonical_json(entry), min(sunsets, default=None))


def _alias_list(
    aliases: Sequence[AliasLike],
    by_tool: Mapping[str, list[StoredVersionLike]],
    converters_of: Mapping[str, list[ToolConverterLike]],
    tools: Mapping[str, ToolPart],
    finder: RouteFinder,
) -> bytes:
    entries = []
    for alias in sorted(aliases, key=lambda a: a.name):
        contract_history = by_tool.get(alias.contract_tool, [])
        contract = next((v for v in contract_history if v.version == alias.contract_version), None)
        if contract is None:
            continue
        alias_route: list[RouteStep] | None = None
        target = tools.get(alias.target_tool)
        target_current = target.current if target is not None else None
        if alias.contract_tool == alias.target_tool and target_current is not None:
            alias_route = finder.route(
                contract_history,
                converters_of.get(alias.target_tool, []),
                start=alias.contract_version,
                target=target_current,
            )
        entries.append(
            {
                "name": alias.name,
                "target": alias.target_tool,
                "contract": {"tool": alias.contract_tool, "version": alias.contract_version},
                "definition": contract.definition,
                "route": _route(alias_route),
            }
        )
    return canonical_json(entries)


def build_parts(
    namespace: str,
    versions: Sequence[StoredVersionLike],
    converters: Sequence[ToolConverterLike],
    aliases: Sequence[AliasLike],
    finder: RouteFinder,
    now: datetime | None = None,
    *,
    gating: bool = True,
) -> ToolsetParts:
    """Every part of a namespace's payload (tools with a served version, aliases).
    `now`: the time the rows were read (for which sunsets are still to come);
    `gating=False`: the namespace policy turned gating off (gates pass calls through)."""
    return update_parts(
        ToolsetParts(namespace, {}, b"[]"),
        None,
        versions,
        converters,
        aliases,
        finder,
        now,
        gating=gating,
    )


def update_parts(
    parts: ToolsetParts,
    tools: Collection[str] | None,
    versions: Sequence[StoredVersionLike],
    converters: Sequence[ToolConverterLike],
    aliases: Sequence[AliasLike],
    finder: RouteFinder,
    now: datetime | None = None,
    *,
    gating: bool = True,
) -> ToolsetParts:
    """`parts` with the entries of `tools` (None: of every tool) built again from
    their `versions` and `converters`, and the alias list from `aliases` (all of the
    namespace's), whose contract tools' versions and converters are there too."""
    by_tool = _by_tool(versions)
    converters_of = _converters_of(converters)
    whole = tools is None
    rebuilt: dict[str, ToolPart] = {} if whole else dict(parts.tools)
    names: list[str] = [] if whole else list(parts.names)
    texts: list[bytes] = [] if whole else list(parts.texts)
    for tool in sorted(by_tool) if tools is None else tools:
        part = tool_part(tool, by_tool.get(tool, []), converters_of.get(tool, []), finder, now)
        at = bisect.bisect_left(names, tool)  # names sort as the payload's tools do
        present = at < len(names) and names[at] == tool
        if part is None:
            rebuilt.pop(tool, None)
            if present:
                del names[at], texts[at]
            continue
        rebuilt[tool] = part
        if present:
            texts[at] = part.text
        else:
            names.insert(at, tool)
            texts.insert(at, part.text)
    alias_text = _alias_list(aliases, by_tool, converters_of, rebuilt, finder)
    return ToolsetParts(parts.namespace, rebuilt, alias_text, names, texts, gating)


def _object(members: Mapping[str, list[bytes]]) -> list[bytes]:
    """The pieces of a JSON object with these members (each given as pieces of its
    canonical text), in canonical order (the keys here are ASCII: code-point order)."""
    pieces: list[bytes] = []
    for key in sorted(members):
        pieces += [b"," if pieces else b"{", canonical_json(key), b":", *members[key]]
    return [*pieces, b"}"]


def assemble(parts: ToolsetParts) -> BuiltToolset:
    """The payload of `parts`: its canonical JSON, and with the digest in its place."""
    tools = b",".join(parts.texts)
    members = {
        "aliases": [parts.aliases],
        "namespace": [canonical_json(parts.namespace)],
        "tools": [b"[", tools, b"]"],
    }
    if not parts.gating:
        members["gating"] = [b"false"]
    hashed = hashlib.sha256()
    for piece in _object(members):
        hashed.update(piece)  # the big piece in one call: hashlib lets the GIL go for it
    digest = "sha256:" + hashed.hexdigest()
    body = b"".join(_object({**members, "digest": [canonical_json(digest)]}))
    sunsets = [p.next_sunset for p in parts.tools.values() if p.next_sunset is not None]
    return BuiltToolset(body, digest, len(parts.names), min(sunsets, default=None))


def build_toolset(
    namespace: str,
    versions: Sequence[StoredVersionLike],
    converters: Sequence[ToolConverterLike],
    aliases: Sequence[AliasLike],
    finder: RouteFinder,
    now: datetime | None = None,
    *,
    gating: bool = True,
) -> BuiltToolset:
    """The whole payload: tools by name (those with a served version), aliases by name;
    `gating=False`: the namespace policy turned gating off.

    `versions` come ordered by tool, then version (as `load_namespace` reads them).
    """
    return assemble(
        build_parts(namespace, versions, converters, aliases, finder, now, gating=gating)
    )
