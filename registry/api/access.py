"""Who may call what: one table of each route's need, checked before any other work.

The check is a Litestar guard, and guards run before the body is read, before
path and query parameters are parsed and before the `before_request` hook
(`litestar/routes/http.py`). So an anonymous write is a 401 whatever it
carries, and a token without the route's scope is a 403 before its body is
looked at. Where the route alone does not say what is needed (`/v1/apply`:
the namespaces are in the body; `/v1/audit`: in the query), the guard asks
for a valid token and the handler checks the scopes once it has parsed them.

    read     the `{ns}` of the path readable (open reads, or `ns:read`); with no
             `{ns}` in the path: open reads or any valid token (the handler shows
             only what the token may read)
    report   `ns:report` (or higher) on the `{ns}` of the path: a gated server's usage counts
    publish  `ns:publish` (or higher) on the `{ns}` of the path
    review   `ns:review` (or admin) on the `{ns}` of the path: approve or reject a held version
    admin    `ns:admin` on the `{ns}` of the path
    token    any valid token
    publish-any  a token with `publish` (or higher) on some namespace (`/v1/apply`:
             the handler checks each namespace of the bundle before it reads further)
    metrics  the metrics token when `Settings.metrics_token` is set, otherwise any
             valid token; open only with `Settings.metrics_open` (REGISTRY_METRICS_OPEN=1)
    open     anyone

Every route handler of the API (`registry.api.*`) has an entry:
`require_coverage` fails the app's construction otherwise, so a new route
cannot be served unguarded. Litestar's own handlers (the OpenAPI schema
routes) are open, and so, at this level, are the console's pages under
`/ui/` (`registry.console`): they never write, and each one asks the API's
`principal()` itself, after its own hook has turned the sign-in cookie into
the bearer token (this guard runs before that hook, so it cannot).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Literal

from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler

from registry.api.auth import Action, bearer_secret, matches_secret
from registry.api.problems import ApiError
from registry.api.services import principal, services

__all__ = ["NEEDS", "Need", "authorize", "require_coverage"]

Need = Literal[
    "open", "metrics", "token", "read", "report", "publish", "review", "publish-any", "admin"
]

NEEDS: Final[dict[str, Need]] = {
    # ops.py
    "healthz": "open",
    "readyz": "open",
    "metrics": "metrics",
    "audit": "token",  # admin on the `namespace` of the query (or `*:admin`)
    # tools.py
    "list_namespaces": "read",
    "create_namespace": "admin",
    "list_tools": "read",
    "publish": "publish",
    "check": "read",
    "history": "read",
    "get_version": "read",
    "diff": "read",
    "deprecate": "publish",
    "retire": "publish",
    "register_converter": "publish",
    "set_alias": "publish",
    # sync.py
    "toolset": "read",
    "lookup_digest": "read",
    "digest_definition": "read",
    "verify": "read",
    # apply.py
    "apply": "publish-any",  # publish on every namespace of the bundle
    # capabilities.py
    "put_capabilities": "publish",
    "get_capabilities": "read",
    "check_capabilities": "read",
    # usage.py
    "report_usage": "report",
    "tool_usage": "read",
    "version_usage": "read",
    # reviews.py
    "list_reviews": "read",
    "approve_version": "review",
    "reject_version": "review",
    # namespace_policy.py
    "get_namespace_policy": "read",
    "put_namespace_policy": "admin",
    # transfer.py
    "export": "token",  # admin on every namespace exported (`*:admin`: the whole registry)
    "import_file": "token",  # admin on every namespace of the file (from its header)
    # modes.py
    "get_registry_mode": "token",
    "put_registry_mode": "admin",
    "get_namespace_mode": "read",
    "put_namespace_mode": "admin",
}


_SCOPED: Final[dict[str, Action]] = {
    "report": "report",
    "publish": "publish",
    "review": "review",
    "admin": "admin",
}


def _ours(handler: BaseRouteHandler) -> bool:
    return str(getattr(handler.fn, "__module__", "")).startswith("registry.api.")


def require_coverage(handlers: Iterable[BaseRouteHandler]) -> None:
    """ValueError naming any registry handler without an entry in `NEEDS`."""
    missing = sorted(h.handler_name for h in handlers if _ours(h) and h.handler_name not in NEEDS)
    if missing:
        raise ValueError(f"route handlers without an access rule in NEEDS: {', '.join(missing)}")


async def authorize(connection: ASGIConnection[Any, Any, Any, Any], handler: Any) -> None:
    """The app's guard (see the module docstring)."""
    if not _ours(handler):
        return
    need = NEEDS[handler.handler_name]
    if need == "open":
        return
    svc = services(connection)
    if need == "metrics":
        if svc.settings.metrics_open:
            return
        expected = svc.settings.metrics_token
        secret = bearer_secret(connection.headers.get("authorization"))
        if expected is not None:
            if secret is None or not matches_secret(secret, expected):
                raise ApiError(
                    "unauthenticated",
                    "/metrics needs Authorization: Bearer <the metrics token>",
                    headers={"WWW-Authenticate": 'Bearer realm="registry-metrics"'},
                )
            return
        if secret is None:
            raise ApiError(
                "unauthenticated",
                "/metrics needs Authorization: Bearer <a registry token> (or set "
                "REGISTRY_METRICS_TOKEN for the scraper, or REGISTRY_METRICS_OPEN=1)",
                headers={"WWW-Authenticate": 'Bearer realm="registry-metrics"'},
            )
        (await principal(connection)).require_token()
        return
    who = await principal(connection)
    namespace = connection.path_params.get("ns")
    action = _SCOPED.get(need)
    if action is not None:
        who.require(namespace, action)
    elif namespace is not None and need == "read":
        if not who.readable(namespace, svc.settings.open_reads):
            who.require(namespace, "read")
    elif need == "publish-any":
        who.require_somewhere("publish")
    elif not (need == "read" and svc.settings.open_reads):
        who.require_token()
