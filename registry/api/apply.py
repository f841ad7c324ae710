"""`POST /v1/apply`: a bundle of manifests, planned (`?plan=true`) or applied in one transaction.

The bundle's namespace policies (`policies`, from policy manifests) are set
before its tools are planned, so a relaxation in the bundle applies to the
bundle's publishes; setting a policy needs admin on its namespace.
"""

from __future__ import annotations

import difflib
from typing import Any

import msgspec
from litestar import Request, post
from litestar.params import FromQuery, JSONBody

from registry import store
from registry.api import analysis
from registry.api.auth import Principal
from registry.api.namespace_policy import policy_problem, to_document
from registry.api.params import namespace_name, tool_name
from registry.api.problems import (
    ANALYSIS_PROBLEMS,
    BODY_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    WRITE_PROBLEMS,
    ApiError,
    namespace_not_found,
    problem_responses,
)
from registry.api.services import Services, principal, request_id, services
from registry.api.tools import held, store_decision
from registry.api.usage import plan_with_usage
from registry.policy.acceptance import NamespacePolicy
from registry.policy.plan import (
    ApplyRequest,
    ManifestBody,
    NamespacePlan,
    PlanAnswer,
    PolicyBody,
    PolicyPlan,
    ToolPlan,
    plan_policy,
)
from registry.policy.review import Assessment
from registry.store import (
    Conflict,
    Db,
    IllegalTransition,
    NotFound,
    PublishPlan,
    PublishRefused,
    Refusal,
    ToolState,
    transaction,
)
from registry.store.policies import get_policy, put_policy

__all__ = ["HANDLERS"]


def _names(index: int, body: ManifestBody) -> None:
    where = f"/manifests/{index}"
    try:
        namespace_name(body.namespace)
        for alias in body.aliases:
            tool_name(alias.name, "alias")
    except ApiError as exc:
        raise ApiError("invalid-body", exc.detail, pointer=where) from exc


async def _digests(request: Request[Any, Any, Any], svc: Services, data: ApplyRequest) -> list[str]:
    """Each manifest's digest, once its tool is within the caps and valid (in a worker,
    from the body's bytes), and its tool's name; refused in the manifests' order."""
    manifests = data.manifests
    # the body's own bytes (checked already); the console's plan hands over a bundle it built
    raw = await request.body() if request.route_handler is apply else msgspec.json.encode(data)
    digests, refused = await svc.budget.run(request, analysis.validated_bundle, raw, svc.caps)
    for index, body in enumerate(manifests):
        if index == len(digests) and refused is not None:
            raise refused
        try:
            tool_name(body.tool["name"])
        except ApiError as exc:
            raise ApiError("invalid-body", exc.detail, pointer=f"/manifests/{index}") from exc
    return list(digests)


def _check_policies(bodies: list[PolicyBody]) -> None:
    seen: dict[str, int] = {}
    for index, body in enumerate(bodies):
        where = f"/policies/{index}"
        try:
            namespace_name(body.namespace)
        except ApiError as exc:
            raise ApiError("invalid-body", exc.detail, pointer=f"{where}/namespace") from exc
        problem = policy_problem(body.policy, prefix=f"{where}/policy")
        if problem is not None:
            raise problem
        if body.namespace in seen:
            raise ApiError(
                "request-invalid",
                f"two policies for namespace {body.namespace} (#{seen[body.namespace]} and "
                f"#{index})",
                pointer=where,
            )
        seen[body.namespace] = index


async def _policy_steps(db: Db, bodies: list[PolicyBody], who: Principal) -> list[PolicyPlan]:
    steps = []
    for body in bodies:
        stored = await get_policy(db, body.namespace)
        current = NamespacePolicy.stored(stored.policy if stored is not None else None)
        steps.append(plan_policy(body, current, allowed=who.allows(body.namespace, "admin")))
    return steps


