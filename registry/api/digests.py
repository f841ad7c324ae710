"""Digest lookups, split by what can change (docs/contract.md amendment on digests).

* `GET /v1/digests/{digest}`: where the digest is published (namespace, tool,
  version) and each version's state. Both change: the same definition can be
  published in another namespace, a version is deprecated or retired. So it
  is served with `Cache-Control: no-cache` and an `ETag` (the SHA-256 of the
  answer): a cache keeps it and revalidates it with `If-None-Match` (304).
* `GET /v1/digests/{digest}/definition`: the definition the digest names, as
  the RFC 8785 canonical JSON it is computed from (without `_meta`). That
  never changes, so it is `immutable` for a year, its `ETag` is the digest
  itself, and the body's SHA-256 is the digest: a client can check it.

Both answer only what the caller may read: with reads closed an anonymous
caller gets 401 before anything is looked up (whatever exists), and a token
sees the versions of the namespaces it may read; a digest published only where
it may not read is a 404, exactly as one never published.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
from litestar import Request, Response, get
from litestar.openapi.datastructures import ResponseSpec

from registry import store
from registry.api.params import DigestText
from registry.api.problems import (
    GUARDED_PROBLEMS,
    PARAMETER_PROBLEMS,
    SERVER_PROBLEMS,
    ApiError,
    problem_responses,
)
from registry.api.services import principal, replica_read, services
from registry.api.sync import etag_matches
from registry.api.wire import DigestAnswer, DigestMatch
from registry.canonical import canonical_json
from registry.store import Version

__all__ = ["HANDLERS", "digest_answer"]

IMMUTABLE = "max-age=31536000, immutable"
REVALIDATE = "no-cache"


async def _visible(request: Request[Any, Any, Any], digest: str) -> list[Version]:
    svc = services(request)
    who = await principal(request)

    def readable(found: list[Version]) -> list[Version]:
        return [v for v in found if who.readable(v.namespace, svc.settings.open_reads)]

    found = await replica_read(
        request,
        lambda db: store.find_digest(db, digest),
        lambda rows: bool(readable(rows)),
    )
    visible = readable(found)
    if not visible:
        raise ApiError("not-found", f"no registered version has digest {digest}")
    return visible


async def digest_answer(request: Request[Any, Any, Any], digest: str) -> DigestAnswer:
    """What `GET /v1/digests/{digest}` answers (the console's lookup page shows it too)."""
    visible = await _visible(request, digest)
    return DigestAnswer(
        digest=digest,
        definition_url=_definition_path(digest),
        matches=[
            DigestMatch(v.namespace, v.tool, v.version, v.state, v.created_at, v.sunset)
            for v in visible
        ],
    )


def _definition_path(digest: str) -> str:
    return f"/v1/digests/{digest}/definition"


@get(
    "/v1/digests/{digest:str}",
    summary="Where a digest is published and each version's state (revalidate: ETag)",
    media_type="application/json",
    responses={
        **problem_responses(*GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *SERVER_PROBLEMS),
        200: ResponseSpec(
            data_container=DigestAnswer,
            generate_examples=False,
            description="The versions with this digest the caller may read; no-cache, ETag",
        ),
        304: ResponseSpec(data_container=None, description="Not modified: the ETag is current"),
    },
)
async def lookup_digest(request: Request[Any, Any, Any], digest: DigestText) -> Response[Any]:
    body = msgspec.json.encode(await digest_answer(request, digest))
    etag = "sha256:" + hashlib.sha256(body).hexdigest()
    headers = {
        "ETag": f'"{etag}"',
        "Cache-Control": REVALIDATE,
        "Vary": "Authorization",
        "Link": f'<{_definition_path(digest)}>; rel="describedby"',
    }
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(b"", status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


@get(
    "/v1/digests/{digest:str}/definition",
    summary="The definition a digest names, as its canonical JSON (immutable)",
    media_type="application/json",
    responses={
        **problem_responses(*GUARDED_PROBLEMS, *PARAMETER_PROBLEMS, "not-found", *SERVER_PROBLEMS),
        200: ResponseSpec(
            data_container=dict[str, Any],
            generate_examples=False,
            description="RFC 8785 canonical JSON of the definition without _meta; "
            "its SHA-256 is the digest",
        ),
        304: ResponseSpec(data_container=None, description="Not modified: the ETag is current"),
    },
)
async def digest_definition(request: Request[Any, Any, Any], digest: DigestText) -> Response[Any]:
    visible = await _visible(request, digest)
    # Every match has this digest, so each gives the same bytes; the first will do.
    definition = {k: v for k, v in visible[0].definition.items() if k != "_meta"}
    shared = "public" if services(request).settings.open_reads else "private"
    headers = {
        "ETag": f'"{digest}"',
        "Cache-Control": f"{shared}, {IMMUTABLE}",
        "Vary": "Authorization",
    }
    if etag_matches(request.headers.get("if-none-match"), digest):
        return Response(b"", status_code=304, headers=headers)
    return Response(canonical_json(definition), media_type="application/json", headers=headers)


HANDLERS = [lookup_digest, digest_definition]
