"""Bearer tokens and scopes: 401 without a valid token, 403 without the scope, revocation."""

from __future__ import annotations

from registry import store
from tests.api.conftest import Registry
from tests.fixtures.seeds import DB_QUERY_V4, SEARCH_V1


async def _token(registry: Registry, *scopes: str) -> tuple[str, str]:
    import asyncpg

    secret = "mtr_test_" + "_".join(scopes).replace(":", "-").replace("*", "all")
    conn = await asyncpg.connect(registry.database_url)
    try:
        token = await store.create_token(
            conn, store.hash_token(secret), scopes, actor=None, request_id=None
        )
    finally:
        await conn.close()
    return secret, token.id


async def test_writes_need_a_token_and_the_scope(registry: Registry) -> None:
    publish = "/v1/namespaces/billing/tools/db.query/versions"
    async with registry.anonymous() as anonymous:
        answer = await anonymous.post(publish, json={"definition": DB_QUERY_V4})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert answer.json()["type"].endswith("/unauthenticated")
        bad = await anonymous.post(
            publish, json={"definition": DB_QUERY_V4}, headers={"Authorization": "Bearer nope"}
        )
        assert bad.status_code == 401
        malformed = await anonymous.get("/v1/namespaces", headers={"Authorization": "Basic x"})
        assert malformed.status_code == 401

    billing, _ = await _token(registry, "billing:publish")
    reader, _ = await _token(registry, "billing:read")
    async with registry.with_token(billing) as client:
        assert (await client.post(publish, json={"definition": DB_QUERY_V4})).status_code == 201
        other = await client.post(
            "/v1/namespaces/search/tools/search/versions", json={"definition": SEARCH_V1}
        )
        assert other.status_code == 403
        assert "search:publish" in other.json()["detail"]
        assert (await client.get("/v1/namespaces/billing/toolset")).status_code == 200
        assert (await client.get("/v1/audit")).status_code == 403
    async with registry.with_token(reader) as client:
        assert (await client.get("/v1/namespaces/billing/toolset")).status_code == 200
        refused = await client.post(f"{publish}/1/retire")
        assert refused.status_code == 403


async def test_reads_are_closed_by_default(bare_registry: Registry) -> None:
    registry = bare_registry
    await registry.client.put("/v1/namespaces/billing")
    await registry.client.post(
        "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V4}
    )
    async with registry.anonymous() as anonymous:
        assert (await anonymous.get("/v1/namespaces/billing/toolset")).status_code == 401
        assert (await anonymous.get("/healthz")).status_code == 200
    search, _ = await _token(registry, "search:admin")
    async with registry.with_token(search) as client:
        assert (await client.get("/v1/namespaces/billing/toolset")).status_code == 403
        listed = await client.get("/v1/namespaces")
        assert listed.json()["namespaces"] == []


async def test_revoked_tokens_stop_working_at_once(registry: Registry) -> None:
    secret, token_id = await _token(registry, "*:admin")
    async with registry.with_token(secret) as client:
        assert (await client.get("/v1/namespaces")).status_code == 200
        import asyncpg

        conn = await asyncpg.connect(registry.database_url)
        try:
            await store.revoke_token(conn, token_id, actor=None, request_id=None)
        finally:
            await conn.close()
        assert (await client.get("/v1/namespaces")).status_code == 401


async def test_audit_names_the_token_and_the_request(registry: Registry) -> None:
    secret, token_id = await _token(registry, "billing:publish")
    async with registry.with_token(secret) as client:
        answer = await client.post(
            "/v1/namespaces/billing/tools/db.query/versions",
            json={"definition": DB_QUERY_V4},
            headers={"X-Request-Id": "req-123"},
        )
        assert answer.headers["x-request-id"] == "req-123"
    events = (await registry.client.get("/v1/audit", params={"namespace": "billing"})).json()
    publish = [e for e in events["events"] if e["action"] == "version.publish"]
    assert publish[0]["actor"] == token_id
    assert publish[0]["request_id"] == "req-123"
