"""`registry proxy --upstream URL`: the gate in front of a streamable-HTTP server.

The recording upstream (plain `mcp` SDK, streamable HTTP) behind the proxy,
driven by the official Python client over HTTP in both eras: a 2026-07-28
stateless connection (`Client(url)`, its default) and a handshake-era session
(`mode="legacy"`, `Mcp-Session-Id`). Seed 000's v1 is converted before the
upstream sees it; the stale call is refused for the model; a toolset swap
reaches the listen stream (2026-07-28) and the session's GET stream
(handshake era). The reference server-everything over HTTP behind the proxy,
and an unreachable URL.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, types

from tests.api.conftest import Registry
from tests.e2e.harness import publish
from tests.fixtures.seeds import DB_QUERY_V4
from tests.ports import free_port
from tests.proxy.harness import (
    REGISTRY,
    ROOT,
    Recorder,
    everything_command,
    proxy_env,
    toolset_bytes,
)
from tests.proxy.test_stdio_gate import ADDITIVE_V3, V1_CALL, V2_CALL, seed_000_v1_v2


@asynccontextmanager
async def running(
    command: Sequence[str], log: Path, env: dict[str, str] | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=out, stderr=out, env={**os.environ, **(env or {})}
        )
        try:
            yield process
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def answering(url: str, timeout: float = 30) -> None:
    async with httpx.AsyncClient(timeout=2) as client:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                await client.get(url.replace("/mcp", "/healthz"))
                return
            except httpx.HTTPError:
                assert asyncio.get_running_loop().time() < deadline, f"{url} never answered"
                await asyncio.sleep(0.1)


@asynccontextmanager
async def http_proxy(
    namespace: str, upstream: str, env: dict[str, str], log: Path, *flags: str
) -> AsyncIterator[str]:
    port = free_port()
    command = [
        REGISTRY,
        "proxy",
        "--namespace",
        namespace,
        "--upstream",
        upstream,
        "--port",
        str(port),
        *flags,
    ]
    async with running(command, log, env):
        url = f"http://127.0.0.1:{port}/mcp"
        await answering(url)
        yield url


async def test_both_eras_over_http_are_gated_and_hear_the_swap(
    registry: Registry, tmp_path: Path
) -> None:
    await seed_000_v1_v2(registry)
    recorder = Recorder.at(tmp_path, [DB_QUERY_V4])
    port = free_port()
    upstream = f"http://127.0.0.1:{port}/mcp"
    env = proxy_env(registry.url, tmp_path / "cache.json")
    with anyio.fail_after(120):
        async with (
            running(recorder.command("--http", str(port)), tmp_path / "upstream.log"),
            http_proxy("billing", upstream, env, tmp_path / "proxy.log") as url,
            Client(url, read_timeout_seconds=30) as modern,  # 2026-07-28, stateless
        ):
            assert modern.protocol_version == "2026-07-28"
            listing = await modern.list_tools()
            assert [t.name for t in listing.tools] == ["db.query"]
            assert listing.tools[0].meta is not None
            assert listing.tools[0].meta["schemaVersion"] == "v2"
            converted = await modern.call_tool("db.query", V1_CALL, meta={"schemaVersion": "v1"})
            assert converted.structured_content == {"received": V2_CALL}
            stale = await modern.call_tool("db.query", V1_CALL)
            assert stale.is_error and stale.structured_content is not None
            assert stale.structured_content["code"] == -31003

            # handshake era, a session
            changed = asyncio.Event()

            async def on_message(message: Any) -> None:
                if isinstance(message, types.ToolListChangedNotification):
                    changed.set()

            async with Client(
                url, mode="legacy", read_timeout_seconds=30, message_handler=on_message
            ) as legacy:
                assert legacy.protocol_version == "2025-11-25"
                caps = legacy.server_capabilities
                assert caps.tools is not None and caps.tools.list_changed is True
                (tool,) = (await legacy.list_tools()).tools
                assert tool.meta is not None and tool.meta["schemaVersion"] == "v2"
                converted = await legacy.call_tool(
                    "db.query", V1_CALL, meta={"schemaVersion": "v1"}
                )
                assert converted.structured_content == {"received": V2_CALL}

                async with modern.listen(tools_list_changed=True) as subscription:
                    await publish(
                        registry.client, "billing", "db.query", {"definition": ADDITIVE_V3}
                    )
                    with anyio.fail_after(20):
                        async for event in subscription:
                            assert type(event).__name__ == "ToolsListChanged"
                            break
                with anyio.fail_after(20):
                    await changed.wait()
                (tool,) = (await legacy.list_tools()).tools
                assert tool.meta is not None and tool.meta["schemaVersion"] == "v3"
    assert recorder.calls() == [{"name": "db.query", "arguments": V2_CALL}] * 2
    assert "Traceback" not in (tmp_path / "proxy.log").read_text()


async def test_server_everything_over_http_behind_the_proxy(
    registry: Registry, tmp_path: Path
) -> None:
    node, script, _ = everything_command()
    port = free_port()
    upstream = f"http://127.0.0.1:{port}/mcp"
    env = proxy_env(registry.url, tmp_path / "cache.json")
    with anyio.fail_after(120):
        async with running(
            [node, script, "streamableHttp"], tmp_path / "everything.log", {"PORT": str(port)}
        ):
            await answering(upstream)
            async with Client(upstream, mode="legacy", read_timeout_seconds=30) as direct:
                tools = {t.name: t for t in (await direct.list_tools()).tools}
                prompts = (await direct.list_prompts()).model_dump()
            await registry.client.put("/v1/namespaces/everything")
            for name in ("echo", "get-sum"):
                definition = tools[name].model_dump(by_alias=True, exclude_none=True)
                await publish(registry.client, "everything", name, {"definition": definition})
            async with (
                http_proxy("everything", upstream, env, tmp_path / "proxy.log") as url,
                Client(url, mode="legacy", read_timeout_seconds=30) as client,
            ):
                listing = await client.list_tools()
                assert sorted(t.name for t in listing.tools) == ["echo", "get-sum"]
                summed = await client.call_tool("get-sum", {"a": 2, "b": 3})
                assert not summed.is_error and "5" in str(summed.content[0])
                refused = await client.call_tool("get-sum", {"a": 2, "b": 3, "c": 4})
                assert refused.is_error and refused.structured_content is not None
                assert refused.structured_content["code"] == -31003
                assert (await client.list_prompts()).model_dump() == prompts


async def test_an_unreachable_upstream_is_one_line_and_exit_1(tmp_path: Path) -> None:
    toolset = tmp_path / "toolset.json"
    toolset.write_bytes(toolset_bytes("billing", [DB_QUERY_V4]))
    process = await asyncio.create_subprocess_exec(
        REGISTRY,
        "proxy",
        "--namespace",
        "billing",
        "--toolset",
        str(toolset),
        "--upstream",
        f"http://127.0.0.1:{free_port()}/mcp",
        "--port",
        str(free_port()),
        "--init-timeout",
        "1",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 1
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("registry proxy: the upstream http://"), lines
    assert "unreachable" in lines[0]
    assert out == b""
    assert sys.executable  # the proxy is this environment's `registry`


async def test_pin_over_http_withholds_an_unapproved_definition(
    registry: Registry, tmp_path: Path
) -> None:
    from mcp.shared.exceptions import MCPError

    from tests.proxy.test_pin import POISONED

    await publish(registry.client, "billing", "db.query", {"definition": DB_QUERY_V4})
    recorder = Recorder.at(tmp_path, [POISONED])
    port = free_port()
    upstream = f"http://127.0.0.1:{port}/mcp"
    env = proxy_env(registry.url, tmp_path / "cache.json")
    log = tmp_path / "proxy.log"
    with anyio.fail_after(90):
        async with (
            running(recorder.command("--http", str(port)), tmp_path / "upstream.log"),
            http_proxy("billing", upstream, env, log, "--pin") as url,
        ):
            for mode in ("legacy", "2026-07-28"):
                async with Client(url, mode=mode, read_timeout_seconds=30) as client:
                    assert (await client.list_tools()).tools == []
                    try:
                        await client.call_tool("db.query", {"query": "SELECT 1"})
                    except MCPError as refused:
                        assert refused.code == -31005
                        assert refused.data["liveDigest"].startswith("sha256:")
                    else:
                        raise AssertionError("the withheld tool was called")
    assert recorder.calls() == []
    assert log.read_text().count("--pin: db.query withheld") == 1
