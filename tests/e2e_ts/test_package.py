"""The TypeScript gate as its users get it: packed, installed, run as its README says.

`npm pack` builds the package (its `prepack`), the tarball is installed into
an empty folder with the official SDK and zod (the versions sdk-ts's lockfile
pins, from npm's cache when it holds them), and the README's server is saved
as `server.mjs`, exactly as written, and run with `node`:

* against a live registry serving seed 000 (v1 its v3, v2 its v4, a converter
  from v1), driven by the official Python client over stdio: a v1 caller's
  `timeout_ms: 5000` reaches the handler as `timeout: 5000`, a property v2
  does not declare is refused, and the server's usage report reaches the
  registry;
* it exits on its own, code 0, when its input ends;
* the README's old snippet (a zod shape of `query` alone) refuses to start,
  naming `timeout` and `mode` in the lines sdk-ts/README.md shows.

docs/sdk.md shows the same snippet, and the package ships the refusal
catalogue byte for byte as the Python package does.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from registry.sdk.refusals import CATALOGUE_BYTES
from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.e2e.harness import initialize_request, publish
from tests.e2e_ts.nodes import run, spawn
from tests.e2e_ts.test_ts_gate import SDK_TS, node, npm
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import V3_TO_V4_OPS

ROOT = SDK_TS.parent
TOOL = "/v1/namespaces/billing/tools/db.query"

OLD_SNIPPET = """\
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { gateMcpServer, syncToolset, watchToolset } from "@mcp-tool-registry/gate";
import { z } from "zod";

