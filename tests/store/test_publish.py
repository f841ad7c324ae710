"""The publish transaction: locking, numbering, idempotency, the decide() seam, audit."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from registry import store
from registry.store.records import (
    Deprecation,
    NewConverter,
    NotFound,
    PublishPlan,
    PublishRefused,
    Refusal,
    ToolState,
)
from tests.store.helpers import accept, digest_of, tool, variant


async def _publish(
    db: Any, definition: dict[str, Any], decide: Any = accept, namespace: str = "billing"
) -> store.PublishResult:
    return await store.publish(
        db,
        namespace,
        definition["name"],
        definition,
        digest_of(definition),
        decide,
        actor="tok_test",
        request_id="req-1",
    )


async def _count(db: asyncpg.Pool, table: str) -> int:
    count: int = await db.fetchval(f"SELECT count(*) FROM {table}")
    return count


async def test_first_publish_creates_version_one(db_pool: asyncpg.Pool) -> None:
    definition = tool()
    result = await _publish(db_pool, definition)
    assert result.created
    assert (result.version.version, result.version.state) == (1, "active")
    assert result.version.digest == digest_of(definition)
    assert result.version.definition == definition
    stored = await store.get_version(db_pool, "billing", "db.query", 1)
    assert stored == result.version
    events = await store.list_audit(db_pool)
    assert [(e.action, e.namespace, e.tool, e.version) for e in events] == [
        ("namespace.create", "billing", None, None),
        ("version.publish", "billing", "db.query", 1),
    ]
    assert {(e.actor, e.request_id) for e in events} == {("tok_test", "req-1")}
    assert events[1].detail["digest"] == digest_of(definition)
    assert result.audit_ids == [e.id for e in events]


async def test_same_digest_returns_the_stored_version_and_writes_nothing(
    db_pool: asyncpg.Pool,
) -> None:
    first = await _publish(db_pool, tool())

    def must_not_be_called(_state: ToolState) -> PublishPlan:
        raise AssertionError("decide() called for a known digest")

    events = await _count(db_pool, "audit_events")
    # _meta does not count in the digest.
    again = await _publish(db_pool, {**tool(), "_meta": {"x": 1}}, must_not_be_called)
    assert not again.created
    assert again.version == first.version
    assert await _count(db_pool, "versions") == 1
    assert await _count(db_pool, "audit_events") == events


async def test_decide_sees_the_locked_tool(db_pool: asyncpg.Pool) -> None:
    await _publish(db_pool, variant(1))
    await _publish(db_pool, variant(2))
    await store.register_converter(
        db_pool,
        "billing",
        "db.query",
        1,
        2,
        [{"op": "drop", "path": "/field_1"}],
        actor=None,
        request_id=None,
    )
    await store.set_alias(
        db_pool,
        "billing",
        "db_query_v1",
        target_tool="db.query",
        contract_tool="db.query",
        contract_version=1,
        actor=None,
        request_id=None,
    )
    await store.retire(db_pool, "billing", "db.query", 1, actor=None, request_id=None)
    seen: list[ToolState] = []

    def decide(state: ToolState) -> PublishPlan:
        seen.append(state)
        return PublishPlan()

    result = await _publish(db_pool, variant(3), decide)
    [state] = seen
    assert (state.namespace, state.tool, state.next_version) == ("billing", "db.query", 3)
    assert [(v.version, v.state) for v in state.versions] == [(1, "retired"), (2, "active")]
    assert state.versions[1].definition == variant(2)
    assert [v.version for v in state.served] == [2]
    assert state.current is not None and state.current.version == 2
    assert state.version(1) is not None and state.version(7) is None
    assert [(c.from_version, c.to_version) for c in state.converters] == [(1, 2)]
    assert [(a.name, a.contract_version) for a in state.aliases] == [("db_query_v1", 1)]
    assert result.version.version == 3


class PolicySaysNo(Exception):
    pass


async def test_a_refusal_writes_nothing(db_pool: asyncpg.Pool) -> None:
    def refuse(_state: ToolState) -> PublishPlan:
        raise PolicySaysNo("breaking")

    with pytest.raises(PolicySaysNo):
        await _publish(db_pool, tool(), refuse, namespace="fresh")
    # Not even the namespace and tool rows created on the way.
    for table in ("namespaces", "tools", "versions", "audit_events"):
        assert await _count(db_pool, table) == 0, table

    await _publish(db_pool, variant(1))
    before = {t: await _count(db_pool, t) for t in ("versions", "audit_events", "converters")}

    def refuse_by_value(_state: ToolState) -> Refusal:
        return Refusal(reason="needs a decision", detail={"versions": [1]})

    with pytest.raises(PublishRefused) as refused:
        await _publish(db_pool, variant(2), refuse_by_value)
    assert refused.value.refusal.detail == {"versions": [1]}
    after = {t: await _count(db_pool, t) for t in ("versions", "audit_events", "converters")}
    assert after == before


async def test_an_impossible_plan_rolls_everything_back(db_pool: asyncpg.Pool) -> None:
    await _publish(db_pool, variant(1))
    before = await _count(db_pool, "audit_events")
    with pytest.raises(NotFound, match="version 9"):
        await _publish(db_pool, variant(2), lambda _s: PublishPlan(retire=[9]))
    with pytest.raises(NotFound, match="version 9"):
        await _publish(
            db_pool,
            variant(2),
            lambda _s: PublishPlan(converters=[NewConverter(from_version=9, ops=[])]),
        )
    assert await _count(db_pool, "versions") == 1
    assert await _count(db_pool, "audit_events") == before


async def test_a_plan_is_applied_with_one_audit_event_per_change(db_pool: asyncpg.Pool) -> None:
    for n in (1, 2, 3):
        await _publish(db_pool, variant(n))
    start = (await store.list_audit(db_pool, newest_first=True, limit=1))[0].id
    sunset = datetime.now(UTC) + timedelta(days=30)
    ops = [{"op": "rename", "from": "/field_3", "to": "/field_4"}]
    plan = PublishPlan(
        retire=[1],
        deprecate=[Deprecation(version=2, sunset=sunset)],
        converters=[NewConverter(from_version=3, ops=ops)],
        detail={"severity": "breaking"},
    )
    result = await _publish(db_pool, variant(4), lambda _s: plan)
    assert result.version.version == 4
    assert (result.retired, result.deprecated) == ([1], [2])
    assert [(c.from_version, c.to_version, c.ops) for c in result.converters] == [(3, 4, ops)]

    events = await store.list_audit(db_pool, after=start)
    assert [(e.action, e.version) for e in events] == [
        ("version.publish", 4),
        ("converter.register", 4),
        ("version.deprecate", 2),
        ("version.retire", 1),
    ]
    assert events[0].detail == {"digest": digest_of(variant(4)), "severity": "breaking"}
    assert result.audit_ids == [e.id for e in events]
    history = await store.get_history(db_pool, "billing", "db.query")
    assert [(v.version, v.state) for v in history] == [
        (1, "retired"),
        (2, "deprecated"),
        (3, "active"),
        (4, "active"),
    ]
    assert history[1].sunset == sunset


async def test_sixteen_concurrent_publishers_get_contiguous_versions(
    database_url: str,
) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=16, max_size=16)
    try:
        results = await asyncio.gather(*(_publish(pool, variant(n)) for n in range(16)))
        numbers = sorted(r.version.version for r in results)
        assert numbers == list(range(1, 17))
        assert all(r.created for r in results)
        stored = await store.get_history(pool, "billing", "db.query")
        assert [v.version for v in stored] == list(range(1, 17))
        # Each number went to the definition that got it.
        by_number = {r.version.version: r.version.digest for r in results}
        assert {v.version: v.digest for v in stored} == by_number
        publishes = await store.list_audit(pool, action="version.publish")
        assert sorted(e.version for e in publishes if e.version is not None) == numbers
    finally:
        await pool.close()


async def test_the_same_digest_published_concurrently_lands_once(database_url: str) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=8, max_size=8)
    try:
        results = await asyncio.gather(*(_publish(pool, tool()) for _ in range(8)))
        assert sum(r.created for r in results) == 1
        assert {r.version.version for r in results} == {1}
        assert await _count(pool, "versions") == 1
        assert len(await store.list_audit(pool, action="version.publish")) == 1
        assert len(await store.list_audit(pool, action="namespace.create")) == 1
    finally:
        await pool.close()


async def test_inconsistent_arguments_are_refused(db_pool: asyncpg.Pool) -> None:
    definition = tool()
    with pytest.raises(ValueError, match="canonical digest"):
        await store.publish(
            db_pool,
            "billing",
            "db.query",
            definition,
            "sha256:" + "0" * 64,
            accept,
            actor=None,
            request_id=None,
        )
    with pytest.raises(ValueError, match="name"):
        await store.publish(
            db_pool,
            "billing",
            "other",
            definition,
            digest_of(definition),
            accept,
            actor=None,
            request_id=None,
        )
    with pytest.raises(ValueError, match="namespace"):
        await _publish(db_pool, definition, namespace="Bad_Namespace")
    with pytest.raises(NotFound, match="namespace"):
        await store.publish(
            db_pool,
            "billing",
            "db.query",
            definition,
            digest_of(definition),
            accept,
            actor=None,
            request_id=None,
            create_namespace=False,
        )
    assert await _count(db_pool, "versions") == 0


async def test_publish_joins_the_callers_transaction(db_conn: asyncpg.Connection) -> None:
    tx = db_conn.transaction()
    await tx.start()
    await _publish(db_conn, tool())
    await tx.rollback()
    assert await db_conn.fetchval("SELECT count(*) FROM versions") == 0
