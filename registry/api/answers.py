"""A toolset's 200 and 304 answers as ASGI messages, built once per payload.

    answers = Answers.of(built)      # body, ETag, headers: once per BuiltToolset
    await answers.ok(scope, receive, send)             # 200 with the payload
    await answers.not_modified(scope, receive, send)   # 304

Every request for the same payload (and every long-poll woken by it) sends the
same bytes: nothing of the answer is built per request.
"""

from __future__ import annotations

from typing import Any

from litestar import Response

from registry.policy.toolset import BuiltToolset

__all__ = ["Answers", "Ready", "Sent"]


class Sent:
    """An ASGI response whose events are built once."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = list(self.headers)  # the server, or a layer above, may add to it
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": False})


class Ready(Response[bytes]):
    """A `Response` answered by a pre-built ASGI app (a `Sent`, or any other)."""

    __slots__ = ("_app",)

    def __init__(self, app: Any, status: int) -> None:
        # Response's other fields are never read: to_asgi_response is overridden.
        self._app = app
        self.status_code = status
        self.background = None

    @property
    def app(self) -> Any:
        """The pre-built ASGI app that answers (`registry.api.hot_routes` calls it)."""
        return self._app

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        # Handler-level headers, cookies, background tasks: the routes using it have none.
        return self._app


class Answers:
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
        self.not_modified = Sent(304, common, b"")
        self.ok = Sent(
            200,
            [
                *common,
                (b"content-type", b"application/json"),
                (b"content-length", str(len(built.body)).encode("latin-1")),
            ],
            built.body,
        )
