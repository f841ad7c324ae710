"""Review before release: what waits, and the decisions on it (registry/policy/review.py).

    GET  /v1/namespaces/{ns}/reviews                                  (read)
    POST /v1/namespaces/{ns}/tools/{tool}/versions/{n}/approve  {"reason"}   (review)
    POST /v1/namespaces/{ns}/tools/{tool}/versions/{n}/reject   {"reason"}   (review)

A version the namespace's review policy held is stored `pending` (publish answers
202) and served nowhere. Approval re-runs the publishing rule as of that moment,
with what the publish asked for (its retirements, deprecations, converters,
acceptances, `require_idle`), and lands like a publish: 409 `breaking-change` with
the decisions when a break became undecided meanwhile (the version stays
pending), 409 `version-in-use` when a retirement it asked for is refused by its
`require_idle`. With the policy's `four_eyes`, the token that published it may not
approve it (403 `four-eyes`). Rejection keeps the record, `rejected`, final. Each
decision is audited (`version.approve`, `version.reject`) with its reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.params import JSONBody

from registry import store
from registry.api import analysis
from registry.api.params import NamespaceName, ToolName, VersionText, version_number
from registry.api.problems import (
    BODY_PROBLEMS,
    BUDGET_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    WRITE_PROBLEMS,
    ApiError,
    problem_responses,
)
from registry.api.services import (
    Services,
    actor,
    reader,
    request_id,
    require_namespace,
    writer,
)
from registry.api.tools import store_decision
from registry.api.usage import check_retirements
from registry.api.wire import ReviewAnswer, ReviewEntry, ReviewList, ReviewRequest
from registry.policy.acceptance import NamespacePolicy
from registry.policy.review import Assessment, approval_request, four_eyes_refusal
from registry.risks import Risk
from registry.store import (
    IllegalTransition,
    NotFound,
    PublishPlan,
    PublishRefused,
    Refusal,
    ToolState,
    Version,
)
from registry.store import reviews as held_versions
from registry.store.records import Review, ReviewResult

__all__ = ["HANDLERS"]


def _risks(stored: list[dict[str, Any]]) -> list[Risk]:
    return msgspec.convert(stored, list[Risk])


@get(
    "/v1/namespaces/{ns:str}/reviews",
    summary="The versions held for review (pending), by tool, oldest first",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "namespace-not-found", *SERVER_PROBLEMS
    ),
)
async def list_reviews(request: Request[Any, Any, Any], ns: NamespaceName) -> ReviewList:
    svc = await reader(request, ns)
    await require_namespace(svc, ns)
    held = await held_versions.list_reviews(svc.database, ns)
    current: dict[str, int | None] = {}
    if held:
        current = {
            t.tool: t.current.version if t.current else None
            for t in await store.list_tools(svc.database, ns)
        }
    return ReviewList(
        namespace=ns,
        reviews=[
            ReviewEntry(
                tool=version.tool,
                version=version.version,
                digest=version.digest,
                state=version.state,
                review=review.review,
                published_by=review.published_by,
                published_at=version.created_at,
                risks=_risks(review.risks),
                against=review.against,
                current_version=current.get(version.tool),
                request=review.request,
            )
            for version, review in held
        ],
    )


def _answer(
    result: ReviewResult, found: Assessment | None = None, warnings: list[str] | None = None
) -> ReviewAnswer:
    record, review = result.version, result.review
    assert review.decision is not None and review.reason is not None
    landed = found is not None and result.changed
    return ReviewAnswer(
        namespace=record.namespace,
        tool=record.tool,
        version=record.version,
        digest=record.digest,
        state=record.state,
        decision=review.decision,
        reason=review.reason,
        decided_by=review.decided_by,
        decided_at=review.decided_at,
        published_by=review.published_by,
        changed=result.changed,
        report=found.outcome.report if landed and found is not None else None,
        risks=found.risks if landed and found is not None else _risks(review.risks),
        retired=result.retired,
        deprecated=result.deprecated,
        superseded=result.superseded,
        acceptances=record.acceptances,
        warnings=warnings or [],
    )


async def _held(
    request: Request[Any, Any, Any], ns: str, tool: str, number: int
) -> tuple[Services, Review]:
    """The review of version `number`, read before the decision (404 for no version)."""
    svc = await writer(request, ns, "review")
    review = await held_versions.get_review(svc.database, ns, tool, number)
    if review is None:
        found = await store.get_version(svc.database, ns, tool, number)
        if found is None:
            raise ApiError("not-found", f"version {number} of {ns}/{tool} does not exist")
        raise ApiError(
            "illegal-transition",
            f"version {number} of {ns}/{tool} is {found.state} and was never held for "
            "review: there is nothing to approve or reject",
        )
    return svc, review


@contextlib.contextmanager
def _store_problems() -> Iterator[None]:
    """The store's refusals of a decision, as problems."""
    try:
        yield
    except NotFound as exc:
        raise ApiError("not-found", str(exc)) from exc
    except IllegalTransition as exc:
        raise ApiError("illegal-transition", str(exc)) from exc


