"""`POST /v1/apply`: a bundle of manifests, planned (`?plan=true`) or applied in one transaction."""

from __future__ import annotations

from typing import Any

from litestar import Request, post
from litestar.params import FromQuery, JSONBody

from registry.api.auth import Principal
from registry.api.problems import (
    BODY_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    ApiError,
    problem_responses,
)
from registry.api.services import Services, principal, request_id, services
from registry.api.tools import namespace_name, store_decision, tool_name
from registry.api.usage import plan_with_usage
from registry.canonical import digest as canonical_digest
from registry.compat import ClassificationError
from registry.definitions import DefinitionError, validate_definition
from registry.policy.plan import (
    ApplyRequest,
    ManifestBody,
    NamespacePlan,
    PlanAnswer,
    ToolPlan,
    plan_tool,
)
from registry.policy.publishing import PolicyError, plan_publish
from registry.store import (
    Conflict,
    Db,
    IllegalTransition,
    NotFound,
    PublishPlan,
    PublishRefused,
    Refusal,
    ToolState,
    repository,
)
from registry.store._db import transaction

__all__ = ["HANDLERS"]


def _validate(index: int, body: ManifestBody) -> str:
    where = f"/manifests/{index}"
    try:
        namespace_name(body.namespace)
        validate_definition(body.tool)
        tool_name(body.tool["name"])
        for alias in body.aliases:
            tool_name(alias.name, "alias")
    except DefinitionError as exc:
        raise ApiError(
            "invalid-definition", exc.message, pointer=f"{where}/tool{exc.pointer}"
        ) from exc
    except ApiError as exc:
        raise ApiError("invalid-body", exc.detail, pointer=where) from exc
    return canonical_digest(body.tool)


async def _namespace_steps(
    db: Db, bodies: list[ManifestBody], who: Principal
) -> list[NamespacePlan]:
    """One step per namespace the manifests name, in name order: those missing are
    created by the apply, which needs admin on each."""
    steps = []
    for name in sorted({body.namespace for body in bodies}):
        if await repository.get_namespace(db, name) is not None:
            steps.append(NamespacePlan(name=name, action="unchanged"))
        else:
            steps.append(
                NamespacePlan(name=name, action="create", allowed=who.allows(name, "admin"))
            )
    return steps


async def _plans(
    svc: Services, db: Db, bodies: list[ManifestBody], digests: list[str]
) -> list[ToolPlan]:
    plans = []
    for index, (body, digest) in enumerate(zip(bodies, digests, strict=True)):
        state = await repository.load_tool_state(db, body.namespace, body.tool["name"])
        aliases = await repository.list_aliases(db, body.namespace)
        try:
            planned = plan_tool(state, body, digest, svc.finder, aliases)
        except PolicyError as exc:
            raise ApiError(
                exc.code,
                f"{body.source or body.tool['name']}: {exc.message}",
                pointer=f"/manifests/{index}{exc.pointer}",
                report=exc.report,
            ) from exc
        except ClassificationError as exc:
            raise ApiError(
                "invalid-definition", exc.message, pointer=f"/manifests/{index}/tool{exc.pointer}"
            ) from exc
        plans.append(await plan_with_usage(svc, db, index, body, planned))
    return plans


async def _execute(
    svc: Services, conn: Db, body: ManifestBody, plan: ToolPlan, who: str | None, rid: str | None
) -> None:
    ns, tool = body.namespace, body.tool["name"]
    if plan.action != "unchanged":

        def decide(state: ToolState) -> PublishPlan | Refusal:
            outcome = plan_publish(state, body.tool, plan.digest, body.request(), svc.finder)
            return store_decision(outcome, {"source": body.source})

        await repository.publish(
            conn, ns, tool, body.tool, plan.digest, decide, who, rid, create_namespace=False
        )
    else:
        for change in plan.lifecycle:
            if change.action == "retire":
                await repository.retire(conn, ns, tool, change.version, actor=who, request_id=rid)
            elif change.action == "deprecate":
                sunset = next(
                    (d.sunset for d in body.deprecate if d.version == change.version), None
                )
                await repository.deprecate(
                    conn, ns, tool, change.version, sunset=sunset, actor=who, request_id=rid
                )
            else:
                assert change.to is not None
                await repository.register_converter(
                    conn,
                    ns,
                    tool,
                    change.version,
                    change.to,
                    change.ops or [],
                    actor=who,
                    request_id=rid,
                )
    for alias in plan.aliases:
        if alias.action != "unchanged":
            await repository.set_alias(
                conn,
                ns,
                alias.name,
                target_tool=tool,
                contract_tool=alias.contract.tool,
                contract_version=alias.contract.version,
                actor=who,
                request_id=rid,
            )