async def _namespace_steps(
    db: Db, data: ApplyRequest, names: set[str], who: Principal
) -> list[NamespacePlan]:
    """One step per namespace the bundle names, in name order. One that is missing is
    created by the apply (which needs admin on it) only when the bundle says so
    (`create_namespaces`, or a manifest's `create_namespace`); otherwise the bundle is
    refused with the 404 an HTTP publish gets, so a mistyped namespace is never made."""
    bodies: list[ManifestBody | PolicyBody] = [*data.manifests, *(data.policies or [])]
    explicit = set(data.create_namespaces) | {b.namespace for b in bodies if b.create_namespace}
    steps = []
    for name in sorted(names):
        if await store.get_namespace(db, name) is not None:
            steps.append(NamespacePlan(name=name, action="unchanged"))
        elif name in explicit:
            steps.append(
                NamespacePlan(name=name, action="create", allowed=who.allows(name, "admin"))
            )
        else:
            readable = [
                n.name for n in await store.list_namespaces(db) if who.allows(n.name, "read")
            ]
            near = difflib.get_close_matches(name, readable, n=1)
            raise namespace_not_found(
                name, near=near[0] if near else None, pointer=_where(data, name)
            )
    return steps


def _other_tools(state: ToolState, bodies: list[ManifestBody]) -> list[str]:
    """The namespace's other tools, those the bundle adds included (what a risk finding
    of `tool-reference-added` looks for)."""
    bundled = {b.tool["name"] for b in bodies if b.namespace == state.namespace}
    return sorted({*state.other_tools, *bundled} - {state.tool})


def _where(data: ApplyRequest, namespace: str) -> str:
    """The pointer of the first manifest of the bundle naming `namespace`."""
    for index, body in enumerate(data.manifests):
        if body.namespace == namespace:
            return f"/manifests/{index}/namespace"
    for index, policy in enumerate(data.policies or []):
        if policy.namespace == namespace:
            return f"/policies/{index}/namespace"
    return "/manifests"


def _check_creations(data: ApplyRequest, names: set[str]) -> None:
    """422 for a `create_namespaces` entry no manifest of the bundle names."""
    for index, name in enumerate(data.create_namespaces):
        if name not in names:
            raise ApiError(
                "request-invalid",
                f"create_namespaces names {name!r}, which no manifest of the bundle names",
                pointer=f"/create_namespaces/{index}",
            )


async def _plans(
    request: Request[Any, Any, Any],
    svc: Services,
    db: Db,
    bodies: list[ManifestBody],
    digests: list[str],
    policies: list[PolicyBody],
) -> list[ToolPlan]:
    bundled = {p.namespace: p.policy for p in policies}
    plans = []
    for index, (body, digest) in enumerate(zip(bodies, digests, strict=True)):
        state = await store.load_tool_state(db, body.namespace, body.tool["name"])
        aliases = await store.list_aliases(db, body.namespace)
        policy = bundled.get(body.namespace) or NamespacePolicy.stored(state.policy)
        others = _other_tools(state, bodies)
        planned = await svc.budget.run(
            request, analysis.plan_manifest, index, state, body, digest, aliases, policy, others
        )
        plans.append(await plan_with_usage(svc, db, index, body, planned))
    return plans


