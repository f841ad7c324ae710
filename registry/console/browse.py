"""The pages a reader browses: namespaces, a namespace, a tool's timeline (live), a diff.

Each page reads through the API's own handler functions where the API has the
answer (`list_tools`, `history`, `diff`, `get_capabilities`), so it is
authorized and computed exactly as the JSON answer is, and through the store's
repository functions for what the API serves only in other shapes
(converters, aliases, the audit log for admins).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated, Any, Final

from litestar import Request, Response, get
from litestar.params import Parameter, PathParameter
from litestar.response import Template

from registry.api import capabilities as api_capabilities
from registry.api import tools as api_tools
from registry.api.auth import Principal
from registry.api.params import TOOL_PATTERN, NamespaceName, ToolName
from registry.api.problems import ApiError
from registry.api.services import Services, principal, services
from registry.api.sync import _ClientGone, _wait_unless_gone
from registry.compat import ChangeReport, ClassificationError
from registry.console.session import page, reader_or_login
from registry.console.views import Payload, side_by_side, timeline, tool_rows
from registry.store import AuditEvent, repository
from registry.store.overview import namespace_overview

__all__ = ["HANDLERS", "LIVE_WAIT_SECONDS"]

LIVE_WAIT_SECONDS: Final = 20  # how long a tool page's request for changes is held
AUDIT_PAGE: Final = 1000
AUDIT_PAGES: Final = 20  # a tool's timeline reads at most this many pages of its events
VersionNumber = Annotated[int | None, Parameter(ge=1, le=999_999_999)]


@get("/", name="console-namespaces")
async def namespaces_page(request: Request[Any, Any, Any]) -> Template:
    who = await reader_or_login(request)
    svc = services(request)
    rows = await namespace_overview(svc.database)
    visible = [r for r in rows if who.readable(r.name, svc.settings.open_reads)]
    return page(request, "namespaces.html.j2", namespaces=visible)


@get("/namespaces/{ns:str}", name="console-namespace")
async def namespace_page(request: Request[Any, Any, Any], ns: NamespaceName) -> Template:
    await reader_or_login(request)
    listing = await api_tools.list_tools.fn(request, ns=ns)
    svc = services(request)
    built = await svc.cache.get(ns)
    payload = Payload.decode(built.body) if built is not None else Payload(ns, "")
    try:
        captured = await api_capabilities.get_capabilities.fn(request, ns=ns)
    except ApiError as exc:
        if exc.code != "not-found":
            raise
        captured = None
    return page(
        request,
        "namespace.html.j2",
        ns=ns,
        rows=tool_rows(listing.tools, payload),
        aliases=payload.aliases,
        capabilities=captured,
        # The namespace policy (GET /v1/namespaces/{ns}/policy, admin) is not served by
        # this version of the registry; the page keeps its section and says so.
        policy=None,
    )


async def _tool_events(
    svc: Services, who: Principal, ns: str, tool: str
) -> list[AuditEvent] | None:
    """The tool's audit events, oldest first; None unless the caller may read the audit
    log of the namespace (admin, as `GET /v1/audit` asks)."""
    if not who.allows(ns, "admin"):
        return None
    events: list[AuditEvent] = []
    after = None
    for _ in range(AUDIT_PAGES):
        page_of = await repository.list_audit(
            svc.database, namespace=ns, tool=tool, after=after, limit=AUDIT_PAGE
        )
        events += page_of
        if len(page_of) < AUDIT_PAGE:
            break
        after = page_of[-1].id
    return events


async def _tool_context(request: Request[Any, Any, Any], ns: str, tool: str) -> dict[str, Any]:
    svc = await api_tools._reader(request, ns)
    # The toolset's digest first: a change landing after this read is one the page's
    # live request is told about (a change before it is already on the page).
    built = await svc.cache.get(ns)
    if built is None:
        raise ApiError("not-found", f"namespace {ns} does not exist")
    versions = (await api_tools.history.fn(request, ns=ns, tool=tool)).versions
    converters = await repository.list_converters(svc.database, ns, tool)
    aliases = await repository.list_aliases(svc.database, ns)
    events = await _tool_events(svc, await principal(request), ns, tool)
    reports: dict[int, ChangeReport] = {}
    for old, new in pairwise(versions):
        try:
            reports[new.version] = svc.finder.report(old, new)
        except ClassificationError:
            continue  # shown without a report; the diff page says why
    entry = Payload.decode(built.body).tool(tool)
    routes = {v.version: v.route for v in entry.versions} if entry is not None else {}
    return {
        "ns": ns,
        "tool": tool,
        "known": built.digest,
        "versions": versions,
        "entries": timeline(versions, converters, aliases, events, reports, routes),
        "audit_visible": events is not None,
        "aliases_to": [a for a in aliases if a.target_tool == tool],
        "live_wait": LIVE_WAIT_SECONDS,
    }


@get("/namespaces/{ns:str}/tools/{tool:str}", name="console-tool")
async def tool_page(request: Request[Any, Any, Any], ns: NamespaceName, tool: ToolName) -> Template:
    await reader_or_login(request)
    return page(request, "tool.html.j2", **await _tool_context(request, ns, tool))


# The path ends in /toolset and the query carries wait=: `registry serve` ends these
# long-polls at once on shutdown, as it ends the API's toolset long-polls.
@get("/namespaces/{ns:str}/toolset", name="console-live")
async def live_fragment(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: Annotated[str, Parameter(pattern=TOOL_PATTERN)],
    known: Annotated[str | None, Parameter(max_length=100)] = None,
    wait: Annotated[int, Parameter(ge=0, le=60)] = LIVE_WAIT_SECONDS,
) -> Response[Any]:
    """The tool page's live part (htmx): held until the namespace's toolset differs from
    `known`, then the new timeline (swapped in out of band) and the next request."""
    svc = await api_tools._reader(request, ns)
    try:
        built = await _wait_unless_gone(request, svc.cache.wait_changed(ns, known, float(wait)))
    except _ClientGone:
        return Response(b"", status_code=204)
    if built is None:
        raise ApiError("not-found", f"namespace {ns} does not exist")
    if built.digest == known:
        return page(
            request,
            "live.html.j2",
            changed=False,
            ns=ns,
            tool=tool,
            known=known,
            live_wait=LIVE_WAIT_SECONDS,
        )
    return page(request, "live.html.j2", changed=True, **await _tool_context(request, ns, tool))


@get("/namespaces/{ns:str}/tools/{tool:str}/diff", name="console-diff")
async def diff_page(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: ToolName,
    old: VersionNumber = None,
    new: VersionNumber = None,
) -> Template:
    await reader_or_login(request)
    versions = (await api_tools.history.fn(request, ns=ns, tool=tool)).versions
    by_number = {v.version: v for v in versions}
    newest = versions[-1].version
    new_number = new if new is not None else newest
    old_number = old if old is not None else max(new_number - 1, 1)
    for number in (old_number, new_number):
        if number not in by_number:
            raise ApiError("not-found", f"version {number} of {ns}/{tool} does not exist")
    report = None
    if old_number != new_number:
        answer = await api_tools.diff.fn(
            request, ns=ns, tool=tool, n=str(new_number), against=str(old_number)
        )
        report = answer.report
    return page(
        request,
        "diff.html.j2",
        ns=ns,
        tool=tool,
        versions=versions,
        old=by_number[old_number],
        new=by_number[new_number],
        report=report,
        rows=side_by_side(by_number[old_number].definition, by_number[new_number].definition),
    )


@get("/{rest:path}", name="console-not-found")
async def not_found(
    request: Request[Any, Any, Any], rest: Annotated[str, PathParameter()]
) -> Template:
    """Anything else under /ui/: a page that says so (the API answers problem+json)."""
    raise ApiError("not-found", f"nothing at {request.url.path}")


HANDLERS = [namespaces_page, namespace_page, tool_page, live_fragment, diff_page, not_found]
