"""RFC 9457 problem details: one `Problem` Struct, one `ApiError`, a stable `type` per error.

Every error the API answers is `application/problem+json`:

    {"type": "https://mcp-tool-registry.dev/problems/breaking-change",
     "title": "Breaking change without decisions", "status": 409,
     "detail": "...", "instance": "<request id>", ...extension members}

`PROBLEMS` is the catalogue of types: a handler raises `ApiError("not-found",
detail)` and the catalogue supplies the title and the status.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

__all__ = [
    "ANALYSIS_PROBLEMS",
    "BODY_PROBLEMS",
    "BUDGET_PROBLEMS",
    "GUARDED_PROBLEMS",
    "PARAMETER_PROBLEMS",
    "POLICY_PROBLEMS",
    "PROBLEMS",
    "PROBLEM_BASE",
    "SERVER_PROBLEMS",
    "WRITE_PROBLEMS",
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
    "four-eyes": ProblemType(403, "The namespace asks another token to approve this version"),
    "not-found": ProblemType(404, "No such resource"),
    "namespace-not-found": ProblemType(404, "The namespace does not exist"),
    "method-not-allowed": ProblemType(405, "Method not allowed"),
    "breaking-change": ProblemType(409, "Breaking change without decisions"),
    "route-lost": ProblemType(409, "The change would leave served versions without a route"),
    "conflict": ProblemType(409, "The request conflicts with what is stored"),
    "illegal-transition": ProblemType(409, "A lifecycle state only moves forward"),
    "version-in-use": ProblemType(409, "The version is still called (require_idle)"),
    "version-rejected": ProblemType(409, "This definition was rejected in review"),
    "not-writable": ProblemType(
        409, "The registry or the namespace is in a mode that refuses writes"
    ),
    "request-timeout": ProblemType(408, "The request was not received in time"),
    "too-many-requests": ProblemType(429, "The token's share of this limit is in use"),
    "body-too-large": ProblemType(413, "The body is larger than the limit"),
    "unsupported-media-type": ProblemType(415, "The body must be application/json"),
    "invalid-body": ProblemType(422, "The body does not have the expected shape"),
    "invalid-definition": ProblemType(422, "The tool definition is invalid"),
    "definition-too-large": ProblemType(422, "A definition is larger than a limit"),
    "analysis-over-budget": ProblemType(422, "The analysis did not finish within its budget"),
    "version-not-found": ProblemType(422, "The request names a version that does not exist"),
    "converter-invalid": ProblemType(422, "The converter operations are invalid"),
    "converter-unverified": ProblemType(422, "The converter does not repair every breaking change"),
    "request-invalid": ProblemType(422, "The request contradicts itself"),
    "acceptance-unmatched": ProblemType(422, "An acceptance names no breaking change"),
    "policy-invalid": ProblemType(422, "The namespace policy is invalid"),
    "invalid-protocol-version": ProblemType(422, "Unknown protocol revision"),
    "import-refused": ProblemType(422, "The export file was refused; nothing was imported"),
    # nginx's status for a client that closed the connection before the answer
    "client-closed": ProblemType(499, "The client closed the request"),
    "database-unavailable": ProblemType(503, "The database is unavailable"),
    "not-ready": ProblemType(503, "The service is not ready"),
    "analysis-busy": ProblemType(503, "Every analysis worker is busy"),
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
    limit: Any = None  # a limit met: {"name", "maximum"} and, for a cap, "found"
    line: int | None = None  # import-refused: the line of the file refused
    mode: str | None = None  # not-writable: the mode refusing the write ...
    scope: str | None = None  # ... and where it is set: "registry" or "namespace"


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

    def __reduce__(self) -> Any:
        # whole across a process boundary (registry.api.budget's workers raise it)
        return (_rebuilt, (self.code, self.detail, self.pointer, self.headers, self.extensions))

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


def _rebuilt(
    code: str,
    detail: str,
    pointer: str | None,
    headers: dict[str, str],
    extensions: dict[str, Any],
) -> ApiError:
    return ApiError(code, detail, pointer=pointer, headers=headers, **extensions)


def namespace_not_found(
    ns: str, *, near: str | None = None, pointer: str | None = None
) -> ApiError:
    """404 for a namespace that does not exist, saying how one is created (and, with
    `near`, the existing namespace the name is likely a typo of)."""
    hint = f" (did you mean {near!r}?)" if near else ""
    return ApiError(
        "namespace-not-found",
        f"namespace {ns!r} does not exist{hint}; namespaces are created explicitly: "
        f"PUT /v1/namespaces/{ns} with a token holding {ns}:admin, or `registry apply "
        f"--create-namespace {ns}` (or `create_namespace: true` in its manifest) with such "
        "a token",
        namespace=ns,
        pointer=pointer,
    )


def problem_responses(*codes: str) -> dict[int, Any]:
    """OpenAPI `responses` of a route: the problems it can answer, named by code.

    Each status gets a `Problem` whose `type` is an enum of just this route's
    types at that status, and a description listing them, so a client (and
    the fuzz test, which checks every answer against the spec) knows exactly
    what one operation may answer.
    """
    from litestar.openapi.datastructures import ResponseSpec

    by_status: dict[int, list[str]] = {}
    for code in dict.fromkeys(codes):
        by_status.setdefault(PROBLEMS[code].status, []).append(code)
    return {
        status: ResponseSpec(
            data_container=_problem_of(tuple(named)),
            generate_examples=False,
            description="; ".join(f"`{code}`: {PROBLEMS[code].title}" for code in named),
            media_type="application/problem+json",
        )
        for status, named in sorted(by_status.items())
    }


_PROBLEM_TYPES: dict[tuple[str, ...], type[msgspec.Struct]] = {}


def _problem_of(codes: tuple[str, ...]) -> type[msgspec.Struct]:
    """`Problem` with `type` one of `codes`' URIs; one Struct per set of codes, named for
    them (a component of the OpenAPI document)."""
    if codes not in _PROBLEM_TYPES:
        name = "Problem" + "Or".join(code.title().replace("-", "") for code in codes)
        uris = tuple(PROBLEM_BASE + code for code in codes)
        _PROBLEM_TYPES[codes] = msgspec.defstruct(
            name, [("type", Literal[uris])], bases=(Problem,), omit_defaults=True
        )
    return _PROBLEM_TYPES[codes]


# What a route answers by what it is, on top of its own problems:
SERVER_PROBLEMS: Final = ("internal-error", "database-unavailable")
GUARDED_PROBLEMS: Final = ("unauthenticated", "forbidden")  # needs a token or a scope
PARAMETER_PROBLEMS: Final = ("invalid-request",)  # path or query parameters
POLICY_PROBLEMS: Final = (  # the publishing rule's refusals of a request (registry.policy)
    "version-not-found",
    "converter-invalid",
    "converter-unverified",
    "request-invalid",
    "illegal-transition",
)
# What a route whose work runs in the analysis workers (registry.api.budget) may answer,
# and one that takes definitions in its body besides (their caps, registry.api.caps).
BUDGET_PROBLEMS: Final = ("analysis-over-budget", "too-many-requests", "analysis-busy")
ANALYSIS_PROBLEMS: Final = ("definition-too-large", *BUDGET_PROBLEMS)
WRITE_PROBLEMS: Final = ("not-writable",)  # a write to the registry's records (modes)
BODY_PROBLEMS: Final = (  # POST and PUT: a body is read and checked when one is sent
    "invalid-json",
    "request-timeout",
    "body-too-large",
    "unsupported-media-type",
    "invalid-body",
    *BUDGET_PROBLEMS,  # a large body is checked in an analysis worker (registry.api.bodies)
)


def also_answers(status: int, body: type[Any], description: str) -> dict[int, Any]:
    """OpenAPI: a route that answers `status` with `body` besides its default status."""
    from litestar.openapi.datastructures import ResponseSpec

    return {
        status: ResponseSpec(data_container=body, generate_examples=False, description=description)
    }
