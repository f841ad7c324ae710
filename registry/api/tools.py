"""Namespaces, tools, versions: publish, check, history, diff, lifecycle, converters, aliases."""

from __future__ import annotations

import time
from typing import Any

import msgspec
from litestar import Request, Response, get, post, put
from litestar.params import FromQuery, JSONBody

from registry import store
from registry.api import analysis
from registry.api.bodies import ONE_DEFINITION
from registry.api.params import (
    AliasName,
    NamespaceName,
    ToolName,
    VersionText,
    tool_name,
    version_number,
)
from registry.api.problems import (
    ANALYSIS_PROBLEMS,
    BODY_PROBLEMS,
    BUDGET_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    POLICY_PROBLEMS,
    SERVER_PROBLEMS,
    WRITE_PROBLEMS,
    ApiError,
    also_answers,
    namespace_not_found,
    problem_responses,
)
from registry.api.services import (
    Services,
    actor,
    principal,
    reader,
    replica_read,
    request_id,
    require_namespace,
    services,
    writer,
)
from registry.api.usage import RetireAnswer, RetireRequest, check_retirements, retire_answer
from registry.api.wire import (
    AliasAnswer,
    AliasRequest,
    CheckAnswer,
    ContractRef,
    ConverterAnswer,
    ConverterBody,
    DeprecateRequest,
    DiffAnswer,
    History,
    NamespaceEntry,
    NamespaceList,
    PublishAnswer,
    ToolEntry,
    ToolList,
)
from registry.policy.acceptance import NamespacePolicy
from registry.policy.publishing import (
    Decision,
    PublishOutcome,
    PublishRequest,
)
from registry.policy.review import Assessment, kept_request
from registry.store import (
    Acceptance,
    Conflict,
    Deprecation,
    Hold,
    IllegalTransition,
    NamespaceNotFound,
    NewConverter,
    NotFound,
    PublishPlan,
    PublishRefused,
    Refusal,
    ToolState,
    Version,
)

__all__ = ["HANDLERS"]


def _refusal_problem(detail: str, decisions: list[Decision], outcome: Any = None) -> ApiError:
    return ApiError(
        "breaking-change" if outcome is not None else "route-lost",
        detail,
        report=outcome.report if outcome is not None else None,
        reports=outcome.reports if outcome is not None else None,
        decisions=decisions,
    )


# -- namespaces and tools ----------------------------------------------


@get(
    "/v1/namespaces",
    summary="List namespaces",
    responses=problem_responses("unauthenticated", *SERVER_PROBLEMS),
)
async def list_namespaces(request: Request[Any, Any, Any]) -> NamespaceList:
    svc = services(request)
    who = await principal(request)
    found = await store.list_namespaces(svc.database)
    visible = [n for n in found if who.readable(n.name, svc.settings.open_reads)]
    return NamespaceList([NamespaceEntry(n.name, n.created_at) for n in visible])


@put(
    "/v1/namespaces/{ns:str}",
    summary="Create a namespace",
    status_code=201,
    responses={
        **problem_responses(
            *GUARDED_PROBLEMS,
            *PARAMETER_PROBLEMS,
            *BODY_PROBLEMS,
            *WRITE_PROBLEMS,
            *SERVER_PROBLEMS,
        ),
        **also_answers(200, NamespaceEntry, "The namespace already exists"),
    },
)
async def create_namespace(
    request: Request[Any, Any, Any], ns: NamespaceName
) -> Response[NamespaceEntry]:
    svc = await writer(request, ns, "admin")
    record, created = await store.create_namespace(
        svc.database, ns, actor=actor(request), request_id=request_id(request)
    )
    return Response(
        NamespaceEntry(record.name, record.created_at), status_code=201 if created else 200
    )


@get(
    "/v1/namespaces/{ns:str}/tools",
    summary="Tools with their current version",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "namespace-not-found", *SERVER_PROBLEMS
    ),
)
async def list_tools(request: Request[Any, Any, Any], ns: NamespaceName) -> ToolList:
    svc = await reader(request, ns)
    await require_namespace(svc, ns)
    tools = await store.list_tools(svc.database, ns)
    return ToolList(
        namespace=ns,
        tools=[
            ToolEntry(
                name=t.tool,
                current_version=t.current.version if t.current else None,
                digest=t.current.digest if t.current else None,
                state=t.current.state if t.current else None,
                latest_version=t.latest_version,
            )
            for t in tools
        ],
    )


