"""`GET/PUT /v1/mode` and `GET/PUT /v1/namespaces/{ns}/mode`: writes paused for a move.

    PUT /v1/mode {"mode": "read-only", "reason": "moving to db2"}         (*:admin)
    PUT /v1/namespaces/billing/mode {"mode": "import"}                     (billing:admin)
    PUT /v1/namespaces/billing/mode {"mode": null}     the namespace follows the registry again

Modes are `registry.store.modes`': `read-write`, `read-only`, `import`. The
database refuses the writes a mode forbids, whichever route they come by;
`EXCEPTION_HANDLERS` answers them 409 `not-writable`, naming the mode, where
it is set (`scope`) and the namespace. Reading a mode needs any valid token
(the registry's) or `ns:read` (a namespace's, with the registry's when it has
none of its own). Setting one is audited.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Final, Literal

import asyncpg  # type: ignore[import-untyped, unused-ignore]
import msgspec
import structlog
from litestar import Request, Response, get, put
from litestar.params import JSONBody

from registry.api.params import NamespaceName
from registry.api.problems import (
    BODY_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    ApiError,
    namespace_not_found,
    problem_responses,
)
from registry.api.services import actor, reader, request_id, require_namespace, services, writer
from registry.store import NamespaceNotFound
from registry.store.modes import Mode, ModeRecord, effective_mode, get_mode, not_writable, set_mode

__all__ = ["EXCEPTION_HANDLERS", "HANDLERS", "ModeAnswer", "ModeRequest"]

_log = structlog.get_logger("registry.api")


class ModeRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    # null (a namespace only): remove the namespace's own mode
    mode: Mode | None
    reason: Annotated[str, msgspec.Meta(max_length=2000)] = ""


class ModeAnswer(msgspec.Struct, frozen=True, kw_only=True):
    mode: Mode  # the mode writes meet
    scope: Literal["registry", "namespace"]  # where it is set
    reason: str
    updated_at: datetime
    namespace: str | None = None
    changed: bool = False


def _answer(record: ModeRecord, namespace: str | None, changed: bool = False) -> ModeAnswer:
    return ModeAnswer(
        mode=record.mode,
        scope="registry" if record.namespace is None else "namespace",
        reason=record.reason,
        updated_at=record.updated_at,
        namespace=namespace,
        changed=changed,
    )


@get(
    "/v1/mode",
    summary="The registry's mode: read-write, read-only or import",
    responses=problem_responses(*GUARDED_PROBLEMS, *SERVER_PROBLEMS),
)
async def get_registry_mode(request: Request[Any, Any, Any]) -> ModeAnswer:
    record = await get_mode(services(request).database)
    assert record is not None
    return _answer(record, None)


@put(
    "/v1/mode",
    summary="Set the registry's mode (audited)",
    status_code=200,
    responses=problem_responses(*GUARDED_PROBLEMS, *BODY_PROBLEMS, *SERVER_PROBLEMS),
)
async def put_registry_mode(
    request: Request[Any, Any, Any], data: JSONBody[ModeRequest]
) -> ModeAnswer:
    if data.mode is None:
        raise ApiError("invalid-body", "the registry always has a mode", pointer="/mode")
    svc = services(request)
    record, changed = await set_mode(
        svc.database,
        data.mode,
        reason=data.reason,
        actor=actor(request),
        request_id=request_id(request),
    )
    assert record is not None
    return _answer(record, None, changed)


@get(
    "/v1/namespaces/{ns:str}/mode",
    summary="The mode a namespace's writes meet: its own, else the registry's",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "namespace-not-found", *SERVER_PROBLEMS
    ),
)
async def get_namespace_mode(request: Request[Any, Any, Any], ns: NamespaceName) -> ModeAnswer:
    svc = await reader(request, ns)
    await require_namespace(svc, ns)
    return _answer(await effective_mode(svc.database, ns), ns)


@put(
    "/v1/namespaces/{ns:str}/mode",
    summary="Set a namespace's own mode, or remove it with null (audited)",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        *BODY_PROBLEMS,
        "namespace-not-found",
        *SERVER_PROBLEMS,
    ),
)
async def put_namespace_mode(
    request: Request[Any, Any, Any], ns: NamespaceName, data: JSONBody[ModeRequest]
) -> ModeAnswer:
    svc = await writer(request, ns, "admin")
    try:
        _, changed = await set_mode(
            svc.database,
            data.mode,
            namespace=ns,
            reason=data.reason,
            actor=actor(request),
            request_id=request_id(request),
        )
    except NamespaceNotFound as exc:
        raise namespace_not_found(ns) from exc
    return _answer(await effective_mode(svc.database, ns), ns, changed)


def _on_read_only(request: Request[Any, Any, Any], exc: Any) -> Response[Any]:
    refused = not_writable(exc)
    if refused is not None:
        error = ApiError(
            "not-writable",
            f"{refused.message}; "
            + (
                f"PUT /v1/namespaces/{refused.namespace}/mode"
                if refused.scope == "namespace"
                else "PUT /v1/mode"
            )
            + ' {"mode": "read-write"} lifts it',
            mode=refused.mode,
            scope=refused.scope,
            namespace=refused.namespace,
        )
    else:  # a hot standby (the database URL names a replica?)
        _log.warning("database_read_only", detail=str(exc), request_id=request_id(request))
        error = ApiError(
            "database-unavailable",
            "the database refuses writes (is the database URL a read replica?)",
            headers={"Retry-After": "5"},
        )
    return Response(
        error.problem(request_id(request)),
        status_code=error.status,
        media_type="application/problem+json",
        headers=error.headers,
    )


EXCEPTION_HANDLERS: Final[
    dict[int | type[Exception], Callable[[Request[Any, Any, Any], Any], Response[Any]]]
] = {asyncpg.exceptions.ReadOnlySQLTransactionError: _on_read_only}
HANDLERS = [get_registry_mode, put_registry_mode, get_namespace_mode, put_namespace_mode]
