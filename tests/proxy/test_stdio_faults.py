"""Faults around `registry proxy` over stdio: bad upstreams, the registry down, exits.

A bad upstream gets one clear line on stderr and exit code 1, and the request
the host is waiting on gets an error: a command that does not start, exits,
writes garbage on stdout or never answers `initialize`; an upstream killed in
the middle of a call. A slow upstream holds only its own call. The registry
down at boot: the proxy boots from its cache; down later: the last good
toolset goes on gating. SIGINT, SIGTERM and stdin EOF leave no process behind,
nor does a host that stops reading the proxy's stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.api.conftest import ADMIN_TOKEN, serve
from tests.e2e.harness import publish
from tests.fixtures.seeds import DB_QUERY_V4
from tests.proxy.harness import (
    INITIALIZE,
    Recorder,
    alive,
    proxied,
    proxy_command,
    proxy_env,
    raw_proxy,
    toolset_bytes,
)

SLOW = {
    "name": "slow",
    "description": "Sleep a while.",
    "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
}
CALL = {"query": "SELECT 1"}


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def upstream_with_pid(tmp_path: Path, tool: dict[str, Any]) -> tuple[Recorder, Path, list[str]]:
    """The recording upstream serving `tool`, its pid in a file, behind the proxy
    (`--toolset`: no registry)."""
    recorder = Recorder.at(tmp_path, [tool])
    pid_file = tmp_path / "upstream.pid"
    toolset = tmp_path / "toolset.json"
    toolset.write_bytes(toolset_bytes("billing", [tool]))
    command = proxy_command(
        "billing", recorder.command("--pid", str(pid_file)), "--toolset", str(toolset)
    )
    return recorder, pid_file, command


async def gone(pid: int) -> None:
    """The process `pid` is gone within 5 s."""
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not alive(pid)


@pytest.mark.parametrize(
    ("upstream", "said"),
    [
        (["/nonexistent/mcp-server"], "does not start"),
        (python("import sys; sys.exit(3)"), "exited with code 3"),
        (
            python("print('hello from a server that logs to stdout', flush=True); input()"),
            "not JSON-RPC on stdout: 'hello from a server",
        ),
        (python("import time; time.sleep(60)"), "did not answer initialize within 1 s"),
    ],
    ids=["does-not-start", "exits", "writes-garbage", "never-initializes"],
)
async def test_a_bad_upstream_is_one_line_and_exit_1_never_a_hang(
    tmp_path: Path, upstream: list[str], said: str
) -> None:
    toolset = tmp_path / "toolset.json"
    toolset.write_bytes(toolset_bytes("billing", [DB_QUERY_V4]))
    command = proxy_command("billing", upstream, "--toolset", str(toolset), "--init-timeout", "1")
    started = time.monotonic()
    async with raw_proxy(command, {}) as proxy:
        await proxy.send(INITIALIZE)
        if said != "does not start":
            answer = await proxy.receive(timeout=20)
            assert answer["id"] == 1 and answer["error"]["code"] == -32603, answer
            assert said.split(":", maxsplit=1)[0] in answer["error"]["message"]
        code, stderr = await proxy.exit(timeout=20)
    assert code == 1
    lines = [line for line in stderr.splitlines() if line.startswith("registry proxy:")]
    assert len(lines) == 1 and said in lines[0], stderr
    assert "Traceback" not in stderr
    assert time.monotonic() - started < 15


async def test_an_upstream_killed_mid_call_fails_the_call_and_the_proxy(tmp_path: Path) -> None:
    recorder, pid_file, command = upstream_with_pid(tmp_path, SLOW)
    with anyio.fail_after(60):
        async with proxied(command, {}, tmp_path / "proxy.err") as proxy:
            pid = int(pid_file.read_text())

            async def kill_soon() -> None:
                while not recorder.calls():
                    await asyncio.sleep(0.05)
                os.kill(pid, signal.SIGKILL)

            killer = asyncio.create_task(kill_soon())
            with pytest.raises(MCPError) as caught:
                await proxy.session.call_tool("slow", {"seconds": 30})
            await killer
        assert "the upstream was killed by signal 9" in caught.value.error.message
    assert "registry proxy: the upstream was killed by signal 9" in proxy.stderr


async def test_a_slow_upstream_holds_only_its_own_call(tmp_path: Path) -> None:
    recorder = Recorder.at(tmp_path, [SLOW])
    toolset = tmp_path / "toolset.json"
    toolset.write_bytes(toolset_bytes("billing", [SLOW]))
    command = proxy_command("billing", recorder.command(), "--toolset", str(toolset))
    with anyio.fail_after(60):
        async with proxied(command, {}, tmp_path / "proxy.err") as proxy:
            session = proxy.session
            done: list[str] = []

            async def slow() -> None:
                result = await session.call_tool("slow", {"seconds": 2})
                assert not result.is_error
                done.append("slow")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(slow)
                while not recorder.calls():
                    await anyio.sleep(0.02)
                await session.send_ping()  # answered while the slow call runs
                listing = await session.list_tools()
                done.append("listed")
                assert [t.name for t in listing.tools] == ["slow"]
            assert done == ["listed", "slow"]


async def test_registry_down_later_keeps_the_last_toolset_and_at_boot_the_cache(
    database_url: str, tmp_path: Path
) -> None:
    recorder = Recorder.at(tmp_path, [DB_QUERY_V4])
    cache = tmp_path / "cache.json"
    command = proxy_command("billing", recorder.command())
    stale_call = {"query": "x", "timeout_ms": 5}
    app = await serve(database_url)
    client = httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        with anyio.fail_after(120):
            await publish(client, "billing", "db.query", {"definition": DB_QUERY_V4})
            env = proxy_env(app.url, cache)
            async with proxied(command, env, tmp_path / "first.err") as proxy:
                assert (await proxy.session.call_tool("db.query", CALL)).structured_content
                await app.stop()  # the registry goes away while the proxy runs
                result = await proxy.session.call_tool("db.query", CALL)
                assert result.structured_content == {"received": CALL}
                assert (await proxy.session.call_tool("db.query", stale_call)).is_error
            # the registry is still down: boot from the cache, and say so
            async with proxied(command, env, tmp_path / "second.err") as proxy:
                listing = await proxy.session.list_tools()
                assert [t.name for t in listing.tools] == ["db.query"]
                assert (await proxy.session.call_tool("db.query", stale_call)).is_error
            assert "RUNNING FROM CACHE" in proxy.stderr, proxy.stderr
    finally:
        await client.aclose()
        await app.stop()
    assert recorder.calls() == [{"name": "db.query", "arguments": CALL}] * 2


@pytest.mark.parametrize("how", ["eof", "SIGINT", "SIGTERM"])
async def test_no_process_is_left_behind(tmp_path: Path, how: str) -> None:
    _, pid_file, command = upstream_with_pid(tmp_path, DB_QUERY_V4)
    async with raw_proxy(command, {}) as proxy:
        await proxy.send(INITIALIZE)
        assert (await proxy.receive())["result"]["serverInfo"]["name"] == "recording"
        upstream = int(pid_file.read_text())
        assert alive(upstream)
        # a process group of its own (stopped as one), in the proxy's session: the
        # scheduler's autogroup is the proxy's (docs/proxy.md, "What it costs")
        assert os.getpgid(upstream) == upstream
        assert os.getsid(upstream) == os.getsid(proxy.process.pid)
        if how == "eof":
            assert proxy.process.stdin is not None
            proxy.process.stdin.close()
        else:
            proxy.process.send_signal(getattr(signal, how))
        code, stderr = await proxy.exit(timeout=20)
    assert code == {"eof": 0, "SIGINT": 130, "SIGTERM": 143}[how], stderr
    await gone(upstream)
    assert "Traceback" not in stderr


async def test_a_host_that_stops_reading_ends_the_proxy(tmp_path: Path) -> None:
    """The host closes its end of the proxy's stdout (it keeps stdin open): the proxy's
    next write fails, and it ends without a traceback, the upstream stopped."""
    _, pid_file, command = upstream_with_pid(tmp_path, DB_QUERY_V4)
    read_end, write_end = os.pipe()  # the proxy's stdout, its read end closed by hand
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=write_end,
            stderr=asyncio.subprocess.PIPE,
        )
    finally:
        os.close(write_end)
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        answer = await asyncio.wait_for(asyncio.to_thread(os.read, read_end, 65536), 30)
        assert b'"recording"' in answer
        upstream = int(pid_file.read_text())
        os.close(read_end)
        read_end = -1
        process.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')  # answered into EPIPE
        stderr = await asyncio.wait_for(process.stderr.read(), 20)
        code = await asyncio.wait_for(process.wait(), 20)
    finally:
        if read_end >= 0:
            os.close(read_end)
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 0, stderr
    assert b"Traceback" not in stderr, stderr
    await gone(upstream)


async def test_a_cancellation_reaches_the_upstream_in_order(tmp_path: Path) -> None:
    """`notifications/cancelled` for a gated call passes through after the call it
    cancels; the upstream stops the call, and the proxy goes on relaying."""
    recorder = Recorder.at(tmp_path, [SLOW])
    toolset = tmp_path / "toolset.json"
    toolset.write_bytes(toolset_bytes("billing", [SLOW]))
    command = proxy_command("billing", recorder.command(), "--toolset", str(toolset))
    async with raw_proxy(command, {}) as proxy:
        await proxy.send(INITIALIZE)
        await proxy.receive()
        await proxy.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        slow = {"name": "slow", "arguments": {"seconds": 30}}
        await proxy.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": slow})
        await proxy.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 5, "reason": "the user gave up"},
            }
        )
        await proxy.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
        answer = await proxy.receive(timeout=10)
        while answer.get("id") != 6:  # an answer to the cancelled call may come first
            assert answer.get("id") == 5, answer
            answer = await proxy.receive(timeout=10)
        assert answer["result"] == {}
        deadline = time.monotonic() + 10
        while {"name": "slow", "cancelled": True} not in recorder.calls():
            assert time.monotonic() < deadline, recorder.calls()
            await asyncio.sleep(0.05)
