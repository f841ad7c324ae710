"""LISTEN/NOTIFY: changes reach a listener on another connection; a lost one says so."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from registry import store
from registry.store.listen import ToolsetListener
from registry.store.records import PublishPlan, ToolState
from tests.store.helpers import accept, digest_of, variant


async def _next(queue: asyncio.Queue[str | None]) -> str | None:
    return await asyncio.wait_for(queue.get(), 5)


async def _publish(pool: asyncpg.Pool, namespace: str, n: int, decide: object = accept) -> None:
    definition = variant(n)
    await store.publish(
        pool,
        namespace,
        definition["name"],
        definition,
        digest_of(definition),
        decide,  # type: ignore[arg-type]
        actor=None,
        request_id=None,
    )


async def test_a_publish_notifies_a_listener_on_another_connection(
    database_url: str, db_pool: asyncpg.Pool
) -> None:
    received: asyncio.Queue[str | None] = asyncio.Queue()
    async with ToolsetListener(database_url, received.put_nowait):
        await _publish(db_pool, "billing", 1)
        assert await _next(received) == "billing"

        # A refused publish is rolled back, and so is its notification.
        def refuse(_state: ToolState) -> PublishPlan:
            raise RuntimeError("no")

        with pytest.raises(RuntimeError):
            await _publish(db_pool, "refused", 1, refuse)
        # Nothing is sent for a write that changes nothing either.
        await _publish(db_pool, "billing", 1)
        await store.deprecate(
            db_pool, "billing", "db.query", 1, sunset=None, actor=None, request_id=None
        )
        assert await _next(received) == "billing"
        assert received.empty()


async def test_every_toolset_change_notifies(database_url: str, db_pool: asyncpg.Pool) -> None:
    await _publish(db_pool, "billing", 1)
    await _publish(db_pool, "billing", 2)
    received: asyncio.Queue[str | None] = asyncio.Queue()
    kw: dict[str, None] = {"actor": None, "request_id": None}
    async with ToolsetListener(database_url, received.put_nowait):
        await store.create_namespace(db_pool, "payments", **kw)
        assert await _next(received) == "payments"
        await store.register_converter(db_pool, "billing", "db.query", 1, 2, [], **kw)
        assert await _next(received) == "billing"
        await store.set_alias(
            db_pool,
            "billing",
            "old",
            target_tool="db.query",
            contract_tool="db.query",
            contract_version=1,
            **kw,
        )
        assert await _next(received) == "billing"
        await store.retire(db_pool, "billing", "db.query", 1, **kw)
        assert await _next(received) == "billing"
        # Not part of a toolset: no notification.
        await store.put_capabilities(db_pool, "billing", {"capabilities": {}}, **kw)
        await store.create_token(db_pool, store.hash_token("t"), ["billing:read"], **kw)
        await _publish(db_pool, "payments", 1)
        assert await _next(received) == "payments"


async def test_a_lost_connection_drops_everything_and_reconnects(
    database_url: str, db_pool: asyncpg.Pool
) -> None:
    received: asyncio.Queue[str | None] = asyncio.Queue()

    async def on_change(namespace: str | None) -> None:  # coroutine callbacks work too
        await received.put(namespace)

    listener = ToolsetListener(database_url, on_change, min_backoff=0.05, health_interval=1.0)
    await listener.start()
    try:
        first_pid = listener.server_pid
        assert first_pid is not None
        await db_pool.execute("SELECT pg_terminate_backend($1)", first_pid)
        assert await _next(received) is None  # lost
        assert await _next(received) is None  # reconnected: anything cached meanwhile is suspect
        assert listener.connected and listener.server_pid not in (None, first_pid)
        await _publish(db_pool, "billing", 1)
        assert await _next(received) == "billing"
    finally:
        await listener.stop()
    assert not listener.connected


async def test_the_listener_keeps_trying_until_the_database_answers() -> None:
    received: asyncio.Queue[str | None] = asyncio.Queue()
    listener = ToolsetListener(
        "postgresql://postgres:wrong@127.0.0.1:1/none", received.put_nowait, min_backoff=0.01
    )
    with pytest.raises(TimeoutError):
        await listener.start(wait=0.3)
    assert not listener.connected
    await listener.stop()
    assert received.empty()


async def test_a_revocation_notifies_once_on_its_own_channel(
    database_url: str, db_pool: asyncpg.Pool
) -> None:
    toolsets: asyncio.Queue[str | None] = asyncio.Queue()
    revoked: asyncio.Queue[str | None] = asyncio.Queue()
    token = await store.create_token(
        db_pool, store.hash_token("s" * 32), ["billing:read"], actor=None, request_id=None
    )
    other = await store.create_token(
        db_pool, store.hash_token("t" * 32), ["billing:read"], actor=None, request_id=None
    )
    async with ToolsetListener(database_url, toolsets.put_nowait, revocations=revoked.put_nowait):
        await store.revoke_token(db_pool, token.id, actor=None, request_id=None)
        await store.revoke_token(db_pool, token.id, actor=None, request_id=None)  # no change
        await store.revoke_token(db_pool, other.id, actor=None, request_id=None)
        assert [await _next(revoked), await _next(revoked)] == [token.id, other.id]
    assert revoked.empty() and toolsets.empty()


async def test_tool_notices_name_the_tool_and_the_repeat_for_old_replicas_is_dropped(
    database_url: str, db_pool: asyncpg.Pool
) -> None:
    """A write to one tool notifies `namespace/tool` then `namespace` (for replicas that
    predate tool notices); a listener with a `tools` callback hears the tool once and
    not the repeat, and still hears a `namespace` notice that comes alone."""
    namespaces: asyncio.Queue[str | None] = asyncio.Queue()
    tools: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    listener = ToolsetListener(
        database_url, namespaces.put_nowait, tools=lambda ns, tool: tools.put_nowait((ns, tool))
    )
    async with listener:
        await _publish(db_pool, "billing", 1)
        assert await asyncio.wait_for(tools.get(), 5) == ("billing", "db.query")
        await store.deprecate(
            db_pool, "billing", "db.query", 1, sunset=None, actor=None, request_id=None
        )
        assert await asyncio.wait_for(tools.get(), 5) == ("billing", "db.query")
        async with db_pool.acquire() as conn:  # a namespace change that names no tool
            await conn.execute("SELECT pg_notify('toolset_changed', 'billing')")
        assert await _next(namespaces) == "billing"
        assert namespaces.empty() and tools.empty()


async def test_the_notices_of_a_write_come_tool_first(
    database_url: str, db_pool: asyncpg.Pool
) -> None:
    """The order the listener relies on: `namespace/tool` before `namespace`."""
    heard: list[str] = []
    conn = await asyncpg.connect(database_url)
    try:
        await conn.add_listener("toolset_changed", lambda *args: heard.append(args[3]))
        await _publish(db_pool, "billing", 1)
        await store.retire(db_pool, "billing", "db.query", 1, actor=None, request_id=None)
        for _ in range(100):
            if len(heard) >= 4:
                break
            await asyncio.sleep(0.02)
    finally:
        await conn.close()
    assert heard == ["billing/db.query", "billing", "billing/db.query", "billing"]
