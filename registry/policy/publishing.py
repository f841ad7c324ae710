"""The publishing rule of docs/contract.md, as pure functions over a tool's stored state.

    outcome = plan_publish(state, definition, digest, request, finder)
    outcome.accepted      # False: `outcome.decisions` lists what the publisher still owes

The store calls this inside the publish transaction, under the tool's lock
(`registry.store.publish`'s `decide` seam), and the dry run
(`.../check`) calls it on an unlocked read. It never touches a database.

1. The request names versions that exist; converters parse and are verified
   (the operations applied to the old version's input schema leave nothing
   breaking against the new definition; breaking output or annotation changes
   cannot be converted away).
2. Every served version that is not retired in this request needs a route to
   the new version (identity steps over non-breaking changes, converters).
3. Every alias whose contract had a route to the old current keeps one.
4. Otherwise the outcome is refused, with a `Decision` per version or alias:
   the kinds that break it, the report, and the options (`retire`, `converter`).

Breaking changes the request accepts (`accept`) or the namespace policy
relaxes are stored with the new version (`registry.policy.acceptance`); a step
whose breaking changes are all accepted is an identity step, so it needs no
retirement and no converter. An `accept` entry that matches no breaking change
against a served version refuses the request (`acceptance-unmatched`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Final, Literal, Protocol

import msgspec

from registry.compat import (
    ChangeReport,
    ClassificationError,
    ConverterError,
    Severity,
    Unrepairable,
    parse_ops,
    repair,
    verify,
)
from registry.compat.kinds import worst
from registry.policy.acceptance import (
    Acceptance,
    AcceptanceRefused,
    AcceptRequest,
    NamespacePolicy,
    accepted_keys,
    covers,
    settle,
)
from registry.policy.callers import RequireIdle
from registry.policy.routes import ConverterLike, RouteFinder, VersionLike

__all__ = [
    "MAX_VERSION",
    "AliasLike",
    "ConverterRequest",
    "Decision",
    "DeprecationRequest",
    "NewVersion",
    "PolicyError",
    "PublishOutcome",
    "PublishRequest",
    "ToolStateLike",
    "VersionNumber",
    "VersionReport",
    "check_deprecate",
    "check_retire",
    "plan_publish",
    "verify_converter",
]


class PolicyError(ValueError):
    """A request the rule refuses before any classification of routes (422).

    `code` is a stable name (`version-not-found`, `converter-invalid`,
    `converter-unverified`, `request-invalid`, `acceptance-unmatched`); `report`
    is set for an unverified converter.
    """

    def __init__(
        self, code: str, message: str, *, pointer: str = "", report: ChangeReport | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.pointer = pointer
        self.report = report


# -- what the rule reads -----------------------------------------


class AliasLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def target_tool(self) -> str: ...
    @property
    def contract_tool(self) -> str: ...
    @property
    def contract_version(self) -> int: ...


class ToolStateLike(Protocol):
    """A tool as stored (`registry.store.ToolState` fits): versions oldest first."""

    @property
    def tool(self) -> str: ...
    @property
    def versions(self) -> Sequence[VersionLike]: ...
    @property
    def converters(self) -> Sequence[ConverterLike]: ...
    @property
    def aliases(self) -> Sequence[AliasLike]: ...
    @property
    def next_version(self) -> int: ...


# -- the request (the body of POST .../versions and .../check) -------------

MAX_VERSION: Final = 2**31 - 1
# What a request may name as a version: the store keeps versions as PostgreSQL
# `integer`, so a larger number is refused here, in the registry's words.
VersionNumber = Annotated[
    int, msgspec.Meta(ge=1, le=MAX_VERSION, description="A version: a positive 32-bit integer")
]


class DeprecationRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    version: VersionNumber
    sunset: datetime | None = None


class ConverterRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A converter from version `from` to the version being published."""

    from_: VersionNumber = msgspec.field(name="from")
    ops: list[dict[str, Any]] = msgspec.field(default_factory=list)


class PublishRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    definition: dict[str, Any]
    retire: list[VersionNumber] = msgspec.field(default_factory=list)
    deprecate: list[DeprecationRequest] = msgspec.field(default_factory=list)
    converters: list[ConverterRequest] = msgspec.field(default_factory=list)
    # UNSET when absent, so a body without it encodes as before (older registries
    # refuse fields they do not know)
    accept: list[AcceptRequest] | msgspec.UnsetType = msgspec.UNSET
    # refuse the retirements while a version is still called (registry/api/usage.py)
    require_idle: RequireIdle | None = None