_DECISION_PROBLEMS = (
    *GUARDED_PROBLEMS,
    *PARAMETER_PROBLEMS,
    *BODY_PROBLEMS,
    "not-found",
    "illegal-transition",
    *WRITE_PROBLEMS,
    *SERVER_PROBLEMS,
)


@post(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions/{n:str}/approve",
    summary="Approve a version held for review: it lands as a publish lands (audited)",
    status_code=200,
    responses=problem_responses(
        *_DECISION_PROBLEMS,
        "four-eyes",
        "breaking-change",
        "version-in-use",
        "version-not-found",
        "converter-invalid",
        "converter-unverified",
        "request-invalid",
        "acceptance-unmatched",
        *BUDGET_PROBLEMS,
    ),
)
async def approve_version(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    n: VersionText,
    data: JSONBody[ReviewRequest],
) -> ReviewAnswer:
    number = version_number(n)
    svc, kept = await _held(request, ns, tool, number)
    approver = actor(request)
    pending = await store.get_version(svc.database, ns, tool, number)
    assert pending is not None  # a review row's version exists (a foreign key)
    asked = approval_request(pending.definition, kept.request)
    evidence = []
    if pending.state == "pending":
        evidence = await check_retirements(
            svc,
            svc.database,
            ns,
            tool,
            asked.retire,
            asked.require_idle,
            deprecate=[(d.version, d.sunset) for d in asked.deprecate],
        )
    assessments: list[Assessment] = []

    async def decide(state: ToolState, version: Version, review: Review) -> PublishPlan | Refusal:
        policy = NamespacePolicy.stored(state.policy)
        refusal = four_eyes_refusal(policy, review.published_by, approver)
        if refusal is not None:
            raise ApiError("four-eyes", refusal)
        again = approval_request(version.definition, review.request)
        found: Assessment = await svc.budget.run(
            request, analysis.assess, state, version.definition, version.digest, again, policy
        )
        assessments.append(found)
        outcome = found.outcome
        return store_decision(
            outcome,
            {
                "severity": outcome.report.severity if outcome.report else None,
                "risks": [{"kind": r.kind, "path": r.path} for r in found.risks],
            },
        )

    try:
        with _store_problems():
            result = await held_versions.approve(
                svc.database,
                ns,
                tool,
                number,
                decide,
                reason=data.reason,
                actor=approver,
                request_id=request_id(request),
            )
    except PublishRefused as exc:
        outcome = exc.refusal.detail
        stranded = ", ".join(str(d.version) for d in outcome.decisions)
        raise ApiError(
            "breaking-change",
            f"version {number} of {tool} would now break served versions ({stranded}): the "
            "rule is applied as of the approval; it stays pending (reject it, or publish a "
            "new version with the decisions)",
            report=outcome.report,
            reports=outcome.reports,
            decisions=outcome.decisions,
        ) from exc
    retiring = {*result.retired, *result.deprecated}
    warnings = [e.message for e in evidence if e.message and e.usage.version in retiring]
    return _answer(result, assessments[-1] if assessments else None, warnings)


@post(
    "/v1/namespaces/{ns:str}/tools/{tool:str}/versions/{n:str}/reject",
    summary="Reject a version held for review: final, never served (audited)",
    status_code=200,
    responses=problem_responses(*_DECISION_PROBLEMS),
)
async def reject_version(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    n: VersionText,
    data: JSONBody[ReviewRequest],
) -> ReviewAnswer:
    number = version_number(n)
    svc, _ = await _held(request, ns, tool, number)
    with _store_problems():
        result = await held_versions.reject(
            svc.database,
            ns,
            tool,
            number,
            reason=data.reason,
            actor=actor(request),
            request_id=request_id(request),
        )
    return _answer(result)


HANDLERS = [list_reviews, approve_version, reject_version]
