"""A namespace's Reviews page: the versions its review policy holds, each with its risk
findings and its diff (findings highlighted, invisible characters written out), and the
forms that approve or reject them, the console's only writes.

    GET  /ui/namespaces/{ns}/reviews                         what waits (ns:read)
    POST /ui/namespaces/{ns}/reviews/{tool}/{n}              decision=approve|reject,
                                                             reason, csrf (ns:review)

The page reads `GET /v1/namespaces/{ns}/reviews`'s answer through its handler; a
decision is `POST .../versions/{n}/approve` or `/reject`'s handler, so it is
authorized (scope `review` or admin, four eyes), applied and audited exactly as over
the API, with the signed-in token as the actor. The form carries the session's CSRF
token (`registry.console.session.check_csrf`); after a decision the browser is sent
back to the page (303), which says what was decided; a refusal is shown on the page
with its status.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, get, post
from litestar.params import Parameter
from litestar.response import Redirect, Template

from registry import store
from registry.api import analysis
from registry.api import namespace_policy as api_policy
from registry.api import reviews as api_reviews
from registry.api.params import NamespaceName, ToolName
from registry.api.problems import PROBLEMS, ApiError
from registry.api.services import principal, services
from registry.api.wire import ReviewEntry, ReviewRequest
from registry.console.session import check_csrf, csrf_token, page, reader_or_login
from registry.console.views import risky_lines

__all__ = ["HANDLERS"]

Decided = Literal["approved", "rejected"]


class _Held(msgspec.Struct, frozen=True):
    """One waiting version as the page shows it."""

    entry: ReviewEntry
    definition: dict[str, Any]
    against: dict[str, Any] | None  # the version its findings were found against
    rows: list[Any]  # side by side, from `against` (None: nothing) to it
    marked: dict[str, list[str]]  # diff lines a finding is on, with its kinds


async def _held(request: Request[Any, Any, Any], ns: str) -> list[_Held]:
    svc = services(request)
    listed = await api_reviews.list_reviews.fn(request, ns=ns)
    shown = []
    for entry in listed.reviews:
        held = await store.get_version(svc.database, ns, entry.tool, entry.version)
        if held is None:
            continue  # decided and gone between the two reads: the list is a moment
        against = None
        if entry.against is not None:
            old = await store.get_version(svc.database, ns, entry.tool, entry.against)
            against = old.definition if old is not None else None
        rows = await svc.budget.run(request, analysis.diff_rows, against, held.definition)
        marked = risky_lines(held.definition, entry.risks)
        shown.append(_Held(entry, held.definition, against, rows, marked))
    return shown


async def _page(
    request: Request[Any, Any, Any],
    ns: str,
    *,
    status_code: int = 200,
    done: str | None = None,
    refusal: dict[str, Any] | None = None,
) -> Template:
    who = await principal(request)
    policy = await api_policy.get_namespace_policy.fn(request, ns=ns)
    return page(
        request,
        "reviews.html.j2",
        status_code=status_code,
        ns=ns,
        held=await _held(request, ns),
        policy=policy,
        may_review=who.allows(ns, "review"),
        signed_in=csrf_token(request) is not None and who.token_id is not None,
        me=who.token_id,
        csrf=csrf_token(request),
        done=done,
        refusal=refusal,
    )


@get("/namespaces/{ns:str}/reviews", name="console-reviews")
async def reviews_page(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    decided: Annotated[Decided | None, Parameter()] = None,
    tool: Annotated[str | None, Parameter(max_length=200)] = None,
    version: Annotated[int | None, Parameter(ge=1, le=999_999_999)] = None,
) -> Template:
    await reader_or_login(request)
    done = None
    if decided is not None and tool is not None and version is not None:
        done = f"Version {version} of {tool} was {decided}."
    return await _page(request, ns, done=done)


@post("/namespaces/{ns:str}/reviews/{tool:str}/{n:int}", name="console-review-decide")
async def decide(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    n: Annotated[int, Parameter(ge=1, le=999_999_999)],
) -> Response[Any]:
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    verb = form.get("decision")
    if verb not in ("approve", "reject"):
        raise ApiError("invalid-request", "decision is approve or reject")
    handler = api_reviews.approve_version if verb == "approve" else api_reviews.reject_version
    try:
        body = msgspec.convert({"reason": str(form.get("reason") or "")}, ReviewRequest)
        answer = await handler.fn(request, ns=ns, tool=tool, n=str(n), data=body)
    except msgspec.ValidationError:
        refused = ApiError(
            "invalid-body", f"say why you {verb} version {n} of {tool}: the reason is required"
        )
    except ApiError as exc:
        if exc.status == 401:
            raise
        refused = exc
    else:
        # answered 303, which registry.api.own_writes does not count: marked here
        services(request).cache.invalidate_tool(ns, tool)
        query = f"?decided={answer.decision}&tool={tool}&version={n}"
        return Redirect(f"/ui/namespaces/{ns}/reviews{query}", status_code=303)
    problem = {
        "status": refused.status,
        "title": PROBLEMS[refused.code].title,
        "detail": refused.detail,
        "tool": tool,
        "version": n,
    }
    return await _page(request, ns, status_code=refused.status, refusal=problem)


HANDLERS = [reviews_page, decide]
