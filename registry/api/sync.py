"""What MCP servers read: the toolset (ETag, long-polls), and listing verification."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from litestar import Request, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import JSONBody, Parameter

from registry.api.params import NamespaceName
from registry.api.problems import COMMON_PROBLEMS, ApiError, problem_responses
from registry.api.services import principal
from registry.api.tools import _reader
from registry.api.wire import VerifyAnswer, VerifyRequest
from registry.policy.toolset import BuiltToolset
from registry.policy.verify import VerifyError, verify_listing
from registry.sdk.toolset import ToolsetPayload
from registry.store import Version, repository

__all__ = ["HANDLERS", "etag_matches"]


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


async def _client_gone(request: Request[Any, Any, Any]) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _wait_unless_gone(
    request: Request[Any, Any, Any],
    waiting: Coroutine[Any, Any, BuiltToolset | None],
    revoked: asyncio.Event,
) -> BuiltToolset | None:
    """The long-poll's answer; a client that hangs up stops holding a waiter at once,
    and a token revoked meanwhile ends it with a 401."""
    waiter = asyncio.ensure_future(waiting)
    gone = asyncio.ensure_future(_client_gone(request))
    revocation = asyncio.ensure_future(revoked.wait())
    try:
        await asyncio.wait({waiter, gone, revocation}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        revocation.cancel()
        if not waiter.done():
            waiter.cancel()
            # Wait for the cancellation to land (asyncio.wait never raises the
            # waiter's CancelledError); reading a cancelled-but-pending future's
            # result was the 500 of issue 10 item 2.
            await asyncio.wait({waiter})
    if revoked.is_set():
        raise ApiError(
            "unauthenticated",
            "the bearer token was revoked while this request waited",
            headers={"WWW-Authenticate": 'Bearer realm="registry", error="invalid_token"'},
        )
    if waiter.cancelled():
        raise _ClientGone
    return waiter.result()


class _ClientGone(Exception):
    """The long-polling client hung up; whatever is answered goes nowhere."""


def _raw_header(scope: Any, name: bytes) -> str | None:
    """The first value of a header, from the scope (ASGI names are lower case)."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class _Sent:
    """An ASGI response whose events are built once per toolset payload."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = list(self.headers)  # the server, or a layer above, may add to it
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": False})


class _Ready(Response[bytes]):
    """A `Response` answered by a pre-built `_Sent` (same headers, in the same order,
    as `Response(...)` with the toolset's headers would send)."""

    __slots__ = ("_sent",)

    def __init__(self, sent: _Sent) -> None:
        # Response's other fields are never read: to_asgi_response is overridden.
        self._sent = sent
        self.status_code = sent.status
        self.background = None

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        # Handler-level headers, cookies, background tasks: the toolset route has none.
        return self._sent


class _Answers:
    """The 200 and 304 answers of one `BuiltToolset`, with its quoted ETag."""

    __slots__ = ("built", "etag", "not_modified", "ok")

    def __init__(self, built: BuiltToolset) -> None:
        self.built = built
        self.etag = f'"{built.digest}"'
        common = [
            (b"etag", self.etag.encode("latin-1")),
            (b"cache-control", b"no-cache"),
            (b"vary", b"Authorization"),
        ]
        self.not_modified = _Sent(304, common, b"")
        self.ok = _Sent(
            200,
            [
                *common,
                (b"content-type", b"application/json"),
                (b"content-length", str(len(built.body)).encode("latin-1")),
            ],
            built.body,
        )


def _answers(svc: Any, ns: str, built: BuiltToolset) -> _Answers:
    known: dict[str, _Answers] = svc.extra.setdefault("toolset_answers", {})
    found = known.get(ns)
    if found is None or found.built is not built:
        found = known[ns] = _Answers(built)
    return found


@get(
    "/v1/namespaces/{ns:str}/toolset",
    summary="The sync payload of a namespace; ETag, If-None-Match -> 304, ?wait=S long-polls",
    media_type="application/json",
    responses={
        **problem_responses(*COMMON_PROBLEMS, 404),
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
    wait: int | None = Parameter(
        default=None, ge=0, le=60, description="seconds to hold the request until a change"
    ),
) -> Response[bytes]:
    svc = await _reader(request, ns)
    svc.database  # noqa: B018 - 503 before waiting when there is no database
    header = _raw_header(request.scope, b"if-none-match")
    if wait and header:
        svc.metrics.waiters.inc()
        who = await principal(request)  # known already: _reader looked it up
        try:
            with svc.revocations.watch(who.token_id) as revoked:
                built = await _wait_unless_gone(
                    request,
                    svc.cache.wait_changed(ns, _if_none_match(header), float(wait)),
                    revoked,
                )
        except _ClientGone:
            svc.metrics.hangups.inc()
            return Response(b"", status_code=304)
        finally:
            svc.metrics.waiters.dec()
    else:
        built = await svc.cache.get(ns)
    if built is None:
        raise ApiError("not-found", f"namespace {ns} does not exist")
    answers = _answers(svc, ns, built)
    if header is not None and (header == answers.etag or etag_matches(header, built.digest)):
        return _Ready(answers.not_modified)
    return _Ready(answers.ok)


@post(
    "/v1/namespaces/{ns:str}/verify",
    summary="Check a tools/list result against the registry, per tool",
    status_code=200,
    responses=problem_responses(*COMMON_PROBLEMS, 404, 409, 413, 415, 422),
)
async def verify(
    request: Request[Any, Any, Any], ns: NamespaceName, data: JSONBody[VerifyRequest]
) -> VerifyAnswer:
    svc = await _reader(request, ns)
    snapshot = await repository.load_namespace(svc.database, ns)
    if snapshot is None:
        raise ApiError("not-found", f"namespace {ns} does not exist")
    by_tool: dict[str, list[Version]] = {}
    for version in snapshot.versions:
        by_tool.setdefault(version.tool, []).append(version)
    try:
        verdicts = verify_listing(data.tools, data.protocolVersion, by_tool)
    except VerifyError as exc:
        code = "invalid-protocol-version" if "protocolVersion" in str(exc) else "invalid-body"
        raise ApiError(code, str(exc)) from exc
    summary: dict[str, int] = {"current": 0, "served": 0, "retired": 0, "unknown": 0}
    for verdict in verdicts:
        summary[verdict.status] += 1
    return VerifyAnswer(
        namespace=ns, protocolVersion=data.protocolVersion, tools=verdicts, summary=summary
    )


HANDLERS = [toolset, verify]
