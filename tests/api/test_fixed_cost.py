"""The cheap request path (issue 28): hot routes, cached tokens, the request line.

Speed itself is measured by bench/fixed_cost_bench.py, never asserted here.
These tests hold what the cheap path must keep: the hot routes answer exactly
what Litestar answers; the tokens of concurrent requests are looked up by one
query, and a revoked one is refused at its next request; the request line is
the one structlog made.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from typing import Any

import asyncpg
import pytest

from registry import store
from registry.api import hot_routes
from registry.api.token_lookups import TokenLookups
from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.fixtures.seeds import DB_QUERY_V3

TOOLSET = "/v1/namespaces/billing/toolset"
_VARYING = {"date", "server", "x-request-id"}


async def _create_token(database_url: str, secret: str, *scopes: str) -> str:
    conn = await asyncpg.connect(database_url)
    try:
        token = await store.create_token(
            conn, store.hash_token(secret), scopes, actor=None, request_id=None
        )
    finally:
        await conn.close()
    return token.id


async def _revoke(database_url: str, token_id: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await store.revoke_token(conn, token_id, actor=None, request_id=None)
    finally:
        await conn.close()


def _spy_on_hot_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What `HotRoutes.answer` returned, in order. A spy: which layer answered is not
    observable from outside, by design (the answers are the same)."""
    answered: list[bool] = []
    real = hot_routes.HotRoutes.answer

    async def answer(self: hot_routes.HotRoutes, *args: Any) -> bool:
        result = await real(self, *args)
        answered.append(result)
        return result

    monkeypatch.setattr(hot_routes.HotRoutes, "answer", answer)
    return answered


async def test_hot_routes_answer_what_litestar_answers(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    published = await registry.client.post(
        "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
    )
    assert published.status_code == 201, published.text
    etag = (await registry.client.get(TOOLSET)).headers["etag"]
    reader = "mtr_hot_reader_secret_0123456789"
    await _create_token(registry.database_url, reader, "search:read")
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    cases: list[tuple[str, dict[str, str], int]] = [
        ("/healthz", {}, 200),
        (TOOLSET, admin, 200),
        (TOOLSET, {**admin, "If-None-Match": etag}, 304),
        (TOOLSET, {**admin, "If-None-Match": '"sha256:other"'}, 200),
        (TOOLSET, {}, 401),
        (TOOLSET, {"Authorization": "Basic abc"}, 401),
        (TOOLSET, {"Authorization": "Bearer mtr_never_stored"}, 401),
        (TOOLSET, {"Authorization": f"Bearer {reader}"}, 403),
        ("/v1/namespaces/nowhere/toolset", admin, 404),
        ("/v1/namespaces/Not_A_Name/toolset", admin, 400),
    ]
    answered = _spy_on_hot_answers(monkeypatch)
    async with registry.anonymous() as client:
        for path, headers, status in cases:
            same = {**headers, "X-Request-Id": "hot-route-test"}
            hot = await client.get(path, headers=same)
            # a query string (with no effect here) sends the request through Litestar
            routed = await client.get(path, headers=same, params={"wait": "0"})
            assert answered[-2:] == [True, False], path
            assert (hot.status_code, routed.status_code) == (status, status), (path, hot.text)
            assert hot.content == routed.content, path
            assert {k: v for k, v in hot.headers.items() if k not in _VARYING} == {
                k: v for k, v in routed.headers.items() if k not in _VARYING
            }, path
    metrics = (await registry.client.get("/metrics")).text
    assert 'route="/v1/namespaces/{ns}/toolset",status="304"' in metrics.replace(
        'method="GET",', ""
    )


async def test_tokens_are_looked_up_together_and_refused_once_revoked(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[int] = []  # spies: the queries, by the tokens each looked up
    one, many = store.lookup_token, store.lookup_tokens

    async def lookup_token(db: Any, token_hash: str) -> Any:
        batches.append(1)
        return await one(db, token_hash)

    async def lookup_tokens(db: Any, token_hashes: Any) -> Any:
        batches.append(len(token_hashes))
        return await many(db, token_hashes)

    monkeypatch.setattr(store, "lookup_token", lookup_token)
    monkeypatch.setattr(store, "lookup_tokens", lookup_tokens)
    secrets = ["mtr_batched_reader_a_0123456789", "mtr_batched_reader_b_0123456789"]
    token_ids = [await _create_token(registry.database_url, s, "billing:read") for s in secrets]
    clients = [registry.with_token(s) for s in secrets]
    try:
        answers = await asyncio.gather(*(clients[i % 2].get(TOOLSET) for i in range(40)))
        assert {a.status_code for a in answers} == {200}
        assert len(batches) < 40 and 2 in batches and max(batches) == 2, batches
        # the next request after the revocation commits is refused: its lookup is a
        # query sent after it arrived, on whichever connection
        await _revoke(registry.database_url, token_ids[0])
        refused, still = await asyncio.gather(clients[0].get(TOOLSET), clients[1].get(TOOLSET))
        assert refused.status_code == 401, refused.text
        assert refused.json()["detail"] == "the bearer token is unknown or revoked"
        assert still.status_code == 200
    finally:
        for client in clients:
            await client.aclose()
    # an unknown token is not remembered: created a moment later, it works at once
    later = "mtr_created_after_its_first_use_0123"
    async with registry.with_token(later) as client:
        assert (await client.get(TOOLSET)).status_code == 401
        await _create_token(registry.database_url, later, "billing:read")
        assert (await client.get(TOOLSET)).status_code == 200


async def test_a_failed_lookup_fails_every_request_of_its_batch(database_url: str) -> None:
    secret = "mtr_batch_unit_secret_0123456789"
    token_id = await _create_token(database_url, secret, "billing:read")
    tokens = TokenLookups()
    conn = await asyncpg.connect(database_url)
    try:
        found = await asyncio.gather(
            tokens.lookup(conn, store.hash_token(secret)),
            tokens.lookup(conn, "sha256:unknown"),
        )
        assert [t.id if t else None for t in found] == [token_id, None]
        assert tokens.queries == 1
    finally:
        await conn.close()
    failed = await asyncio.gather(
        tokens.lookup(conn, store.hash_token(secret)),
        tokens.lookup(conn, "sha256:unknown"),
        return_exceptions=True,
    )
    assert all(isinstance(f, asyncpg.InterfaceError) for f in failed), failed
    assert tokens.queries == 2


async def test_request_ids_are_new_per_request(registry: Registry) -> None:
    answers = await asyncio.gather(*(registry.client.get("/healthz") for _ in range(3)))
    ids = {a.headers["x-request-id"] for a in answers}
    assert len(ids) == 3
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


_BOTH_LINES = """
import structlog
from registry.logging_setup import configure_logging
from registry.api.request_log import log_request
configure_logging(json=True)
structlog.get_logger("registry.api").info(
    "request", request_id="r1", method="GET", path="/p", route="/p", status=200,
    duration_ms=1.25, actor=None,
)
log_request("r1", "GET", "/p", "/p", 200, 0.00125, actor=None)
"""


def test_the_request_line_is_the_one_structlog_wrote() -> None:
    lines = subprocess.run(
        [sys.executable, "-c", _BOTH_LINES], capture_output=True, check=True, timeout=60
    ).stdout.splitlines()
    assert len(lines) == 2, lines
    theirs, ours = (json.loads(line) for line in lines)
    assert list(ours) == list(theirs)
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z"
    assert re.fullmatch(stamp, theirs.pop("timestamp"))
    assert re.fullmatch(stamp, ours.pop("timestamp"))
    assert ours == theirs
