"""`registry proxy` over stdio in front of an ungated server, with a live registry.

Seed 000's story through the proxy, driven by the official Python client as a
host: db.query v1 (seed 000's v3) deprecated with a converter, v2 (its v4)
current. The upstream is tests/proxy/recording_server.py (the plain `mcp`
SDK, no gate), which logs what it receives, so the tests read what the
upstream really got. Then the same through a 2026-07-28 session, usage
reports, and a toolset swap announced both ways (list_changed, listen).
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, types

from tests.api.conftest import Registry
from tests.e2e.harness import publish, refused
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.proxy.harness import ROOT, Recorder, proxied, proxy_command, proxy_env
from tests.sdk import V3_TO_V4_OPS

V1_CALL = {"query": "SELECT * FROM orders", "timeout_ms": 5000, "mode": "read"}
V2_CALL = {"query": "SELECT * FROM orders", "timeout": 5000, "mode": "read"}
UNREGISTERED = {
    "name": "shell.exec",
    "description": "Run a shell command.",
    "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}
ADDITIVE_V3 = copy.deepcopy(DB_QUERY_V4)
ADDITIVE_V3["inputSchema"]["properties"]["explain"] = {"type": "boolean"}


async def seed_000_v1_v2(registry: Registry) -> None:
    """db.query v1 (seed 000's v3), deprecated with a verified converter; v2 (its v4) current."""
    await publish(registry.client, "billing", "db.query", {"definition": DB_QUERY_V3})
    await publish(
        registry.client,
        "billing",
        "db.query",
        {
            "definition": DB_QUERY_V4,
            "converters": [{"from": 1, "ops": V3_TO_V4_OPS}],
            "deprecate": [{"version": 1}],
        },
    )


async def test_seed_000_through_the_proxy_reaches_the_upstream_converted(
    registry: Registry, tmp_path: Path
) -> None:
    await seed_000_v1_v2(registry)
    recorder = Recorder.at(tmp_path, [DB_QUERY_V4, UNREGISTERED])
    command = proxy_command("billing", recorder.command())
    env = proxy_env(registry.url, tmp_path / "cache.json", REGISTRY_USAGE_INTERVAL="1")
    with anyio.fail_after(90):
        async with proxied(command, env, tmp_path / "proxy.err") as proxy:
            session = proxy.session
            assert proxy.initialize is not None
            assert proxy.initialize.server_info.name == "recording"  # the upstream's, passed on
            assert proxy.initialize.capabilities.tools is not None
            assert proxy.initialize.capabilities.tools.list_changed is True

            # the listing: the toolset's, only what the upstream serves, with _meta
            listing = await session.list_tools()
            assert [t.name for t in listing.tools] == ["db.query"]  # shell.exec: not registered
            (tool,) = listing.tools
            assert tool.meta is not None
            assert tool.meta["schemaVersion"] == "v2"
            assert tool.meta["schemaHash"].startswith("sha256:")

            # declared v1: converted before the upstream sees it
            result = await session.call_tool("db.query", V1_CALL, meta={"schemaVersion": "v1"})
            assert not result.is_error, result
            assert result.structured_content == {"received": V2_CALL}
            # declared current: the caller's own arguments
            result = await session.call_tool("db.query", V2_CALL, meta={"schemaVersion": "v2"})
            assert not result.is_error

            # version-less with v1's arguments: refused for the model, never forwarded
            stale = await session.call_tool("db.query", V1_CALL)
            assert stale.is_error
            assert stale.structured_content is not None
            assert stale.structured_content["code"] == -31003
            assert stale.structured_content["inferredVersion"] == "v1"
            text = stale.content[0]
            assert isinstance(text, types.TextContent) and "`timeout_ms`" in text.text
            # a declared version never served: a JSON-RPC error, never forwarded
            await refused(
                session.call_tool("db.query", V2_CALL, meta={"schemaVersion": "v9"}), -31002
            )
            # an unregistered tool the upstream serves: unknown to the gate
            await refused(session.call_tool("shell.exec", {"cmd": "id"}), -32602)
            # everything else passes through
            await session.send_ping()

            assert recorder.calls() == [
                {"name": "db.query", "arguments": V2_CALL},
                {"name": "db.query", "arguments": V2_CALL},
            ]

            # usage, like a gated server: v1 converted once, v2 accepted once
            async def reported() -> dict[int, Any]:
                answer = await registry.client.get("/v1/namespaces/billing/tools/db.query/usage")
                return {v["version"]: v for v in answer.json()["versions"]}

            for _ in range(100):
                found = await reported()
                if found.get(1, {}).get("calls") and found.get(2, {}).get("calls"):
                    break
                await asyncio.sleep(0.2)
            assert found[1]["calls"] >= 1 and found[2]["calls"] >= 1, found

            # a publish reaches the proxy through the watcher: list_changed, a new listing
            await publish(registry.client, "billing", "db.query", {"definition": ADDITIVE_V3})
            await proxy.list_changed()
            (tool,) = (await session.list_tools()).tools
            assert tool.meta is not None and tool.meta["schemaVersion"] == "v3"
    assert "Traceback" not in proxy.stderr, proxy.stderr


async def test_a_2026_session_is_gated_and_hears_the_swap_on_its_listen_stream(
    registry: Registry, tmp_path: Path
) -> None:
    """The official client's default mode negotiates 2026-07-28 through the proxy
    (server/discover, per-request envelopes, `ttlMs`); a toolset swap reaches its
    `subscriptions/listen` stream."""
    await seed_000_v1_v2(registry)
    recorder = Recorder.at(tmp_path, [DB_QUERY_V4])
    command = proxy_command("billing", recorder.command())
    env = proxy_env(registry.url, tmp_path / "cache.json")
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=ROOT)
    with anyio.fail_after(90):
        async with Client(params, read_timeout_seconds=30) as client:
            assert client.protocol_version == "2026-07-28"
            listing = await client.list_tools()
            assert [t.name for t in listing.tools] == ["db.query"]
            assert listing.tools[0].meta is not None
            assert listing.tools[0].meta["schemaVersion"] == "v2"
            result = await client.call_tool("db.query", V1_CALL, meta={"schemaVersion": "v1"})
            assert result.structured_content == {"received": V2_CALL}
            stale = await client.call_tool("db.query", V1_CALL)
            assert stale.is_error and stale.structured_content is not None
            assert stale.structured_content["code"] == -31003

            async with client.listen(tools_list_changed=True) as subscription:
                await publish(registry.client, "billing", "db.query", {"definition": ADDITIVE_V3})
                with anyio.fail_after(20):
                    async for event in subscription:
                        assert type(event).__name__ == "ToolsListChanged"
                        break
            listing = await client.list_tools(cache_mode="refresh")
            assert listing.tools[0].meta is not None
            assert listing.tools[0].meta["schemaVersion"] == "v3"
    assert recorder.calls() == [{"name": "db.query", "arguments": V2_CALL}]


async def test_every_page_both_ways(registry: Registry, tmp_path: Path) -> None:
    """The upstream lists its tools one per page; the proxy reads every page, and its
    own listing (the SDK's pages of 100) holds every registered tool it found."""
    names = [f"tool.{n}" for n in range(5)]
    tools = [{**UNREGISTERED, "name": name} for name in names]
    for tool in tools[:4]:  # the fifth is the upstream's only
        await publish(registry.client, "billing", tool["name"], {"definition": tool})
    recorder = Recorder.at(tmp_path, tools)
    command = proxy_command("billing", recorder.command("--page-size", "1"))
    env = proxy_env(registry.url, tmp_path / "cache.json")
    with anyio.fail_after(60):
        async with proxied(command, env, tmp_path / "proxy.err") as proxy:
            listing = await proxy.session.list_tools()
            assert listing.next_cursor is None
            assert [t.name for t in listing.tools] == names[:4]
