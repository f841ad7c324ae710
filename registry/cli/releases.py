"""What a release drops, and how it names itself (`plan`, `apply`, `check`).

    states = served_online(fetch, ["billing"])         # the registry's view of each namespace
    states = served_offline(saved_toolset)              # ... or a saved toolset's
    extra = retirements(states, manifests)              # --retire-removed: manifests that retire
    answer = with_release(answer, manifests, states, versions, retired=...)

A directory of manifests (or a live server's listing) is a namespace's whole
set of tools. A tool the namespace serves that the set no longer holds is a
break for every caller of it (`tool-removed`, `tool-renamed`:
`registry.policy.plan.plan_removals`), unless the command retires it
(`--retire-removed`: a manifest retiring each of its served versions joins the
bundle, so that `apply` lands it with the rest, all or nothing) or the
directory keeps its manifest with `retire` listing them. Who still calls it
comes from the registry's usage counts.

The release's `serverInfo.version` (a live server's `initialize` result, a
directory's `initialize.json` as `registry capture` writes it, or the
manifests' `server_version`) is compared with the one the registry holds (the
namespace's stored capabilities) and with the worst change of the namespace's
tools (registry/policy/semver.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from registry.canonical import digest
from registry.compat import Change, ClassificationError, Severity, classify, toolset_changes
from registry.compat.kinds import worst
from registry.documents import DocumentError, read_source
from registry.manifests import CAPTURED_INITIALIZE, Manifest
from registry.policy.callers import ToolUsage, VersionUsage
from registry.policy.capabilities import CapabilityError, CapturedInitialize, parse_initialize
from registry.policy.plan import PlanAnswer, ServedTool, ToolPlan, ToolRemoval, plan_removals
from registry.policy.semver import SemverCheck, compare_versions

__all__ = [
    "NamespaceState",
    "captured_initialize",
    "compare_listings",
    "held_names",
    "missing",
    "release_versions",
    "retirements",
    "served_offline",
    "served_online",
    "with_release",
]

# GET a registry path (`/v1/...`): its JSON, or None for a 404 (raises otherwise)
Fetch = Callable[[str], Any]


@dataclass
class NamespaceState:
    """A namespace as the registry holds it: the tools it serves, the
    `serverInfo.version` of its stored capabilities, and who calls which tool."""

    served: dict[str, ServedTool] = field(default_factory=dict)
    server_version: str | None = None
    callers: dict[str, list[VersionUsage]] = field(default_factory=dict)


def served_online(
    fetch: Fetch, namespaces: Iterable[str], held: dict[str, set[str]]
) -> dict[str, NamespaceState]:
    """Each namespace's state from the registry. Only the tools `held` (namespace
    -> the names the manifests hold) leaves out are read in full (their current
    definition, served versions and usage)."""
    states = {}
    for namespace in sorted(set(namespaces)):
        state = NamespaceState()
        listing = fetch(f"/v1/namespaces/{namespace}/tools")
        states[namespace] = state
        if listing is None:
            continue  # no such namespace yet: it serves nothing
        record = fetch(f"/v1/namespaces/{namespace}/capabilities")
        if isinstance(record, dict):
            info = (record.get("initialize") or {}).get("serverInfo") or {}
            version = info.get("version")
            state.server_version = version if isinstance(version, str) else None
        for entry in listing.get("tools", []):
            name = entry.get("name")
            if entry.get("current_version") is None or name in held.get(namespace, set()):
                continue
            history = fetch(f"/v1/namespaces/{namespace}/tools/{name}/versions") or {}
            served = [v for v in history.get("versions", []) if v.get("state") != "retired"]
            if not served:
                continue
            state.served[name] = ServedTool(
                definition=served[-1]["definition"], versions=[v["version"] for v in served]
            )
            usage = fetch(f"/v1/namespaces/{namespace}/tools/{name}/usage")
            if usage is not None:
                counts = msgspec.convert(usage, ToolUsage, strict=False)
                numbers = set(state.served[name].versions)
                state.callers[name] = [
                    v for v in counts.versions if v.version in numbers and v.calls
                ]
    return states


def served_offline(namespace: str, toolset: dict[str, Any]) -> dict[str, NamespaceState]:
    """The state of a saved toolset's namespace (no capabilities, no usage)."""
    state = NamespaceState()
    for entry in toolset.get("tools", []):
        versions = entry.get("versions") or []
        if versions:
            state.served[entry["name"]] = ServedTool(
                definition=versions[-1]["definition"],
                versions=[v["version"] for v in versions],
            )
    return {namespace: state}


def retirements(states: dict[str, NamespaceState], manifests: Sequence[Manifest]) -> list[Manifest]:
    """For each tool a namespace serves that `manifests` no longer hold, a manifest
    of its current definition retiring every served version (`--retire-removed`)."""
    held = _held(manifests)
    found = []
    for namespace, state in states.items():
        for name, tool in sorted(state.served.items()):
            if name in held.get(namespace, {}):
                continue
            found.append(
                Manifest(
                    path=f"(retiring {namespace}/{name}: --retire-removed)",
                    namespace=namespace,
                    tool=tool.definition,
                    retire=list(tool.versions),
                    digest=digest(tool.definition),
                    text="",
                )
            )
    return found


