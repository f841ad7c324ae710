"""Access is decided before any other work (issue 18, item 1).

Litestar guards run before the body is read and before parameters are parsed;
`registry.api.access` is that guard. An anonymous write is a 401 whatever it
carries, a token without the route's scope a 403 whatever it carries; a body
is read and parsed only for a caller who may make the request.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litestar import get

from registry.canonical import digest
from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.api.test_isolation import OPS, _seed, _token
from tests.fixtures.seeds import DB_QUERY_V3

BIG = 4 * 1024 * 1024 - 64 * 1024  # under the 4 MiB body limit


def _garbled(op: Any) -> tuple[str, str, dict[str, Any]]:
    """The op with a body and a query nobody may send (not JSON, wrong type, bad numbers)."""
    path = op.path + ("&" if "?" in op.path else "?") + "limit=0&wait=-1&against=x"
    return op.method, path, {"content": b"[{not json", "headers": {"content-type": "text/plain"}}


async def test_anonymous_callers_get_401_whatever_they_send(registry: Registry) -> None:
    await _seed(registry)
    unknown = "/v1/digests/sha256:" + "0" * 64
    async with registry.anonymous() as anonymous:
        for op in OPS:
            for method, path, extra in (
                (op.method, op.path, {"json": op.body} if op.body is not None else {}),
                _garbled(op),
            ):
                answer = await anonymous.request(method, path, **extra)
                assert answer.status_code == 401, (op.name, path, answer.text)
                assert answer.json()["type"].endswith("/unauthenticated")
        for path in ("/v1/namespaces/Not_A_Name", "/v1/namespaces/billing%0a"):
            assert (await anonymous.put(path)).status_code == 401
        assert (await anonymous.get(unknown)).status_code == 401
        assert (await anonymous.get("/v1/audit?limit=0")).status_code == 401


async def test_an_anonymous_apply_of_nothing_is_refused(registry: Registry) -> None:
    async with registry.anonymous() as anonymous:
        for path in ("/v1/apply", "/v1/apply?plan=true"):
            answer = await anonymous.post(path, json={"manifests": []})
            assert answer.status_code == 401, answer.text


async def test_a_token_without_the_scope_is_refused_before_its_body(registry: Registry) -> None:
    await _seed(registry)
    secret, token_id = await _token(registry, "search:publish")
    async with registry.with_token(secret) as client:
        for op in OPS:
            # apply and audit name their namespaces in the body or the query: parsed first
            if op.scoped != 403 or op.path.startswith(("/v1/apply", "/v1/audit")):
                continue
            method, path, extra = _garbled(op)
            answer = await client.request(method, path, **extra)
            assert answer.status_code == 403, (op.name, answer.text)
            assert f"token {token_id} has no billing:" in answer.json()["detail"]


async def test_an_anonymous_body_is_answered_before_it_is_sent(registry: Registry) -> None:
    """Headers announce 4 MiB; 64 KiB follow and nothing more. The 401 comes anyway:
    the server never waited for the body (before, it read it all, then refused)."""
    host, port = registry.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(
            f"POST /v1/apply HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {BIG}\r\n\r\n".encode()
            + b"["
            + b'{"a": 1},' * (64 * 1024 // 9)
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), timeout=30)
    finally:
        writer.transport.abort()
    assert status.startswith(b"HTTP/1.1 401"), status


async def test_a_large_anonymous_body_is_never_parsed(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from registry.api import bodies

    parsed: list[int] = []
    real = bodies.check_body

    async def counting(request: Any, raw: bytes) -> None:
        parsed.append(len(raw))
        await real(request, raw)

    monkeypatch.setattr(bodies, "check_body", counting)
    body = b"[" + b",".join([b'{"a": 1, "b": [1, 2, 3]}'] * (BIG // 26)) + b"]"
    headers = {"content-type": "application/json"}
    async with registry.anonymous() as anonymous:
        for path in ("/v1/apply", "/v1/namespaces/billing/tools/db.query/versions"):
            answer = await anonymous.post(path, content=body, headers=headers)
            assert answer.status_code == 401, answer.text
    assert parsed == []
    # The same body from the admin is parsed (the spy sees it), then refused for its shape.
    answer = await registry.client.post("/v1/apply", content=body, headers=headers)
    assert answer.status_code in (400, 422), answer.text
    assert parsed == [len(body)]


async def test_metrics_can_need_a_token(database_url: str) -> None:
    import httpx

    app = await serve(database_url, metrics_token="scrape-secret")
    try:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            assert (await client.get("/metrics")).status_code == 401
            for wrong in ("nope", ADMIN_TOKEN):
                headers = {"Authorization": f"Bearer {wrong}"}
                assert (await client.get("/metrics", headers=headers)).status_code == 401
            right = await client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
            assert right.status_code == 200
            assert "registry_http_requests_total" in right.text
            assert (await client.get("/healthz")).status_code == 200
    finally:
        await app.stop()


async def test_open_reads_let_anonymous_callers_read_but_never_write(database_url: str) -> None:
    import httpx

    app = await serve(database_url, open_reads=True)
    try:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as admin:
            admin.headers["Authorization"] = f"Bearer {ADMIN_TOKEN}"
            await admin.post(
                "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
            )
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as anonymous:
            assert (await anonymous.get("/v1/namespaces")).status_code == 200
            assert (await anonymous.get(f"/v1/digests/{digest(DB_QUERY_V3)}")).status_code == 200
            assert (await anonymous.get("/v1/namespaces/billing/toolset")).status_code == 200
            assert (await anonymous.post("/v1/apply", json={"manifests": []})).status_code == 401
            assert (await anonymous.get("/v1/audit")).status_code == 401
    finally:
        await app.stop()


def test_every_registry_route_has_an_access_rule() -> None:
    from registry.api import access

    @get("/unlisted")
    async def unlisted() -> None:
        return None

    unlisted.fn.__module__ = "registry.api.somewhere"
    with pytest.raises(ValueError, match="without an access rule in NEEDS: unlisted"):
        access.require_coverage([unlisted])


async def test_the_open_endpoints_answer_anyone(registry: Registry) -> None:
    """The endpoints the README lists as open; /metrics names no namespace."""
    await _seed(registry)  # requests to billing and search, counted by route template
    async with registry.anonymous() as anonymous:
        for path in ("/healthz", "/readyz", "/schema/openapi.json"):
            answer = await anonymous.get(path)
            assert answer.status_code == 200, (path, answer.text)
        # /metrics needs a token by default (issue 24): any valid one
        assert (await anonymous.get("/metrics")).status_code == 401
        metrics = (await registry.client.get("/metrics")).text
        assert "billing" not in metrics and ADMIN_TOKEN not in metrics
