"""End to end: the official MCP client, the example server, a live registry.

Each test runs the registry of tests/api (uvicorn on a fresh database of the
session's embedded PostgreSQL), starts `examples/gated_server.py` as a stdio
subprocess synced from it (REGISTRY_URL, REGISTRY_TOKEN, REGISTRY_NAMESPACE,
REGISTRY_CACHE, REGISTRY_WAIT=2), and talks to it with `mcp.client.stdio.stdio_client` and
`ClientSession` on 2025-06-18 sessions. The scenarios are issue 4's
"Example and end-to-end tests" (1)-(6).
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import httpx

from registry.canonical import digest
from registry.sdk import Toolset, strict_schema
from registry.sdk.mcp_adapter import GatedTools
from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.e2e.harness import PROTOCOL, gated_server, publish, refused, run_to_exit, timings_ms
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2

V3_CALL = {"query": "SELECT * FROM orders", "timeout_ms": 5000, "mode": "write"}
V4_CALL = {"query": "SELECT * FROM orders", "timeout": 5000, "mode": "read"}
FILL_FILTERS = [{"op": "fill", "path": "/filters", "value": {}}]
FILL_BOTH = [*FILL_FILTERS, {"op": "fill", "path": "/limit", "value": 20}]


def revision(definition: dict[str, Any], n: int) -> dict[str, Any]:
    """An earlier cosmetic revision of `definition` (its description only)."""
    earlier = copy.deepcopy(definition)
    earlier["description"] = f"{definition['description']} (revision {n})"
    return earlier


async def seed_000_at_v3(client: httpx.AsyncClient, ns: str = "billing") -> None:
    """db.query served at v3, numbered as the seed numbers it: v1 and v2 are
    earlier cosmetic revisions of v3 (description only), v3 is seed 000's v3."""
    for n in (1, 2):
        landed = await publish(client, ns, "db.query", {"definition": revision(DB_QUERY_V3, n)})
        assert landed["version"] == n
    v3 = await publish(client, ns, "db.query", {"definition": DB_QUERY_V3})
    assert v3["version"] == 3


async def seed_000_v4(client: httpx.AsyncClient, ns: str = "billing") -> None:
    """Seed 000's cutover: v4 published with every earlier version retired."""
    v4 = await publish(client, ns, "db.query", {"definition": DB_QUERY_V4, "retire": [1, 2, 3]})
    assert (v4["version"], v4["retired"]) == (4, [1, 2, 3]), v4


async def toolset_of(client: httpx.AsyncClient, ns: str) -> Toolset:
    answer = await client.get(f"/v1/namespaces/{ns}/toolset")
    assert answer.status_code == 200, answer.text
    return Toolset.from_json(answer.content)


def only_tool(listing: Any, name: str) -> Any:
    found = [t for t in listing.tools if t.name == name]
    assert len(found) == 1, [t.name for t in listing.tools]
    return found[0]


# ------------------------------------------------------------------ (1) seed 000


async def test_1_seed_000_retired_v3_is_a_relist_error_then_v4_succeeds(
    registry: Registry, tmp_path: Path
) -> None:
    """(1) The client lists at v3; v4 is published with v3 retired and reaches the
    server through watch; the client's v3 call gets -31001 naming 3 and 4 with
    `action: relist`; it re-lists, sees v4, and its v4 call succeeds.

    Gate time: the example exposes no per-call decision time, so the gate is
    timed in-process: `GatedTools.check` (what the example's `tools/call` runs)
    on the very toolset the server synced (same ETag), the same v3 call, p50
    over 200 calls < 2 ms; its decision is asserted equal to the one on the wire.
    """
    await seed_000_at_v3(registry.client)
    async with (
        asyncio.timeout(60),
        gated_server(
            tmp_path, url=registry.url, namespace="billing", cache=tmp_path / "billing.json"
        ) as server,
    ):
        session = server.session
        listing = await session.list_tools()
        tool = only_tool(listing, "db.query")
        assert tool.meta == {"schemaVersion": "v3", "schemaHash": digest(DB_QUERY_V3)}
        assert tool.input_schema == DB_QUERY_V3["inputSchema"]
        declared = tool.meta["schemaVersion"]  # what the client echoes from its listing

        await seed_000_v4(registry.client)
        await server.list_changed()

        data = await refused(
            session.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": declared}),
            -31001,
        )
        assert data["reason"] == "schema_version_retired"
        assert (data["tool"], data["declaredVersion"], data["currentVersion"]) == (
            "db.query",
            "v3",
            "v4",
        )
        assert data["retired"] == ["v1", "v2", "v3"]
        assert data["inputSchema"] == strict_schema(DB_QUERY_V4["inputSchema"])
        assert data["action"] == "relist"

        toolset = await toolset_of(registry.client, "billing")
        gated = GatedTools(toolset)
        decision = gated.check("db.query", dict(V3_CALL), {"schemaVersion": declared})
        assert decision.error is not None and decision.error.data == data
        p50, p99 = timings_ms(
            lambda: gated.check("db.query", dict(V3_CALL), {"schemaVersion": declared})
        )
        assert p50 < 2.0, f"gate p50 {p50:.3f} ms (p99 {p99:.3f} ms)"
        print(f"\ngate time, retired v3 call: p50 {p50 * 1e3:.1f} us, p99 {p99 * 1e3:.1f} us")

        relisted = only_tool(await session.list_tools(), "db.query")
        assert relisted.meta == {"schemaVersion": "v4", "schemaHash": digest(DB_QUERY_V4)}
        assert relisted.input_schema == DB_QUERY_V4["inputSchema"]
        result = await session.call_tool(
            "db.query", dict(V4_CALL), meta={"schemaVersion": relisted.meta["schemaVersion"]}
        )
        assert not result.is_error
        assert result.structured_content == {"rows": [], "received": V4_CALL}


