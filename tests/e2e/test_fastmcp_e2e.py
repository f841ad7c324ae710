"""End to end: the official MCP client, examples/fastmcp_server.py, a live registry.

The FastMCP example (seed 000's db.query as a decorated function, gated with
`gate_fastmcp`) runs as a stdio subprocess synced from the registry of
tests/api (REGISTRY_URL, REGISTRY_TOKEN, REGISTRY_NAMESPACE, REGISTRY_CACHE,
REGISTRY_WAIT=2), as tests/e2e/test_mcp_e2e.py runs the low-level example:
a handshake-era session through seed 000's cutover, and the official Python
client in its default 2026-07-28 mode.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from registry.canonical import digest
from registry.sdk import strict_schema
from tests.api.conftest import Registry
from tests.e2e.harness import ROOT, gated_server, publish, refused, server_env
from tests.e2e.test_clients import RENAMED, STALE, rename_message
from tests.e2e.test_mcp_e2e import V3_CALL, V4_CALL, only_tool, seed_000_at_v3, seed_000_v4
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

pytest.importorskip("fastmcp")

FASTMCP_EXAMPLE = ROOT / "examples" / "fastmcp_server.py"


async def said(path: Path, text: str, timeout: float = 30) -> str:
    """The server's stderr once it contains `text`."""
    with anyio.fail_after(timeout):
        while text not in (log := path.read_text(encoding="utf-8", errors="replace")):
            await anyio.sleep(0.05)
    return log


async def test_seed_000_on_a_handshake_session(registry: Registry, tmp_path: Path) -> None:
    """The client lists db.query at v3; v4 is published with v1-v3 retired and
    the session hears `notifications/tools/list_changed`; its call declaring v3
    is refused (-31001, relist); a version-less call with v3's `timeout_ms` is
    refused (-31003 naming v3: a JSON-RPC error on 2025-06-18); the v4 call is
    served with exactly its arguments. A publish of a tool the server does not
    implement is reported on its stderr."""
    await seed_000_at_v3(registry.client)
    async with (
        asyncio.timeout(90),
        gated_server(
            tmp_path,
            url=registry.url,
            namespace="billing",
            cache=tmp_path / "billing.json",
            example=FASTMCP_EXAMPLE,
        ) as server,
    ):
        assert server.initialize is not None
        assert server.initialize.capabilities.tools is not None
        assert server.initialize.capabilities.tools.list_changed is True
        session = server.session
        listed = only_tool(await session.list_tools(), "db.query")
        # the registry's v3, not the schema FastMCP derives from the v4-style function
        assert listed.meta == {"schemaVersion": "v3", "schemaHash": digest(DB_QUERY_V3)}
        assert listed.input_schema == DB_QUERY_V3["inputSchema"]

        await seed_000_v4(registry.client)
        await server.list_changed()

        data = await refused(
            session.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": "v3"}), -31001
        )
        assert (data["reason"], data["action"]) == ("schema_version_retired", "relist")
        assert (data["declaredVersion"], data["currentVersion"]) == ("v3", "v4")
        assert data["retired"] == ["v1", "v2", "v3"]
        assert data["inputSchema"] == strict_schema(DB_QUERY_V4["inputSchema"])

        data = await refused(session.call_tool("db.query", dict(STALE)), -31003)
        assert (data["inferredVersion"], data["currentVersion"]) == ("v3", "v4")

        relisted = only_tool(await session.list_tools(), "db.query")
        assert relisted.meta == {"schemaVersion": "v4", "schemaHash": digest(DB_QUERY_V4)}
        result = await session.call_tool(
            "db.query", dict(V4_CALL), meta={"schemaVersion": relisted.meta["schemaVersion"]}
        )
        assert not result.is_error, result.content
        assert result.structured_content == {"rows": [], "received": V4_CALL}

        export = copy.deepcopy(DB_QUERY_V4)
        export["name"] = "db.export"
        await publish(registry.client, "billing", "db.export", {"definition": export})
        await server.list_changed()
        log = await said(server.stderr_path, "fastmcp.gate.tools_not_implemented")
    assert "db.export" in log and "namespace billing" in log
    assert "tools_not_in_registry" not in log and "Traceback" not in server.stderr
    assert server.list_changed_count() == 2


async def test_python_client_2026_mode(registry: Registry, tmp_path: Path) -> None:
    """The official Python client in its default mode (2026-07-28): listening
    for list changes, it hears the cutover; its version-less stale call is an
    isError result naming the rename in the engine's words; the retry the
    result implies is served; its call declaring the v3 it listed is -31001."""
    await seed_000_at_v3(registry.client)
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(FASTMCP_EXAMPLE)],
        env=server_env(registry.url, "billing", tmp_path / "billing.json"),
        cwd=str(ROOT),
    )
    with anyio.fail_after(90):
        async with Client(params, read_timeout_seconds=30) as client:
            assert client.protocol_version == "2026-07-28"
            (tool,) = (await client.list_tools()).tools
            assert tool.meta is not None and tool.meta["schemaVersion"] == "v3"
            known = tool.meta["schemaVersion"]

            async with client.listen(tools_list_changed=True) as events:
                await seed_000_v4(registry.client)
                async for event in events:
                    assert type(event).__name__ == "ToolsListChanged"
                    break

            refusal = await client.call_tool("db.query", dict(STALE))
            assert refusal.is_error
            assert isinstance(refusal.content[0], types.TextContent)
            assert rename_message() in refusal.content[0].text
            structured = refusal.structured_content
            assert isinstance(structured, dict)
            assert (structured["code"], structured["inferredVersion"]) == (-31003, "v3")
            arguments = dict(STALE)
            for change in structured["changes"]:
                if change["kind"] == "property-renamed":
                    arguments[change["new"]] = arguments.pop(change["old"])
            assert arguments == RENAMED
            retried = await client.call_tool("db.query", arguments)
            assert not retried.is_error, retried.content
            assert retried.structured_content == {"rows": [], "received": RENAMED}

            data = await refused(
                client.call_tool("db.query", RENAMED, meta={"schemaVersion": known}), -31001
            )
            assert (data["currentVersion"], data["action"]) == ("v4", "relist")