# -- the outcome ---------------------------------------------------


Option = Literal["retire", "converter", "accept"]


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """A decision the publisher still owes: one per served version (or alias) left without
    a route. `options` are what would settle it: `retire` (the version), `converter`
    (from it, verified) or `accept` (its breaking changes, on purpose).
    `suggested_ops`: the engine's converter, offered only where the publish's own
    verification proves it (`registry.compat.repair`); `unrepairable`: the breaking
    changes it leaves, each with the argument a fill of a value the publisher
    chooses would repair (`fill`), or none where no operation repairs it (then
    `converter` is no option)."""

    version: int
    alias: str | None = None
    state: str
    message: str
    options: list[Option]
    kinds: list[str]
    suggested_ops: list[dict[str, Any]]
    unrepairable: list[Unrepairable] = msgspec.field(default_factory=list)
    report: ChangeReport


class VersionReport(msgspec.Struct, frozen=True):
    version: int
    report: ChangeReport


class NewVersion(msgspec.Struct, frozen=True):
    """The version being published, in the shape the route search reads."""

    version: int
    digest: str
    definition: dict[str, Any]
    state: str = "active"
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)


class PublishOutcome(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    digest: str
    accepted: bool
    report: ChangeReport | None  # against the current version; None for a first version
    decisions: list[Decision]
    reports: list[VersionReport]  # current's, and those of versions needing a decision
    retire: list[int]
    deprecate: list[DeprecationRequest]
    converters: list[ConverterRequest]
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)


# -- the rule ------------------------------------------------------


def plan_publish(
    state: ToolStateLike,
    definition: Mapping[str, Any],
    digest: str,
    request: PublishRequest,
    finder: RouteFinder,
    policy: NamespacePolicy | None = None,
) -> PublishOutcome:
    """Apply the publishing rule; raises `PolicyError` for a request it cannot consider.
    `policy`: the namespace's (None: the default, strict rules).

    Every served version already has a route to the current one (this rule,
    `check_retire` and `check_deprecate` keep it so), so when the step from
    current to the new version exists (a non-breaking change, or a converter
    from current in this request) every served version reaches the new one
    through it, and nothing else is classified. Otherwise each served version
    is searched on its own, and those left without a route become decisions.
    """
    versions = {v.version: v for v in state.versions}
    new = NewVersion(version=state.next_version, digest=digest, definition=dict(definition))
    retire = sorted(set(request.retire))
    _check_lifecycle(state.tool, versions, retire, request.deprecate)
    new_converters = _verified_converters(state.tool, versions, new, request.converters, finder)

    served = [v for v in state.versions if v.state != "retired"]
    current = served[-1] if served else None
    accept = request.accept or []
    acceptances = _acceptances(state.tool, served, new, accept, policy, finder)
    if acceptances:
        new = NewVersion(new.version, new.digest, new.definition, acceptances=acceptances)
    report = finder.report(current, new) if current is not None else None
    reports: list[VersionReport] = []
    decisions: list[Decision] = []
    if current is not None and report is not None:
        reports.append(VersionReport(current.version, report))
        steps_from_current = (
            report.severity is not Severity.BREAKING
            or any(c.from_version == current.version for c in new_converters)
            or covers(acceptances, report)
        )
        if not steps_from_current:
            everything: list[VersionLike] = [*state.versions, new]
            converters: list[ConverterLike] = [*state.converters, *new_converters]
            for version in reversed(served):
                if version.version in retire:
                    continue
                route = finder.route(
                    everything, converters, start=version.version, target=new.version
                )
                if route is not None:
                    continue
                version_report = report if version is current else finder.report(version, new)
                if version is not current:
                    reports.append(VersionReport(version.version, version_report))
                decisions.append(
                    _decision(
                        version,
                        new,
                        version_report,
                        f"version {version.version} of {state.tool} is still served and has "
                        f"no route to version {new.version}",
                        accepted=acceptances,
                    )
                )
            decisions += _orphaned_aliases(state, everything, converters, current, new, finder)
    return PublishOutcome(
        version=new.version,
        digest=digest,
        accepted=not decisions,
        report=report,
        decisions=decisions,
        reports=reports,
        retire=retire,
        deprecate=list(request.deprecate),
        converters=list(request.converters),
        acceptances=acceptances,
    )


