"""Clients nobody here wrote, against the example server and a live registry.

* The official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, pinned by
  tests/clients/ts/package-lock.json, installed by `make test`) on Node, as a
  stock host: it never declares `_meta.schemaVersion`. tests/clients/ts/stale_client.mjs
  drives the stdio server (which configured no logging) through a breaking
  publish and follows the refusal's text.
* The official Python client in its default mode (2026-07-28, its response
  cache on): after a breaking publish, a client following the refusal
  succeeds on its next call, whether it re-lists or reads the refusal.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError

from registry.compat import classify
from registry.sdk import strict_schema
from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.e2e.harness import EXAMPLE, ROOT, server_env
from tests.e2e.test_mcp_e2e import seed_000_at_v3, seed_000_v4
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

TS_CLIENT = ROOT / "tests" / "clients" / "ts"
STALE = {"query": "SELECT * FROM orders", "timeout_ms": 5000}
RENAMED = {"query": "SELECT * FROM orders", "timeout": 5000}


def rename_message() -> str:
    """The engine's own words for seed 000's rename."""
    (change,) = [
        c for c in classify(DB_QUERY_V3, DB_QUERY_V4).changes if c.kind == "property-renamed"
    ]
    return change.message


def node() -> str:
    found = shutil.which("node")
    if found is None or not (TS_CLIENT / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail(
            "the TypeScript client is not installed: `make test` installs it "
            f"(npm ci --prefix {TS_CLIENT.relative_to(ROOT)}); node found: {found}"
        )
    return found


async def test_typescript_sdk_client_learns_the_rename_from_the_refusal_in_one_retry(
    registry: Registry, tmp_path: Path
) -> None:
    executable = node()
    await seed_000_at_v3(registry.client)
    given = {
        "server": {
            "command": sys.executable,
            "args": [str(EXAMPLE)],
            "env": server_env(registry.url, "billing", tmp_path / "billing.json"),
            "cwd": str(ROOT),
        },
        "tool": "db.query",
        "stale": STALE,
        "publish": {
            "url": f"{registry.url}/v1/namespaces/billing/tools/db.query/versions",
            "token": ADMIN_TOKEN,
            "body": {"definition": DB_QUERY_V4, "retire": [1, 2, 3]},
        },
    }
    process = await asyncio.create_subprocess_exec(
        executable,
        str(TS_CLIENT / "stale_client.mjs"),
        json.dumps(given),
        cwd=str(TS_CLIENT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(120):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out)
    assert report["ok"], report.get("error")
    assert report["transportErrors"] == [], report[
        "transportErrors"
    ]  # nothing but protocol on stdout
    assert report["serverCapabilities"]["tools"]["listChanged"] is True
    assert report["listedBefore"][0]["meta"]["schemaVersion"] == "v3"

    before, stale, retry = report["steps"]
    assert not before["isError"], before  # v3 current: the caller's arguments are right

    assert report["publishStatus"] == 201
    assert report["listChanged"] >= 1

    assert stale["isError"], stale
    assert "timeout_ms" in stale["text"] and rename_message() in stale["text"], stale["text"]
    structured = stale["structuredContent"]
    assert structured["code"] == -31003
    assert (structured["inferredVersion"], structured["currentVersion"]) == ("v3", "v4")
    assert structured["action"] == "relist"

    assert retry["arguments"] == RENAMED
    assert not retry["isError"], retry
    assert retry["structuredContent"] == {"rows": [], "received": RENAMED}
    assert report["listedAfter"][0]["meta"]["schemaVersion"] == "v4"
    assert "Traceback" not in report["serverStderr"], report["serverStderr"]


async def test_python_client_2026_mode_succeeds_within_one_retry_after_a_breaking_publish(
    registry: Registry, tmp_path: Path
) -> None:
    """The client listed v3 (its default response cache on) and knows v3's
    arguments. After the cutover to v4 (v3 retired):

    * its version-less call gets an isError result; rewriting the arguments as
      the refusal's `changes` say, the next call succeeds;
    * its call declaring the v3 it listed gets -31001 with `action: relist`;
      re-listing (default cache mode) shows v4, and the next call declaring v4
      succeeds; the refusal itself also carried v4 and its schema.
    """
    await seed_000_at_v3(registry.client)
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(EXAMPLE)],
        env=server_env(registry.url, "billing", tmp_path / "billing.json"),
        cwd=str(ROOT),
    )
    with anyio.fail_after(90):
        async with Client(params, read_timeout_seconds=30) as client:
            assert client.protocol_version == "2026-07-28"
            listing = await client.list_tools()
            (tool,) = listing.tools
            assert tool.meta is not None and tool.meta["schemaVersion"] == "v3"
            known = tool.meta["schemaVersion"]
            assert not (await client.call_tool("db.query", STALE)).is_error

            await seed_000_v4(registry.client)
            # wait until the server swapped, without touching the client's cache
            while True:
                fresh = await client.list_tools(cache_mode="bypass")
                if fresh.tools[0].meta and fresh.tools[0].meta["schemaVersion"] == "v4":
                    break
                await anyio.sleep(0.1)

            # a stock host: no version, the arguments it knows
            refused = await client.call_tool("db.query", STALE)
            assert refused.is_error
            assert isinstance(refused.content[0], types.TextContent)
            assert rename_message() in refused.content[0].text
            structured = refused.structured_content
            assert isinstance(structured, dict) and structured["inferredVersion"] == "v3"
            arguments = dict(STALE)
            for change in structured["changes"]:
                if change["kind"] == "property-renamed":
                    arguments[change["new"]] = arguments.pop(change["old"])
            retried = await client.call_tool("db.query", arguments)
            assert not retried.is_error, retried.content
            assert retried.structured_content == {"rows": [], "received": RENAMED}

            # a version-aware caller declaring what it listed
            with pytest.raises(MCPError) as caught:
                await client.call_tool("db.query", RENAMED, meta={"schemaVersion": known})
            assert caught.value.code == -31001
            data = caught.value.data
            assert isinstance(data, dict) and data["action"] == "relist"
            assert (data["currentVersion"], data["inputSchema"]) == (
                "v4",
                strict_schema(DB_QUERY_V4["inputSchema"]),
            )
            relisted = await client.list_tools()  # default cache mode: what "relist" means
            assert relisted.tools[0].meta is not None
            assert relisted.tools[0].meta["schemaVersion"] == "v4"
            answer = await client.call_tool(
                "db.query", RENAMED, meta={"schemaVersion": relisted.tools[0].meta["schemaVersion"]}
            )
            assert not answer.is_error, answer.content
