"""Driving `registry proxy` as a host does: the official clients on its stdio.

recorder = Recorder.at(tmp_path, [DB_QUERY_V4])      # an upstream that records its calls
async with proxied(proxy_command("billing", recorder.command()), env) as proxy:
    await proxy.session.list_tools()
    recorder.calls()                                 # what the upstream really received
proxy.stderr                                         # the proxy's (and upstream's) stderr
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client

from tests.api.conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]
UPSTREAMS = ROOT / "tests" / "proxy" / "upstreams"
RECORDING_SERVER = ROOT / "tests" / "proxy" / "recording_server.py"
REGISTRY = str(Path(sys.executable).parent / "registry")


def everything_command() -> list[str]:
    """`@modelcontextprotocol/server-everything` over stdio (installed by `make test`)."""
    script = UPSTREAMS / "node_modules" / "@modelcontextprotocol" / "server-everything"
    node = shutil.which("node")
    if node is None or not script.is_dir():
        pytest.fail(
            "the reference servers are not installed: `make test` installs them "
            f"(npm ci --prefix {UPSTREAMS.relative_to(ROOT)}); node found: {node}"
        )
    return [node, str(script / "dist" / "index.js"), "stdio"]


def time_command() -> list[str]:
    """`mcp-server-time` from PyPI (the dev extra)."""
    return [str(Path(sys.executable).parent / "mcp-server-time"), "--local-timezone", "Etc/UTC"]


@dataclass
class Recorder:
    """tests/proxy/recording_server.py: lists `tools` as they are, logs every call."""

    tools_file: Path
    log: Path

    @classmethod
    def at(cls, where: Path, tools: Sequence[dict[str, Any]], name: str = "recorder") -> Recorder:
        recorder = cls(where / f"{name}.tools.json", where / f"{name}.calls.jsonl")
        recorder.serve(tools)
        return recorder

    def serve(self, tools: Sequence[dict[str, Any]]) -> None:
        """Change what the upstream lists (read on each of its listings)."""
        self.tools_file.write_text(json.dumps(list(tools)), encoding="utf-8")

    def command(self, *more: str) -> list[str]:
        return [
            sys.executable,
            str(RECORDING_SERVER),
            "--tools",
            str(self.tools_file),
            "--record",
            str(self.log),
            *more,
        ]

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]


def proxy_command(namespace: str, upstream: Sequence[str], *flags: str) -> list[str]:
    return [REGISTRY, "proxy", "--namespace", namespace, *flags, "--", *upstream]


def proxy_env(url: str, cache: Path, **more: str) -> dict[str, str]:
    return {
        "REGISTRY_URL": url,
        "REGISTRY_TOKEN": ADMIN_TOKEN,
        "REGISTRY_CACHE": str(cache),
        "REGISTRY_WAIT": "2",
        "REGISTRY_USAGE_INTERVAL": "0",
        **more,
    }


@dataclass
class Proxied:
    session: ClientSession
    stderr_path: Path
    initialize: types.InitializeResult | None = None
    notifications: list[Any] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_message(self, message: Any) -> None:
        self.notifications.append(message)
        if isinstance(message, types.ToolListChangedNotification):
            self.changed.set()

    async def list_changed(self, timeout: float = 20) -> None:
        async with asyncio.timeout(timeout):
            await self.changed.wait()
        self.changed.clear()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@asynccontextmanager
async def proxied(
    command: Sequence[str],
    env: dict[str, str],
    stderr_path: Path,
    **session_options: Any,
) -> AsyncIterator[Proxied]:
    """The proxy as a stdio server, a handshake-era `ClientSession` on it (initialized)."""
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env, cwd=ROOT)
    with stderr_path.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            holder: list[Proxied] = []

            async def on_message(message: Any) -> None:
                await holder[0].on_message(message)

            async with ClientSession(
                read, write, read_timeout_seconds=30, message_handler=on_message, **session_options
            ) as session:
                proxy = Proxied(session, stderr_path)
                holder.append(proxy)
                proxy.initialize = await session.initialize()
                yield proxy


@dataclass
class Raw:
    """The proxy as a raw subprocess: lines in, lines out, its exit code and stderr."""

    process: asyncio.subprocess.Process

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def receive(self, timeout: float = 30) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        assert line, "the proxy closed its stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    async def exit(self, timeout: float = 30) -> tuple[int, str]:
        assert self.process.stderr is not None
        stderr = await asyncio.wait_for(self.process.stderr.read(), timeout)
        code = await asyncio.wait_for(self.process.wait(), timeout)
        return code, stderr.decode("utf-8", "replace")


@asynccontextmanager
async def raw_proxy(command: Sequence[str], env: dict[str, str]) -> AsyncIterator[Raw]:
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=ROOT,
        env=get_default_environment() | env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield Raw(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-host", "version": "0"},
    },
}


def alive(pid: int) -> bool:
    """Whether a process (not a zombie of ours) is there."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    if status.exists():
        return status.read_text().split(") ", 1)[1][:1] != "Z"
    return True


def toolset_bytes(namespace: str, tools: Sequence[dict[str, Any]]) -> bytes:
    """A toolset payload serving each tool as its v1 (for `--toolset FILE`: no registry)."""
    from registry.canonical import digest
    from registry.sdk import Toolset, payload_digest

    entries = [
        {
            "name": tool["name"],
            "current": 1,
            "versions": [
                {
                    "version": 1,
                    "digest": digest(tool),
                    "state": "active",
                    "sunset": None,
                    "definition": tool,
                    "route": [],
                }
            ],
            "retired": [],
        }
        for tool in tools
    ]
    body: dict[str, Any] = {"namespace": namespace, "tools": entries, "aliases": []}
    return Toolset.from_payload({**body, "digest": payload_digest(body)}).to_json()
