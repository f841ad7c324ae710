"""The cheap request path (issue 28): hot routes, cached tokens, the request line.

Speed itself is measured by bench/fixed_cost_bench.py, never asserted here.
These tests hold what the cheap path must keep: the hot routes answer exactly
what Litestar answers; a verified token is looked up once and a revoked one is
refused; the request line is the one structlog made.
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

from registry.api import hot_routes
from registry.api.token_cache import TokenCache
from registry.store import repository
from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.fixtures.seeds import DB_QUERY_V3

TOOLSET = "/v1/namespaces/billing/toolset"
_VARYING = {"date", "server", "x-request-id"}


async def _create_token(database_url: str, secret: str, *scopes: str) -> str:
    conn = await asyncpg.connect(database_url)
    try:
        token = await repository.create_token(
            conn, repository.hash_token(secret), scopes, actor=None, request_id=None
        )
    finally:
        await conn.close()
    return token.id


async def _revoke(database_url: str, token_id: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await repository.revoke_token(conn, token_id, actor=None, request_id=None)
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


async def test_a_token_is_looked_up_once_and_refused_once_revoked(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookups: list[str] = []
    real = repository.lookup_token

    async def lookup_token(db: Any, token_hash: str) -> Any:  # a spy: counts lookups
        lookups.append(token_hash)
        return await real(db, token_hash)

    monkeypatch.setattr(repository, "lookup_token", lookup_token)
    secret = "mtr_cached_reader_secret_0123456789"
    token_id = await _create_token(registry.database_url, secret, "billing:read")
    async with registry.with_token(secret) as client:
        for _ in range(5):
            assert (await client.get(TOOLSET)).status_code == 200
        assert lookups == [repository.hash_token(secret)]
        await _revoke(registry.database_url, token_id)
        answer = await client.get(TOOLSET)
        assert answer.status_code == 401, answer.text
        assert answer.json()["detail"] == "the bearer token is unknown or revoked"
    # an unknown token is not remembered: created a moment later, it works at once
    later = "mtr_created_after_its_first_use_0123"
    async with registry.with_token(later) as client:
        assert (await client.get(TOOLSET)).status_code == 401
        await _create_token(registry.database_url, later, "billing:read")
        assert (await client.get(TOOLSET)).status_code == 200


async def test_the_cache_keeps_nothing_it_cannot_trust(database_url: str) -> None:
    secret = "mtr_cache_unit_secret_0123456789"
    token_id = await _create_token(database_url, secret, "billing:read")
    token_hash = repository.hash_token(secret)
    listening = [False]
    now = [0.0]
    cache = TokenCache(lambda: listening[0], max_tokens=2, max_age=60.0, clock=lambda: now[0])
    conn = await asyncpg.connect(database_url)
    try:
        # the LISTEN connection is down: nothing is remembered
        assert (await cache.lookup(conn, token_hash)) is not None
        assert len(cache) == 0
        listening[0] = True
        first = await cache.lookup(conn, token_hash)
        assert first is not None and first.id == token_id and len(cache) == 1
        assert (await cache.lookup(conn, "sha256:unknown")) is None
        assert len(cache) == 1  # unknown tokens are not remembered
        # remembered for max_age at most: past it, the revocation (unheard here) is found
        now[0] = 61.0
        await _revoke(database_url, token_id)
        assert (await cache.lookup(conn, token_hash)) is None
        # a revocation forgets the token, and `revoked(None)` every token
        other = "mtr_cache_unit_other_0123456789"
        other_id = await _create_token(database_url, other, "billing:read")
        assert (await cache.lookup(conn, repository.hash_token(other))) is not None
        cache.revoked(other_id)
        assert len(cache) == 0
        assert (await cache.lookup(conn, repository.hash_token(other))) is not None
        cache.revoked(None)
        assert len(cache) == 0
    finally:
        await conn.close()


async def test_a_lookup_overtaken_by_a_revocation_is_not_remembered(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race (a revocation heard while the lookup's query is in flight) cannot be
    # timed from outside: the lookup is wrapped to let the revocation in at that moment.
    secret = "mtr_overtaken_secret_0123456789"
    token_id = await _create_token(database_url, secret, "billing:read")
    cache = TokenCache(lambda: True)
    real = repository.lookup_token

    async def lookup_token(db: Any, token_hash: str) -> Any:
        found = await real(db, token_hash)
        cache.revoked(token_id)  # heard while the answer was on its way
        return found

    monkeypatch.setattr(repository, "lookup_token", lookup_token)
    conn = await asyncpg.connect(database_url)
    try:
        assert (await cache.lookup(conn, repository.hash_token(secret))) is not None
        assert len(cache) == 0
    finally:
        await conn.close()


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
