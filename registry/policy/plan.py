"""What applying a manifest would do to one tool: the plan of `registry plan` / `POST /v1/apply`.

    plan = plan_tool(state, manifest_body, finder)
    plan.action      # "create" | "new-version" | "unchanged"
    plan.accepted    # False: plan.decisions lists what is still missing

A manifest is declarative: its tool definition should be current, and its
lifecycle intents (`retire`, `deprecate`, `converters`, `aliases`) should be in
effect. For a definition already stored (same digest), the intents not yet in
effect become lifecycle changes; re-applying an applied manifest plans nothing.
A manifest's `accept` is read only when its definition lands as a new version.

A bundle may also carry namespace policies (`policies`, one per namespace, from
policy manifests): `plan_policy` says whether each changes what is stored; the
tools of that namespace are planned under the bundle's policy.

A directory of manifests (or a live server's listing) is a namespace's whole
set of tools: `plan_removals` names each tool the namespace serves that the
set no longer holds (`tool-removed`, or `tool-renamed` where the engine pairs
it with a tool the set adds), retired on purpose or not; `PlanAnswer.removed`
and `PlanAnswer.semver` (registry/policy/semver.py) are filled by the CLI, which
reads the namespace's tools from the registry or a saved toolset.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Literal

import msgspec

from registry.compat import Change, ChangeReport, toolset_changes
from registry.policy.acceptance import Acceptance, AcceptRequest, NamespacePolicy
from registry.policy.callers import RequireIdle, VersionUsage
from registry.policy.publishing import (
    AliasLike,
    ConverterRequest,
    Decision,
    DeprecationRequest,
    NewVersion,
    PolicyError,
    PublishRequest,
    ToolStateLike,
    VersionNumber,
    check_deprecate,
    check_retire,
    verify_converter,
)
from registry.policy.review import Held, assess
from registry.policy.routes import ConverterLike, RouteFinder, VersionLike
from registry.policy.semver import SemverCheck
from registry.risks import Risk

__all__ = [
    "AliasIntent",
    "AliasPlan",
    "ApplyRequest",
    "ContractIntent",
    "LifecycleChange",
    "ManifestBody",
    "NamespacePlan",
    "PlanAnswer",
    "PolicyBody",
    "PolicyPlan",
    "ServedTool",
    "ToolPlan",
    "ToolRemoval",
    "plan_policy",
    "plan_removals",
    "plan_tool",
]


class ContractIntent(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    tool: str
    version: VersionNumber


class AliasIntent(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    contract: ContractIntent


class ManifestBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One manifest as `POST /v1/apply` takes it (`schemas/manifest.schema.json`, plus `source`)."""

    namespace: str
    tool: dict[str, Any]
    retire: list[VersionNumber] = msgspec.field(default_factory=list)
    require_idle: RequireIdle | None = None  # refuse `retire` while a version is still called
    deprecate: list[DeprecationRequest] = msgspec.field(default_factory=list)
    converters: list[ConverterRequest] = msgspec.field(default_factory=list)
    aliases: list[AliasIntent] = msgspec.field(default_factory=list)
    accept: list[AcceptRequest] | msgspec.UnsetType = msgspec.UNSET  # UNSET: as before
    create_namespace: bool = False  # create the namespace when missing (never implicitly)
    source: str | None = None  # the manifest's file, echoed in the plan
    schema_: str | None = msgspec.field(default=None, name="$schema")

    def request(self) -> PublishRequest:
        return PublishRequest(
            definition=self.tool,
            retire=list(self.retire),
            deprecate=list(self.deprecate),
            converters=list(self.converters),
            accept=self.accept,
            require_idle=self.require_idle,
        )


class PolicyBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A namespace policy manifest as `POST /v1/apply` takes it (plus `source`)."""

    namespace: str
    policy: NamespacePolicy
    create_namespace: bool = False  # create the namespace when missing (never implicitly)
    source: str | None = None
    schema_: str | None = msgspec.field(default=None, name="$schema")


class ApplyRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`POST /v1/apply`'s body. A namespace of the bundle that does not exist is created
    only when named in `create_namespaces` or by a manifest's `create_namespace`;
    otherwise the bundle is refused with `namespace-not-found` (a typo is never created)."""

    manifests: list[ManifestBody]
    policies: list[PolicyBody] | msgspec.UnsetType = msgspec.UNSET  # UNSET: as before
    create_namespaces: list[str] = msgspec.field(default_factory=list)


