"""Lifecycle, effective states, converters, aliases, capabilities, tokens and audit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from registry import store
from registry.store.records import Conflict, IllegalTransition, NotFound, ToolState
from tests.store.helpers import accept, digest_of, variant

NS = "billing"
TOOL = "db.query"


async def _versions(db: asyncpg.Pool, count: int, name: str = TOOL) -> None:
    for n in range(1, count + 1):
        definition = variant(n, name)
        await store.publish(
            db, NS, name, definition, digest_of(definition), accept, actor=None, request_id=None
        )


def _kw() -> dict[str, Any]:
    return {"actor": "tok_admin", "request_id": "req-9"}


async def _last_event_id(db: asyncpg.Pool) -> int:
    events = await store.list_audit(db, newest_first=True, limit=1)
    return events[0].id if events else 0


async def test_namespaces(db_pool: asyncpg.Pool) -> None:
    created, fresh = await store.create_namespace(db_pool, "payments", **_kw())
    assert fresh and created.name == "payments"
    again, fresh = await store.create_namespace(db_pool, "payments", **_kw())
    assert not fresh and again == created
    await store.create_namespace(db_pool, "alpha", **_kw())
    assert [n.name for n in await store.list_namespaces(db_pool)] == ["alpha", "payments"]
    assert await store.get_namespace(db_pool, "nope") is None
    assert len(await store.list_audit(db_pool, action="namespace.create")) == 2
    with pytest.raises(ValueError, match="invalid namespace"):
        await store.create_namespace(db_pool, "-bad", **_kw())


async def test_lifecycle_moves_forward_only(db_pool: asyncpg.Pool) -> None:
    await _versions(db_pool, 3)
    start = await _last_event_id(db_pool)
    sunset = datetime.now(UTC) + timedelta(days=10)

    v1 = await store.deprecate(db_pool, NS, TOOL, 1, sunset=sunset, **_kw())
    assert (v1.state, v1.sunset) == ("deprecated", sunset)
    # Same again: nothing changes; no sunset given: the one it has stays.
    assert await store.deprecate(db_pool, NS, TOOL, 1, sunset=sunset, **_kw()) == v1
    assert await store.deprecate(db_pool, NS, TOOL, 1, sunset=None, **_kw()) == v1
    later = sunset + timedelta(days=5)
    moved = await store.deprecate(db_pool, NS, TOOL, 1, sunset=later, **_kw())
    assert moved.sunset == later

    retired = await store.retire(db_pool, NS, TOOL, 1, **_kw())
    assert retired.state == "retired"
    assert await store.retire(db_pool, NS, TOOL, 1, **_kw()) == retired
    with pytest.raises(IllegalTransition, match="retired, which is final") as refused:
        await store.deprecate(db_pool, NS, TOOL, 1, sunset=None, **_kw())
    assert (refused.value.state, refused.value.requested) == ("retired", "deprecated")

    await store.retire(db_pool, NS, TOOL, 2, **_kw())  # active -> retired directly
    with pytest.raises(NotFound):
        await store.retire(db_pool, NS, TOOL, 9, **_kw())
    with pytest.raises(NotFound):
        await store.retire(db_pool, NS, "nope", 1, **_kw())

    events = await store.list_audit(db_pool, after=start)
    assert [(e.action, e.version, e.detail["from"], e.detail["to"]) for e in events] == [
        ("version.deprecate", 1, "active", "deprecated"),
        ("version.deprecate", 1, "deprecated", "deprecated"),
        ("version.retire", 1, "deprecated", "retired"),
        ("version.retire", 2, "active", "retired"),
    ]
    assert {(e.actor, e.request_id) for e in events} == {("tok_admin", "req-9")}


async def test_a_guard_refusal_writes_nothing(db_pool: asyncpg.Pool) -> None:
    await _versions(db_pool, 2)
    start = await _last_event_id(db_pool)
    seen: list[ToolState] = []

    def guard(state: ToolState) -> None:
        seen.append(state)
        raise PermissionError("not the last served version")

    with pytest.raises(PermissionError):
        await store.retire(db_pool, NS, TOOL, 2, guard=guard, **_kw())
    assert [v.version for v in seen[0].versions] == [1, 2]
    assert (await store.get_version(db_pool, NS, TOOL, 2)).state == "active"  # type: ignore[union-attr]
    assert await _last_event_id(db_pool) == start


async def test_a_passed_sunset_reads_as_retired_everywhere(db_pool: asyncpg.Pool) -> None:
    await _versions(db_pool, 2)
    await _versions(db_pool, 1, name="other")
    past = datetime.now(UTC) - timedelta(seconds=1)
    future = datetime.now(UTC) + timedelta(days=3)
    await store.deprecate(db_pool, NS, TOOL, 2, sunset=past, **_kw())
    await store.deprecate(db_pool, NS, "other", 1, sunset=future, **_kw())

    # The newest version is retired by its sunset: version 1 is current again.
    v2 = await store.get_version(db_pool, NS, TOOL, 2)
    assert v2 is not None and v2.state == "retired"
    assert [v.state for v in await store.get_history(db_pool, NS, TOOL)] == ["active", "retired"]
    assert [v.state for v in await store.find_digest(db_pool, digest_of(variant(2)))] == ["retired"]
    tools = {t.tool: t for t in await store.list_tools(db_pool, NS)}
    assert tools[TOOL].current is not None and tools[TOOL].current.version == 1
    assert tools[TOOL].latest_version == 2
    assert tools["other"].current is not None and tools["other"].current.state == "deprecated"
    state = await store.load_tool_state(db_pool, NS, TOOL)
    assert [v.version for v in state.served] == [1] and state.next_version == 3
    snapshot = await store.load_namespace(db_pool, NS)
    assert snapshot is not None
    assert [(v.tool, v.version, v.state) for v in snapshot.versions] == [
        (TOOL, 1, "active"),
        (TOOL, 2, "retired"),
        ("other", 1, "deprecated"),
    ]
    assert snapshot.next_sunset == future

    # Retired is final, however it got there.
    with pytest.raises(IllegalTransition):
        await store.deprecate(db_pool, NS, TOOL, 2, sunset=future, **_kw())
    before = await _last_event_id(db_pool)
    assert (await store.retire(db_pool, NS, TOOL, 2, **_kw())).state == "retired"
    assert await _last_event_id(db_pool) == before


async def test_all_retired_means_no_current_version(db_pool: asyncpg.Pool) -> None:
    await _versions(db_pool, 1)
    await store.retire(db_pool, NS, TOOL, 1, **_kw())
    [summary] = await store.list_tools(db_pool, NS)
    assert summary.current is None and summary.latest_version == 1
    assert await store.list_tools(db_pool, "nobody") == []


async def test_converters_are_immutable_records(db_pool: asyncpg.Pool) -> None:
    await _versions(db_pool, 2)
    ops = [{"op": "fill", "path": "/limit", "value": 20}]
    converter, created = await store.register_converter(db_pool, NS, TOOL, 1, 2, ops, **_kw())
    assert created and (converter.from_version, converter.to_version, converter.ops) == (1, 2, ops)
    again, created = await store.register_converter(db_pool, NS, TOOL, 1, 2, ops, **_kw())
    assert not created and again == converter
    with pytest.raises(Conflict, match="immutable"):
        await store.register_converter(
            db_pool, NS, TOOL, 1, 2, [{"op": "drop", "path": "/x"}], **_kw()
        )
    with pytest.raises(NotFound, match="version 5"):
        await store.register_converter(db_pool, NS, TOOL, 5, 2, ops, **_kw())
    with pytest.raises(ValueError):
        await store.register_converter(db_pool, NS, TOOL, 2, 2, ops, **_kw())
    assert await store.list_converters(db_pool, NS) == [converter]
    events = await store.list_audit(db_pool, action="converter.register")
    assert [(e.version, e.detail) for e in events] == [(2, {"from": 1, "to": 2, "ops": ops})]


async def test_aliases_are_repointed_with_their_history_in_the_audit(
    db_pool: asyncpg.Pool,
) -> None:
    await _versions(db_pool, 2)
    await _versions(db_pool, 1, name="search")
    first = await store.set_alias(
        db_pool,
        NS,
        "search_v1",
        target_tool="search",
        contract_tool=TOOL,
        contract_version=1,
        **_kw(),
    )
    assert first.changed and first.previous is None
    same = await store.set_alias(
        db_pool,
        NS,
        "search_v1",
        target_tool="search",
        contract_tool=TOOL,
        contract_version=1,
        **_kw(),
    )
    assert not same.changed
    moved = await store.set_alias(
        db_pool,
        NS,
        "search_v1",
        target_tool=TOOL,
        contract_tool=TOOL,
        contract_version=2,
        **_kw(),
    )
    assert moved.changed and moved.previous == first.alias
    assert (moved.alias.target_tool, moved.alias.contract_version) == (TOOL, 2)
    assert await store.get_alias(db_pool, NS, "search_v1") == moved.alias
    assert await store.list_aliases(db_pool, NS) == [moved.alias]

    events = await store.list_audit(db_pool, action="alias.set")
    assert {e.tool for e in events} == {"search_v1"}
    assert [e.detail["previous"] for e in events] == [
        None,
        {"target": "search", "contract": {"tool": TOOL, "version": 1}},
    ]
    with pytest.raises(NotFound, match="nope"):
        await store.set_alias(
            db_pool, NS, "x", target_tool="nope", contract_tool=TOOL, contract_version=1, **_kw()
        )
    with pytest.raises(NotFound, match="version 7"):
        await store.set_alias(
            db_pool, NS, "x", target_tool=TOOL, contract_tool=TOOL, contract_version=7, **_kw()
        )
    with pytest.raises(NotFound, match="namespace"):
        await store.set_alias(
            db_pool,
            "elsewhere",
            "x",
            target_tool=TOOL,
            contract_tool=TOOL,
            contract_version=1,
            **_kw(),
        )


async def test_capabilities_are_an_append_only_series(db_pool: asyncpg.Pool) -> None:
    assert await store.get_capabilities(db_pool, NS) is None
    doc = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}}}
    first, created = await store.put_capabilities(db_pool, NS, doc, **_kw())
    assert created and first.seq == 1 and first.document == doc
    same, created = await store.put_capabilities(db_pool, NS, dict(doc), **_kw())
    assert not created and same == first
    changed = {**doc, "protocolVersion": "2026-07-28"}
    second, created = await store.put_capabilities(db_pool, NS, changed, **_kw())
    assert created and second.seq == 2
    assert await store.get_capabilities(db_pool, NS) == second
    assert await store.get_capabilities(db_pool, NS, seq=1) == first
    events = await store.list_audit(db_pool, action="capabilities.put")
    assert [e.detail for e in events] == [{"seq": 1}, {"seq": 2}]


async def test_tokens_are_stored_as_hashes(db_pool: asyncpg.Pool) -> None:
    secret = "rgt_" + "s3cr3t" * 6
    hashed = store.hash_token(secret)
    token = await store.create_token(
        db_pool, hashed, ["billing:publish", "billing:read"], description="ci", **_kw()
    )
    assert token.id.startswith("tok_") and token.revoked_at is None
    assert await store.lookup_token(db_pool, hashed) == token
    assert await store.lookup_token(db_pool, store.hash_token("wrong")) is None
    dump = await db_pool.fetchval("SELECT string_agg(t::text, ' ') FROM tokens t")
    assert secret not in dump

    revoked = await store.revoke_token(db_pool, token.id, **_kw())
    assert revoked.revoked_at is not None
    assert await store.lookup_token(db_pool, hashed) is None
    assert await store.revoke_token(db_pool, token.id, **_kw()) == revoked
    assert await store.get_token(db_pool, token.id) == revoked
    assert await store.list_tokens(db_pool) == [revoked]
    with pytest.raises(NotFound):
        await store.revoke_token(db_pool, "tok_unknown", **_kw())
    events = await store.list_audit(db_pool)
    assert [(e.action, e.detail["token"]) for e in events] == [
        ("token.create", token.id),
        ("token.revoke", token.id),
    ]
    assert "s3cr3t" not in str(events)


async def test_audit_listing_filters_and_pages(db_pool: asyncpg.Pool) -> None:
    await _versions(db_pool, 3)
    await _versions(db_pool, 2, name="other")
    await store.retire(db_pool, NS, TOOL, 1, **_kw())
    everything = await store.list_audit(db_pool)
    assert [e.id for e in everything] == sorted(e.id for e in everything)
    of_tool = await store.list_audit(db_pool, namespace=NS, tool=TOOL)
    assert [(e.action, e.version) for e in of_tool] == [
        ("version.publish", 1),
        ("version.publish", 2),
        ("version.publish", 3),
        ("version.retire", 1),
    ]
    assert await store.list_audit(db_pool, namespace="elsewhere") == []
    assert len(await store.list_audit(db_pool, tool="other")) == 2
    assert len(await store.list_audit(db_pool, actor="tok_admin")) == 1
    page = await store.list_audit(db_pool, limit=2)
    rest = await store.list_audit(db_pool, after=page[-1].id)
    assert page + rest == everything
    newest = await store.list_audit(db_pool, newest_first=True, limit=2)
    assert newest == everything[::-1][:2]
    older = await store.list_audit(db_pool, newest_first=True, before=newest[-1].id)
    assert newest + older == everything[::-1]
