"""`GET /v1/export` and `POST /v1/import`: the registry's records as one streamed file.

    GET /v1/export?namespace=billing&namespace=docs&usage=true   -> application/jsonl
    POST /v1/import?mode=import   (body: such a file)            -> 201 ImportAnswer

The file is `registry.export_format`'s (docs/operations.md). Both directions
stream: the export is written from server-side cursors as the client reads it,
the import is checked and copied as its body arrives, so neither holds the
registry in memory. Admin only: an export or import of named namespaces needs
`ns:admin` on each (an import's, from its header, before any record is read),
of the whole registry `*:admin`. An export is audited (`registry.export`) once
its snapshot is taken, an import per namespace (`namespace.import`).

The import's body may take longer than the body read timeout to arrive, since
it is read as fast as the database takes it: the route is marked
`streamed_body` and the timeout bounds each wait for more of it instead
(`registry.api.deadlines`). It has no body size limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Final, Literal

import msgspec
from litestar import Request, get, post
from litestar.openapi.spec import OpenAPIMediaType as MediaTypeSpec
from litestar.openapi.spec import Operation, RequestBody, Schema
from litestar.params import Parameter, QueryParameter
from litestar.response import Stream

from registry.api.params import NAMESPACE_PATTERN, exact
from registry.api.problems import (
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    ApiError,
    namespace_not_found,
    problem_responses,
)
from registry.api.services import actor, principal, request_id, services
from registry.export_format import MEDIA_TYPE, Header, asplit_lines
from registry.store import NamespaceNotFound
from registry.store.transfer import ImportRefused, export_lines, import_lines, record_export

__all__ = ["HANDLERS", "IMPORT_MEDIA_TYPES", "ImportAnswer"]

# Also read: the older names of JSON Lines.
IMPORT_MEDIA_TYPES: Final = frozenset({MEDIA_TYPE, "application/x-ndjson", "application/jsonlines"})
CHUNK_BYTES: Final = 64 * 1024  # lines are sent in chunks about this big
_PROBLEM: Final = {"invalid": "import-refused", "exists": "conflict", "mode": "not-writable"}


class ImportAnswer(msgspec.Struct, frozen=True, kw_only=True):
    namespaces: list[str]  # created by the import
    counts: dict[str, int]  # records imported, by kind
    verified_digests: int  # versions whose digest was recomputed and matched
    exported_at: datetime
    registry_version: str  # the release that wrote the file


async def _chunks(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    buffered = [first]
    size = len(first)
    try:
        async for line in rest:
            buffered.append(line)
            size += len(line)
            if size >= CHUNK_BYTES:
                yield b"".join(buffered)
                buffered.clear()
                size = 0
        yield b"".join(buffered)
    finally:
        await rest.aclose()  # type: ignore[attr-defined]


@get(
    "/v1/export",
    summary="Export namespaces (every one by default) as a JSON Lines file, streamed",
    media_type=MEDIA_TYPE,
    response_description="The export file: a header line, one line per record, an end line",
    responses=problem_responses(
        *GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "namespace-not-found", *SERVER_PROBLEMS
    ),
)
async def export(
    request: Request[Any, Any, Any],
    namespace: Annotated[
        list[str] | None,
        QueryParameter(
            description="A namespace to export (repeat for several); none: the whole registry"
        ),
    ] = None,
    usage: bool = Parameter(default=False, description="Include usage counts"),
) -> Stream:
    for name in namespace or ():
        exact("namespace", name, NAMESPACE_PATTERN)
    who = await principal(request)
    scopes: list[str | None] = list(namespace) if namespace else [None]
    for scope in scopes:
        who.require(scope, "admin")
    svc = services(request)
    lines = export_lines(svc.database, namespace, usage=usage)
    try:
        first = await anext(lines)
    except NamespaceNotFound as exc:
        raise namespace_not_found(exc.namespace) from None
    header = msgspec.json.decode(first, type=Header)
    await record_export(svc.database, header, actor=actor(request), request_id=request_id(request))
    filename = "registry" if namespace is None else "-".join(header.namespaces[:3])
    return Stream(
        _chunks(first, lines),
        media_type=MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="{filename}.jsonl"'},
    )


@dataclass
class _ImportOperation(Operation):
    """The spec of `POST /v1/import`: its body is a file, read as a stream (Litestar
    documents only bodies it decodes itself)."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            description="An export file (docs/operations.md)",
            content={MEDIA_TYPE: MediaTypeSpec(schema=Schema(type="string"))},  # type: ignore[arg-type]
        )


async def _file_body(request: Request[Any, Any, Any]) -> None:
    """The route's own body check (instead of the app's JSON one): JSON Lines only."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in IMPORT_MEDIA_TYPES:
        raise ApiError(
            "unsupported-media-type", f"the body is {media or 'untyped'}; send {MEDIA_TYPE}"
        )


@post(
    "/v1/import",
    summary="Import an export file into new namespaces, all or nothing (streamed)",
    status_code=201,
    before_request=_file_body,
    request_max_body_size=None,
    opt={"streamed_body": True},
    operation_class=_ImportOperation,
    responses=problem_responses(
        *GUARDED_PROBLEMS,
        *PARAMETER_PROBLEMS,
        "request-timeout",
        "unsupported-media-type",
        "import-refused",
        "conflict",
        "not-writable",
        *SERVER_PROBLEMS,
    ),
)
async def import_file(
    request: Request[Any, Any, Any],
    mode: Literal["import", "read-only"] | None = Parameter(
        default=None,
        description="Give the imported namespaces this mode of their own "
        "(import: they refuse publishes until set read-write at the switch)",
    ),
) -> ImportAnswer:
    who = await principal(request)

    def admit(header: Header) -> None:
        scopes: list[str | None] = [*header.namespaces] if header.scope == "namespaces" else [None]
        for scope in scopes:
            who.require(scope, "admin")

    svc = services(request)
    try:
        summary = await import_lines(
            svc.database,
            asplit_lines(request.stream()),
            actor=actor(request),
            request_id=request_id(request),
            mode=mode,
            admit=admit,
        )
    except ImportRefused as exc:
        raise ApiError(_PROBLEM[exc.reason], str(exc), line=exc.line or None) from None
    return ImportAnswer(
        namespaces=summary.namespaces,
        counts=summary.counts,
        verified_digests=summary.verified_digests,
        exported_at=summary.exported_at,
        registry_version=summary.registry_version,
    )


HANDLERS = [export, import_file]
