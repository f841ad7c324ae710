"""Bad input answers a clear 4xx problem and stores nothing (issue 6 grows this catalogue)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Registry
from tests.fixtures.seeds import DB_QUERY_V4

VERSIONS = "/v1/namespaces/billing/tools/db.query/versions"

CASES: list[tuple[str, str, str, dict[str, Any], int, str]] = [
    # name, method, path, request kwargs, status, problem type
    (
        "invalid json",
        "POST",
        VERSIONS,
        {"content": b'{"definition": ', "headers": {"content-type": "application/json"}},
        400,
        "invalid-json",
    ),
    (
        "wrong content type",
        "POST",
        VERSIONS,
        {
            "content": b"definition=x",
            "headers": {"content-type": "application/x-www-form-urlencoded"},
        },
        415,
        "unsupported-media-type",
    ),
    (
        "definition not an object",
        "POST",
        VERSIONS,
        {"json": {"definition": [1]}},
        422,
        "invalid-body",
    ),
    (
        "unknown body field",
        "POST",
        VERSIONS,
        {"json": {"definition": DB_QUERY_V4, "retires": [1]}},
        422,
        "invalid-body",
    ),
    (
        "name differs from path",
        "POST",
        "/v1/namespaces/billing/tools/other/versions",
        {"json": {"definition": DB_QUERY_V4}},
        422,
        "invalid-definition",
    ),
    (
        "tool name with a space",
        "POST",
        "/v1/namespaces/billing/tools/db%20query/versions",
        {"json": {"definition": dict(DB_QUERY_V4, name="db query")}},
        400,
        "invalid-request",
    ),
    (
        "namespace off the rule",
        "POST",
        "/v1/namespaces/-bad/tools/db.query/versions",
        {"json": {"definition": DB_QUERY_V4}},
        400,
        "invalid-request",
    ),
    (
        "ref to a missing target",
        "POST",
        VERSIONS,
        {
            "json": {
                "definition": dict(
                    DB_QUERY_V4,
                    inputSchema={"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}},
                )
            }
        },
        422,
        "invalid-definition",
    ),
    (
        "retire a version that does not exist",
        "POST",
        VERSIONS,
        {"json": {"definition": DB_QUERY_V4, "retire": [7]}},
        422,
        "version-not-found",
    ),
    (
        "unknown converter op",
        "POST",
        VERSIONS,
        {
            "json": {
                "definition": DB_QUERY_V4,
                "converters": [{"from": 1, "ops": [{"op": "teleport"}]}],
            }
        },
        422,
        "version-not-found",
    ),
    ("version not a number", "GET", f"{VERSIONS}/three", {}, 400, "invalid-request"),
    ("version zero", "GET", f"{VERSIONS}/0", {}, 400, "invalid-request"),
    ("digest malformed", "GET", "/v1/digests/sha256:xyz", {}, 400, "invalid-request"),
    ("unknown route", "GET", "/v1/nothing", {}, 404, "not-found"),
    (
        "NUL character in a description",
        "POST",
        VERSIONS,
        {"json": {"definition": dict(DB_QUERY_V4, description="a\u0000b")}},
        422,
        "invalid-body",
    ),
    (
        "number past double range",
        "POST",
        VERSIONS,
        {
            "content": b'{"definition": {"name": '
            b'"db.query", "inputSchema": {"type": "object", "maximum": 1e400}}}',
            "headers": {"content-type": "application/json"},
        },
        400,
        "invalid-json",
    ),
    (
        "body too large",
        "POST",
        VERSIONS,
        {
            "content": b'{"definition": {"name": "' + b"x" * (5 * 1024 * 1024) + b'"}}',
            "headers": {"content-type": "application/json"},
        },
        413,
        "body-too-large",
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "problem"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
async def test_bad_input_is_a_clear_problem_and_stores_nothing(
    registry: Registry, method: str, path: str, kwargs: dict[str, Any], status: int, problem: str
) -> None:
    answer = await registry.client.request(method, path, **kwargs)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    body = answer.json()
    assert body["type"].endswith("/" + problem)
    assert body["status"] == status
    assert body["detail"]
    assert (await registry.client.get("/healthz")).status_code == 200
    history = await registry.client.get(VERSIONS)
    assert history.status_code == 404, "nothing was stored"
