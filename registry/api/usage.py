"""Usage counts from gated servers, and the evidence they give a retirement.

    POST /v1/namespaces/{ns}/usage                            report (scope `report`)
    GET  /v1/namespaces/{ns}/tools/{tool}/usage?window=7d     per version (read)
    GET  /v1/namespaces/{ns}/tools/{tool}/versions/{n}/usage  one version (read)

A report (`registry.sdk.usage.UsageReport`) adds its counts to the hour bucket
of its receipt; `last_seen` is the receipt time (the registry's clock, never
the reporter's: a report delayed by an outage makes a version look called
later, never idle sooner). Counts naming a tool the namespace does not have
are not stored and the receipt names them; a report counting a tool of the
namespace at a version it never had is refused whole (422 `version-not-found`). Buckets older than
`Settings.usage_retention` are deleted, at most every `PRUNE_EVERY`, by the
report that finds them due.

`check_retirements` is what retiring a version (`POST .../retire`, a publish
or manifest with `retire`) asks first: a version called within `require_idle`
(the request's, or `Settings.require_idle` when that is longer) is refused with
409 `version-in-use` naming who calls it; one called within
`Settings.retire_warn_window` is retired with a warning saying so.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Annotated, Any, Final

import msgspec
from litestar import Request, get, post
from litestar.params import JSONBody, Parameter

from registry.api.params import NamespaceName, ToolName, VersionText, version_number
from registry.api.problems import (
    BODY_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    ApiError,
    problem_responses,
)
from registry.api.services import Services, require_namespace, services
from registry.policy.callers import (
    DURATION_PATTERN,
    Evidence,
    RequireIdle,
    ToolUsage,
    VersionUsage,
    callers_of,
    parse_duration,
    retirement_evidence,
    retiring,
    summarize,
)
from registry.policy.plan import ManifestBody, ToolPlan
from registry.sdk.usage import UsageReport
from registry.store import Db, Version
from registry.store import usage as store

__all__ = [
    "HANDLERS",
    "RetireAnswer",
    "RetireRequest",
    "UsageReceipt",
    "VersionUsageAnswer",
    "check_retirements",
    "deprecated_callers",
    "judge_retirements",
    "plan_with_usage",
    "retire_answer",
]

PRUNE_EVERY: Final = timedelta(minutes=10)
_PRUNED_AT: Final = "usage_pruned_at"

WindowParameter = Annotated[
    str | None,
    Parameter(
        pattern=DURATION_PATTERN,
        description='how far back to count, e.g. "7d" (default: the retention)',
    ),
]


class UsageReceipt(msgspec.Struct, kw_only=True):
    namespace: str
    server: str
    received_at: datetime  # the time the counts are stamped with (last seen)
    recorded: int  # calls stored
    ignored: list[str]  # tools the namespace does not have: their counts were not stored


class RetireRequest(msgspec.Struct, forbid_unknown_fields=True):
    require_idle: RequireIdle | None = None


class RetireAnswer(Version, frozen=True, kw_only=True):
    """The retired version, and what its callers said (`warnings`: calls within the
    warning window; `usage`: its calls in that window)."""

    warnings: list[str] = msgspec.field(default_factory=list)
    usage: VersionUsage | None = None


class VersionUsageAnswer(VersionUsage, frozen=True, kw_only=True):
    namespace: str
    tool: str
    since: datetime
    until: datetime


# -- reports ------------------------------------------------------------------------


def _coherent(report: UsageReport) -> None:
    for index, count in enumerate(report.counts):
        if (count.decision == "refused") != (count.reason is not None):
            raise ApiError(
                "invalid-body",
                "a refused count names the gate's reason, and only a refused one does",
                pointer=f"/counts/{index}/reason",
            )
        if count.version is None and count.decision != "refused":
            raise ApiError(
                "invalid-body",
                f"an {count.decision} count names the version it was decided under",
                pointer=f"/counts/{index}/version",
            )


@post(
    "/v1/namespaces/{ns:str}/usage",
    summary="Report usage counts from a gated server (counts only, never argument values)",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "namespace-not-found",
        "version-not-found",
        *SERVER_PROBLEMS,
    ),
)
async def report_usage(
    request: Request[Any, Any, Any], ns: NamespaceName, data: JSONBody[UsageReport]
) -> UsageReceipt:
    _coherent(data)
    svc = services(request)
    await _versions_had(svc.database, ns, data)
    now = svc.clock()
    counts = [store.CountIn(c.tool, c.version, c.decision, c.reason, c.calls) for c in data.counts]
    stored = await store.record_usage(svc.database, ns, data.server, data.toolset, counts, at=now)
    if not stored:
        await require_namespace(svc, ns)
    await _prune_when_due(svc, now)
    return UsageReceipt(
        namespace=ns,
        server=data.server,
        received_at=now,
        recorded=sum(c.calls for c in data.counts if c.tool in stored),
        ignored=sorted({c.tool for c in data.counts} - stored),
    )


async def _versions_had(db: Db, ns: str, report: UsageReport) -> None:
    """Refuse (422 `version-not-found`, nothing stored) a report counting calls of a
    tool at a version the namespace never had: it comes from a toolset that is not
    this namespace's (a demo's, another registry's), and `require_idle` trusts these
    counts. The refusal is counted with the other requests (`registry_http_requests`,
    route and status)."""
    asked = {(c.tool, c.version) for c in report.counts if c.version is not None}
    never = await store.versions_never_had(db, ns, asked)
    if not never:
        return
    first = next(i for i, c in enumerate(report.counts) if (c.tool, c.version) == never[0])
    named = ", ".join(f"{tool} v{version}" for tool, version in never)
    raise ApiError(
        "version-not-found",
        f"the report counts calls of versions namespace {ns} never had ({named}): it comes "
        "from a toolset that is not this namespace's (a demo's, another registry's); "
        "nothing was stored",
        pointer=f"/counts/{first}/version",
    )


async def _prune_when_due(svc: Services, now: datetime) -> None:
    last = svc.extra.get(_PRUNED_AT)
    if isinstance(last, datetime) and abs(now - last) < PRUNE_EVERY:
        return
    svc.extra[_PRUNED_AT] = now
    await store.prune_usage(
        svc.database, before=now - timedelta(seconds=svc.settings.usage_retention)
    )


# -- reads ---------------------------------------------------------------------------


def _window(svc: Services, window: str | None) -> timedelta:
    if window is None:
        return timedelta(seconds=svc.settings.usage_retention)
    try:
        return parse_duration(window)
    except ValueError as exc:
        raise ApiError("invalid-request", f"window: {exc}") from exc


async def _states(db: Db, ns: str, tool: str) -> dict[int, str]:
    states = await store.states_by_version(db, ns, tool)
    if not states:
        raise ApiError("not-found", f"tool {ns}/{tool} does not exist")
    return states


def _with_states(usages: Iterable[VersionUsage], states: dict[int, str]) -> list[VersionUsage]:
    return [
        msgspec.structs.replace(u, state=states.get(u.version) if u.version else None)
        for u in usages
    ]


class _Counted(msgspec.Struct, frozen=True):
    since: datetime
    until: datetime
    states: dict[int, str]
    usages: list[VersionUsage]


async def _counted(
    request: Request[Any, Any, Any], ns: str, tool: str, window: str | None, version: int | None
) -> _Counted:
    """The tool's (or one version's) usage in the window ending now, with states."""
    svc = services(request)
    span = _window(svc, window)
    now = svc.clock()
    states = await _states(svc.database, ns, tool)
    if version is not None and version not in states:
        raise ApiError("not-found", f"version {version} of {ns}/{tool} does not exist")
    rows = await store.usage_rows(svc.database, ns, tool, since=now - span, version=version)
    return _Counted(now - span, now, states, _with_states(summarize(rows), states))


@get(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/usage",
    summary="Calls per version of a tool, with last seen and the servers that saw them",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *SERVER_PROBLEMS
    ),
)
async def tool_usage(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    window: WindowParameter = None,
) -> ToolUsage:
    found = await _counted(request, ns, tool, window, None)
    return ToolUsage(
        namespace=ns, tool=tool, since=found.since, until=found.until, versions=found.usages
    )


@get(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions/{n:str}/usage",
    summary="Calls of one version: how many, last seen, which servers",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *SERVER_PROBLEMS
    ),
)
async def version_usage(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    n: VersionText,
    window: WindowParameter = None,
) -> VersionUsageAnswer:
    number = version_number(n)
    found = await _counted(request, ns, tool, window, number)
    usage = callers_of(found.usages, number)
    return VersionUsageAnswer(
        **msgspec.structs.asdict(usage) | {"state": found.states[number]},
        namespace=ns,
        tool=tool,
        since=found.since,
        until=found.until,
    )


# -- retirements ---------------------------------------------------------------------


def require_idle_of(svc: Services, requested: str | None, pointer: str) -> timedelta | None:
    """The idleness a retirement needs: the request's, or the setting when that is longer."""
    floor = svc.settings.require_idle
    wanted = None
    if requested is not None:
        try:
            wanted = parse_duration(requested)
        except ValueError as exc:
            raise ApiError("invalid-body", f"require_idle: {exc}", pointer=pointer) from exc
    if floor is not None and (wanted is None or wanted.total_seconds() < floor):
        return timedelta(seconds=floor)
    return wanted


