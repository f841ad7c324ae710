"""The pages a reader browses: namespaces, a namespace, a tool's timeline (live), a diff.

Each page reads through the API's own handler functions where the API has the
answer (`list_tools`, `history`, `diff`, `get_capabilities`), so it is
authorized and computed exactly as the JSON answer is, and through the store's
functions (`registry.store`) for what the API serves only in other shapes
(converters, aliases, the audit log for admins).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Annotated, Any, Final

import msgspec
from litestar import Request, Response, get
from litestar.params import Parameter, PathParameter
from litestar.response import Template

from registry import store
from registry.api import analysis
from registry.api import capabilities as api_capabilities
from registry.api import namespace_policy as api_policy
from registry.api import reviews as api_reviews
from registry.api import tools as api_tools
from registry.api.auth import Principal
from registry.api.params import TOOL_PATTERN, NamespaceName, ToolName
from registry.api.problems import ApiError
from registry.api.services import Services, principal, reader, services
from registry.api.sync import _client_gone, holder
from registry.console.session import page, reader_or_login
from registry.console.views import (
    AliasView,
    Payload,
    fingerprint,
    timeline,
    tool_rows,
)
from registry.policy.callers import format_duration, summarize
from registry.store import Alias, AuditEvent, Converter, Version
from registry.store.overview import namespace_overview, version_states
from registry.store.usage import usage_rows

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
    states = await version_states(svc.database, ns)
    aliases: list[AliasView] = []
    if await store.list_aliases(svc.database, ns):
        # Each alias's route as the gates see it: from the toolset payload the SDK syncs
        # (cached until the next change; only namespaces with aliases read it here).
        built = await svc.cache.get(ns)
        aliases = Payload.decode(built.body).aliases if built is not None else []
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
        rows=tool_rows(listing.tools, states),
        aliases=aliases,
        capabilities=captured,
        policy=await api_policy.get_namespace_policy.fn(request, ns=ns),
        waiting=len((await api_reviews.list_reviews.fn(request, ns=ns)).reviews),
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
        page_of = await store.list_audit(
            svc.database, namespace=ns, tool=tool, after=after, limit=AUDIT_PAGE
        )
        events += page_of
        if len(page_of) < AUDIT_PAGE:
            break
        after = page_of[-1].id
    return events


class _ToolData(msgspec.Struct, frozen=True):
    versions: list[Version]
    converters: list[Converter]
    aliases: list[Alias]  # whose target or contract is the tool

    @property
    def seen(self) -> str:
        return fingerprint(self.versions, self.converters, self.aliases)


async def _tool_data(request: Request[Any, Any, Any], ns: str, tool: str) -> _ToolData:
    svc = services(request)
    versions = (await api_tools.history.fn(request, ns=ns, tool=tool)).versions
    converters = await store.list_converters(svc.database, ns, tool)
    aliases = [
        a
        for a in await store.list_aliases(svc.database, ns)
        if tool in (a.target_tool, a.contract_tool)
    ]
    return _ToolData(versions, converters, aliases)


async def _tool_context(
    request: Request[Any, Any, Any], ns: str, tool: str, data: _ToolData, known: str
) -> dict[str, Any]:
    svc = services(request)
    versions, converters = data.versions, data.converters
    events = await _tool_events(svc, await principal(request), ns, tool)
    # each version's report and route, as the toolset payload routes them: in a worker
    reports, routes = await svc.budget.run(
        request, analysis.timeline_analysis, versions, converters
    )
    window = timedelta(seconds=svc.settings.retire_warn_window)
    rows = await usage_rows(svc.database, ns, tool, since=svc.clock() - window)
    return {
        "ns": ns,
        "tool": tool,
        "known": known,
        "seen": data.seen,
        # who called each version within the warning window (as of this rendering)
        "usage": {u.version: u for u in summarize(rows)},
        "usage_window": format_duration(window),
        "versions": versions,
        "entries": timeline(versions, converters, data.aliases, events, reports, routes),
        "audit_visible": events is not None,
        "aliases_to": [a for a in data.aliases if a.target_tool == tool],
        "live_wait": LIVE_WAIT_SECONDS,
    }


@get("/namespaces/{ns:str}/tools/{tool:str}", name="console-tool")
async def tool_page(request: Request[Any, Any, Any], ns: NamespaceName, tool: ToolName) -> Template:
    await reader_or_login(request)
    data = await _tool_data(request, ns, tool)
    # No toolset digest yet (`known` empty): the page's first live request learns it, and
    # compares what the page shows (`seen`) with the tool as it is then.
    return page(request, "tool.html.j2", **await _tool_context(request, ns, tool, data, ""))


# The path ends in /toolset and the query carries wait=: `registry serve` ends these
# long-polls at once on shutdown, as it ends the API's toolset long-polls.
@get("/namespaces/{ns:str}/toolset", name="console-live")
async def live_fragment(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    tool: Annotated[str, Parameter(pattern=TOOL_PATTERN)],
    seen: Annotated[str, Parameter(max_length=64)] = "",
    known: Annotated[str, Parameter(max_length=100)] = "",
    wait: Annotated[int, Parameter(ge=0, le=60)] = LIVE_WAIT_SECONDS,
) -> Response[Any]:
    """The tool page's live part (htmx). Held until the namespace's toolset differs from
    `known` and the tool differs from what the page shows (`seen`); then the new
    timeline (swapped in out of band) and the next request. After `wait` seconds
    without a change: only the next request."""
    svc = await reader(request, ns)
    who = await principal(request)
    # One watcher of the connection for the whole request: a client that hangs up (the
    # page was left) stops holding a waiter at once. The wait takes a long-poll slot of
    # the token's share, and ends when the token is revoked.
    with svc.longpolls.slot(holder(request, who)), svc.revocations.watch(who.token_id) as revoked:
        gone = asyncio.ensure_future(_client_gone(request))
        ended = asyncio.ensure_future(revoked.wait())
        try:
            return await _follow(request, svc, gone, ended, ns, tool, seen, known or None, wait)
        except _Gone:
            return Response(b"", status_code=204)
        finally:
            gone.cancel()
            ended.cancel()


class _Gone(Exception):
    """The client hung up while its request waited."""


def _revoked() -> ApiError:
    return ApiError(
        "unauthenticated", "the token was revoked while this page waited: sign in again"
    )


async def _follow(
    request: Request[Any, Any, Any],
    svc: Services,
    gone: asyncio.Future[None],
    revoked: asyncio.Future[Any],
    ns: str,
    tool: str,
    seen: str,
    digest: str | None,
    wait: int,
) -> Response[Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        waiter = asyncio.ensure_future(
            svc.cache.wait_changed(ns, digest, max(deadline - loop.time(), 0.0))
        )
        watched: set[asyncio.Future[Any]] = {waiter, gone, revoked}
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
            if revoked.done():
                raise _revoked()
            raise _Gone
        # The token is asked again before anything is shown (a revocation the LISTEN
        # connection missed included): what the page shows next is read as it is now.
        request.scope.setdefault("state", {}).pop("principal", None)
        await reader(request, ns)
        built = waiter.result()
        if built is None:
            raise ApiError("not-found", f"namespace {ns} does not exist")
        changed = built.digest != digest
        digest = built.digest
        # Read after the digest: a change landing in between is in `data`, and the next
        # request (with this digest) returns at once and finds nothing new.
        data = await _tool_data(request, ns, tool) if changed else None
        if data is not None and data.seen != seen:
            context = await _tool_context(request, ns, tool, data, digest)
            return page(request, "live.html.j2", changed=True, **context)
        if loop.time() >= deadline:
            return page(
                request,
                "live.html.j2",
                changed=False,
                ns=ns,
                tool=tool,
                known=digest,
                seen=seen,
                live_wait=LIVE_WAIT_SECONDS,
            )


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
        rows=await services(request).budget.run(
            request,
            analysis.diff_rows,
            by_number[old_number].definition,
            by_number[new_number].definition,
        ),
    )


@get("/{rest:path}", name="console-not-found")
async def not_found(
    request: Request[Any, Any, Any], rest: Annotated[str, PathParameter()]
) -> Template:
    """Anything else under /ui/: a page that says so (the API answers problem+json)."""
    raise ApiError("not-found", f"nothing at {request.url.path}")


HANDLERS = [namespaces_page, namespace_page, tool_page, live_fragment, diff_page, not_found]