const server = new McpServer({ name: "billing", version: "1.0.0" });
server.registerTool("db.query", { inputSchema: { query: z.string() } }, runQuery);
const toolset = await syncToolset("http://registry:8080", "billing", { cache: ".cache/billing.json", token });
gateMcpServer(server, watchToolset(toolset));   // gated tools/call, tools/list from the toolset, list_changed
"""  # noqa: E501 (the README's TypeScript snippet before this change, as it was written)


def ts_block(markdown: str, heading: str) -> str:
    """The first ```ts block after `heading` (its text, without the fences)."""
    return markdown.split(heading, 1)[1].split("```ts\n", 1)[1].split("```", 1)[0]


SNIPPET = ts_block((SDK_TS / "README.md").read_text(encoding="utf-8"), "## A gated server")


def locked(name: str) -> str:
    lock = json.loads((SDK_TS / "package-lock.json").read_text(encoding="utf-8"))
    return f"{name}@{lock['packages'][f'node_modules/{name}']['version']}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty folder with the packed package, the official SDK and zod installed."""
    node()
    pack = tmp_path_factory.mktemp("pack")
    run([npm(), "pack", str(SDK_TS), "--pack-destination", str(pack), "--silent"], cwd=pack)
    (tarball,) = pack.glob("*.tgz")
    folder = tmp_path_factory.mktemp("server")
    (folder / "package.json").write_text('{"private": true, "type": "module"}\n')
    sdk, zod = locked("@modelcontextprotocol/sdk"), locked("zod")
    run(
        [npm(), "install", "--prefer-offline", "--no-audit", "--no-fund", str(tarball), sdk, zod],
        cwd=folder,
    )
    (folder / "server.mjs").write_text(SNIPPET, encoding="utf-8")
    yield folder


def env(url: str) -> dict[str, str]:
    return {"REGISTRY_URL": url, "REGISTRY_TOKEN": ADMIN_TOKEN, "PATH": str(Path(node()).parent)}


async def seed_000(registry: Registry) -> None:
    """seed 000 as the README's walkthrough leaves it: v1 (its v3), v2 (its v4) with a converter."""
    await publish(registry.client, "billing", "db.query", {"definition": DB_QUERY_V3})
    await publish(
        registry.client,
        "billing",
        "db.query",
        {"definition": DB_QUERY_V4, "converters": [{"from": 1, "ops": V3_TO_V4_OPS}]},
    )


def test_the_package_ships_the_readme_and_the_catalogue_byte_for_byte(installed: Path) -> None:
    package = installed / "node_modules" / "@mcp-tool-registry" / "gate"
    assert (package / "refusals.json").read_bytes() == CATALOGUE_BYTES
    assert (SDK_TS / "refusals.json").read_bytes() == CATALOGUE_BYTES
    assert (package / "README.md").read_text(encoding="utf-8").count(SNIPPET) == 1
    # the wheel ships registry/sdk/refusals.json, the file CATALOGUE_BYTES is read from
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "**/*.json" in pyproject["tool"]["setuptools"]["package-data"]["registry"]


def test_the_guide_shows_the_package_readme_s_snippet() -> None:
    guide = (ROOT / "docs" / "sdk.md").read_text(encoding="utf-8")
    assert ts_block(guide, "## MCP servers in TypeScript") == SNIPPET


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_readme_snippet_as_written_serves_seed_000(
    registry: Registry, installed: Path
) -> None:
    await seed_000(registry)
    params = StdioServerParameters(
        command=node(), args=["server.mjs"], env=env(registry.url), cwd=str(installed)
    )
    with anyio.fail_after(90):
        async with Client(params, read_timeout_seconds=30) as client:
            (tool,) = (await client.list_tools()).tools
            assert tool.meta is not None and tool.meta["schemaVersion"] == "v2"
            stale = await client.call_tool(
                "db.query", {"query": "SELECT 1", "timeout_ms": 5000}, meta={"schemaVersion": "v1"}
            )
            assert not stale.is_error, stale.content
            assert json.loads(text_of(stale)) == {"query": "SELECT 1", "timeout": 5000}
            current = await client.call_tool("db.query", {"query": "SELECT 1", "mode": "read"})
            assert json.loads(text_of(current)) == {"query": "SELECT 1", "mode": "read"}
            stray = await client.call_tool(
                "db.query", {"query": "SELECT 1", "verbose": True}, meta={"schemaVersion": "v2"}
            )
            assert stray.is_error
            assert "`verbose` is not part of db.query v2" in text_of(stray)

    async def reported() -> dict[str, Any] | None:
        usage = (await registry.client.get(f"{TOOL}/usage")).json()
        found = {v["version"]: v for v in usage["versions"]}
        return found if found.get(1, {}).get("calls") == 1 else None

    with anyio.fail_after(30):
        while (found := await reported()) is None:
            await anyio.sleep(0.2)
    assert [(s["name"], s["calls"]) for s in found[1]["servers"]] == [("billing-ts", 1)]
    assert found[1]["decisions"] == [{"decision": "converted", "calls": 1}]
    assert found[2]["calls"] == 2  # the current call and the refused one


async def test_the_snippet_exits_when_its_input_ends(registry: Registry, installed: Path) -> None:
    await seed_000(registry)
    process = await spawn(
        [node(), "server.mjs"], cwd=installed, env=env(registry.url), stdin=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(initialize_request("2025-06-18", "eof")) + "\n").encode())
    await process.stdin.drain()
    answer = json.loads(await asyncio.wait_for(process.stdout.readline(), 60))
    assert answer["result"]["protocolVersion"] == "2025-06-18"
    process.stdin.close()  # the client goes: end of input, no signal
    try:
        code = await asyncio.wait_for(process.wait(), 15)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 0, (await process.stderr.read()).decode() if process.stderr else ""


async def test_the_old_snippet_refuses_to_start_naming_timeout_and_mode(
    registry: Registry, installed: Path
) -> None:
    await seed_000(registry)
    preamble = (
        "const runQuery = async () => ({ content: [] });\n"
        "const token = process.env.REGISTRY_TOKEN;\n"
    )
    (installed / "old.mjs").write_text(
        preamble + OLD_SNIPPET.replace("http://registry:8080", registry.url), encoding="utf-8"
    )
    done = await spawn(
        [node(), "old.mjs"], cwd=installed, env=env(registry.url), stdin=asyncio.subprocess.DEVNULL
    )
    out, err = await asyncio.wait_for(done.communicate(), 60)
    assert done.returncode != 0 and out == b""
    said = err.decode()
    assert "HandlerMismatchError" in said, said
    shown = (SDK_TS / "README.md").read_text(encoding="utf-8")
    lines = shown.split("refuses to start:\n\n```\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(lines) == 2 and "`timeout`" in lines[0] and "`mode`" in lines[1]
    for line in lines:
        assert line in said.splitlines(), said