async def judge_retirements(
    svc: Services,
    db: Db,
    ns: str,
    tool: str,
    versions: Iterable[int],
    require_idle: str | None,
    *,
    deprecate: Iterable[tuple[int, datetime | None]] = (),
    pointer: str = "/require_idle",
) -> list[Evidence]:
    """The evidence for retiring each of `versions` of a tool, and each it deprecates
    with a sunset that retires it (`registry.policy.callers.retiring`, the one rule every
    path asks), from its calls: `refused` when it was called within the idleness
    required, a warning `message` when called within the warning window. Retired
    versions and versions the tool does not have are left to the retirement itself.
    422 for a `require_idle` that is not a duration."""
    idle = require_idle_of(svc, require_idle, pointer)
    now = svc.clock()
    versions = retiring(versions, deprecate, now=now, require_idle=idle)
    if not versions:
        return []
    states = await store.states_by_version(db, ns, tool)
    targets = sorted({v for v in versions if states.get(v) not in (None, "retired")})
    if not targets:
        return []
    warn = timedelta(seconds=svc.settings.retire_warn_window)
    span = max(warn, idle) if idle is not None else warn
    usages = _with_states(summarize(await store.usage_rows(db, ns, tool, since=now - span)), states)
    return [
        retirement_evidence(tool, callers_of(usages, v), now=now, warn=warn, require_idle=idle)
        for v in targets
    ]


