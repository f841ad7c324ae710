"""`GET/PUT /v1/namespaces/{ns}/policy`: what a namespace accepts without a decision.

The policy relaxes named kinds for the namespace or for one tool, or turns
gating off (`registry.policy.acceptance`), and says which new versions wait for
review (`review`, `four_eyes`: `registry.policy.review`); the default is the
strict rules, with no review.
Reading it needs `ns:read` (publishers and pipelines see what their publishes
meet); setting it needs `ns:admin` and is audited (`namespace.policy`).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, get, put
from litestar.params import JSONBody

from registry import store
from registry.api.params import NamespaceName
from registry.api.problems import (
    BODY_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    WRITE_PROBLEMS,
    ApiError,
    namespace_not_found,
    problem_responses,
)
from registry.api.services import actor, reader, request_id, require_namespace, writer
from registry.api.wire import PolicyAnswer
from registry.policy.acceptance import NamespacePolicy, check_policy
from registry.store import NamespaceNotFound, PolicyRecord
from registry.store.policies import get_policy, put_policy

__all__ = ["HANDLERS", "policy_problem", "to_document"]


def policy_problem(policy: NamespacePolicy, prefix: str = "") -> ApiError | None:
    """422 `policy-invalid` naming every problem of `policy`; None when it is valid."""
    problems = check_policy(policy)
    if not problems:
        return None
    detail = "; ".join(f"{prefix}{pointer}: {message}" for pointer, message in problems)
    return ApiError("policy-invalid", detail, pointer=prefix + problems[0][0])


def to_document(policy: NamespacePolicy) -> dict[str, Any]:
    """The stored document of a policy: every field written out, except the review
    fields at their defaults (a replica that predates review refuses fields it does not
    know: a namespace that never asked for review stays readable to it)."""
    document: dict[str, Any] = {
        "gating": policy.gating,
        "reason": policy.reason,
        "relax": [{"kind": r.kind, "tool": r.tool, "reason": r.reason} for r in policy.relax],
    }
    if policy.review != "off":
        document["review"] = policy.review
    if policy.four_eyes:
        document["four_eyes"] = True
    return document


def _answer(
    ns: str,
    record: PolicyRecord | None,
    *,
    changed: bool = False,
    warnings: list[str] | None = None,
) -> PolicyAnswer:
    policy = NamespacePolicy.stored(record.policy if record is not None else None)
    return PolicyAnswer(
        namespace=ns,
        gating=policy.gating,
        reason=policy.reason,
        relax=policy.relax,
        updated_at=record.updated_at if record is not None else None,
        review=policy.review,
        four_eyes=policy.four_eyes,
        changed=changed,
        warnings=warnings or [],
    )


@get(
    "/v1/namespaces/{ns:str}/policy",
    summary="The namespace's policy (the default: gating on, nothing relaxed)",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "namespace-not-found", *SERVER_PROBLEMS
    ),
)
async def get_namespace_policy(request: Request[Any, Any, Any], ns: NamespaceName) -> PolicyAnswer:
    svc = await reader(request, ns)
    await require_namespace(svc, ns)
    return _answer(ns, await get_policy(svc.database, ns))


@put(
    "/v1/namespaces/{ns:str}/policy",
    summary="Set the namespace's policy: relax named kinds, turn gating off, ask for review "
    "(audited)",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "namespace-not-found",
        "policy-invalid",
        *WRITE_PROBLEMS,
        *SERVER_PROBLEMS,
    ),
)
async def put_namespace_policy(
    request: Request[Any, Any, Any], ns: NamespaceName, data: JSONBody[NamespacePolicy]
) -> PolicyAnswer:
    svc = await writer(request, ns, "admin")
    problem = policy_problem(data)
    if problem is not None:
        raise problem
    stored = await get_policy(svc.database, ns)
    if stored is None and data == NamespacePolicy():
        await require_namespace(svc, ns)
        return _answer(ns, None)
    try:
        record, changed = await put_policy(
            svc.database,
            ns,
            to_document(data),
            actor=actor(request),
            request_id=request_id(request),
        )
    except NamespaceNotFound as exc:
        raise namespace_not_found(ns) from exc
    tools = {t.tool for t in await store.list_tools(svc.database, ns)}
    warnings = [
        f"relax/{index}: {ns} has no tool {rule.tool} yet; the relaxation applies once it "
        "is published"
        for index, rule in enumerate(data.relax)
        if rule.tool is not None and rule.tool not in tools
    ]
    return _answer(ns, record, changed=changed, warnings=warnings)


HANDLERS = [get_namespace_policy, put_namespace_policy]
