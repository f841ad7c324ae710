"""A bound on the time a request's body may take to arrive.

    Litestar(..., middleware=[body_deadline(seconds=30.0, metrics=metrics)])

A client that sends its body a byte a second would otherwise hold a request
(and its memory) for as long as it likes; 500 of them held 500 requests. The
ASGI servers bound the headers (granian's `header_read_timeout`, see
`registry/server.py`) but not the body, so the app does: every `receive()` of
the body must complete before `seconds` after the request reached the app.
Past that the request is answered 408 `request-timeout` (the connection is
closed: the rest of the body is never read) and counted in
`registry_http_body_timeouts_total`.

A request answered before its body was read (a 401 or 403 is decided before
the body is looked at, a 413 as soon as the limit is passed) has the rest of
its body read and dropped after the answer, within the same deadline and up to
`drain_bytes`: a client still sending then reads its answer, rather than a
connection reset, and nothing of the body is parsed.

A client that hangs up in the middle of its body is answered (to nobody) 499
`client-closed` rather than Litestar's "client disconnected prematurely" 500:
a hang-up is the client's doing, not a server error. Once the body is
complete, `receive()` is passed through untouched (a long-poll waits on it for
the client's hang-up): what the handler's `receive()` then returns is the
server's own awaitable. An HTTP/1 request without `Content-Length` (or with 0)
and without `Transfer-Encoding` has no body: its `receive()` is the server's
from the start, and nothing is drained.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from registry.api.metrics import Metrics
from registry.api.problems import ApiError

__all__ = ["body_deadline"]

Scope = dict[str, Any]
ASGIApp = Callable[..., Any]


def body_deadline(
    *, seconds: float, metrics: Metrics, drain_bytes: int
) -> Callable[[ASGIApp], ASGIApp]:
    """The Litestar middleware factory (see the module docstring)."""

    def wrap(app: ASGIApp) -> ASGIApp:
        async def bounded_app(scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + seconds
            complete = not _may_have_body(scope)
            # a route reading its body as it arrives (an import): the bound is on each wait
            handler = scope.get("route_handler")
            streamed = handler is not None and bool(handler.opt.get("streamed_body"))

            def bounded() -> Awaitable[dict[str, Any]]:
                # Once the body is complete, the server's own awaitable (a future with
                # granian: a long-poll watches it for the hang-up without a task).
                return receive() if complete else body()

            async def body() -> dict[str, Any]:
                nonlocal complete, deadline
                if streamed:
                    deadline = loop.time() + seconds
                try:
                    message: dict[str, Any] = await asyncio.wait_for(
                        receive(), max(deadline - loop.time(), 0.0)
                    )
                except TimeoutError:
                    complete = True
                    metrics.body_timeouts.inc()
                    raise ApiError(
                        "request-timeout",
                        f"the request body did not arrive within {seconds:g} s",
                        headers={"Connection": "close"},
                    ) from None
                if message["type"] == "http.disconnect":
                    complete = True
                    raise ApiError("client-closed", "the client hung up before its body ended")
                if not message.get("more_body", False):
                    complete = True
                return message

            await app(scope, bounded, send)
            drained = 0
            while not complete and drained <= drain_bytes:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    message = await asyncio.wait_for(receive(), remaining)
                except TimeoutError:
                    break
                drained += len(message.get("body", b""))
                complete = message["type"] == "http.disconnect" or not message.get(
                    "more_body", False
                )

        return bounded_app

    return wrap


def _may_have_body(scope: Scope) -> bool:
    if not scope.get("http_version", "1.1").startswith("1"):
        return True  # HTTP/2 frames a body without either header
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value != b"0"):
            return True
    return False
