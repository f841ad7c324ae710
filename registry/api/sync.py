"""What MCP servers read: the toolset (ETag, long-polls), and listing verification."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, Parameter

from registry import store
from registry.api import analysis
from registry.api.answers import Ready
from registry.api.auth import Principal
from registry.api.hot_routes import HOT
from registry.api.params import NamespaceName
from registry.api.problems import (
    BODY_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    namespace_not_found,
    problem_responses,
)
from registry.api.services import principal, reader
from registry.api.wire import VerifyAnswer, VerifyRequest
from registry.sdk.toolset import ToolsetPayload
from registry.store import Version

__all__ = ["HANDLERS", "etag_matches", "holder"]


def _tags(header: str) -> list[str]:
    """The entity tags of an If-None-Match header, weak or strong, without quotes."""
    return [c.strip().removeprefix("W/").strip('"') for c in header.split(",")]


def etag_matches(header: str | None, digest: str) -> bool:
    if not header:
        return False
    return header.strip() == "*" or digest in _tags(header)


def _if_none_match(header: str | None) -> str | None:
    """The digest a caller already has (the first tag of If-None-Match)."""
    if not header:
        return None
    return _tags(header)[0] or None


def holder(request: Request[Any, Any, Any], who: Principal) -> str:
    """Whose long-poll share a request takes: its token, or an anonymous caller's address."""
    if who.token_id is not None:
        return who.token_id
    client = request.client
    return f"anonymous@{client.host if client is not None else '?'}"


async def _client_gone(request: Request[Any, Any, Any]) -> None:
    """Returns when the client hangs up (the console's live pages wait on it)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _raw_header(scope: Any, name: bytes) -> str | None:
    """The first value of a header, from the scope (ASGI names are lower case)."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


@get(
    "/v1/namespaces/{ns:str}/toolset",
    summary="The sync payload of a namespace; ETag, If-None-Match -> 304, ?wait=S long-polls",
    media_type="application/json",
    opt=HOT,
    responses={
        **problem_responses(
            *GUARDED_PROBLEMS,
            *PARAMETER_PROBLEMS,
            "namespace-not-found",
            "too-many-requests",
            "not-ready",
            *SERVER_PROBLEMS,
        ),
        200: ResponseSpec(
            data_container=ToolsetPayload,
            generate_examples=False,
            description="The toolset (schemas/toolset.schema.json); ETag is its digest",
        ),
        304: ResponseSpec(
            data_container=None, description="Not modified: the ETag in If-None-Match is current"
        ),
    },
)
async def toolset(
    request: Request[Any, Any, Any],
    ns: NamespaceName,
    wait: Annotated[
        int | None,
        Parameter(ge=0, le=60, description="seconds to hold the request until a change"),
    ] = None,
) -> Response[bytes]:
    svc = await reader(request, ns)
    built = svc.cache.peek(ns)
    if built is None:
        svc.database  # noqa: B018 - 503 before reading when there is no database
        built = await svc.cache.get(ns)
        if built is None:
            raise namespace_not_found(ns)
    answers = svc.longpolls.answers(ns, built)
    header = _raw_header(request.scope, b"if-none-match")
    if header is None:
        return Ready(answers.ok, 200)
    if wait and _if_none_match(header) == built.digest:
        # Held until a change: the body (none, for a GET) is read first, so that the
        # next message from the server is the client hanging up.
        await request.receive()
        who = await principal(request)  # known already: reader looked it up
        waiter = svc.longpolls.park(
            ns, answers, float(wait), who.token_id, request.receive, holder(request, who)
        )
        return Ready(waiter.answer, 200)
    if header == answers.etag or etag_matches(header, built.digest):
        return Ready(answers.not_modified, 304)
    return Ready(answers.ok, 200)


@post(
    "/v1/namespaces/{ns:str}/verify",
    summary="Check a tools/list result against the registry, per tool",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "namespace-not-found",
        "invalid-protocol-version",
        *SERVER_PROBLEMS,
    ),
)
async def verify(
    request: Request[Any, Any, Any], ns: NamespaceName, data: JSONBody[VerifyRequest]
) -> VerifyAnswer:
    svc = await reader(request, ns)
    snapshot = await store.load_namespace(svc.database, ns)
    if snapshot is None:
        raise namespace_not_found(ns)
    by_tool: dict[str, list[Version]] = {}
    for version in snapshot.versions:
        by_tool.setdefault(version.tool, []).append(version)
    verdicts = await svc.budget.run(
        request, analysis.verified, data.tools, data.protocolVersion, by_tool
    )
    summary: dict[str, int] = {"current": 0, "served": 0, "retired": 0, "unknown": 0}
    for verdict in verdicts:
        summary[verdict.status] += 1
    return VerifyAnswer(
        namespace=ns, protocolVersion=data.protocolVersion, tools=verdicts, summary=summary
    )


HANDLERS = [toolset, verify]
