"""`registry check --against-file TOOLSET`: plan manifests offline against a saved toolset.

A saved toolset is the payload of `GET /v1/namespaces/{ns}/toolset`, as `registry
sync` writes it. Each tool's stored state (versions, converters as steps of the saved
routes, aliases) is rebuilt from it and the registry's own planner
(`registry.policy.plan.plan_tool`) runs locally: the same answer, no network.
The namespace's stored policy is not in a saved toolset (only `"gating": false`
is): the plan runs under DIR's policy manifest of the namespace when there is one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from registry.canonical import DigestError, digest
from registry.cli.common import Failed, located, one_line
from registry.compat import ChangeReport, ClassificationError
from registry.manifests import Manifest, PolicyManifest
from registry.policy.acceptance import NamespacePolicy
from registry.policy.plan import NamespacePlan, PlanAnswer, PolicyPlan, ToolPlan, plan_tool
from registry.policy.publishing import PolicyError
from registry.policy.routes import RouteFinder, VersionLike

__all__ = ["answer_against", "offline_answer", "read_toolset"]


class _Version(msgspec.Struct, frozen=True):
    version: int
    digest: str
    state: str
    definition: dict[str, Any]
    sunset: datetime | None = None


class _Converter(msgspec.Struct, frozen=True):
    from_version: int
    to_version: int
    ops: list[dict[str, Any]]


class _Alias(msgspec.Struct, frozen=True):
    name: str
    target_tool: str
    contract_tool: str
    contract_version: int


class _State(msgspec.Struct, frozen=True):
    tool: str
    versions: list[_Version]
    converters: list[_Converter]
    aliases: list[_Alias]
    next_version: int


class _OfflineFinder(RouteFinder):
    """The route finder over a saved toolset: the identity steps of the saved routes
    are known to hold, and a retired version whose definition the toolset does not
    carry (`unknown`) can be neither classified nor stepped from."""

    def __init__(self, identity: set[tuple[int, int]], unknown: set[int]) -> None:
        super().__init__()
        self.identity = identity
        self.unknown = unknown

    def report(self, old: VersionLike, new: VersionLike) -> ChangeReport:
        for version in (old, new):
            if version.version in self.unknown:
                raise PolicyError(
                    "offline-unverifiable",
                    f"version {version.version} is retired and the saved toolset does not "
                    "carry its definition, so it cannot be compared offline; check against "
                    "the registry instead",
                )
        return super().report(old, new)

    def is_identity_step(self, old: VersionLike, new: VersionLike) -> bool:
        if (old.version, new.version) in self.identity:
            return True
        if old.version in self.unknown or new.version in self.unknown:
            return False
        return super().is_identity_step(old, new)


@dataclass
class _Saved:
    """One tool of a saved toolset, as the planner reads it."""

    state: _State
    finder: _OfflineFinder
    unknown: set[int] = field(default_factory=set)


def read_toolset(path: str) -> tuple[str, dict[str, Any]]:
    """A saved toolset file: its namespace and its JSON (Failed when it is not one)."""
    from registry.sdk.toolset import Toolset, ToolsetError

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise Failed([f"{path}: {exc.strerror or exc}"]) from None
    try:
        toolset = Toolset.from_json(data)
    except ToolsetError as exc:
        raise Failed([f"{path}: {one_line(str(exc))}"]) from None
    raw: dict[str, Any] = json.loads(data)
    return toolset.namespace, raw


def _saved_tools(raw: dict[str, Any]) -> tuple[dict[str, _Saved], list[_Alias]]:
    aliases = [
        _Alias(
            name=a["name"],
            target_tool=a["target"],
            contract_tool=a["contract"]["tool"],
            contract_version=int(a["contract"]["version"]),
        )
        for a in raw.get("aliases", [])
    ]
    tools: dict[str, _Saved] = {}
    for entry in raw.get("tools", []):
        name: str = entry["name"]
        versions: dict[int, _Version] = {}
        routes: list[list[dict[str, Any]]] = []
        for served in entry.get("versions", []):
            sunset = served.get("sunset")
            versions[served["version"]] = _Version(
                version=served["version"],
                digest=served["digest"],
                state=served["state"],
                definition=served["definition"],
                sunset=_parse_time(sunset) if sunset else None,
            )
            routes.append(served.get("route") or [])
        # A retired version carries no definition in the toolset, except when an alias
        # speaks it (the alias entry holds its contract's definition).
        contracts = {
            (a["contract"]["tool"], int(a["contract"]["version"])): a["definition"]
            for a in raw.get("aliases", [])
        }
        unknown: set[int] = set()
        for retired in entry.get("retired", []):
            number = retired["version"]
            definition = contracts.get((name, number))
            if definition is None or _digest_or_none(definition) != retired["digest"]:
                definition = {}
                unknown.add(number)
            versions[number] = _Version(number, retired["digest"], "retired", definition)
        for alias in raw.get("aliases", []):
            if alias["target"] == name and alias["contract"]["tool"] == name:
                routes.append(alias.get("route") or [])
        converters: dict[tuple[int, int], _Converter] = {}
        identity: set[tuple[int, int]] = set()
        for route in routes:
            for step in route:
                pair = (int(step["from"]), int(step["to"]))
                if step.get("ops"):
                    converters.setdefault(pair, _Converter(pair[0], pair[1], list(step["ops"])))
                else:
                    identity.add(pair)
        ordered = [versions[n] for n in sorted(versions)]
        state = _State(
            tool=name,
            versions=ordered,
            converters=sorted(converters.values(), key=lambda c: (c.from_version, c.to_version)),
            aliases=[a for a in aliases if name in (a.target_tool, a.contract_tool)],
            next_version=max(versions, default=0) + 1,
        )
        tools[name] = _Saved(state, _OfflineFinder(identity, unknown), unknown)
    return tools, aliases


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))


def _digest_or_none(definition: Any) -> str | None:
    try:
        return digest(definition)
    except DigestError:
        return None


def _offline_policy(
    namespace: str, raw: dict[str, Any], policies: Sequence[PolicyManifest]
) -> NamespacePolicy | None:
    """DIR's policy manifest of the namespace, else gating off when the saved toolset
    says so (its relaxations are not saved), else the strict rules (None)."""
    declared = next((p.policy for p in policies if p.namespace == namespace), None)
    if declared is not None:
        return declared
    if raw.get("gating") is False:
        return NamespacePolicy(gating=False, reason="the saved toolset says gating is off")
    return None


def offline_answer(
    manifests: Sequence[Manifest],
    path: str,
    policies: Sequence[PolicyManifest] = (),
    toolset: tuple[str, dict[str, Any]] | None = None,
) -> PlanAnswer:
    """The plan of `manifests` against the saved toolset at `path` (`toolset`: its
    namespace and JSON, when the caller has read it already)."""
    namespace, raw = toolset if toolset is not None else read_toolset(path)
    return answer_against(manifests, namespace, raw, policies, f"the saved toolset {path}")


def answer_against(
    manifests: Sequence[Manifest],
    namespace: str,
    raw: dict[str, Any],
    policies: Sequence[PolicyManifest],
    source: str,
) -> PlanAnswer:
    """The plan of `manifests` against `raw`, a toolset payload of `namespace` (saved, or
    made from a git revision's manifests: revision.py); `source` names it in messages."""
    mismatched: list[Manifest | PolicyManifest] = [m for m in manifests if m.namespace != namespace]
    mismatched += [p for p in policies if p.namespace != namespace]
    if mismatched:
        raise Failed(
            [
                f"{located(m, '/namespace')}: /namespace: namespace {m.namespace!r} is not the "
                f"namespace of {source} ({namespace!r}); check each namespace "
                "against its own toolset"
                for m in mismatched
            ]
        )
    tools, aliases = _saved_tools(raw)
    policy = _offline_policy(namespace, raw, policies)
    plans: list[ToolPlan] = []
    errors: list[str] = []
    # what a tool-reference-added finding looks for: the namespace's tools, DIR's included
    names = sorted({*tools, *(m.name for m in manifests)})
    for manifest in manifests:
        saved = tools.get(manifest.name)
        if saved is None:
            saved = _Saved(
                _State(manifest.name, [], [], [], 1),
                _OfflineFinder(set(), set()),
            )
        try:
            _unverifiable_converters(manifest, saved)
            body = manifest.to_body()
            plans.append(
                plan_tool(saved.state, body, manifest.digest, saved.finder, aliases, policy, names)
            )
        except PolicyError as exc:
            pointer = exc.pointer or "/tool"
            errors.append(f"{located(manifest, pointer)}: {pointer}: {one_line(exc.message)}")
        except ClassificationError as exc:
            pointer = "/tool" + exc.pointer
            errors.append(f"{located(manifest, pointer)}: {pointer}: {one_line(exc.message)}")
    if errors:
        raise Failed(errors)
    return PlanAnswer(
        accepted=all(p.accepted for p in plans),
        applied=False,
        tools=plans,
        # a saved toolset is the toolset of a namespace that exists
        namespaces=[NamespacePlan(name=namespace, action="unchanged")] if manifests else [],
        # the stored policy is not in a saved toolset: DIR's is shown as set
        policies=[
            PolicyPlan(namespace=p.namespace, action="set", policy=p.policy, source=p.path)
            for p in policies
        ],
    )


def _unverifiable_converters(manifest: Manifest, saved: _Saved) -> None:
    """A converter from a retired version the toolset has no definition of cannot be
    verified offline; say so rather than report it as invalid."""
    existing = next((v for v in saved.state.versions if v.digest == manifest.digest), None)
    stored = {(c.from_version, c.to_version) for c in saved.state.converters}
    for index, converter in enumerate(manifest.converters):
        if converter.from_ not in saved.unknown:
            continue
        if existing is not None and (converter.from_, existing.version) in stored:
            continue
        raise PolicyError(
            "offline-unverifiable",
            f"the converter from version {converter.from_} cannot be verified offline: "
            f"version {converter.from_} is retired and the saved toolset does not carry its "
            "definition (converters from retired versions are verified by the registry: "
            "run `registry check` with --url)",
            pointer=f"/converters/{index}/from",
        )