# -- publish and check -----------------------------------------------------


async def _validated(
    request: Request[Any, Any, Any], svc: Services, tool: str, data: PublishRequest
) -> str:
    """The definition's digest, once it is within the caps (at once) and valid (in a
    worker): `ns` and `tool` are path parameters, checked by the router."""
    raw = await request.body()  # read and checked already: the worker decodes its copy
    digest: str = await svc.budget.run(request, analysis.validated_body, tool, raw, svc.caps)
    return digest


async def assessed(
    request: Request[Any, Any, Any],
    svc: Services,
    state: ToolState,
    definition: dict[str, Any],
    digest: str,
    data: PublishRequest,
) -> Assessment:
    """The publishing rule's outcome, the risk findings and whether the version waits
    for review (registry.policy.review), in a worker."""
    started = time.perf_counter()
    try:
        policy = NamespacePolicy.stored(state.policy)
        found: Assessment = await svc.budget.run(
            request, analysis.assess, state, definition, digest, data, policy
        )
        return found
    finally:
        svc.metrics.classification.observe(time.perf_counter() - started)


def held(found: Assessment, data: PublishRequest) -> Hold | None:
    """What the store keeps of a version the review policy holds; None: it lands."""
    if found.review is None:
        return None
    return Hold(
        review=found.review,
        request=kept_request(data),
        risks=msgspec.to_builtins(found.risks),
        against=found.against,
    )


@post(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions",
    opt=ONE_DEFINITION,
    summary="Publish a version (docs/contract.md publishing rule)",
    status_code=201,
    responses={
        **problem_responses(
            *GUARDED_PROBLEMS,
            *PARAMETER_PROBLEMS,
            *BODY_PROBLEMS,
            "namespace-not-found",
            "invalid-definition",
            "breaking-change",
            *POLICY_PROBLEMS,
            "version-in-use",
            "version-rejected",
            "acceptance-unmatched",
            *ANALYSIS_PROBLEMS,
            *WRITE_PROBLEMS,
            *SERVER_PROBLEMS,
        ),
        **also_answers(200, PublishAnswer, "The same digest is already stored: that version"),
        **also_answers(
            202,
            PublishAnswer,
            "Held for review (the namespace policy's `review`): stored `pending`, served "
            "nowhere until approved",
        ),
    },
)
async def publish(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    data: JSONBody[PublishRequest],
) -> Response[PublishAnswer]:
    svc = await writer(request, ns)
    definition = data.definition
    digest = await _validated(request, svc, tool, data)
    evidence = await check_retirements(
        svc,
        svc.database,
        ns,
        tool,
        data.retire,
        data.require_idle,
        deprecate=[(d.version, d.sunset) for d in data.deprecate],
    )
    assessments: list[Assessment] = []

    async def decide(state: ToolState) -> PublishPlan | Refusal:
        found = await assessed(request, svc, state, definition, digest, data)
        assessments.append(found)
        outcome = found.outcome
        return store_decision(
            outcome,
            {"severity": outcome.report.severity if outcome.report else None},
            hold=held(found, data),
        )

    try:
        result = await store.publish(
            svc.database,
            ns,
            tool,
            definition,
            digest,
            decide,
            actor(request),
            request_id(request),
            create_namespace=False,
        )
    except NamespaceNotFound as exc:
        svc.metrics.publishes.labels("invalid").inc()
        raise namespace_not_found(exc.namespace) from exc
    except PublishRefused as exc:
        svc.metrics.publishes.labels("refused").inc()
        outcome = exc.refusal.detail
        versions = ", ".join(str(d.version) for d in outcome.decisions)
        raise _refusal_problem(
            f"version {outcome.version} of {tool} breaks served versions ({versions}): each "
            "needs to be retired or given a verified converter in this request",
            outcome.decisions,
            outcome,
        ) from exc
    except ApiError:
        svc.metrics.publishes.labels("invalid").inc()
        raise
    except (NotFound, IllegalTransition) as exc:
        svc.metrics.publishes.labels("invalid").inc()
        raise ApiError("illegal-transition", str(exc)) from exc
    version = result.version
    if version.state == "rejected":
        svc.metrics.publishes.labels("refused").inc()
        raise rejected_problem(version)
    svc.metrics.publishes.labels("created" if result.created else "existing").inc()
    found = assessments[-1] if assessments and result.created else None
    pending = version.state == "pending"
    return Response(
        PublishAnswer(
            version=version.version,
            digest=version.digest,
            state=version.state,
            report=found.outcome.report if found else None,
            created=result.created,
            retired=result.retired,
            deprecated=result.deprecated,
            warnings=[
                e.message
                for e in evidence
                if e.message and e.usage.version in {*result.retired, *result.deprecated}
            ],
            acceptances=found.outcome.acceptances if found and not pending else [],
            risks=found.risks if found else [],
            review=found.review if found and pending else None,
            superseded=result.superseded,
        ),
        status_code=202 if pending else 201 if result.created else 200,
        headers={"Location": _version_path(ns, tool, version.version)},
    )


