"""An optional read replica (`REGISTRY_READ_DATABASE_URL`) for history, digest and audit
reads (issue 14). A replica lags its primary: here it is a copy of the database taken
before the last writes. What it has is answered from it, saying so
(`X-Registry-Read: replica`); what it does not have yet, and everything while it does
not answer, comes from the primary.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest_asyncio

from registry import store
from registry.canonical import digest
from registry.store import PublishPlan
from tests.api.conftest import ADMIN_TOKEN, create_namespaces, free_port, serve
from tests.conftest import PostgresServer, _create_database, _drop_database
from tests.fixtures.seeds import DB_QUERY_V3

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
HISTORY = "/v1/namespaces/billing/tools/db.query/versions"
V2 = {**DB_QUERY_V3, "description": "Run a read-only SQL query (reworded)."}


async def _publish(url: str, definition: dict[str, object]) -> None:
    conn = await asyncpg.connect(url)
    try:
        await store.publish(
            conn,
            "billing",
            "db.query",
            definition,
            digest(definition),
            lambda _state: PublishPlan(),
            None,
            None,
            create_namespace=False,
        )
    finally:
        await conn.close()


async def _copy(server: PostgresServer, template: str) -> str:
    """A copy of the database as it is now (retried while a background worker, such as
    autovacuum, is connected to it: PostgreSQL copies only an idle database)."""
    for _ in range(50):
        try:
            return await _create_database(server, template)
        except asyncpg.ObjectInUseError:
            await asyncio.sleep(0.1)
    return await _create_database(server, template)


@pytest_asyncio.fixture
async def lagging(
    postgres_server: PostgresServer, database_url: str
) -> AsyncIterator[tuple[str, str]]:
    """(primary URL, replica URL): the replica was copied after v1, before v2 and
    v1's deprecation."""
    await create_namespaces(database_url, ["billing"])
    await _publish(database_url, DB_QUERY_V3)
    name = await _copy(postgres_server, database_url.rsplit("/", 1)[1])
    conn = await asyncpg.connect(database_url)
    try:
        await store.deprecate(
            conn, "billing", "db.query", 1, sunset=None, actor=None, request_id=None
        )
    finally:
        await conn.close()
    await _publish(database_url, V2)
    try:
        yield database_url, postgres_server.dsn(name)
    finally:
        await _drop_database(postgres_server, name)


async def test_reads_come_from_the_replica_when_it_has_them_and_say_so(
    lagging: tuple[str, str],
) -> None:
    primary, replica = lagging
    app = await serve(primary, namespaces=(), read_database_url=replica)
    try:
        async with httpx.AsyncClient(base_url=app.url, headers=ADMIN, timeout=30) as client:
            history = await client.get(HISTORY)
            assert history.headers["x-registry-read"] == "replica"
            assert [(v["version"], v["state"]) for v in history.json()["versions"]] == [
                (1, "active")  # as the replica has it: behind the primary
            ]
            newest = await client.get(f"{HISTORY}/2")  # not on the replica yet
            assert newest.status_code == 200
            assert "x-registry-read" not in newest.headers
            old = await client.get(f"/v1/digests/{digest(DB_QUERY_V3)}")
            assert old.headers["x-registry-read"] == "replica"
            new = await client.get(f"/v1/digests/{digest(V2)}")
            assert new.status_code == 200 and "x-registry-read" not in new.headers
            audit = await client.get("/v1/audit", params={"namespace": "billing"})
            assert audit.headers["x-registry-read"] == "replica"
            # What is written and what servers sync never come from the replica.
            toolset = await client.get("/v1/namespaces/billing/toolset")
            assert "x-registry-read" not in toolset.headers
            assert [v["version"] for v in toolset.json()["tools"][0]["versions"]] == [2, 1]
    finally:
        await app.stop()


async def test_a_replica_that_does_not_answer_leaves_reads_to_the_primary(
    lagging: tuple[str, str],
) -> None:
    primary, _ = lagging
    away = f"postgresql://registry:nothing@127.0.0.1:{free_port()}/registry"
    app = await serve(primary, namespaces=(), read_database_url=away)
    try:
        async with httpx.AsyncClient(base_url=app.url, headers=ADMIN, timeout=30) as client:
            history = await client.get(HISTORY)
            assert history.status_code == 200
            assert "x-registry-read" not in history.headers
            assert [v["state"] for v in history.json()["versions"]] == ["deprecated", "active"]
    finally:
        await app.stop()
