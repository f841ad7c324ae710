"""The outermost ASGI layer: a request id, one JSON log line per request, metrics.

The request id is the caller's `X-Request-Id` when it is sane (1-64 of
`[A-Za-z0-9._-]`), a new one otherwise (32 hex digits: 16 drawn at random when
the process starts, then a count, so unique across replicas without drawing
random bytes per request); it is answered as `X-Request-Id`,
stored on the scope for handlers and audit events, and logged. The server's
`send` is on the scope too (`state["asgi_send"]`): woken long-polls are
answered through it directly, and say what they sent (`state["answered"]`). It wraps the
whole app, so requests that match no route are logged and counted too.

Every answer without a Content-Security-Policy of its own (the console sets a
stricter page policy) gets `API_SECURITY_HEADERS`: an API answer is data, and
a browser that renders one anyway may load, run and frame nothing.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from typing import Any, Final

from registry.api.hot_routes import HotRoutes
from registry.api.metrics import Metrics
from registry.api.request_log import log_request

__all__ = ["Observed"]

_SANE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
API_SECURITY_HEADERS: Final = (
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
)
_ID_PREFIX: Final = os.urandom(8).hex()
_ids = itertools.count(1)

Scope = dict[str, Any]


class Observed:
    def __init__(self, app: Any, metrics: Metrics, *, hot: HotRoutes | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self._hot = hot  # the routes answered before the app is called (registry.api.hot_routes)
        # The labelled children, looked up once per (route, method, status) / route.
        self._counted: dict[tuple[str, str, int], Any] = {}
        self._timed: dict[str, Any] = {}
        # OPTIONS is answered here: Litestar's automatic OPTIONS handler lists only
        # the methods of the first handler registered on a path (GET+POST routes).
        self._allowed = [
            (re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", route.path) + "$"), route.methods)
            for route in getattr(app, "routes", [])
        ]

    def __getattr__(self, name: str) -> Any:  # the wrapped Litestar app's attributes
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            allowed = self._allow(scope["path"])
            if allowed is not None:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 204,
                        "headers": [(b"allow", allowed.encode())],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        incoming = _header(scope, b"x-request-id")
        rid = incoming if incoming and _SANE_ID.fullmatch(incoming) else _new_id()
        state = scope.setdefault("state", {})
        state["request_id"] = rid
        # A layer that answers many requests at once (long-polls woken by a change,
        # registry.api.longpoll) sends through the server's own `send`, adds the
        # X-Request-Id itself and leaves the status it sent under "answered".
        state["asgi_send"] = send
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode()))
                if not any(k == b"content-security-policy" for k, _ in headers):
                    headers.extend(API_SECURITY_HEADERS)
                if state.get("read_replica"):  # services.replica_read: it may lag the primary
                    headers.append((b"x-registry-read", b"replica"))
                message = {**message, "headers": headers}
            await send(message)

        try:
            if self._hot is None or not await self._hot.answer(scope, receive, send_with_id):
                await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            status = state.get("answered", status)
            route = scope.get("path_template") or "unmatched"
            method = scope["method"]
            counter = self._counted.get((route, method, status))
            if counter is None:
                counter = self.metrics.requests.labels(route, method, str(status))
                self._counted[(route, method, status)] = counter
            counter.inc()
            timer = self._timed.get(route)
            if timer is None:
                timer = self._timed[route] = self.metrics.latency.labels(route)
            timer.observe(elapsed)
            actor = scope.get("state", {}).get("actor")
            log_request(rid, method, scope["path"], route, status, elapsed, actor=actor)

    def _allow(self, path: str) -> str | None:
        methods: set[str] = set()
        for pattern, allowed in self._allowed:
            if pattern.fullmatch(path):
                methods |= set(allowed)
        return ", ".join(sorted(methods | {"OPTIONS"})) if methods else None


def _new_id() -> str:
    return f"{_ID_PREFIX}{next(_ids):016x}"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            try:
                return str(value.decode("latin-1"))
            except UnicodeDecodeError:
                return None
    return None