def rejected_problem(version: Version) -> ApiError:
    """409 `version-rejected`: a definition rejected in review is never published again."""
    return ApiError(
        "version-rejected",
        f"this definition of {version.tool} was rejected in review as version "
        f"{version.version}, which is final: publish a changed definition",
    )


def store_decision(
    outcome: PublishOutcome, detail: dict[str, Any], *, hold: Hold | None = None
) -> PublishPlan | Refusal:
    """What the store's `decide` seam answers for an outcome of the publishing rule;
    `hold`: the version waits for review (stored pending, nothing else written)."""
    if not outcome.accepted:
        return Refusal(reason="breaking", detail=outcome)
    accepted = outcome.acceptances
    return PublishPlan(
        retire=outcome.retire,
        deprecate=[Deprecation(d.version, d.sunset) for d in outcome.deprecate],
        converters=[NewConverter(c.from_, c.ops) for c in outcome.converters],
        detail={**detail, "acceptances": accepted} if accepted else detail,
        acceptances=accepted,
        hold=hold,
    )


def _version_path(ns: str, tool: str, version: int) -> str:
    return f"/v1/namespaces/{ns}/tools/{tool}/versions/{version}"


@post(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/check",
    opt=ONE_DEFINITION,
    summary="Dry run of publish: the report and the decisions still missing",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "namespace-not-found",
        "invalid-definition",
        *POLICY_PROBLEMS,
        "acceptance-unmatched",
        *ANALYSIS_PROBLEMS,
        *SERVER_PROBLEMS,
    ),
)
async def check(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    data: JSONBody[PublishRequest],
) -> CheckAnswer:
    svc = await reader(request, ns)
    digest = await _validated(request, svc, tool, data)
    await require_namespace(svc, ns)
    state = await store.load_tool_state(svc.database, ns, tool)
    existing = next((v for v in [*state.versions, *state.held] if v.digest == digest), None)
    if existing is not None:
        return CheckAnswer(
            version=existing.version,
            digest=digest,
            state=existing.state,
            report=None,
            accepted=existing.state != "rejected",  # a rejected definition is refused
            existing=True,
            decisions=[],
        )
    found = await assessed(request, svc, state, data.definition, digest, data)
    outcome = found.outcome
    return CheckAnswer(
        version=outcome.version,
        digest=digest,
        state="pending" if found.review else "active",
        report=outcome.report,
        accepted=outcome.accepted,
        existing=False,
        decisions=outcome.decisions,
        acceptances=outcome.acceptances,
        risks=found.risks,
        review=found.review,
    )


# -- history ---------------------------------------------------------------


async def _existing_version(svc: Services, ns: str, tool: str, number: int) -> Version:
    found = await store.get_version(svc.database, ns, tool, number)
    if found is None:
        raise ApiError("not-found", f"version {number} of {ns}/{tool} does not exist")
    return found


@get(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions",
    summary="A tool's history, newest last",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *SERVER_PROBLEMS
    ),
)
async def history(request: Request[Any, Any, Any], ns: NamespaceName, tool: ToolName) -> History:
    await reader(request, ns)
    versions = await replica_read(request, lambda db: store.get_history(db, ns, tool))
    if not versions:
        raise ApiError("not-found", f"tool {ns}/{tool} does not exist")
    return History(versions)


@get(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions/{n:str}",
    summary="One version",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *SERVER_PROBLEMS
    ),
)
async def get_version(
    request: Request[Any, Any, Any], ns: NamespaceName, tool: ToolName, n: VersionText
) -> Version:
    number = version_number(n)
    await reader(request, ns)
    found = await replica_read(
        request, lambda db: store.get_version(db, ns, tool, number), _is_there
    )
    if found is None:
        raise ApiError("not-found", f"version {number} of {ns}/{tool} does not exist")
    return found


