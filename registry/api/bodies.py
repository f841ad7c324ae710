"""The request-body checks every JSON route shares, run after access is granted.

`require_json` is the app's `before_request` hook. Litestar runs it after the
guard of `registry.api.access`, so no body is read or parsed for a caller who
may not make the request. It refuses:

* a body that is not `application/json` (or `+json`): 415;
* a body larger than its route allows (`body_limit`): 413, from the
  `Content-Length` before anything is read, or once the bytes received pass
  it. A route that takes one definition (publish, check, a converter's
  operations: `ONE_DEFINITION` in its `opt`) allows `DEFINITION_BODY_FACTOR`
  times `Settings.definition_max_bytes`, room for the definition's
  indentation; every other route `Settings.max_body_bytes`;
* what `registry.api.json_body.check_document` refuses (depth, node count,
  duplicate keys, non-finite numbers, NUL): 400 or 422.

That strict check costs tens of milliseconds per MiB of pure Python: a body
larger than `INLINE_BODY_BYTES` is checked in an analysis worker
(`registry.api.budget`, within the request's budget and its token's share),
never on the event loop, so that it delays no other request. What remains on
the loop is msgspec's decoding for the handler (C, a few milliseconds per MiB).
`request.body()` is cached on the request: the handler reads the same bytes.
"""

from __future__ import annotations

from typing import Any, Final

from litestar import Request

from registry.api import analysis
from registry.api.json_body import check_document
from registry.api.problems import ApiError
from registry.api.services import services

__all__ = [
    "DEFINITION_BODY_FACTOR",
    "INLINE_BODY_BYTES",
    "ONE_DEFINITION",
    "body_limit",
    "check_body",
    "require_json",
]

JSON_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
ONE_DEFINITION: Final = {"one_definition": True}  # a route's `opt`: see the module docstring
DEFINITION_BODY_FACTOR: Final = 2
INLINE_BODY_BYTES: Final = 64 * 1024  # checked on the event loop below this: ~3 ms


def body_limit(request: Request[Any, Any, Any]) -> tuple[int, str]:
    """The most bytes the route's body may hold, and where that limit comes from."""
    settings = services(request).settings
    if request.route_handler.opt.get("one_definition"):
        return (
            settings.definition_max_bytes * DEFINITION_BODY_FACTOR,
            f"{DEFINITION_BODY_FACTOR} x REGISTRY_DEFINITION_MAX_BYTES, room for one "
            "definition; send it as compact JSON",
        )
    return settings.max_body_bytes, "the limit of every request body"


def _too_large(request: Request[Any, Any, Any], size: int | None) -> ApiError:
    limit, source = body_limit(request)
    sent = f" ({size} bytes)" if size is not None else ""
    return ApiError(
        "body-too-large",
        f"the body{sent} is larger than {limit} bytes, the limit here ({source})",
        limit={"name": "body_bytes", "maximum": limit},
    )


async def require_json(request: Request[Any, Any, Any]) -> None:
    if request.method not in JSON_BODY_METHODS:
        return
    length = request.headers.get("content-length")
    if length == "0" or (length is None and "transfer-encoding" not in request.headers):
        return
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise ApiError(
            "unsupported-media-type",
            f"the body is {media or 'untyped'}; send application/json",
        )
    limit, _ = body_limit(request)
    if length is not None and length.isdigit() and int(length) > limit:
        raise _too_large(request, int(length))
    raw = await request.body()
    if len(raw) > limit:  # sent without a Content-Length (chunked)
        raise _too_large(request, None)
    if raw.strip():
        await check_body(request, raw)


async def check_body(request: Request[Any, Any, Any], raw: bytes) -> None:
    """`check_document(raw)`: on the event loop when `raw` is small, else in a worker."""
    if len(raw) > INLINE_BODY_BYTES:
        await services(request).budget.run(request, analysis.checked_body, raw)
    else:
        check_document(raw)
