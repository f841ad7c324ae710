"""The Litestar app: `create_app(settings)`; `asgi(settings)` wraps it with request ids and logs.

    app = asgi(Settings(database_url="postgresql://..."))   # what `registry serve` runs

On start-up: a connection pool, migrations (under the advisory lock, so two
replicas starting together never race), the LISTEN connection that keeps the
toolset cache right. On shutdown: the reverse.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped, unused-ignore]
import structlog
from litestar import Litestar, Request, Response
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
    ValidationException,
)
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, YamlRenderPlugin

from registry import __version__, store
from registry.api import (
    apply,
    capabilities,
    digests,
    modes,
    namespace_policy,
    ops,
    replicas,
    reviews,
    sync,
    tools,
    transfer,
    usage,
)
from registry.api.access import authorize, require_coverage
from registry.api.bodies import require_json
from registry.api.budget import Budget
from registry.api.caps import Caps
from registry.api.deadlines import body_deadline
from registry.api.hot_routes import HotRoutes
from registry.api.limits import LimitLog, Limits, raise_fd_limit
from registry.api.metrics import Metrics
from registry.api.observe import Observed
from registry.api.own_writes import own_writes
from registry.api.params import exact_names
from registry.api.problems import ApiError
from registry.api.revocations import Revocations
from registry.api.services import Services, request_id
from registry.api.settings import Settings
from registry.api.token_lookups import TokenLookups
from registry.api.toolsets import Toolsets
from registry.console import console_router, template_config
from registry.policy.publishing import MAX_VERSION
from registry.store import Db, ToolsetListener, migrate

__all__ = ["asgi", "create_app"]

_log = structlog.get_logger("registry.api")

# Errors that mean "the database is not there right now": 503 + Retry-After, not 500.
DATABASE_DOWN: tuple[type[Exception], ...] = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.QueryCanceledError,
    # A pooled connection the server has just shut down can still look open: its
    # next query fails with "cannot switch to state ...; another operation is in
    # progress" (tests/faults/test_outage.py); the pool then replaces it.
    asyncpg.exceptions.InternalClientError,
    ConnectionError,
    OSError,
    asyncio.TimeoutError,
)
RETRY_AFTER_SECONDS = "5"
CONNECT_TIMEOUT_SECONDS = 5.0
COMMAND_TIMEOUT_MARGIN = 1.0  # seconds past statement_timeout before the client gives up


def _problem_response(request: Request[Any, Any, Any], error: ApiError) -> Response[Any]:
    return Response(
        error.problem(request_id(request)),
        status_code=error.status,
        media_type="application/problem+json",
        headers=error.headers,
    )


def _on_api_error(request: Request[Any, Any, Any], exc: ApiError) -> Response[Any]:
    return _problem_response(request, exc)


def _on_http_exception(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    if isinstance(exc, NotFoundException):
        error = ApiError("not-found", f"no resource at {request.url.path}")
    elif isinstance(exc, MethodNotAllowedException):
        error = ApiError(
            "method-not-allowed",
            f"{request.method} is not allowed here",
            headers=dict(exc.headers or {}),
        )
    elif exc.status_code == 413:
        error = ApiError(
            "body-too-large",
            f"the body is larger than {services_settings(request).max_body_bytes} bytes",
        )
    elif isinstance(exc, ValidationException):
        extra = exc.extra if isinstance(exc.extra, list) else []
        body = [e for e in extra if isinstance(e, dict) and e.get("source") == "body"]
        if body == [_NO_BODY]:  # Litestar's words for a body of zero bytes: a KeyError
            error = ApiError("invalid-json", "the body is empty: send a JSON object")
        elif body:
            messages = "; ".join(_field_message(e) for e in body)
            error = ApiError("invalid-body", messages, errors=body)
        else:
            messages = "; ".join(_field_message(e) for e in extra if isinstance(e, dict))
            error = ApiError("invalid-request", messages or exc.detail, errors=extra or None)
    elif exc.status_code == 400:
        error = ApiError("invalid-json", f"the body is not valid JSON: {exc.detail}")
    elif exc.status_code == 401:
        error = ApiError("unauthenticated", exc.detail)
    elif exc.status_code == 403:
        error = ApiError("forbidden", exc.detail)
    else:
        _log.warning("unmapped_http_exception", status=exc.status_code, detail=exc.detail)
        error = ApiError("internal-error", exc.detail)
    return _problem_response(request, error)


def _field_message(entry: dict[str, Any]) -> str:
    key, message = entry.get("key"), entry.get("message")
    if message in _VERSION_BOUNDS:  # only versions have these bounds (VersionNumber)
        message = f"{message} (versions are positive 32-bit integers)"
    return f"{key}: {message}" if key and key != "data" else str(message)


_NO_BODY: Final = {"message": "'data'", "key": "data", "source": "body"}
_VERSION_BOUNDS: Final = {"Expected `int` >= 1", f"Expected `int` <= {MAX_VERSION}"}


async def _authorize_then_exact_names(
    connection: ASGIConnection[Any, Any, Any, Any], handler: Any
) -> None:
    # One guard, not two: Litestar copies the route handler for each guard it calls
    # (9 us a copy; docs/figures.md, "The fixed cost of a request").
    await authorize(connection, handler)
    await exact_names(connection, handler)


def services_settings(request: Request[Any, Any, Any]) -> Settings:
    settings: Settings = request.app.state.services.settings
    return settings


def _on_database_down(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    _log.warning("database_unavailable", error=type(exc).__name__, request_id=request_id(request))
    return _problem_response(
        request,
        ApiError(
            "database-unavailable",
            "the database is unavailable; retry shortly",
            headers={"Retry-After": RETRY_AFTER_SECONDS},
        ),
    )


def _on_data_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # A safety net: the bodies and parameters are checked before the database
    # (registry.api.bodies, the request Structs' ranges). Its own words name its
    # internals (query arguments, types): they go to the log, not to the caller.
    _log.warning(
        "database_refused_value",
        error=type(exc).__name__,
        detail=str(exc),
        request_id=request_id(request),
    )
    return _problem_response(
        request, ApiError("invalid-body", "a value in the request is outside what can be stored")
    )


def _on_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    if isinstance(exc, DATABASE_DOWN):
        return _on_database_down(request, exc)
    if isinstance(exc, asyncpg.exceptions.DataError):
        return _on_data_error(request, exc)
    _log.exception("unhandled_error", request_id=request_id(request))
    return _problem_response(
        request, ApiError("internal-error", "an internal error occurred; see the server log")
    )


def create_app(
    settings: Settings, *, db: Db | None = None, clock: Callable[[], datetime] | None = None
) -> Litestar:
    """The app. With `db` (a pool or connection) it uses that and skips pool and migrations;
    `clock` (tests) answers the time usage counts are stamped and judged with."""
    if settings.database_url is None:
        raise ValueError("create_app needs settings.database_url (serve starts embedded first)")
    dsn = settings.database_url
    metrics = Metrics()
    limits = Limits.of(
        raise_fd_limit(),
        pool_fds=settings.pool_max
        + 1
        + (settings.read_pool_max if settings.read_database_url else 0),
        max_connections=settings.max_connections,
        max_waiters=settings.max_waiters,
        max_waiters_per_token=settings.max_waiters_per_token,
    )

    async def is_revoked(token_id: str) -> bool:
        token = await store.get_token(svc.database, token_id)
        return token is None or token.revoked_at is not None

    revocations = Revocations(is_revoked)
    limit_log = LimitLog(metrics)
    # `svc` is the Services below (bound by the time a request reads a toolset)
    toolsets = Toolsets(
        metrics,
        revocations,
        max_waiters=limits.waiters,
        max_waiters_per_token=limits.waiters_per_token,
        limit_log=limit_log,
        database=lambda: svc.database,
        listening=lambda: svc.listener is not None and svc.listener.connected,
    )
    budget = Budget(
        workers=settings.analysis_workers,
        seconds=settings.analysis_seconds,
        per_token=settings.analysis_per_token,
        metrics=metrics,
        limits=limit_log,
    )
    toolsets.use_budget(budget)
    svc = Services(
        settings=settings,
        metrics=metrics,
        cache=toolsets.cache,
        longpolls=toolsets.longpolls,
        revocations=revocations,
        limits=limits,
        limit_log=limit_log,
        budget=budget,
        caps=Caps.of(settings),
        tokens=TokenLookups(),
        db=db,
    )
    if clock is not None:
        svc.clock = clock
    metrics.waiters.set_function(lambda: toolsets.longpolls.waiting)
    for name, value in {
        "max_connections": limits.connections,
        "max_waiters": limits.waiters,
        "max_waiters_per_token": limits.waiters_per_token,
        "analysis_workers": settings.analysis_workers,
        "analysis_per_token": settings.analysis_per_token,
        "analysis_seconds": settings.analysis_seconds,
        "definition_max_bytes": settings.definition_max_bytes,
        "definition_max_nodes": settings.definition_max_nodes,
        "definition_max_properties": settings.definition_max_properties,
        "definition_max_branches": settings.definition_max_branches,
        "definition_max_depth": settings.definition_max_depth,
        "max_body_bytes": settings.max_body_bytes,
    }.items():
        metrics.limits.labels(name).set(value)

    def pool_of(url: str, min_size: int, max_size: int) -> Any:
        # Bounded waits when the server answers nothing (a hung host, a partition):
        # `timeout` bounds each connection attempt, `command_timeout` each statement
        # (the server's statement_timeout fires first while it is alive). Without
        # them a request hung for minutes (tests/faults/test_outage.py).
        return asyncpg.create_pool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=CONNECT_TIMEOUT_SECONDS,
            command_timeout=settings.statement_timeout_ms / 1000 + COMMAND_TIMEOUT_MARGIN,
            server_settings={"statement_timeout": str(settings.statement_timeout_ms)},
        )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Litestar) -> AsyncIterator[None]:
        pool = None
        if svc.db is None:
            pool = await pool_of(dsn, settings.pool_min, settings.pool_max)
            applied = await migrate(pool)
            if applied:
                _log.info("migrations_applied", migrations=applied)
            svc.db = pool
        if settings.read_database_url is not None:
            # Opened lazily (min_size 0): a replica that is away at start costs nothing;
            # reads fall back to the primary while it does not answer.
            svc.read_db = await pool_of(settings.read_database_url, 0, settings.read_pool_max)
        listener = ToolsetListener(
            dsn,
            toolsets.cache.invalidate,
            tools=toolsets.cache.invalidate_tool,
            revocations=revocations.revoked,
        )
        svc.listener = listener
        for warning in limits.warnings():
            _log.warning("limits", detail=warning)
        svc.budget.start()
        try:
            await listener.start(wait=10.0)
        except TimeoutError:
            _log.warning("listen_not_connected", detail="toolsets are not cached until it is")
        try:
            yield
        finally:
            toolsets.longpolls.drain()
            await listener.stop()
            toolsets.close()
            svc.budget.close()
            if svc.read_db is not None:
                await svc.read_db.close()
            if pool is not None:
                await pool.close()

    handlers = [
        *tools.HANDLERS,
        *sync.HANDLERS,
        *digests.HANDLERS,
        *apply.HANDLERS,
        *capabilities.HANDLERS,
        *usage.HANDLERS,
        *namespace_policy.HANDLERS,
        *reviews.HANDLERS,
        *ops.HANDLERS,
        *transfer.HANDLERS,
        *modes.HANDLERS,
    ]
    require_coverage(handlers)
    return Litestar(
        route_handlers=[*handlers, console_router()],
        template_config=template_config(),
        state=State({"services": svc}),
        # before the body, the parameters and the hook below, in this order
        guards=[_authorize_then_exact_names],
        lifespan=[lifespan, replicas.report_clock],
        before_request=require_json,
        exception_handlers={
            ApiError: _on_api_error,
            HTTPException: _on_http_exception,
            **dict.fromkeys(DATABASE_DOWN, _on_database_down),
            asyncpg.exceptions.DataError: _on_data_error,
            **modes.EXCEPTION_HANDLERS,
            Exception: _on_unexpected,
        },
        request_max_body_size=settings.max_body_bytes,
        middleware=[
            own_writes(toolsets.cache),
            body_deadline(
                seconds=settings.body_read_timeout,
                metrics=metrics,
                drain_bytes=settings.max_body_bytes,
            ),
        ],
        openapi_config=OpenAPIConfig(
            title="MCP tool registry",
            version=__version__,
            description="Immutable, versioned MCP tool definitions; see docs/contract.md.",
            path="/schema",
            # the documents only: Litestar's viewer pages load their scripts from CDNs
            render_plugins=[JsonRenderPlugin(), YamlRenderPlugin()],
        ),
        logging_config=None,
    )


def asgi(
    settings: Settings, *, db: Db | None = None, clock: Callable[[], datetime] | None = None
) -> Observed:
    """The app as served: request ids, one log line per request, request metrics."""
    app = create_app(settings, db=db, clock=clock)
    return Observed(app, app.state.services.metrics, hot=HotRoutes(app))