def _is_there(found: object) -> bool:
    return found is not None


@get(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions/{n:str}/diff",
    summary="The change report from version `against` to version n",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *BUDGET_PROBLEMS, *SERVER_PROBLEMS
    ),
)
async def diff(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    n: VersionText,
    against: FromQuery[str],
) -> DiffAnswer:
    number, other = version_number(n), version_number(against)
    svc = await reader(request, ns)
    new = await _existing_version(svc, ns, tool, number)
    old = await _existing_version(svc, ns, tool, other)
    others = await store.tool_names(svc.database, ns)
    report, risks = await svc.budget.run(request, analysis.diff, old, new, others)
    accepted: list[Acceptance] = []
    if other < number and report.breaking:
        # what of this change was accepted on purpose: by the versions after `against`
        found = {(c.kind.value, c.path) for c in report.breaking}
        history = await store.get_history(svc.database, ns, tool)
        accepted = [
            a
            for v in history
            if other < v.version <= number
            for a in v.acceptances
            if (a.kind, a.path) in found
        ]
    return DiffAnswer(ns, tool, number, other, report, accepted, risks)


# -- lifecycle ---------------------------------------------------------------


def _route_guard(
    request: Request[Any, Any, Any],
    svc: Services,
    number: int,
    sunset: Any = None,
    *,
    retiring: bool,
) -> Any:
    async def guard(state: ToolState) -> None:
        decisions: list[Decision] = (
            await svc.budget.run(request, analysis.retire_decisions, state, number)
            if retiring
            else await svc.budget.run(request, analysis.deprecate_decisions, state, number, sunset)
        )
        if decisions:
            what = "retiring" if retiring else "a sunset on"
            raise _refusal_problem(
                f"{what} version {number} would leave served versions without a route to "
                f"current: {', '.join(str(d.version) for d in decisions)}",
                decisions,
            )

    return guard


async def _lifecycle_call(coro: Any) -> Version:
    try:
        record: Version = await coro
    except NotFound as exc:
        raise ApiError("not-found", str(exc)) from exc
    except IllegalTransition as exc:
        raise ApiError("illegal-transition", str(exc)) from exc
    return record


@post(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions/{n:str}/deprecate",
    summary="Deprecate a version, with an optional sunset",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "not-found",
        "illegal-transition",
        "route-lost",
        "version-in-use",
        *BUDGET_PROBLEMS,
        *WRITE_PROBLEMS,
        *SERVER_PROBLEMS,
    ),
)
async def deprecate(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    n: VersionText,
    data: JSONBody[DeprecateRequest | None] = None,
) -> RetireAnswer:
    number = version_number(n)
    svc = await writer(request, ns)
    sunset = data.sunset if data is not None else None
    # a sunset that retires (passed, or sooner than the idleness asked for) passes the
    # idle rule first, as a retirement does (registry.policy.callers.retiring)
    evidence = await check_retirements(
        svc,
        svc.database,
        ns,
        tool,
        [],
        data.require_idle if data is not None else None,
        deprecate=[(number, sunset)],
    )
    record = await _lifecycle_call(
        store.deprecate(
            svc.database,
            ns,
            tool,
            number,
            sunset=sunset,
            actor=actor(request),
            request_id=request_id(request),
            guard=_route_guard(request, svc, number, sunset, retiring=False),
        ),
    )
    return retire_answer(record, evidence)


@post(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions/{n:str}/retire",
    summary="Retire a version (final); `require_idle` refuses while it is still called",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "not-found",
        "illegal-transition",
        "route-lost",
        "version-in-use",
        *BUDGET_PROBLEMS,
        *WRITE_PROBLEMS,
        *SERVER_PROBLEMS,
    ),
)
async def retire(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    n: VersionText,
    data: JSONBody[RetireRequest | None] = None,
) -> RetireAnswer:
    number = version_number(n)
    svc = await writer(request, ns)
    # usage evidence first (registry/api/usage.py): 409 version-in-use, or warnings
    evidence = await check_retirements(
        svc, svc.database, ns, tool, [number], data.require_idle if data is not None else None
    )
    record = await _lifecycle_call(
        store.retire(
            svc.database,
            ns,
            tool,
            number,
            actor=actor(request),
            request_id=request_id(request),
            guard=_route_guard(request, svc, number, retiring=True),
        ),
    )
    return retire_answer(record, evidence)


