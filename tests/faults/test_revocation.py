"""A long-poll does not outlive its token's revocation (issue 18, item 5).

Two replicas on one database. A token's long-polls wait on both; the token is
revoked the way `registry token revoke` does it (straight in the database, no
request to any replica); each replica hears `token_revoked` on its LISTEN
connection and answers its waiter 401 at once, instead of the next payload
(or a 304 at the end of the wait). A revocation that lands while a replica's
LISTEN connection is down is found when it reconnects.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import httpx

from registry import store
from tests.api.conftest import ServedApp
from tests.faults.conftest import Replicas
from tests.fixtures.seeds import DB_QUERY_V3

WAIT = 20  # seconds a long-poll may be held; a waiter never released answers 304 after it
TOOLSET = "/v1/namespaces/billing/toolset"


async def _reader_token(database_url: str) -> tuple[str, str]:
    secret = "mtr_revocation_test_secret_0123456789"
    conn = await asyncpg.connect(database_url)
    try:
        token = await store.create_token(
            conn, store.hash_token(secret), ["billing:read"], actor=None, request_id=None
        )
    finally:
        await conn.close()
    return secret, token.id


async def _seed(replicas: Replicas) -> str:
    published = await replicas.client.post(
        "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
    )
    assert published.status_code == 201, published.text
    return str((await replicas.client.get(TOOLSET)).headers["etag"])


def _services(app: ServedApp) -> Any:
    return app.server.config.app.app.state.services


async def _held(app: ServedApp, count: int) -> None:
    """Until `count` requests long-poll on this replica."""
    for _ in range(400):
        if _services(app).longpolls.waiting >= count:
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the long-polls were never held")


def _long_poll(url: str, secret: str, etag: str) -> Any:
    async def poll() -> httpx.Response:
        async with httpx.AsyncClient(base_url=url, timeout=WAIT + 30) as client:
            return await client.get(
                f"{TOOLSET}?wait={WAIT}",
                headers={"Authorization": f"Bearer {secret}", "If-None-Match": etag},
            )

    return asyncio.ensure_future(poll())


def _assert_released(answer: httpx.Response) -> None:
    assert answer.status_code == 401, (answer.status_code, answer.text)
    assert answer.json()["detail"] == "the bearer token was revoked while this request waited"
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]


async def test_revocation_releases_the_tokens_waiters_on_every_replica(
    replicas: Replicas,
) -> None:
    etag = await _seed(replicas)
    secret, token_id = await _reader_token(replicas.database_url)
    polls = [_long_poll(url, secret, etag) for url in replicas.urls for _ in range(2)]
    for app in replicas.apps:
        await _held(app, 2)

    conn = await asyncpg.connect(replicas.database_url)
    try:
        await store.revoke_token(conn, token_id, actor=None, request_id=None)
    finally:
        await conn.close()
    # A publish right after: a waiter still held would get this payload (200).
    await replicas.client.post(
        "/v1/namespaces/billing/tools/db.query/versions",
        json={"definition": {**DB_QUERY_V3, "description": "Run a query (changed)."}},
    )
    for answer in await asyncio.gather(*polls):
        _assert_released(answer)
    for app in replicas.apps:
        assert _services(app).longpolls.waiting == 0


async def test_a_revocation_missed_while_listen_was_down_is_found_on_reconnect(
    replicas: Replicas,
) -> None:
    etag = await _seed(replicas)
    secret, token_id = await _reader_token(replicas.database_url)
    first = replicas.apps[0]
    poll = _long_poll(first.url, secret, etag)
    await _held(first, 1)

    listener = _services(first).listener
    pid = listener.server_pid
    assert pid is not None
    conn = await asyncpg.connect(replicas.database_url)
    try:
        # The LISTEN connection dies before the revocation commits: its notification
        # is never delivered to this replica.
        async with conn.transaction():
            await conn.execute(
                "UPDATE tokens SET revoked_at = clock_timestamp() WHERE id = $1", token_id
            )
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await conn.close()
    _assert_released(await poll)
    assert listener.server_pid not in (None, pid), "the listener reconnected"
