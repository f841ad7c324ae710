"""The hot routes, answered without Litestar's per-request machinery: `/healthz` and the toolset.

    hot = HotRoutes(litestar_app)              # the routes whose handlers say `opt=HOT`
    if not await hot.answer(scope, receive, send):
        await litestar_app(scope, receive, send)

Every gated server reads its toolset every few seconds, and orchestrators
probe `/healthz`; both answers are pre-built bytes (`registry.api.answers`).
Litestar's work around such a handler (a `Request`, a copy of the handler for
each guard, parameter parsing, two exception layers, its middleware) cost
more than the answer itself (bench/fixed_cost_bench.py; docs/figures.md). For
a `GET` of a hot route's path with no query string and no body, this layer
runs what Litestar would run, in its order, from the handler's own layers: the
guards (access and path names: the same functions, given the handler itself),
the `before_request` hook, then the handler's function, and sends the `Ready`
answer it returns. An exception is answered by the handler's own exception
handlers, as Litestar answers it.

Anything else goes to Litestar, unchanged: another method, a query (a
long-poll's `?wait=`), a body, a path Litestar would first normalise (`//`, a
trailing `/`, a root path), a `Host` outside a plain subset of what Litestar
accepts, or a handler that answered something other than `Ready` (it is then
asked again, through Litestar).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from inspect import getmro
from typing import Any, Final

from litestar import Litestar
from litestar.exceptions import HTTPException
from litestar.handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute

from registry.api.answers import Ready

__all__ = ["HOT", "HotRoutes"]

HOT: Final = {"hot": True}  # a GET handler's `opt`: answered here (see the module docstring)

Scope = dict[str, Any]
# A subset of what Litestar's router accepts as a Host; anything else goes to it.
_PLAIN_HOST: Final = re.compile(rb"^[0-9A-Za-z.\-:\[\]]*$")
_STATE_KEY: Final = "__litestar__"  # Litestar's per-request cache in scope["state"]


class _Hot:
    __slots__ = ("fn", "guards", "handler", "hook", "path_format", "pattern", "takes_request")

    def __init__(self, route: HTTPRoute, handler: HTTPRouteHandler) -> None:
        names = list(route.path_parameters)
        if any(p.type is not str for p in route.path_parameters.values()):
            raise ValueError(f"hot route {route.path}: only str path parameters are supported")
        pattern = route.path_format
        for name in names:
            pattern = pattern.replace("{" + name + "}", f"(?P<{name}>[^/]+)")
        self.pattern = re.compile(f"^{pattern}$")
        self.path_format = route.path_format
        self.handler = handler
        self.fn: Callable[..., Awaitable[Any]] = handler.fn
        signature = inspect.signature(self.fn)
        for name, parameter in signature.parameters.items():
            if name not in (*names, "request") and parameter.default is inspect.Parameter.empty:
                raise ValueError(f"hot route {route.path}: {name} needs a plain default")
        if handler.resolve_after_response() is not None:
            raise ValueError(f"hot route {route.path}: after_response hooks are not run here")
        self.takes_request = "request" in signature.parameters
        self.guards = handler.resolve_guards()
        self.hook = handler.resolve_before_request()


class HotRoutes:
    def __init__(self, app: Litestar) -> None:
        self._app = app
        self._hot: list[_Hot] = [
            _Hot(route, handler)
            for route in app.routes
            if isinstance(route, HTTPRoute)
            for handler in route.route_handlers
            if handler.opt.get("hot") and set(handler.http_methods) == {"GET"}
        ]

    async def answer(self, scope: Scope, receive: Any, send: Any) -> bool:
        """True when answered here; False: `scope` is Litestar's to answer, as it was."""
        if (
            scope["method"] != "GET"
            or not scope.get("http_version", "1.1").startswith("1")  # HTTP/2 frames bodies
            or scope.get("query_string")
            or scope.get("root_path")
            or not _plain(scope["headers"])
        ):
            return False
        path = scope["path"]
        for hot in self._hot:
            match = hot.pattern.match(path)
            if match is not None:
                return await self._answer(hot, match.groupdict(), scope, receive, send)
        return False

    async def _answer(
        self, hot: _Hot, params: dict[str, str], scope: Scope, receive: Any, send: Any
    ) -> bool:
        scope["litestar_app"] = self._app
        scope["route_handler"] = hot.handler
        scope["path_params"] = params
        scope["path_template"] = hot.path_format
        asgi_scope: Any = scope
        request = hot.handler.resolve_request_class()(asgi_scope, receive, send)
        try:
            for guard in hot.guards:
                checked = guard(request, hot.handler)  # Litestar copies the handler first
                if checked is not None:
                    await checked
            if hot.hook is not None and await hot.hook(request) is not None:
                answer = None  # the hook answered: Litestar's to render
            elif hot.takes_request:
                answer = await hot.fn(request=request, **params)
            else:
                answer = await hot.fn(**params)
        except Exception as exc:  # answered by the route's own exception handlers
            await self._failed(hot, request, exc)
            return True
        if not isinstance(answer, Ready):
            scope.get("state", {}).pop(_STATE_KEY, None)
            return False
        await answer.app(scope, receive, send)
        return True

    async def _failed(self, hot: _Hot, request: Any, exc: Exception) -> None:
        handlers = hot.handler.resolve_exception_handlers()
        handler = None
        if isinstance(exc, HTTPException):
            handler = handlers.get(exc.status_code)
        if handler is None:
            handler = next((handlers[c] for c in getmro(type(exc)) if c in handlers), None)
        if handler is None:
            raise exc
        response = handler(request, exc)
        asgi = response.to_asgi_response(
            app=None, request=request, type_encoders=hot.handler.resolve_type_encoders()
        )
        await asgi(request.scope, request.receive, request.send)


def _plain(headers: list[tuple[bytes, bytes]]) -> bool:
    """No body (HTTP/1: neither header), and a Host within `_PLAIN_HOST`."""
    for name, value in headers:
        if name in (b"content-length", b"transfer-encoding") or (
            name == b"host" and _PLAIN_HOST.match(value) is None
        ):
            return False
    return True
