"""This instance's own writes are in its next toolset read.

    Litestar(..., middleware=[own_writes(toolsets.cache)])

The toolset cache learns of changes by LISTEN/NOTIFY, which arrives a moment
after the write's commit: a client that publishes and at once reads the
namespace's toolset from the same instance could be served the payload from
before its publish. So a write this instance answers with a 2xx marks the
namespace (the tool, when the path names one) changed before the answer's
first byte leaves; other instances still learn of it by NOTIFY. A write is a
POST, PUT, PATCH or DELETE under a namespace's path (the API's or the
console's) other than a check or a usage report, or an apply (not a plan) or
an import, which name no namespace in their path and so mark every namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["own_writes"]

Scope = dict[str, Any]
ASGIApp = Callable[..., Any]

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_UNDER = ("/v1/namespaces/", "/ui/namespaces/")
_BUNDLES = frozenset({"/v1/apply", "/v1/import"})
_READS_BY_POST = ("/check", "/usage")  # POSTs that leave the toolsets as they are


class _Invalidated(Protocol):
    def invalidate(self, namespace: str | None) -> None: ...
    def invalidate_tool(self, namespace: str, tool: str) -> None: ...


def own_writes(cache: _Invalidated) -> Callable[[ASGIApp], ASGIApp]:
    """The Litestar middleware factory (see the module docstring)."""

    def wrap(app: ASGIApp) -> ASGIApp:
        async def marking_app(scope: Scope, receive: Any, send: Any) -> None:
            if not _is_write(scope):
                await app(scope, receive, send)
                return

            async def marking_send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start" and 200 <= message["status"] < 300:
                    _mark(cache, scope)
                await send(message)

            await app(scope, receive, marking_send)

        return marking_app

    return wrap


def _is_write(scope: Scope) -> bool:
    if scope["type"] != "http" or scope.get("method") not in _WRITES:
        return False
    path: str = scope.get("path", "")
    if path in _BUNDLES:
        return b"plan=true" not in scope.get("query_string", b"")
    return path.startswith(_UNDER) and not path.endswith(_READS_BY_POST)


def _mark(cache: _Invalidated, scope: Scope) -> None:
    params = scope.get("path_params") or {}
    namespace, tool = params.get("ns"), params.get("tool")
    if isinstance(namespace, str) and isinstance(tool, str):
        cache.invalidate_tool(namespace, tool)
    elif isinstance(namespace, str):
        cache.invalidate(namespace)
    else:
        cache.invalidate(None)