@post(
    "/v1/apply",
    summary="Plan or apply a bundle of manifests, all or nothing",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "invalid-definition",
        "breaking-change",
        "conflict",
        "version-not-found",
        "converter-invalid",
        "converter-unverified",
        "request-invalid",
        "illegal-transition",
        "version-in-use",
        *SERVER_PROBLEMS,
    ),
)
async def apply(
    request: Request[Any, Any, Any],
    data: JSONBody[ApplyRequest],
    plan: FromQuery[bool] = False,
) -> PlanAnswer:
    svc = services(request)
    who = await principal(request)
    digests = [_validate(i, body) for i, body in enumerate(data.manifests)]
    seen: dict[tuple[str, str], int] = {}
    for index, body in enumerate(data.manifests):
        key = (body.namespace, body.tool["name"])
        if key in seen:
            raise ApiError(
                "request-invalid",
                f"two manifests for {key[0]}/{key[1]} (#{seen[key]} and #{index})",
                pointer=f"/manifests/{index}",
            )
        seen[key] = index
    for namespace in sorted({body.namespace for body in data.manifests}):
        who.require(namespace, "publish")
    if plan:
        namespaces = await _namespace_steps(svc.database, data.manifests, who)
        plans = await _plans(svc, svc.database, data.manifests, digests)
        return PlanAnswer(
            accepted=all(p.accepted for p in plans) and all(n.allowed for n in namespaces),
            applied=False,
            tools=plans,
            namespaces=namespaces,
        )
    try:
        async with transaction(svc.database) as conn:
            namespaces = await _namespace_steps(conn, data.manifests, who)
            refused_steps = [n.name for n in namespaces if not n.allowed]
            if refused_steps:
                raise ApiError(
                    "forbidden",
                    "nothing was applied: creating namespace "
                    + ", ".join(f"{name} needs {name}:admin" for name in refused_steps)
                    + f" (token {who.token_id}); an admin creates it with "
                    "PUT /v1/namespaces/{ns} or applies these manifests",
                )
            for step in namespaces:
                if step.action == "create":
                    await repository.create_namespace(
                        conn, step.name, actor=who.token_id, request_id=request_id(request)
                    )
            plans = await _plans(svc, conn, data.manifests, digests)
            in_use = [message for p in plans for message in p.in_use]
            if in_use:
                raise ApiError(
                    "version-in-use",
                    "nothing was applied: " + "; ".join(in_use),
                    usage=[u for p in plans if p.in_use for u in p.callers],
                )
            if not all(p.accepted for p in plans):
                refused = [f"{p.namespace}/{p.tool}" for p in plans if not p.accepted]
                raise ApiError(
                    "breaking-change",
                    f"nothing was applied: {', '.join(refused)} still need decisions",
                    decisions=[d for p in plans for d in p.decisions],
                    reports=PlanAnswer(
                        accepted=False, applied=False, tools=plans, namespaces=namespaces
                    ),
                )
            for body, tool_plan in zip(data.manifests, plans, strict=True):
                await _execute(svc, conn, body, tool_plan, who.token_id, request_id(request))
    except PublishRefused as exc:
        raise ApiError(
            "breaking-change",
            "a concurrent change made this bundle breaking; nothing was applied, plan again",
            decisions=exc.refusal.detail.decisions,
        ) from exc
    except (NotFound, IllegalTransition, Conflict) as exc:
        raise ApiError("conflict", f"nothing was applied: {exc}") from exc
    return PlanAnswer(accepted=True, applied=True, tools=plans, namespaces=namespaces)


HANDLERS = [apply]
