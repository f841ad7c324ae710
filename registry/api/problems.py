"""RFC 9457 problem details: one `Problem` Struct, one `ApiError`, a stable `type` per error.

Every error the API answers is `application/problem+json`:

    {"type": "https://mcp-tool-registry.dev/problems/breaking-change",
     "title": "Breaking change without decisions", "status": 409,
     "detail": "...", "instance": "<request id>", ...extension members}

`PROBLEMS` is the catalogue of types: a handler raises `ApiError("not-found",
detail)` and the catalogue supplies the title and the status.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = [
    "PROBLEMS",
    "PROBLEM_BASE",
    "ApiError",
    "Problem",
    "ProblemType",
    "namespace_not_found",
]

PROBLEM_BASE: Final = "https://mcp-tool-registry.dev/problems/"


class ProblemType(msgspec.Struct, frozen=True):
    status: int
    title: str


PROBLEMS: Final[dict[str, ProblemType]] = {
    "invalid-json": ProblemType(400, "The body is not valid JSON"),
    "invalid-request": ProblemType(400, "The request is malformed"),
    "unauthenticated": ProblemType(401, "A valid bearer token is required"),
    "forbidden": ProblemType(403, "The token lacks the scope this needs"),
    "not-found": ProblemType(404, "No such resource"),
    "namespace-not-found": ProblemType(404, "The namespace does not exist"),
    "method-not-allowed": ProblemType(405, "Method not allowed"),
    "breaking-change": ProblemType(409, "Breaking change without decisions"),
    "route-lost": ProblemType(409, "The change would leave served versions without a route"),
    "conflict": ProblemType(409, "The request conflicts with what is stored"),
    "illegal-transition": ProblemType(409, "A lifecycle state only moves forward"),
    "version-in-use": ProblemType(409, "The version is still called (require_idle)"),
    "request-timeout": ProblemType(408, "The request was not received in time"),
    "body-too-large": ProblemType(413, "The body is larger than the limit"),
    "unsupported-media-type": ProblemType(415, "The body must be application/json"),
    "invalid-body": ProblemType(422, "The body does not have the expected shape"),
    "invalid-definition": ProblemType(422, "The tool definition is invalid"),
    "version-not-found": ProblemType(422, "The request names a version that does not exist"),
    "converter-invalid": ProblemType(422, "The converter operations are invalid"),
    "converter-unverified": ProblemType(422, "The converter does not repair every breaking change"),
    "request-invalid": ProblemType(422, "The request contradicts itself"),
    "invalid-protocol-version": ProblemType(422, "Unknown protocol revision"),
    # nginx's status for a client that closed the connection before the answer
    "client-closed": ProblemType(499, "The client closed the request"),
    "database-unavailable": ProblemType(503, "The database is unavailable"),
    "not-ready": ProblemType(503, "The service is not ready"),
    "internal-error": ProblemType(500, "Internal error"),
}


class Problem(msgspec.Struct, omit_defaults=True):
    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    pointer: str | None = None  # a JSON Pointer into the request body, where one applies
    errors: list[dict[str, Any]] | None = None
    report: Any = None
    reports: Any = None
    decisions: Any = None
    namespace: str | None = None  # namespace-not-found: the namespace named
    usage: Any = None  # version-in-use: who still calls the version


class ApiError(Exception):
    """Raised by a handler; answered as the problem `code` of `PROBLEMS`."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        pointer: str | None = None,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        if code not in PROBLEMS:
            raise KeyError(f"unknown problem type {code!r}")
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.pointer = pointer
        self.headers = headers or {}
        self.extensions = extensions

    @property
    def status(self) -> int:
        return PROBLEMS[self.code].status

    def problem(self, instance: str | None) -> Problem:
        kind = PROBLEMS[self.code]
        return Problem(
            type=PROBLEM_BASE + self.code,
            title=kind.title,
            status=kind.status,
            detail=self.detail,
            instance=instance,
            pointer=self.pointer or None,
            **self.extensions,
        )


def namespace_not_found(ns: str) -> ApiError:
    """404 for a namespace that does not exist, saying how one is created."""
    return ApiError(
        "namespace-not-found",
        f"namespace {ns!r} does not exist; namespaces are created explicitly: "
        f"PUT /v1/namespaces/{ns} with a token holding {ns}:admin, or `registry apply` "
        "of a manifest naming it with such a token",
        namespace=ns,
    )


def problem_responses(*statuses: int) -> dict[int, Any]:
    """OpenAPI `responses` of a route: these statuses answer a `Problem` (problem+json)."""
    from litestar.openapi.datastructures import ResponseSpec

    titles: dict[int, list[str]] = {}
    for kind in PROBLEMS.values():
        titles.setdefault(kind.status, []).append(kind.title)
    return {
        status: ResponseSpec(
            data_container=Problem,
            generate_examples=False,
            description="; ".join(titles.get(status, ["Problem"])),
            media_type="application/problem+json",
        )
        for status in statuses
    }


# Every route may answer these; routes add their own (404, 409, 413, 415, 422).
COMMON_PROBLEMS: Final = (400, 401, 403, 500, 503)


def also_answers(status: int, body: type[Any], description: str) -> dict[int, Any]:
    """OpenAPI: a route that answers `status` with `body` besides its default status."""
    from litestar.openapi.datastructures import ResponseSpec

    return {
        status: ResponseSpec(data_container=body, generate_examples=False, description=description)
    }