# -- converters and aliases ----------------------------------------------------


@post(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/converters",
    opt=ONE_DEFINITION,
    summary="Register a verified converter",
    status_code=201,
    responses={
        **problem_responses(
            *GUARDED_PROBLEMS,
            *PARAMETER_PROBLEMS,
            *BODY_PROBLEMS,
            "not-found",
            "conflict",
            *POLICY_PROBLEMS,
            *ANALYSIS_PROBLEMS,
            *WRITE_PROBLEMS,
            *SERVER_PROBLEMS,
        ),
        **also_answers(200, ConverterAnswer, "The same converter was already registered"),
    },
)
async def register_converter(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    data: JSONBody[ConverterBody],
) -> Response[ConverterAnswer]:
    svc = await writer(request, ns)
    if data.from_ == data.to:
        raise ApiError("request-invalid", "a converter goes from one version to another")
    source = await _existing_version(svc, ns, tool, data.from_)
    target = await _existing_version(svc, ns, tool, data.to)
    for version in (source, target):
        if version.state in ("pending", "rejected"):
            raise ApiError(
                "illegal-transition",
                f"version {version.version} of {ns}/{tool} is {version.state}: a converter "
                "joins released versions (a held version's own converters land with its "
                "approval)",
            )
    report = await svc.budget.run(
        request, analysis.converter_report, source, target, data.ops, svc.caps
    )
    try:
        converter, created = await store.register_converter(
            svc.database,
            ns,
            tool,
            data.from_,
            data.to,
            data.ops,
            actor=actor(request),
            request_id=request_id(request),
        )
    except Conflict as exc:
        raise ApiError("conflict", str(exc)) from exc
    return Response(
        ConverterAnswer(
            namespace=ns,
            tool=tool,
            from_=converter.from_version,
            to=converter.to_version,
            ops=converter.ops,
            created=created,
            report=report,
        ),
        status_code=201 if created else 200,
    )


@put(
    "/v1/namespaces/{ns:str}/aliases/{alias:str}",
    summary="Create or re-point an alias",
    responses={
        **problem_responses(
            *GUARDED_PROBLEMS,
            *PARAMETER_PROBLEMS,
            *BODY_PROBLEMS,
            "not-found",
            "conflict",
            *POLICY_PROBLEMS,
            *BUDGET_PROBLEMS,
            *WRITE_PROBLEMS,
            *SERVER_PROBLEMS,
        ),
        **also_answers(201, AliasAnswer, "The alias was created"),
    },
)
async def set_alias(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    alias: AliasName,
    data: JSONBody[AliasRequest],
) -> Response[AliasAnswer]:
    tool_name(data.target, "target tool")
    tool_name(data.contract.tool, "contract tool")
    svc = await writer(request, ns)
    if await store.get_version(svc.database, ns, alias, 1) is not None:
        raise ApiError("conflict", f"{alias} is a tool of {ns}; an alias needs a free name")
    try:
        change = await store.set_alias(
            svc.database,
            ns,
            alias,
            target_tool=data.target,
            contract_tool=data.contract.tool,
            contract_version=data.contract.version,
            actor=actor(request),
            request_id=request_id(request),
        )
    except NotFound as exc:
        raise ApiError("not-found", str(exc)) from exc
    routed = False
    if data.contract.tool == data.target:
        state = await store.load_tool_state(svc.database, ns, data.target)
        current = state.current
        routed = current is not None and await svc.budget.run(
            request,
            analysis.routed,
            state.versions,
            state.converters,
            data.contract.version,
            current.version,
        )
    message = (
        f"{alias} resolves to {data.target}, speaking version {data.contract.version}"
        if routed
        else f"{alias} has no verified route from {data.contract.tool} version "
        f"{data.contract.version} to the current {data.target}: calls through it are refused "
        "with schema_version_mismatch until a converter provides one"
    )
    return Response(
        AliasAnswer(
            namespace=ns,
            name=alias,
            target=data.target,
            contract=ContractRef(data.contract.tool, data.contract.version),
            routed=routed,
            message=message,
            changed=change.changed,
        ),
        status_code=201 if change.previous is None else 200,
    )


HANDLERS = [
    list_namespaces,
    create_namespace,
    list_tools,
    publish,
    check,
    history,
    get_version,
    diff,
    deprecate,
    retire,
    register_converter,
    set_alias,
]