class LifecycleChange(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    action: Literal["retire", "deprecate", "converter"]
    version: int  # the version retired or deprecated, or the converter's source
    to: int | None = None  # a converter's target
    sunset: str | None = None
    ops: list[dict[str, Any]] | None = None


class AliasPlan(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    action: Literal["create", "update", "unchanged"]
    contract: ContractIntent
    routed: bool


class ToolPlan(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str
    tool: str
    source: str | None
    action: Literal["create", "new-version", "unchanged"]
    version: int
    digest: str
    accepted: bool
    report: ChangeReport | None
    decisions: list[Decision]
    lifecycle: list[LifecycleChange]
    aliases: list[AliasPlan]
    # breaking changes accepted on purpose (the manifest's `accept`, the namespace policy)
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)
    # usage (registry/api/usage.py): who called its deprecated versions and those it
    # retires within the warning window; a retirement refused by `require_idle`
    callers: list[VersionUsage] = msgspec.field(default_factory=list)
    in_use: list[str] = msgspec.field(default_factory=list)
    # review (registry/policy/review.py): the risk findings of a new version against
    # current; its state once applied ("pending": held for review, its lifecycle changes
    # applied at approval); the namespace policy's rule that holds it
    risks: list[Risk] = msgspec.field(default_factory=list)
    state: str = "active"
    review: Held | None = None


class NamespacePlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A namespace the manifests name: created by the apply, or already there.

    Namespaces are explicit, so creating one is a step of its own that needs
    admin on it; `allowed` is False when the caller's token may not take it.
    """

    name: str
    action: Literal["create", "unchanged"]
    allowed: bool = True


class PolicyPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A namespace policy of the bundle: `set` when it differs from the stored one.
    Setting a policy needs admin on the namespace; `allowed` is False otherwise."""

    namespace: str
    action: Literal["set", "unchanged"]
    policy: NamespacePolicy
    source: str | None = None
    allowed: bool = True


class ToolRemoval(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A tool the namespace serves that the manifests (or a live server) no longer
    hold: `change` is `tool-removed` or `tool-renamed` (`renamed_to` names the tool
    that took its place), `versions` its served versions. `retired`: retired on
    purpose (`--retire-removed`: the bundle retires those versions); otherwise it
    is a breaking change without a decision. `callers`: who still calls them."""

    namespace: str
    tool: str
    change: Change
    versions: list[int]
    retired: bool = False
    renamed_to: str | None = None
    callers: list[VersionUsage] = msgspec.field(default_factory=list)


class PlanAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of `POST /v1/apply` (`schemas/plan.schema.json`). `removed` and
    `semver` are what `registry plan/apply/check` add to it (absent from the
    registry's own answer): the tools the manifests no longer hold, and each
    namespace's `serverInfo.version` bump against the change."""

    accepted: bool
    applied: bool
    tools: list[ToolPlan]
    namespaces: list[NamespacePlan] = msgspec.field(default_factory=list)
    policies: list[PolicyPlan] = msgspec.field(default_factory=list)
    removed: list[ToolRemoval] | msgspec.UnsetType = msgspec.UNSET
    semver: list[SemverCheck] | msgspec.UnsetType = msgspec.UNSET


def plan_policy(body: PolicyBody, stored: NamespacePolicy, *, allowed: bool) -> PolicyPlan:
    """The step of one policy manifest against the namespace's stored policy."""
    action: Literal["set", "unchanged"] = "unchanged" if body.policy == stored else "set"
    return PolicyPlan(
        namespace=body.namespace,
        action=action,
        policy=body.policy,
        source=body.source,
        allowed=allowed or action == "unchanged",
    )


class _Converter(msgspec.Struct, frozen=True):
    from_version: int
    to_version: int
    ops: list[dict[str, Any]]


class ServedTool(msgspec.Struct, frozen=True):
    """A tool a namespace serves: its current definition and its served versions."""

    definition: dict[str, Any]
    versions: list[int]


def plan_removals(
    namespace: str,
    served: dict[str, ServedTool],
    held: dict[str, dict[str, Any]],
    created: set[str],
    *,
    retired: Collection[str] = (),
) -> list[ToolRemoval]:
    """The tools of `served` (name -> the namespace's tool) that `held` (name ->
    definition: the manifests, or a live server's listing) no longer holds, in
    name order. A tool `held` adds (`created`: not served yet) may pair with one
    as its new name; `retired` names those the bundle retires on purpose."""
    gone = {name: tool.definition for name, tool in served.items() if name not in held}
    if not gone:
        return []
    arrived = {name: held[name] for name in sorted(created) if name in held}
    return [
        ToolRemoval(
            namespace=namespace,
            tool=change.old,
            change=change,
            versions=served[change.old].versions,
            retired=change.old in retired,
            renamed_to=change.new if change.new is not None else None,
        )
        for change in toolset_changes(gone, arrived)
    ]


def _rfc3339(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def plan_tool(
    state: ToolStateLike,
    body: ManifestBody,
    digest: str,
    finder: RouteFinder,
    aliases: Sequence[AliasLike] = (),
    policy: NamespacePolicy | None = None,
    other_tools: Sequence[str] = (),
) -> ToolPlan:
    """The plan of one manifest against the tool as stored. `aliases`: the namespace's;
    `policy`: the namespace's (None: the strict rules); `other_tools`: the names of the
    namespace's other tools, which its risk findings look for.

    Raises `PolicyError` for a manifest the rule cannot consider (a version that
    does not exist, an unverified converter, a definition rejected in review).
    """
    existing = next((v for v in state.versions if v.digest == digest), None)
    held = next((v for v in getattr(state, "held", ()) if v.digest == digest), None)
    if held is not None:
        return _held_plan(state, body, digest, held)
    lifecycle: list[LifecycleChange] = []
    decisions: list[Decision] = []
    report: ChangeReport | None = None
    converters: list[ConverterLike] = list(state.converters)
    versions: list[VersionLike] = list(state.versions)
    acceptances: list[Acceptance] = []
    risks: list[Risk] = []
    review: Held | None = None
    if existing is None:
        assessed = assess(state, body.tool, digest, body.request(), finder, policy, other_tools)
        outcome, risks, review = assessed.outcome, assessed.risks, assessed.review
        number, report, decisions = outcome.version, outcome.report, list(outcome.decisions)
        acceptances = outcome.acceptances
        action: Literal["create", "new-version", "unchanged"] = (
            "new-version" if state.versions else "create"
        )
        versions.append(
            NewVersion(version=number, digest=digest, definition=body.tool, acceptances=acceptances)
        )
        lifecycle += [LifecycleChange(action="retire", version=v) for v in outcome.retire]
        lifecycle += [
            LifecycleChange(action="deprecate", version=d.version, sunset=_rfc3339(d.sunset))
            for d in outcome.deprecate
        ]
        for converter in outcome.converters:
            lifecycle.append(
                LifecycleChange(
                    action="converter", version=converter.from_, to=number, ops=converter.ops
                )
            )
            converters.append(_Converter(converter.from_, number, converter.ops))
    else:
        number, action = existing.version, "unchanged"
        lifecycle, decisions = _pending_lifecycle(state, body, existing, finder)
        converters += [
            _Converter(c.version, number, c.ops or []) for c in lifecycle if c.action == "converter"
        ]
    return ToolPlan(
        namespace=body.namespace,
        tool=body.tool["name"],
        source=body.source,
        action=action,
        version=number,
        digest=digest,
        accepted=not decisions,
        report=report,
        decisions=decisions,
        lifecycle=lifecycle,
        aliases=_alias_plans(body, number, versions, converters, aliases, finder),
        acceptances=acceptances,
        risks=risks,
        state=("pending" if review else "active") if existing is None else existing.state,
        review=review,
    )


def _held_plan(state: ToolStateLike, body: ManifestBody, digest: str, held: Any) -> ToolPlan:
    """A manifest whose definition is a version held for review: pending, nothing more to
    do (its publish's lifecycle changes apply at approval); rejected, refused."""
    if held.state == "rejected":
        raise PolicyError(
            "version-rejected",
            f"this definition of {state.tool} was rejected in review as version "
            f"{held.version}: publish a changed definition",
            pointer="/tool",
        )
    return ToolPlan(
        namespace=body.namespace,
        tool=body.tool["name"],
        source=body.source,
        action="unchanged",
        version=held.version,
        digest=digest,
        accepted=True,
        report=None,
        decisions=[],
        lifecycle=[],
        aliases=[],
        state=held.state,
    )


def _pending_lifecycle(
    state: ToolStateLike, body: ManifestBody, existing: VersionLike, finder: RouteFinder
) -> tuple[list[LifecycleChange], list[Decision]]:
    by_number = {v.version: v for v in state.versions}
    changes: list[LifecycleChange] = []
    decisions: list[Decision] = []
    for index, number in enumerate(sorted(set(body.retire))):
        version = by_number.get(number)
        if version is None:
            raise PolicyError(
                "version-not-found",
                f"retire: version {number} of {state.tool} does not exist",
                pointer=f"/retire/{index}",
            )
        if version.state != "retired":
            changes.append(LifecycleChange(action="retire", version=number))
            decisions += check_retire(state, number, finder)
    for index, deprecation in enumerate(body.deprecate):
        version = by_number.get(deprecation.version)
        if version is None:
            raise PolicyError(
                "version-not-found",
                f"deprecate: version {deprecation.version} of {state.tool} does not exist",
                pointer=f"/deprecate/{index}/version",
            )
        stored_sunset = getattr(version, "sunset", None)
        if version.state == "active" or (
            version.state == "deprecated"
            and deprecation.sunset is not None
            and stored_sunset != deprecation.sunset
        ):
            changes.append(
                LifecycleChange(
                    action="deprecate",
                    version=deprecation.version,
                    sunset=_rfc3339(deprecation.sunset),
                )
            )
            decisions += check_deprecate(state, deprecation.version, deprecation.sunset, finder)
    stored = {(c.from_version, c.to_version) for c in state.converters}
    for index, converter in enumerate(body.converters):
        if (converter.from_, existing.version) in stored:
            continue
        source = by_number.get(converter.from_)
        if source is None:
            raise PolicyError(
                "version-not-found",
                f"converter from version {converter.from_}: no such version of {state.tool}",
                pointer=f"/converters/{index}/from",
            )
        verify_converter(source, existing, converter.ops, finder, pointer=f"/converters/{index}")
        changes.append(
            LifecycleChange(
                action="converter", version=converter.from_, to=existing.version, ops=converter.ops
            )
        )
    return changes, decisions


def _alias_plans(
    body: ManifestBody,
    landing: int,
    versions: Sequence[VersionLike],
    converters: Sequence[ConverterLike],
    aliases: Sequence[AliasLike],
    finder: RouteFinder,
) -> list[AliasPlan]:
    stored = {a.name: a for a in aliases}
    served = [v for v in versions if v.state != "retired"]
    current = served[-1].version if served else landing
    name = body.tool["name"]
    plans = []
    for intent in body.aliases:
        known = stored.get(intent.name)
        if known is None:
            action: Literal["create", "update", "unchanged"] = "create"
        elif (known.target_tool, known.contract_tool, known.contract_version) == (
            name,
            intent.contract.tool,
            intent.contract.version,
        ):
            action = "unchanged"
        else:
            action = "update"
        routed = intent.contract.tool == name and (
            finder.route(versions, converters, start=intent.contract.version, target=current)
            is not None
        )
        plans.append(
            AliasPlan(name=intent.name, action=action, contract=intent.contract, routed=routed)
        )
    return plans