def _acceptances(
    tool: str,
    served: Sequence[VersionLike],
    new: NewVersion,
    accept: Sequence[AcceptRequest],
    policy: NamespacePolicy | None,
    finder: RouteFinder,
) -> list[Acceptance]:
    """What the request accepts and the policy relaxes, matched against the report of
    every served version (only classified when there is something to match)."""
    if not accept and (policy is None or not policy.applies_to(tool)):
        return []
    reports = [(version.version, finder.report(version, new)) for version in served]
    try:
        return settle(tool, reports, accept, policy)
    except AcceptanceRefused as exc:
        raise PolicyError(exc.code, exc.message, pointer=exc.pointer) from exc


def _orphaned_aliases(
    state: ToolStateLike,
    everything: Sequence[VersionLike],
    converters: Sequence[ConverterLike],
    current: VersionLike,
    new: NewVersion,
    finder: RouteFinder,
) -> list[Decision]:
    """Aliases that reach the current version today and would not reach the new one."""
    decisions = []
    old_converters = [c for c in converters if c.to_version != new.version]
    old_versions = [v for v in everything if v.version != new.version]
    by_number = {v.version: v for v in everything}
    for alias in state.aliases:
        if alias.target_tool != state.tool or alias.contract_tool != state.tool:
            continue
        start = alias.contract_version
        before = finder.route(old_versions, old_converters, start=start, target=current.version)
        if before is None:
            continue
        if finder.route(everything, converters, start=start, target=new.version) is not None:
            continue
        contract = by_number[start]
        decisions.append(
            _decision(
                contract,
                new,
                finder.report(contract, new),
                f"alias {alias.name} speaks version {start} of {state.tool} and would lose "
                "its route",
                alias=alias.name,
                accepted=new.acceptances,
            )
        )
    return decisions


def _decision(
    version: VersionLike,
    new: VersionLike,
    report: ChangeReport,
    subject: str,
    *,
    alias: str | None = None,
    accepted: Sequence[Acceptance] = (),
    advise: bool = True,
) -> Decision:
    """The decision owed for `version` (or an alias speaking it), left without a route
    to `new`: `subject` says why, and the options (and, with `advise`, the words)
    follow from what the engine can repair (`registry.compat.repair`)."""
    # what is accepted needs no decision: the kinds and ops name what is left
    keys = accepted_keys(accepted)
    breaking = [c for c in report.breaking if (c.kind.value, c.path) not in keys]
    found = repair(report, version.definition, new.definition, keys)
    options, remedy = _remedy(version, found.unrepairable, alias)
    return Decision(
        version=version.version,
        alias=alias,
        state=version.state,
        message=f"{subject}: {remedy}" if advise else subject,
        options=options,
        kinds=sorted({c.kind.value for c in breaking}),
        suggested_ops=found.ops,
        unrepairable=found.unrepairable,
        report=report,
    )


def _remedy(
    version: VersionLike, unrepairable: Sequence[Unrepairable], alias: str | None
) -> tuple[list[Option], str]:
    """What settles a decision, as options and in words."""
    start = f"version {version.version}"
    if not unrepairable:
        if alias is not None:
            return ["converter"], f"register a converter from {start} in this request"
        return ["retire", "converter"], "retire it, or register a converter from it in this request"
    # accepting keeps an identity route from a served version only
    acceptable = version.state != "retired"
    lost = [u for u in unrepairable if u.fill is None]
    if lost:
        named = ", ".join(f"{u.kind.value} at {u.path}" for u in lost)
        said = f"no converter operation repairs {named}"
        options: list[Option] = [] if alias is not None else ["retire"]
    else:
        needed = ", ".join(str(u.fill) for u in unrepairable)
        said = f"no value is known to fill {needed} with"
        options = ["converter"] if alias is not None else ["retire", "converter"]
    if acceptable:
        options.append("accept")
    source = "it" if alias is None else start
    words = {
        "retire": "retire it",
        "converter": f"register a converter from {source} that fills a value you choose",
        "accept": "accept its breaking changes",
    }
    if not options:
        return options, f"{said}, and {start} is retired: nothing keeps its route"
    return options, f"{said}; " + _either([words[o] for o in options])


def _either(choices: list[str]) -> str:
    return choices[0] if len(choices) == 1 else ", ".join(choices[:-1]) + ", or " + choices[-1]


