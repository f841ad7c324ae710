"""Liveness, readiness, metrics and the audit log."""

from __future__ import annotations

from typing import Any, Final

import msgspec
from litestar import Request, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter

from registry import store
from registry.api.answers import Ready, Sent
from registry.api.hot_routes import HOT
from registry.api.params import AUDIT_ACTION_PATTERN, NAMESPACE_PATTERN, TOOL_PATTERN, exact
from registry.api.problems import (
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    ApiError,
    problem_responses,
)
from registry.api.services import principal, replica_read, services
from registry.api.wire import AuditPage, Status
from registry.store import at_head

__all__ = ["HANDLERS"]


# The same bytes every time: pre-built, and answered without Litestar (registry.api.hot_routes).
_HEALTHY: Final = msgspec.json.encode(Status("ok"))
HEALTHY: Final = Sent(
    200,
    [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(_HEALTHY)).encode("latin-1")),
    ],
    _HEALTHY,
)


@get(
    "/healthz",
    summary="Liveness: the process answers",
    opt=HOT,
    responses={
        **problem_responses("internal-error"),
        200: ResponseSpec(
            data_container=Status,
            generate_examples=False,
            description="Request fulfilled, document follows",
        ),
    },
)
async def healthz() -> Response[bytes]:
    return Ready(HEALTHY, 200)


@get(
    "/readyz",
    summary="Readiness: database reachable and migrations at head",
    responses=problem_responses("not-ready", "internal-error"),
)
async def readyz(request: Request[Any, Any, Any]) -> Status:
    svc = services(request)
    try:
        head = await at_head(svc.database)
    except ApiError:
        raise
    except Exception as exc:  # any failure to reach the database means "not ready"
        raise ApiError("not-ready", f"database unreachable: {type(exc).__name__}") from exc
    if not head:
        raise ApiError("not-ready", "database migrations are not at head")
    listening = svc.listener is not None and svc.listener.connected
    return Status(
        "ok",
        {"database": "ok", "migrations": "head", "listen": "ok" if listening else "reconnecting"},
    )


@get(
    "/metrics",
    summary="Prometheus metrics",
    media_type="text/plain; version=0.0.4",
    responses=problem_responses("unauthenticated", "internal-error"),
)
async def metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    svc = services(request)
    return Response(svc.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


@get(
    "/v1/audit",
    summary="Audit events, oldest first; page with after=<last id>",
    responses=problem_responses(*GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, *SERVER_PROBLEMS),
)
async def audit(
    request: Request[Any, Any, Any],
    namespace: str | None = Parameter(default=None, pattern=NAMESPACE_PATTERN),
    tool: str | None = Parameter(default=None, pattern=TOOL_PATTERN),
    action: str | None = Parameter(default=None, pattern=AUDIT_ACTION_PATTERN),
    after: int | None = Parameter(default=None, ge=0, le=2**63 - 1),
    limit: int = Parameter(default=100, ge=1, le=1000),
) -> AuditPage:
    exact("namespace", namespace, NAMESPACE_PATTERN)
    exact("tool", tool, TOOL_PATTERN)
    exact("action", action, AUDIT_ACTION_PATTERN)
    who = await principal(request)
    who.require(namespace, "admin")
    events = await replica_read(
        request,
        lambda db: store.list_audit(
            db, namespace=namespace, tool=tool, action=action, after=after, limit=limit
        ),
        lambda _page: True,  # a page may miss the newest events: the answer says so
    )
    return AuditPage(events, events[-1].id if len(events) == limit else None)


HANDLERS = [healthz, readyz, metrics, audit]
