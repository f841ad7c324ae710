"""Reference servers nobody here wrote, behind `registry proxy`, with a live registry.

* `@modelcontextprotocol/server-everything` (npm, tests/proxy/upstreams): every
  tool it lists is published as it lists it, and `echo` with an older v1
  (`text`, renamed to `message`). Through the proxy the official Python client
  (sampling, elicitation and roots declared) sees the toolset's listing; a v1
  call reaches the upstream converted (its echo says so); the version-less stale
  call is refused for the model; and what the proxy does not gate passes
  through both ways: progress, sampling, elicitation and roots requests from
  the server, logging, resources and prompts (compared with a direct session).
* `mcp-server-time` (PyPI, the dev extra): gated calls and a refusal.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.api.conftest import Registry
from tests.e2e.harness import publish
from tests.proxy.harness import (
    ROOT,
    everything_command,
    proxied,
    proxy_command,
    proxy_env,
    time_command,
)


async def sampling(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="sampled-by-host"), model="t"
    )


async def elicitation(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def roots(ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///srv/root-of-host", name="host")])


CALLBACKS: dict[str, Any] = {
    "sampling_callback": sampling,
    "elicitation_callback": elicitation,
    "list_roots_callback": roots,
}


async def direct_view(command: list[str]) -> dict[str, Any]:
    """What the server answers a direct session: tools, resources, prompts."""
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=ROOT)
    with Path("/dev/null").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=30, **CALLBACKS) as session,
        ):
            await session.initialize()
            await anyio.sleep(0.5)  # server-everything registers some tools after initialized
            return await passed_through(session)


async def passed_through(session: ClientSession) -> dict[str, Any]:
    resources = await session.list_resources()
    prompts = await session.list_prompts()
    templates = await session.list_resource_templates()
    first = await session.read_resource(resources.resources[0].uri)
    return {
        "tools": (await session.list_tools()).tools,
        "resources": resources.model_dump(),
        "prompts": prompts.model_dump(),
        "templates": templates.model_dump(),
        "first": first.model_dump(),
    }


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_server_everything_behind_the_proxy(registry: Registry, tmp_path: Path) -> None:
    command = everything_command()
    with anyio.fail_after(120):
        direct = await direct_view(command)
        tools = {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in direct["tools"]}
        assert {"echo", "trigger-sampling-request", "get-roots-list"} <= set(tools)
        echo_v1 = copy.deepcopy(tools["echo"])
        echo_v1["inputSchema"]["properties"] = {"text": {"type": "string"}}
        echo_v1["inputSchema"]["required"] = ["text"]
        await registry.client.put("/v1/namespaces/everything")
        await publish(registry.client, "everything", "echo", {"definition": echo_v1})
        await publish(
            registry.client,
            "everything",
            "echo",
            {
                "definition": tools["echo"],
                "converters": [
                    {"from": 1, "ops": [{"op": "rename", "from": "/text", "to": "/message"}]}
                ],
            },
        )
        for name, definition in tools.items():
            if name != "echo":
                await publish(registry.client, "everything", name, {"definition": definition})

        env = proxy_env(registry.url, tmp_path / "cache.json")
        proxy_cmd = proxy_command("everything", command)
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        async with proxied(proxy_cmd, env, tmp_path / "proxy.err", **CALLBACKS) as proxy:
            session = proxy.session
            await anyio.sleep(0.5)
            view = await passed_through(session)
            listed = {t.name: t for t in view.pop("tools")}
            assert set(listed) == set(tools)
            assert listed["echo"].meta is not None
            assert listed["echo"].meta["schemaVersion"] == "v2"
            direct.pop("tools")
            assert view == direct  # resources, templates, prompts: unchanged

            # declared v1: the upstream echoes the converted argument
            echoed = await session.call_tool("echo", {"text": "hi"}, meta={"schemaVersion": "v1"})
            assert text_of(echoed) == "Echo: hi"
            stale = await session.call_tool("echo", {"text": "hi"})
            assert stale.is_error and stale.structured_content is not None
            assert stale.structured_content["code"] == -31003
            assert stale.structured_content["inferredVersion"] == "v1"

            # server-initiated requests and notifications pass through both ways
            sampled = await session.call_tool(
                "trigger-sampling-request", {"prompt": "hello", "maxTokens": 5}
            )
            assert "sampled-by-host" in text_of(sampled), sampled
            rooted = await session.call_tool("get-roots-list", {})
            assert "file:///srv/root-of-host" in text_of(rooted), rooted
            elicited = await session.call_tool("trigger-elicitation-request", {})
            assert "decline" in text_of(elicited).lower(), elicited
            long = await session.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                progress_callback=on_progress,
            )
            assert not long.is_error
            assert len(progress) == 3, progress
            with pytest.warns(MCPDeprecationWarning, match="logging capability is deprecated"):
                await session.set_logging_level("debug")  # handshake era: still relayed
            await session.send_ping()
    assert "Traceback" not in proxy.stderr, proxy.stderr


async def test_mcp_server_time_behind_the_proxy(registry: Registry, tmp_path: Path) -> None:
    command = time_command()
    with anyio.fail_after(90):
        direct = await direct_tools(command)
        await registry.client.put("/v1/namespaces/time")
        for definition in direct:
            await publish(registry.client, "time", definition["name"], {"definition": definition})
        env = proxy_env(registry.url, tmp_path / "cache.json")
        async with proxied(proxy_command("time", command), env, tmp_path / "proxy.err") as proxy:
            listing = await proxy.session.list_tools()
            assert sorted(t.name for t in listing.tools) == ["convert_time", "get_current_time"]
            assert all(t.meta and t.meta["schemaVersion"] == "v1" for t in listing.tools)
            now = await proxy.session.call_tool("get_current_time", {"timezone": "Etc/UTC"})
            assert not now.is_error
            assert now.structured_content is not None
            assert now.structured_content["timezone"] == "Etc/UTC"
            wrong = await proxy.session.call_tool("get_current_time", {"tz": "Etc/UTC"})
            assert wrong.is_error and wrong.structured_content is not None
            assert wrong.structured_content["code"] == -31003
            assert "`tz` is not part of get_current_time v1" in text_of(wrong)


async def direct_tools(command: list[str]) -> list[dict[str, Any]]:
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=ROOT)
    with Path("/dev/null").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=30) as session,
        ):
            await session.initialize()
            listing = await session.list_tools()
            return [t.model_dump(by_alias=True, exclude_none=True) for t in listing.tools]