def _check_lifecycle(
    tool: str,
    versions: Mapping[int, VersionLike],
    retire: Sequence[int],
    deprecate: Sequence[DeprecationRequest],
) -> None:
    for index, number in enumerate(retire):
        if number not in versions:
            raise PolicyError(
                "version-not-found",
                f"retire: version {number} of {tool} does not exist",
                pointer=f"/retire/{index}",
            )
    for index, deprecation in enumerate(deprecate):
        pointer = f"/deprecate/{index}/version"
        version = versions.get(deprecation.version)
        if version is None:
            raise PolicyError(
                "version-not-found",
                f"deprecate: version {deprecation.version} of {tool} does not exist",
                pointer=pointer,
            )
        if deprecation.version in retire:
            raise PolicyError(
                "request-invalid",
                f"version {deprecation.version} is both deprecated and retired in this request",
                pointer=pointer,
            )
        if version.state == "retired":
            raise PolicyError(
                "illegal-transition",
                f"deprecate: version {deprecation.version} of {tool} is retired; "
                "a state only moves forward",
                pointer=pointer,
            )


def _verified_converters(
    tool: str,
    versions: Mapping[int, VersionLike],
    new: NewVersion,
    requested: Sequence[ConverterRequest],
    finder: RouteFinder,
) -> list[ConverterLike]:
    seen: set[int] = set()
    verified: list[ConverterLike] = []
    for index, converter in enumerate(requested):
        pointer = f"/converters/{index}"
        source = versions.get(converter.from_)
        if source is None:
            raise PolicyError(
                "version-not-found",
                f"converter from version {converter.from_}: no such version of {tool}",
                pointer=f"{pointer}/from",
            )
        if converter.from_ in seen:
            raise PolicyError(
                "request-invalid",
                f"two converters from version {converter.from_}",
                pointer=f"{pointer}/from",
            )
        seen.add(converter.from_)
        verify_converter(source, new, converter.ops, finder, pointer=pointer)
        verified.append(_StagedConverter(converter.from_, new.version, converter.ops))
    return verified


class _StagedConverter(msgspec.Struct, frozen=True):
    from_version: int
    to_version: int
    ops: list[dict[str, Any]]


def verify_converter(
    source: VersionLike,
    target: VersionLike,
    raw_ops: Any,
    finder: RouteFinder,
    *,
    pointer: str = "",
) -> ChangeReport:
    """The converter's report; raises `PolicyError` unless the converter is verified.

    Its input part is `compat.verify` (the operations applied to the source's
    input schema, classified against the target's); the rest of the definition
    (output schema, annotations) is classified as is, since no argument
    converter can repair what callers read back.
    """
    try:
        ops = parse_ops(raw_ops)
        input_report = verify(ops, source.definition, target.definition)
    except (ConverterError, ClassificationError) as exc:
        raise PolicyError(
            "converter-invalid",
            f"converter from version {source.version}: {exc}",
            pointer=f"{pointer}/ops",
        ) from exc
    rest = [
        c for c in finder.report(source, target).changes if not c.path.startswith("/inputSchema")
    ]
    changes = input_report.changes + rest
    report = ChangeReport(severity=worst([c.severity for c in changes]), changes=changes)
    if report.severity is Severity.BREAKING:
        kinds = ", ".join(sorted({c.kind.value for c in report.breaking}))
        raise PolicyError(
            "converter-unverified",
            f"the converter from version {source.version} to {target.version} leaves "
            f"breaking changes: {kinds}",
            pointer=pointer,
            report=report,
        )
    return report


def check_retire(state: ToolStateLike, number: int, finder: RouteFinder) -> list[Decision]:
    """What retiring version `number` would leave without a route to the new current.

    Retiring the current version makes the next older served one current; every
    other served version must still reach it. Empty when the retirement is safe.
    """
    served = [v for v in state.versions if v.state != "retired" and v.version != number]
    if not served:
        return []
    current = served[-1]
    decisions = []
    for version in served[:-1]:
        if (
            finder.route(
                state.versions, state.converters, start=version.version, target=current.version
            )
            is None
        ):
            decisions.append(
                _decision(
                    version,
                    current,
                    finder.report(version, current),
                    f"retiring version {number} makes version {current.version} current, "
                    f"and version {version.version} has no route to it",
                    advise=False,
                )
            )
    return decisions


def check_deprecate(
    state: ToolStateLike, number: int, sunset: datetime | None, finder: RouteFinder
) -> list[Decision]:
    """A sunset retires the version when it passes, with no write to check it then:
    so a deprecation with a sunset must be as safe as retiring the version now."""
    return [] if sunset is None else check_retire(state, number, finder)
