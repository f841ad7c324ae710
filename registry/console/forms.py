"""The pages a reader fills in: digest lookup and listing verification, plan, audit log.

None of them writes. Lookup answers what `GET /v1/digests/{digest}` and
`POST /v1/namespaces/{ns}/verify` answer (their handler functions are called,
once per protocol revision for a listing); plan is `POST /v1/apply?plan=true`'s
handler on the manifests as `registry plan` loads them; the audit log asks the
scope `GET /v1/audit` asks.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.params import Parameter
from litestar.response import Template

from registry import store
from registry.api import analysis
from registry.api import apply as api_apply
from registry.api import digests as api_digests
from registry.api import sync as api_sync
from registry.api.params import NAMESPACE_PATTERN, TOOL_PATTERN
from registry.api.problems import PROBLEMS, ApiError
from registry.api.services import services
from registry.api.wire import VerifyRequest
from registry.canonical import is_digest
from registry.console.session import page, reader_or_login
from registry.console.views import ListingError, verify_rows
from registry.policy.plan import ApplyRequest
from registry.sdk.revisions import KNOWN_REVISIONS as REVISIONS

__all__ = ["HANDLERS"]

AUDIT_PAGE: Final = 100
AUDIT_ACTIONS: Final = (
    "namespace.create",
    "version.publish",
    "version.deprecate",
    "version.retire",
    "version.approve",
    "version.reject",
    "converter.register",
    "alias.set",
    "capabilities.put",
    "token.create",
    "token.revoke",
)
_NAMESPACE = re.compile(NAMESPACE_PATTERN)
_TOOL = re.compile(TOOL_PATTERN)
_ACTION = re.compile(r"^[a-z][a-z._-]{0,63}$")  # as GET /v1/audit's `action`
_ACTOR = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def _inline(exc: ApiError) -> dict[str, Any]:
    """An API refusal shown inside a page (sign-in refusals become the sign-in page)."""
    if exc.status == 401:
        raise exc
    return {"status": exc.status, "title": PROBLEMS[exc.code].title, "detail": exc.detail}


async def _readable_namespaces(request: Request[Any, Any, Any]) -> list[str]:
    svc = services(request)
    who = await reader_or_login(request)
    found = await store.list_namespaces(svc.database)
    return [n.name for n in found if who.readable(n.name, svc.settings.open_reads)]


# -- lookup ---------------------------------------------------------------------------


async def _digest_answer(request: Request[Any, Any, Any], digest: str) -> dict[str, Any]:
    if not is_digest(digest):
        return {
            "problem": {
                "status": 400,
                "title": PROBLEMS["invalid-request"].title,
                "detail": f"{digest!r} is not a digest (sha256: and 64 lowercase hex digits)",
            }
        }
    try:
        answer = await api_digests.digest_answer(request, digest)
    except ApiError as exc:
        return {"problem": _inline(exc)}
    return {"matches": answer.matches}


@get("/lookup", name="console-lookup")
async def lookup_page(
    request: Request[Any, Any, Any],
    digest: Annotated[str | None, Parameter(max_length=200)] = None,
) -> Template:
    namespaces = await _readable_namespaces(request)
    text = (digest or "").strip()
    found = await _digest_answer(request, text) if text else None
    return page(
        request, "lookup.html.j2", namespaces=namespaces, digest=text, found=found, listing=None
    )


async def _verify(
    request: Request[Any, Any, Any], namespace: str, tools: list[Any]
) -> dict[str, Any]:
    per_revision = {}
    for revision in sorted(REVISIONS):
        answer = await api_sync.verify.fn(
            request, ns=namespace, data=VerifyRequest(tools=tools, protocolVersion=revision)
        )
        per_revision[revision] = answer.tools
    return {"revisions": sorted(per_revision), "rows": verify_rows(per_revision)}


@post("/lookup", name="console-verify", status_code=200)
async def verify_page(request: Request[Any, Any, Any]) -> Template:
    namespaces = await _readable_namespaces(request)
    form = await request.form()
    text = str(form.get("listing") or "")
    namespace = str(form.get("namespace") or "")
    context: dict[str, Any] = {
        "namespaces": namespaces,
        "digest": "",
        "found": None,
        "listing": text,
        "namespace": namespace,
    }
    if text.strip().startswith("sha256:"):
        context["digest"] = text.strip()
        context["found"] = await _digest_answer(request, text.strip())
        return page(request, "lookup.html.j2", **context)
    status = 200
    try:
        if not _NAMESPACE.match(namespace):
            raise ListingError("choose the namespace the listing is checked against")
        if not text.strip():
            raise ListingError("paste a digest or a tools/list result")
        tools, error = await services(request).budget.run(request, analysis.console_listing, text)
        if error is not None:
            raise ListingError(error)
        context["verified"] = await _verify(request, namespace, tools)
    except ListingError as exc:
        context["error"], status = str(exc), 422
    except ApiError as exc:
        context["refusal"] = _inline(exc)
        status = exc.status
    return page(request, "lookup.html.j2", status_code=status, **context)


# -- plan -------------------------------------------------------------------------------


@get("/plan", name="console-plan-form")
async def plan_form(request: Request[Any, Any, Any]) -> Template:
    await reader_or_login(request)
    return page(request, "plan.html.j2", pasted="", answer=None)


@post("/plan", name="console-plan", status_code=200)
async def plan_page(request: Request[Any, Any, Any]) -> Template:
    await reader_or_login(request)
    form = await request.form()
    sources: list[tuple[str, bytes]] = []
    for upload in form.getall("files", []):
        if isinstance(upload, UploadFile) and upload.filename:
            sources.append((upload.filename, await upload.read()))
    pasted = str(form.get("manifest") or "")
    if pasted.strip():
        sources.append(("pasted.yaml", pasted.encode()))
    context: dict[str, Any] = {"pasted": pasted, "answer": None, "files": [n for n, _ in sources]}
    if not sources:
        context["errors"] = ["paste a manifest or choose manifest files"]
        return page(request, "plan.html.j2", status_code=422, **context)
    try:
        bodies, errors = await services(request).budget.run(
            request, analysis.console_manifests, sources
        )
        if errors:
            context["errors"] = errors
            return page(request, "plan.html.j2", status_code=422, **context)
        context["answer"] = await api_apply.apply.fn(
            request, data=ApplyRequest(manifests=bodies), plan=True
        )
    except ApiError as exc:
        context["refusal"] = _inline(exc)
        return page(request, "plan.html.j2", status_code=exc.status, **context)
    return page(request, "plan.html.j2", **context)


# -- audit ------------------------------------------------------------------------------


def _filter(value: str | None, rule: re.Pattern[str], what: str) -> str | None:
    text = (value or "").strip()
    if not text:
        return None
    if not rule.match(text):
        raise ApiError("invalid-request", f"{what} {text!r} does not match {rule.pattern}")
    return text


@get("/audit", name="console-audit")
async def audit_page(
    request: Request[Any, Any, Any],
    namespace: Annotated[str | None, Parameter(max_length=200)] = None,
    tool: Annotated[str | None, Parameter(max_length=200)] = None,
    action: Annotated[str | None, Parameter(max_length=200)] = None,
    actor: Annotated[str | None, Parameter(max_length=200)] = None,
    before: Annotated[int | None, Parameter(ge=1, le=2**63 - 1)] = None,
) -> Template:
    who = await reader_or_login(request)
    filters = {
        "namespace": _filter(namespace, _NAMESPACE, "namespace"),
        "tool": _filter(tool, _TOOL, "tool"),
        "action": _filter(action, _ACTION, "action"),
        "actor": _filter(actor, _ACTOR, "actor"),
    }
    who.require(filters["namespace"], "admin")  # what GET /v1/audit asks
    events = await store.list_audit(
        services(request).database,
        namespace=filters["namespace"],
        tool=filters["tool"],
        action=filters["action"],
        actor=filters["actor"],
        before=before,
        limit=AUDIT_PAGE + 1,
        newest_first=True,
    )
    older = events[AUDIT_PAGE - 1].id if len(events) > AUDIT_PAGE else None
    return page(
        request,
        "audit.html.j2",
        events=events[:AUDIT_PAGE],
        filters=filters,
        actions=AUDIT_ACTIONS,
        older=older,
        newest=before is None,
    )


HANDLERS = [lookup_page, verify_page, plan_form, plan_page, audit_page]