# ------------------------------------------------------------------ (2), (3)


async def test_2_versionless_call_with_timeout_ms_is_strict_failure_not_invalid_params(
    registry: Registry, tmp_path: Path
) -> None:
    """(2) After the cutover a version-less call carrying v3's `timeout_ms` gets
    -31003 (v4 says `additionalProperties: true`; strict validation closes it),
    not the generic -32602 that taught seed 000's client to retry."""
    await seed_000_at_v3(registry.client)
    await seed_000_v4(registry.client)
    async with (
        asyncio.timeout(30),
        gated_server(
            tmp_path, url=registry.url, namespace="billing", cache=tmp_path / "billing.json"
        ) as server,
    ):
        call = {"query": "SELECT * FROM orders", "timeout_ms": 5000}
        data = await refused(server.session.call_tool("db.query", call), -31003)
        assert data["reason"] == "strict_validation_failed"
        assert (data["declaredVersion"], data["currentVersion"]) == (None, "v4")
        assert (data["inferredVersion"], data["action"]) == ("v3", "relist")
        assert any("timeout_ms" in str(e) for e in data["errors"]), data["errors"]
        # the same call minus the unknown property passes strictly, version-less
        result = await server.session.call_tool("db.query", {"query": "SELECT 1"})
        assert result.structured_content == {"rows": [], "received": {"query": "SELECT 1"}}


async def test_3_call_declaring_a_version_never_served_is_unknown(
    registry: Registry, tmp_path: Path
) -> None:
    """(3) A call declaring a version never served (forward-dated) gets -31002,
    refused hard: no re-list instruction."""
    await seed_000_at_v3(registry.client)
    await seed_000_v4(registry.client)
    async with (
        asyncio.timeout(30),
        gated_server(
            tmp_path, url=registry.url, namespace="billing", cache=tmp_path / "billing.json"
        ) as server,
    ):
        data = await refused(
            server.session.call_tool("db.query", dict(V4_CALL), meta={"schemaVersion": "v5"}),
            -31002,
        )
        assert data["reason"] == "schema_version_unknown"
        assert (data["declaredVersion"], data["currentVersion"]) == ("v5", "v4")
        assert "action" not in data


# ------------------------------------------------------------------ (4) seed 002


async def test_4_seed_002_alias_refused_until_a_verified_converter_fills_both(
    registry: Registry, tmp_path: Path
) -> None:
    """(4) search v1 -> v2 with v1 retired, alias search_v1 with contract search v1:
    a v1 client calling search_v1 gets -31004; a converter that only fills
    `filters` is refused at registration (v2's `limit` default would still apply
    silently: default-added); one filling `filters` with {} and `limit` with 20 is
    accepted, and the same call then reaches the handler as exactly
    {"query": ..., "filters": {}, "limit": 20}."""
    client = registry.client
    tool = "/v1/namespaces/docs/tools/search"
    assert (await publish(client, "docs", "search", {"definition": SEARCH_V1}))["version"] == 1
    v2 = await publish(client, "docs", "search", {"definition": SEARCH_V2, "retire": [1]})
    assert (v2["version"], v2["retired"]) == (2, [1])
    alias = await client.put(
        "/v1/namespaces/docs/aliases/search_v1",
        json={"target": "search", "contract": {"tool": "search", "version": 1}},
    )
    assert alias.status_code in (200, 201), alias.text
    assert alias.json()["routed"] is False

    async with (
        asyncio.timeout(60),
        gated_server(
            tmp_path, url=registry.url, namespace="docs", cache=tmp_path / "docs.json"
        ) as server,
    ):
        session = server.session
        v1_call = {"query": "foo"}
        data = await refused(session.call_tool("search_v1", dict(v1_call)), -31004)
        assert data["reason"] == "schema_version_mismatch"
        assert (data["tool"], data["target"]) == ("search_v1", "search")
        assert (data["contractVersion"], data["currentVersion"]) == ("v1", "v2")

        only_filters = await client.post(
            f"{tool}/converters", json={"from": 1, "to": 2, "ops": FILL_FILTERS}
        )
        assert only_filters.status_code == 422, only_filters.text
        problem = only_filters.json()
        assert problem["type"].endswith("/converter-unverified")
        kinds = {c["kind"] for c in problem["report"]["changes"]}
        assert "default-added" in kinds, problem["report"]
        # nothing changed: the server was told nothing and still refuses
        await refused(session.call_tool("search_v1", dict(v1_call)), -31004)

        both = await client.post(f"{tool}/converters", json={"from": 1, "to": 2, "ops": FILL_BOTH})
        assert both.status_code == 201, both.text
        await server.list_changed()

        result = await session.call_tool("search_v1", dict(v1_call))
        assert not result.is_error
        assert result.structured_content == {
            "received": {"query": "foo", "filters": {}, "limit": 20}
        }
        # the retired version itself stays refused for direct callers
        await refused(
            session.call_tool("search", dict(v1_call), meta={"schemaVersion": "v1"}), -31001
        )
    assert server.list_changed_count() == 1