def release_versions(
    manifests: Sequence[Manifest], directory: str | None, live: tuple[str, str] | None
) -> dict[str, str]:
    """The release's `serverInfo.version` per namespace: a live server's (`live`:
    namespace and version), else the manifests' `server_version`, else the
    `initialize.json` `registry capture` wrote beside a single namespace's manifests."""
    if live is not None:
        return {live[0]: live[1]}
    found = {m.namespace: m.server_version for m in manifests if m.server_version is not None}
    captured = captured_initialize(directory, manifests) if not found else None
    if captured is not None:
        version = captured[1].serverInfo.get("version")
        if isinstance(version, str):
            found[captured[0]] = version
    return found


def captured_initialize(
    directory: str | None, manifests: Sequence[Manifest]
) -> tuple[str, CapturedInitialize] | None:
    """The `initialize.json` `registry capture` wrote in DIR beside the manifests of
    one namespace, with that namespace (`apply` stores it as its capabilities)."""
    namespaces = {m.namespace for m in manifests}
    if directory is None or len(namespaces) != 1:
        return None
    path = Path(directory) / CAPTURED_INITIALIZE
    if not path.is_file():
        return None
    try:
        return next(iter(namespaces)), parse_initialize(read_source(str(path)))
    except (DocumentError, CapabilityError):
        return None


def with_release(
    answer: PlanAnswer,
    manifests: Sequence[Manifest],
    states: dict[str, NamespaceState],
    versions: dict[str, str],
    *,
    retired: bool,
) -> PlanAnswer:
    """`answer` with the tools the manifests no longer hold (`removed`: a break
    without a decision unless `retired`) and each known version bump (`semver`)."""
    held = _held(manifests)
    removed: list[ToolRemoval] = []
    semver: list[SemverCheck] = []
    for namespace, state in sorted(states.items()):
        created = {
            plan.tool
            for plan in answer.tools
            if plan.namespace == namespace and plan.action == "create"
        }
        gone = [name for name in state.served if name not in held.get(namespace, {})]
        found = plan_removals(
            namespace,
            state.served,
            held.get(namespace, {}),
            created,
            retired=set(gone) if retired else set(),
        )
        removed += [
            msgspec.structs.replace(r, callers=state.callers.get(r.tool, [])) for r in found
        ]
        if namespace in versions:
            change = _change_of(answer.tools, namespace, bool(found))
            semver.append(
                compare_versions(namespace, state.server_version, versions[namespace], change)
            )
    undecided = any(not r.retired for r in removed)
    return msgspec.structs.replace(
        answer, accepted=answer.accepted and not undecided, removed=removed, semver=semver
    )


def held_names(manifests: Sequence[Manifest]) -> dict[str, set[str]]:
    """namespace -> the tool names the manifests hold."""
    return {namespace: set(tools) for namespace, tools in _held(manifests).items()}


def missing(states: dict[str, NamespaceState], manifests: Sequence[Manifest]) -> list[str]:
    """`namespace/tool` of every tool served that the manifests no longer hold."""
    held = _held(manifests)
    return [
        f"{namespace}/{name}"
        for namespace, state in sorted(states.items())
        for name in sorted(state.served)
        if name not in held.get(namespace, {})
    ]


def compare_listings(
    namespace: str,
    old: dict[str, dict[str, Any]],
    new: dict[str, dict[str, Any]],
    versions: tuple[str | None, str | None],
) -> tuple[list[Change], SemverCheck]:
    """Two listings of one server (`registry capture` over an earlier capture):
    the tools gone, and the version bump (`versions`: old, new) against the
    worst change (each tool both list classified, one added additive, one gone
    breaking)."""
    gone = toolset_changes(old, new)
    severities = [Severity.BREAKING] if gone else []
    for name, definition in new.items():
        if name not in old:
            severities.append(Severity.ADDITIVE)
            continue
        try:
            severities.append(classify(old[name], definition).severity)
        except ClassificationError:
            severities.append(Severity.BREAKING)
    return gone, compare_versions(namespace, versions[0], versions[1], worst(severities))


def _held(manifests: Sequence[Manifest]) -> dict[str, dict[str, dict[str, Any]]]:
    """namespace -> tool name -> definition, as the manifests hold them."""
    held: dict[str, dict[str, dict[str, Any]]] = {}
    for manifest in manifests:
        held.setdefault(manifest.namespace, {})[manifest.name] = manifest.tool
    return held


def _change_of(plans: Sequence[ToolPlan], namespace: str, removed: bool) -> Severity:
    """The worst change of a namespace's release: each tool's report against its
    current version, a tool created additive, a tool gone breaking."""
    severities = [Severity.BREAKING] if removed else []
    for plan in plans:
        if plan.namespace != namespace:
            continue
        if plan.report is not None:
            severities.append(plan.report.severity)
        elif plan.action == "create":
            severities.append(Severity.ADDITIVE)
    return worst(severities)