async def _execute(
    request: Request[Any, Any, Any],
    svc: Services,
    conn: Db,
    body: ManifestBody,
    plan: ToolPlan,
    bundle: list[ManifestBody],
    who: str | None,
    rid: str | None,
) -> None:
    ns, tool = body.namespace, body.tool["name"]
    if plan.action != "unchanged":

        async def decide(state: ToolState) -> PublishPlan | Refusal:
            policy = NamespacePolicy.stored(state.policy)
            asked = body.request()
            others = _other_tools(state, bundle)
            found: Assessment = await svc.budget.run(
                request, analysis.assess, state, body.tool, plan.digest, asked, policy, others
            )
            return store_decision(found.outcome, {"source": body.source}, hold=held(found, asked))

        await store.publish(
            conn, ns, tool, body.tool, plan.digest, decide, who, rid, create_namespace=False
        )
    else:
        for change in plan.lifecycle:
            if change.action == "retire":
                await store.retire(conn, ns, tool, change.version, actor=who, request_id=rid)
            elif change.action == "deprecate":
                sunset = next(
                    (d.sunset for d in body.deprecate if d.version == change.version), None
                )
                await store.deprecate(
                    conn, ns, tool, change.version, sunset=sunset, actor=who, request_id=rid
                )
            else:
                assert change.to is not None
                await store.register_converter(
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
            await store.set_alias(
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
        "namespace-not-found",
        "version-not-found",
        "converter-invalid",
        "converter-unverified",
        "request-invalid",
        "illegal-transition",
        "version-in-use",
        "acceptance-unmatched",
        "policy-invalid",
        "version-rejected",
        *ANALYSIS_PROBLEMS,
        *WRITE_PROBLEMS,
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
    # the scopes first: a token without them learns nothing of what its bundle holds
    for index, body in enumerate(data.manifests):
        _names(index, body)
    policy_bodies = data.policies or []
    names = {body.namespace for body in data.manifests} | {p.namespace for p in policy_bodies}
    for namespace in sorted(names):
        who.require(namespace, "publish")
    digests = await _digests(request, svc, data)
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
    _check_policies(policy_bodies)
    _check_creations(data, names)
    if plan:
        namespaces = await _namespace_steps(svc.database, data, names, who)
        policies = await _policy_steps(svc.database, policy_bodies, who)
        plans = await _plans(request, svc, svc.database, data.manifests, digests, policy_bodies)
        return PlanAnswer(
            accepted=all(p.accepted for p in plans)
            and all(n.allowed for n in namespaces)
            and all(p.allowed for p in policies),
            applied=False,
            tools=plans,
            namespaces=namespaces,
            policies=policies,
        )
    try:
        async with transaction(svc.database) as conn:
            namespaces = await _namespace_steps(conn, data, names, who)
            policies = await _policy_steps(conn, policy_bodies, who)
            refused_policies = [p.namespace for p in policies if not p.allowed]
            if refused_policies:
                raise ApiError(
                    "forbidden",
                    "nothing was applied: setting the policy of "
                    + ", ".join(f"{name} needs {name}:admin" for name in refused_policies)
                    + f" (token {who.token_id})",
                )
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
                    await store.create_namespace(
                        conn, step.name, actor=who.token_id, request_id=request_id(request)
                    )
            for policy_body, policy_step in zip(policy_bodies, policies, strict=True):
                if policy_step.action == "set":
                    await put_policy(
                        conn,
                        policy_body.namespace,
                        to_document(policy_body.policy),
                        actor=who.token_id,
                        request_id=request_id(request),
                    )
            plans = await _plans(request, svc, conn, data.manifests, digests, policy_bodies)
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
                        accepted=False,
                        applied=False,
                        tools=plans,
                        namespaces=namespaces,
                        policies=policies,
                    ),
                )
            for body, tool_plan in zip(data.manifests, plans, strict=True):
                await _execute(
                    request,
                    svc,
                    conn,
                    body,
                    tool_plan,
                    data.manifests,
                    who.token_id,
                    request_id(request),
                )
    except PublishRefused as exc:
        raise ApiError(
            "breaking-change",
            "a concurrent change made this bundle breaking; nothing was applied, plan again",
            decisions=exc.refusal.detail.decisions,
        ) from exc
    except (NotFound, IllegalTransition, Conflict) as exc:
        raise ApiError("conflict", f"nothing was applied: {exc}") from exc
    return PlanAnswer(
        accepted=True, applied=True, tools=plans, namespaces=namespaces, policies=policies
    )


HANDLERS = [apply]