# ------------------------------------------------------------------ (5) outage


async def test_5_boots_from_cache_when_the_registry_is_down_and_fails_clearly_without(
    database_url: str, tmp_path: Path
) -> None:
    """(5) The registry stopped: the server boots from its cache (and says so on
    stderr); the cache removed too: boot fails, exit code 1, with a message
    naming the registry URL and the cause."""
    cache = tmp_path / "cache" / "billing.toolset.json"
    app = await serve(database_url)
    try:
        async with httpx.AsyncClient(
            base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        ) as client:
            await seed_000_at_v3(client)
            await seed_000_v4(client)
        async with (
            asyncio.timeout(30),
            gated_server(
                tmp_path, url=app.url, namespace="billing", cache=cache, name="online"
            ) as server,
        ):
            assert (
                only_tool(await server.session.list_tools(), "db.query").meta["schemaVersion"]
                == "v4"
            )
        assert cache.is_file(), "the boot sync writes the cache"
    finally:
        await app.stop()

    async with (
        asyncio.timeout(30),
        gated_server(
            tmp_path, url=app.url, namespace="billing", cache=cache, name="from-cache"
        ) as server,
    ):
        tool = only_tool(await server.session.list_tools(), "db.query")
        assert tool.meta == {"schemaVersion": "v4", "schemaHash": digest(DB_QUERY_V4)}
        await refused(
            server.session.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": "v3"}),
            -31001,
        )
        result = await server.session.call_tool(
            "db.query", dict(V4_CALL), meta={"schemaVersion": "v4"}
        )
        assert result.structured_content == {"rows": [], "received": V4_CALL}
    said = server.stderr
    assert "toolset.sync.from_cache" in said, said
    assert "RUNNING FROM CACHE" in said and app.url in said and str(cache) in said, said

    cache.unlink()
    code, said = await run_to_exit(app.url, "billing", cache)
    assert code == 1, (code, said)
    assert "gated_server: no toolset to serve" in said, said
    assert f"cannot sync the toolset of namespace 'billing' from registry {app.url}" in said, said
    assert "ConnectError" in said and f"no cache file at {cache}" in said, said
    last = said.strip().splitlines()[-1]
    assert last.startswith("gated_server: no toolset to serve:") and "Traceback" not in said, said


# ------------------------------------------------------------------ (6) watch


async def test_6_publish_while_running_reaches_the_session_as_list_changed(
    registry: Registry, tmp_path: Path
) -> None:
    """(6) A publish while the server runs reaches it through watch, and the
    session (which was told `tools.listChanged`) receives
    `notifications/tools/list_changed`; a re-list shows the new version."""
    client = registry.client
    await publish(client, "billing", "db.query", {"definition": DB_QUERY_V4})
    async with (
        asyncio.timeout(30),
        gated_server(
            tmp_path, url=registry.url, namespace="billing", cache=tmp_path / "billing.json"
        ) as server,
    ):
        assert server.initialize is not None
        assert server.initialize.protocol_version == PROTOCOL
        assert server.initialize.capabilities.tools is not None
        assert server.initialize.capabilities.tools.list_changed is True
        before = only_tool(await server.session.list_tools(), "db.query")
        assert before.meta is not None and before.meta["schemaVersion"] == "v1"
        assert server.list_changed_count() == 0

        wider = copy.deepcopy(DB_QUERY_V4)
        wider["inputSchema"]["properties"]["comment"] = {"type": "string"}
        landed = await publish(client, "billing", "db.query", {"definition": wider})
        assert landed["version"] == 2
        await server.list_changed()

        after = only_tool(await server.session.list_tools(), "db.query")
        assert after.meta == {"schemaVersion": "v2", "schemaHash": digest(wider)}
        call = {"query": "SELECT 1", "comment": "new in v2"}
        result = await server.session.call_tool("db.query", call, meta={"schemaVersion": "v2"})
        assert result.structured_content == {"rows": [], "received": call}
    assert server.list_changed_count() == 1