async def check_retirements(
    svc: Services,
    db: Db,
    ns: str,
    tool: str,
    versions: Iterable[int],
    require_idle: str | None,
    *,
    deprecate: Iterable[tuple[int, datetime | None]] = (),
    pointer: str = "/require_idle",
) -> list[Evidence]:
    """`judge_retirements`, refusing with 409 `version-in-use` when a version is still called."""
    found = await judge_retirements(
        svc, db, ns, tool, versions, require_idle, deprecate=deprecate, pointer=pointer
    )
    refused = [e for e in found if e.refused]
    if refused:
        raise ApiError(
            "version-in-use",
            "; ".join(e.message or "" for e in refused),
            pointer=pointer if require_idle is not None else None,
            usage=[e.usage for e in refused],
        )
    return found


async def plan_with_usage(
    svc: Services, db: Db, index: int, body: ManifestBody, plan: ToolPlan
) -> ToolPlan:
    """A manifest's plan with who calls its deprecated and retiring versions, and the
    retirements `require_idle` refuses (then the plan is not accepted)."""
    retired = [c.version for c in plan.lifecycle if c.action == "retire"]
    found = await judge_retirements(
        svc,
        db,
        plan.namespace,
        plan.tool,
        retired,
        body.require_idle,
        deprecate=[(d.version, d.sunset) for d in body.deprecate],
        pointer=f"/manifests/{index}/require_idle",
    )
    retired = sorted({*retired, *(e.usage.version for e in found if e.usage.version)})
    in_use = [e.message for e in found if e.refused and e.message]
    callers = await deprecated_callers(svc, db, plan.namespace, plan.tool, retired)
    if not in_use and not callers:
        return plan
    return msgspec.structs.replace(
        plan, callers=callers, in_use=in_use, accepted=plan.accepted and not in_use
    )


async def deprecated_callers(
    svc: Services, db: Db, ns: str, tool: str, retiring: Iterable[int] = ()
) -> list[VersionUsage]:
    """Who called the tool's deprecated versions (and `retiring`) within the warning
    window: what `check` and `plan` show beside the change."""
    states = await store.states_by_version(db, ns, tool)
    wanted = {v for v, state in states.items() if state == "deprecated"}
    wanted |= {v for v in retiring if states.get(v) not in (None, "retired")}
    if not wanted:
        return []
    now = svc.clock()
    warn = timedelta(seconds=svc.settings.retire_warn_window)
    usages = summarize(await store.usage_rows(db, ns, tool, since=now - warn))
    return _with_states([u for u in usages if u.version in wanted and u.calls], states)


def retire_answer(record: Version, evidence: list[Evidence]) -> RetireAnswer:
    found = evidence[0] if evidence else None
    return RetireAnswer(
        **msgspec.structs.asdict(record),
        warnings=[e.message for e in evidence if e.message],
        usage=found.usage if found is not None and found.usage.calls else None,
    )


HANDLERS = [report_usage, tool_usage, version_usage]
