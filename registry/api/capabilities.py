"""Capability fixtures of seed 004: the captured `initialize` result of a namespace, and checks."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get, post, put
from litestar.params import JSONBody

from registry import store
from registry.api.params import NamespaceName
from registry.api.problems import (
    BODY_PROBLEMS,
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    WRITE_PROBLEMS,
    ApiError,
    also_answers,
    namespace_not_found,
    problem_responses,
)
from registry.api.services import actor, reader, request_id, writer
from registry.policy.capabilities import (
    CapabilityError,
    CapturedInitialize,
    CheckResult,
    check_methods,
    parse_initialize,
)
from registry.store import NamespaceNotFound

__all__ = ["HANDLERS"]


class CapabilitiesRecord(msgspec.Struct):
    namespace: str
    seq: int
    created_at: Any
    initialize: CapturedInitialize


class MethodsRequest(msgspec.Struct, forbid_unknown_fields=True):
    methods: list[str]


@put(
    "/v1/namespaces/{ns:str}/capabilities",
    summary="Store a captured initialize result (immutable, versioned)",
    responses={
        **problem_responses(
            *GUARDED_PROBLEMS,
            *PARAMETER_PROBLEMS,
            *BODY_PROBLEMS,
            "namespace-not-found",
            *WRITE_PROBLEMS,
            *SERVER_PROBLEMS,
        ),
        **also_answers(201, CapabilitiesRecord, "A new record was stored"),
    },
)
async def put_capabilities(
    request: Request[Any, Any, Any], ns: NamespaceName, data: JSONBody[dict[str, Any]]
) -> Response[CapabilitiesRecord]:
    svc = await writer(request, ns)
    try:
        captured = parse_initialize(data)
    except CapabilityError as exc:
        raise ApiError("invalid-body", exc.message, pointer=exc.pointer or None) from exc
    try:
        record, created = await store.put_capabilities(
            svc.database,
            ns,
            msgspec.to_builtins(captured),
            actor=actor(request),
            request_id=request_id(request),
            create_namespace=False,
        )
    except NamespaceNotFound as exc:
        raise namespace_not_found(exc.namespace) from exc
    return Response(
        CapabilitiesRecord(ns, record.seq, record.created_at, captured),
        status_code=201 if created else 200,
    )


async def _latest(request: Request[Any, Any, Any], ns: str) -> tuple[Any, CapturedInitialize]:
    svc = await reader(request, ns)
    record = await store.get_capabilities(svc.database, ns)
    if record is None:
        raise ApiError("not-found", f"namespace {ns} has no captured capabilities")
    return record, parse_initialize(record.document)


@get(
    "/v1/namespaces/{ns:str}/capabilities",
    summary="The latest captured initialize result",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *SERVER_PROBLEMS
    ),
)
async def get_capabilities(
    request: Request[Any, Any, Any], ns: NamespaceName
) -> CapabilitiesRecord:
    record, captured = await _latest(request, ns)
    return CapabilitiesRecord(ns, record.seq, record.created_at, captured)


@post(
    "/v1/namespaces/{ns:str}/capabilities/check",
    summary="Which of these methods the captured capabilities do not support",
    status_code=200,
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, *BODY_PROBLEMS, "not-found", *SERVER_PROBLEMS
    ),
)
async def check_capabilities(
    request: Request[Any, Any, Any], ns: NamespaceName, data: JSONBody[MethodsRequest]
) -> CheckResult:
    _, captured = await _latest(request, ns)
    try:
        return check_methods(captured, data.methods)
    except CapabilityError as exc:
        raise ApiError("invalid-body", exc.message, pointer=exc.pointer or None) from exc


HANDLERS = [put_capabilities, get_capabilities, check_capabilities]
