"""Isolation between namespaces and the handling of token secrets (issue 6).

A token scoped to one namespace can do nothing to another (write or, reads
being closed, read); `*:admin` can do all of it; a revoked token stops at the
next request; a secret is never logged; the bootstrap token is compared in
constant time; stored tokens are kept and looked up by SHA-256 hash only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest
import structlog

from registry import store
from registry.api import auth
from registry.canonical import digest
from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.fixtures.seeds import DB_QUERY_V3, SEARCH_V1

BILLING = "/v1/namespaces/billing"
TOOL = f"{BILLING}/tools/db.query"


def _with_property(definition: dict[str, Any], name: str) -> dict[str, Any]:
    schema = definition["inputSchema"]
    properties = {**schema["properties"], name: {"type": "boolean"}}
    return {**definition, "inputSchema": {**schema, "properties": properties}}


V2 = _with_property(DB_QUERY_V3, "explain")  # additive on v1
V3 = _with_property(V2, "dry_run")
V4 = _with_property(V3, "trace")
CAPTURED = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {"listChanged": True}},
    "serverInfo": {"name": "billing", "version": "1.4.0"},
}


@dataclass(frozen=True)
class Op:
    name: str
    method: str
    path: str
    body: Any  # JSON, or None for no body
    allowed: int  # the status for `*:admin`
    scoped: int = 403  # the status for a token scoped to another namespace


# Everything a caller can do to billing, in an order where each succeeds for *:admin.
OPS = [
    Op("read the toolset", "GET", f"{BILLING}/toolset", None, 200),
    Op("list the tools", "GET", f"{BILLING}/tools", None, 200),
    Op("read the history", "GET", f"{TOOL}/versions", None, 200),
    Op("read a version", "GET", f"{TOOL}/versions/1", None, 200),
    Op("diff two versions", "GET", f"{TOOL}/versions/2/diff?against=1", None, 200),
    Op("look up a digest", "GET", f"/v1/digests/{digest(DB_QUERY_V3)}", None, 200, scoped=404),
    Op("check a definition", "POST", f"{TOOL}/check", {"definition": V3}, 200),
    Op(
        "verify a listing",
        "POST",
        f"{BILLING}/verify",
        {"protocolVersion": "2025-06-18", "tools": [V2]},
        200,
    ),
    Op("create the namespace", "PUT", BILLING, None, 200),
    Op("publish", "POST", f"{TOOL}/versions", {"definition": V3}, 201),
    Op("deprecate", "POST", f"{TOOL}/versions/1/deprecate", None, 200),
    Op("register a converter", "POST", f"{TOOL}/converters", {"from": 1, "to": 2, "ops": []}, 201),
    Op(
        "set an alias",
        "PUT",
        f"{BILLING}/aliases/db_query_v2",
        {"target": "db.query", "contract": {"tool": "db.query", "version": 2}},
        201,
    ),
    Op("put capabilities", "PUT", f"{BILLING}/capabilities", CAPTURED, 201),
    Op("read capabilities", "GET", f"{BILLING}/capabilities", None, 200),
    Op("read the policy", "GET", f"{BILLING}/policy", None, 200),
    Op("set the policy", "PUT", f"{BILLING}/policy", {"gating": True}, 200),
    Op(
        "check methods against capabilities",
        "POST",
        f"{BILLING}/capabilities/check",
        {"methods": ["tools/list"]},
        200,
    ),
    Op(
        "plan a bundle",
        "POST",
        "/v1/apply?plan=true",
        {"manifests": [{"namespace": "billing", "tool": V4}]},
        200,
    ),
    Op(
        "apply a bundle",
        "POST",
        "/v1/apply",
        {"manifests": [{"namespace": "billing", "tool": V4}]},
        200,
    ),
    Op("read billing's audit log", "GET", "/v1/audit?namespace=billing", None, 200),
    Op("retire", "POST", f"{TOOL}/versions/1/retire", None, 200),
]


async def _token(registry: Registry, *scopes: str, secret: str | None = None) -> tuple[str, str]:
    """A stored token (its secret and id), as `registry token create` makes one."""
    secret = secret or "mtr_isolation_" + hashlib.sha256(repr(scopes).encode()).hexdigest()[:24]
    conn = await asyncpg.connect(registry.database_url)
    try:
        token = await store.create_token(
            conn, store.hash_token(secret), scopes, actor=None, request_id=None
        )
    finally:
        await conn.close()
    return secret, token.id


async def _seed(registry: Registry) -> None:
    for path, definition in (
        (f"{TOOL}/versions", DB_QUERY_V3),
        (f"{TOOL}/versions", V2),
        ("/v1/namespaces/search/tools/search/versions", SEARCH_V1),
    ):
        answer = await registry.client.post(path, json={"definition": definition})
        assert answer.status_code == 201, answer.text


async def _state(registry: Registry) -> tuple[Any, ...]:
    """What the forbidden calls must leave as it was."""
    history = (await registry.client.get(f"{TOOL}/versions")).json()
    aliases = (await registry.client.get(f"{BILLING}/toolset")).json().get("aliases")
    audit = (await registry.client.get("/v1/audit", params={"limit": 1000})).json()["events"]
    return history, aliases, [event["id"] for event in audit]


async def _call(client: Any, op: Op) -> Any:
    if op.body is None:
        return await client.request(op.method, op.path)
    return await client.request(op.method, op.path, json=op.body)


@pytest.mark.parametrize("scope", ["search:admin", "search:publish", "search:read"])
async def test_a_token_of_one_namespace_can_do_nothing_to_another(
    registry: Registry, scope: str
) -> None:
    await _seed(registry)
    secret, token_id = await _token(registry, scope)
    before = await _state(registry)
    async with registry.with_token(secret) as client:
        for op in OPS:
            answer = await _call(client, op)
            assert answer.status_code == op.scoped, (op.name, answer.text)
            problem = answer.json()
            if op.scoped == 403:
                assert problem["type"].endswith("/forbidden"), (op.name, problem)
                # a bundle from a token that may publish nowhere is refused before it is read
                assert f"token {token_id} has no billing:" in problem["detail"] or (
                    op.path.startswith("/v1/apply")
                    and scope == "search:read"
                    and f"token {token_id} has no publish scope (or a higher one) on any namespace"
                    in problem["detail"]
                ), (op.name, problem)
        listed = (await client.get("/v1/namespaces")).json()["namespaces"]
        assert [n["name"] for n in listed] == ["search"]
        assert (await client.get("/v1/namespaces/search/toolset")).status_code == 200
    assert await _state(registry) == before, "nothing changed in billing"


async def test_star_admin_can_do_all_of_it(registry: Registry) -> None:
    await _seed(registry)
    secret, _ = await _token(registry, "*:admin")
    async with registry.with_token(secret) as client:
        for op in OPS:
            answer = await _call(client, op)
            assert answer.status_code == op.allowed, (op.name, answer.text)
    versions = (await registry.client.get(f"{TOOL}/versions")).json()["versions"]
    assert [(v["version"], v["state"]) for v in versions] == [
        (1, "retired"),
        (2, "active"),
        (3, "active"),
        (4, "active"),
    ]


async def test_a_bundle_touching_another_namespace_applies_nothing(registry: Registry) -> None:
    await _seed(registry)
    secret, token_id = await _token(registry, "billing:publish")
    before = await _state(registry)
    bundle = {
        "manifests": [
            {"namespace": "billing", "tool": V3},
            {"namespace": "search", "tool": {**SEARCH_V1, "description": "Search it all."}},
        ]
    }
    async with registry.with_token(secret) as client:
        for path in ("/v1/apply", "/v1/apply?plan=true"):
            answer = await client.post(path, json=bundle)
            assert answer.status_code == 403, answer.text
            assert f"token {token_id} has no search:publish" in answer.json()["detail"]
    assert await _state(registry) == before


async def _revoke(registry: Registry, token_id: str) -> None:
    conn = await asyncpg.connect(registry.database_url)
    try:
        await store.revoke_token(conn, token_id, actor=None, request_id=None)
    finally:
        await conn.close()


async def test_a_revoked_token_stops_at_the_next_request(registry: Registry) -> None:
    await _seed(registry)
    secret, token_id = await _token(registry, "billing:admin")
    async with registry.with_token(secret) as client:  # one kept-alive connection
        assert (await client.get(f"{BILLING}/toolset")).status_code == 200
        assert (await client.post(f"{TOOL}/versions", json={"definition": V3})).status_code == 201
        await _revoke(registry, token_id)
        for answer in (
            await client.get(f"{BILLING}/toolset"),
            await client.post(f"{TOOL}/versions", json={"definition": V4}),
            await client.post(f"{TOOL}/versions/1/retire"),
        ):
            assert answer.status_code == 401, answer.text
            assert answer.json()["detail"] == "the bearer token is unknown or revoked"
            assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    versions = (await registry.client.get(f"{TOOL}/versions")).json()["versions"]
    assert [v["version"] for v in versions] == [1, 2, 3]


async def test_token_secrets_are_never_logged(
    registry: Registry, capfd: pytest.CaptureFixture[str]
) -> None:
    await _seed(registry)
    secret, token_id = await _token(registry, "billing:publish")
    unknown = "mtr_never_stored_" + "x" * 24
    requests: list[tuple[str, str | None, Callable[[Any], Awaitable[Any]], int]] = [
        ("iso-ok", secret, lambda c: c.get(f"{BILLING}/toolset"), 200),
        ("iso-publish", secret, lambda c: c.post(f"{TOOL}/versions", json={"definition": V3}), 201),
        ("iso-forbidden", secret, lambda c: c.get("/v1/namespaces/search/toolset"), 403),
        ("iso-invalid", secret, lambda c: c.post(f"{TOOL}/versions", json={"definition": []}), 422),
        ("iso-unknown", unknown, lambda c: c.get(f"{BILLING}/toolset"), 401),
    ]
    with structlog.testing.capture_logs() as events:
        for request_id, bearer, call, status in requests:
            async with registry.with_token(bearer or "") as client:
                client.headers["X-Request-Id"] = request_id
                answer = await call(client)
                assert answer.status_code == status, (request_id, answer.text)
                assert secret not in answer.text and unknown not in answer.text
        async with registry.anonymous() as client:
            headers = {"Authorization": f"Basic {secret}", "X-Request-Id": "iso-malformed"}
            assert (await client.get(f"{BILLING}/toolset", headers=headers)).status_code == 401
        audit = await registry.client.get("/v1/audit", params={"limit": 1000})
    output = capfd.readouterr()
    logged = json.dumps(events, default=str) + output.out + output.err
    # the capture saw the requests (through structlog, or on the process's stdout/stderr)
    for request_id in ("iso-ok", "iso-publish", "iso-forbidden", "iso-unknown", "iso-malformed"):
        assert request_id in logged, f"no log line of {request_id} was captured"
    assert token_id in logged, "the token is logged by its id"
    for value in (secret, unknown, store.hash_token(secret)):
        assert value not in logged
        assert value not in audit.text


async def test_the_bootstrap_token_is_compared_in_constant_time(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spy: constant-time comparison is not observable from outside the process
    # (timing tests are too noisy to be a test), so the test checks the call itself.
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    wrong = "x" * len(ADMIN_TOKEN)
    assert auth.matches_secret(ADMIN_TOKEN, ADMIN_TOKEN)
    assert not auth.matches_secret(wrong, ADMIN_TOKEN)
    assert not auth.matches_secret(ADMIN_TOKEN, None)
    assert calls == [
        (ADMIN_TOKEN.encode(), ADMIN_TOKEN.encode()),
        (wrong.encode(), ADMIN_TOKEN.encode()),
    ]
    calls.clear()
    assert (await registry.client.get("/v1/namespaces")).status_code == 200
    async with registry.with_token(wrong) as client:
        assert (await client.get("/v1/namespaces")).status_code == 401
    assert (ADMIN_TOKEN.encode(), ADMIN_TOKEN.encode()) in calls
    assert (wrong.encode(), ADMIN_TOKEN.encode()) in calls


async def test_stored_tokens_are_kept_and_looked_up_by_sha256_only(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret, token_id = await _token(registry, "billing:read", secret="mtr_" + "s3cr3t" * 8)
    expected = "sha256:" + hashlib.sha256(secret.encode()).hexdigest()
    assert store.hash_token(secret) == expected
    conn = await asyncpg.connect(registry.database_url)
    try:
        rows = await conn.fetch("SELECT * FROM tokens")
    finally:
        await conn.close()
    assert [row["id"] for row in rows] == [token_id]
    (row,) = rows
    assert row["hash"] == expected
    for column, value in row.items():
        assert secret not in str(value), f"column {column} holds the secret"
    looked_up: list[Any] = []
    real = store.lookup_token

    async def spy(db: Any, token_hash: str) -> Any:
        looked_up.append(token_hash)
        return await real(db, token_hash)

    monkeypatch.setattr(store, "lookup_token", spy)
    async with registry.with_token(secret) as client:
        assert (await client.get("/v1/namespaces")).status_code == 200
    assert looked_up == [expected]
