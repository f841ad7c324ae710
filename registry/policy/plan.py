"""What applying a manifest would do to one tool: the plan of `registry plan` / `POST /v1/apply`.

    plan = plan_tool(state, manifest_body, finder)
    plan.action      # "create" | "new-version" | "unchanged"
    plan.accepted    # False: plan.decisions lists what is still missing

A manifest is declarative: its tool definition should be current, and its
lifecycle intents (`retire`, `deprecate`, `converters`, `aliases`) should be in
effect. For a definition already stored (same digest), the intents not yet in
effect become lifecycle changes; re-applying an applied manifest plans nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from registry.compat import ChangeReport
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
    plan_publish,
    verify_converter,
)
from registry.policy.routes import ConverterLike, RouteFinder, VersionLike
from registry.policy.usage import RequireIdle, VersionUsage

__all__ = [
    "AliasIntent",
    "AliasPlan",
    "ApplyRequest",
    "ContractIntent",
    "LifecycleChange",
    "ManifestBody",
    "NamespacePlan",
    "PlanAnswer",
    "ToolPlan",
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
    source: str | None = None  # the manifest's file, echoed in the plan
    schema_: str | None = msgspec.field(default=None, name="$schema")

    def request(self) -> PublishRequest:
        return PublishRequest(
            definition=self.tool,
            retire=list(self.retire),
            deprecate=list(self.deprecate),
            converters=list(self.converters),
            require_idle=self.require_idle,
        )


class ApplyRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    manifests: list[ManifestBody]


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
    # usage (registry/api/usage.py): who called its deprecated versions and those it
    # retires within the warning window; a retirement refused by `require_idle`
    callers: list[VersionUsage] = msgspec.field(default_factory=list)
    in_use: list[str] = msgspec.field(default_factory=list)


class NamespacePlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A namespace the manifests name: created by the apply, or already there.

    Namespaces are explicit, so creating one is a step of its own that needs
    admin on it; `allowed` is False when the caller's token may not take it.
    """

    name: str
    action: Literal["create", "unchanged"]
    allowed: bool = True


class PlanAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of `POST /v1/apply` (`schemas/plan.schema.json`)."""

    accepted: bool
    applied: bool
    tools: list[ToolPlan]
    namespaces: list[NamespacePlan] = msgspec.field(default_factory=list)


class _Converter(msgspec.Struct, frozen=True):
    from_version: int
    to_version: int
    ops: list[dict[str, Any]]


def _rfc3339(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def plan_tool(
    state: ToolStateLike,
    body: ManifestBody,
    digest: str,
    finder: RouteFinder,
    aliases: Sequence[AliasLike] = (),
) -> ToolPlan:
    """The plan of one manifest against the tool as stored. `aliases`: the namespace's.

    Raises `PolicyError` for a manifest the rule cannot consider (a version that
    does not exist, an unverified converter).
    """
    existing = next((v for v in state.versions if v.digest == digest), None)
    lifecycle: list[LifecycleChange] = []
    decisions: list[Decision] = []
    report: ChangeReport | None = None
    converters: list[ConverterLike] = list(state.converters)
    versions: list[VersionLike] = list(state.versions)
    if existing is None:
        outcome = plan_publish(state, body.tool, digest, body.request(), finder)
        number, report, decisions = outcome.version, outcome.report, list(outcome.decisions)
        action: Literal["create", "new-version", "unchanged"] = (
            "new-version" if state.versions else "create"
        )
        versions.append(NewVersion(version=number, digest=digest, definition=body.tool))
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
