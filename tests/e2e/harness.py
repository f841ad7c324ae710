"""The example server (examples/gated_server.py) as a subprocess, driven by the
official MCP client: `stdio_client` + `ClientSession` on a handshake-era session.

    async with gated_server(tmp_path, url=registry.url, namespace="billing",
                            cache=tmp_path / "billing.json") as server:
        listing = await server.session.list_tools()
        await server.list_changed(timeout=15)      # a notifications/tools/list_changed
    server.stderr                                  # what the server logged (after exit)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.shared.exceptions import MCPError

from tests.api.conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gated_server.py"
PROTOCOL = "2025-06-18"
"""The handshake-era revision every session here negotiates."""
WATCH_SECONDS = 2
"""REGISTRY_WAIT: how long the registry holds each watch long-poll. A publish
ends a long-poll at once whatever this is; it bounds how long the test
registry's shutdown waits for the long-poll of a server already gone (the
registry does not notice a client that disconnected mid-poll)."""


def server_env(url: str, namespace: str, cache: Path) -> dict[str, str]:
    """What the example reads (merged over the SDK's safe default environment)."""
    return {
        "REGISTRY_URL": url,
        "REGISTRY_TOKEN": ADMIN_TOKEN,
        "REGISTRY_NAMESPACE": namespace,
        "REGISTRY_CACHE": str(cache),
        "REGISTRY_WAIT": str(WATCH_SECONDS),
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class GatedServer:
    """One running example server and one client session on it."""

    session: ClientSession
    stderr_path: Path
    initialize: types.InitializeResult | None = None
    notifications: list[Any] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_message(self, message: Any) -> None:
        """The session's message handler: keep every notification, flag list_changed."""
        self.notifications.append(message)
        if isinstance(message, types.ToolListChangedNotification):
            self._changed.set()

    def list_changed_count(self) -> int:
        return sum(isinstance(m, types.ToolListChangedNotification) for m in self.notifications)

    async def list_changed(self, timeout: float = 15) -> None:
        """Wait for a `notifications/tools/list_changed` not yet consumed."""
        async with asyncio.timeout(timeout):
            await self._changed.wait()
        self._changed.clear()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


async def handshake(session: ClientSession, version: str = PROTOCOL) -> types.InitializeResult:
    """`initialize` offering `version` (ClientSession.initialize always offers the
    latest handshake revision), then `notifications/initialized`."""
    result = await session.send_request(
        types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocol_version=version,
                capabilities=types.ClientCapabilities(),
                client_info=types.Implementation(name="e2e-client", version="0.1.0"),
            )
        ),
        types.InitializeResult,
    )
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return result


@asynccontextmanager
async def gated_server(
    tmp_path: Path,
    *,
    url: str,
    namespace: str,
    cache: Path,
    name: str = "server",
    example: Path = EXAMPLE,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> AsyncIterator[GatedServer]:
    """Spawn the example (or another server taking its environment; `env`: more of
    it; `args`: its command line) over stdio and open a 2025-06-18 session on it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(example), *args],
        env=server_env(url, namespace, cache) | (env or {}),
        cwd=str(ROOT),
    )
    stderr_path = tmp_path / f"{name}.stderr.log"
    with stderr_path.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            holder: list[GatedServer] = []

            async def on_message(message: Any) -> None:
                await holder[0].on_message(message)

            async with ClientSession(
                read, write, read_timeout_seconds=15, message_handler=on_message
            ) as session:
                server = GatedServer(session, stderr_path)
                holder.append(server)
                server.initialize = await handshake(session)
                yield server


async def refused(call: Awaitable[Any], code: int) -> dict[str, Any]:
    """The call fails with a JSON-RPC error of `code` (never an isError result); its data."""
    with pytest.raises(MCPError) as caught:
        await call
    assert caught.value.code == code, (caught.value.code, caught.value.error)
    data = caught.value.data
    assert isinstance(data, dict), caught.value.error
    return data


async def run_to_exit(
    url: str, namespace: str, cache: Path, timeout: float = 30, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run the example without a client until it exits: (exit code, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE),
        cwd=str(ROOT),
        env=get_default_environment() | server_env(url, namespace, cache) | (env or {}),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(timeout):
            _, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, stderr.decode("utf-8", "replace")


def timings_ms(call: Callable[[], Any], n: int = 200) -> tuple[float, float]:
    """(p50, p99) wall time of `call` in milliseconds over `n` runs."""
    samples = []
    for _ in range(n):
        started = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - started) / 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(n * 0.99) - 1]


async def publish(
    client: httpx.AsyncClient, ns: str, tool: str, body: dict[str, Any], status: int = 201
) -> dict[str, Any]:
    answer = await client.post(f"/v1/namespaces/{ns}/tools/{tool}/versions", json=body)
    assert answer.status_code == status, answer.text
    result: dict[str, Any] = answer.json()
    return result


def initialize_request(revision: str, name: str, request_id: int = 1) -> dict[str, Any]:
    """An `initialize` request offering `revision`, as a raw JSON-RPC message."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": name, "version": "0"},
        },
    }
