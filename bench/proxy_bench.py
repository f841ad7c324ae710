"""What `registry proxy` costs over stdio: added latency of a gated call, pass-through throughput.

    .venv/bin/python bench/proxy_bench.py [--calls 2000] [--rounds 5] [--burst 2000]

The upstream is `@modelcontextprotocol/server-everything` (tests/proxy/upstreams,
Node), spawned twice: once bare, once behind `registry proxy --toolset FILE`
(its live tools served as v1, no registry in the loop). A minimal JSON-RPC
client on each one's stdio (newline-delimited JSON, no SDK in the way) does,
round after round, alternating direct and proxied (interleaved, so drift in the
machine's load reaches both alike):

* latency: `tools/call echo` declaring `_meta.schemaVersion: "v1"`, one at a time;
  the proxy validates it (the gate's declared-current path) and forwards it;
  p50 and p99 over all calls, and the added p50 (goal: <= 100 us);
* throughput: a burst of `ping` requests written at once (pass-through: the
  proxy only peeks at them), requests per second until the last answer;
  proxied / direct (goal: >= 0.8x).

Prints the figures and the ratios; exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.proxy.harness import everything_command, toolset_bytes  # noqa: E402

LATENCY_GOAL_US = 100.0
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


THROUGHPUT_GOAL = 0.8


class Peer:
    """A stdio MCP server (or the proxy) and a bare JSON-RPC client on it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0

    @classmethod
    async def start(cls, command: list[str]) -> Peer:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=64 * 1024 * 1024,
        )
        peer = cls(process)
        await peer.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "proxy-bench", "version": "0"},
            },
        )
        peer.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return peer

    def write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def answer(self, wanted: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = await self.process.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == wanted:
                return message

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        self.write(body)
        answer = await self.answer(self.next_id)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer

    async def burst(self, count: int) -> float:
        """`count` pings written at once; seconds until the last answer."""
        assert self.process.stdin is not None and self.process.stdout is not None
        first = self.next_id + 1
        started = time.perf_counter()
        lines = []
        for n in range(first, first + count):
            lines.append(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n)
        self.process.stdin.write(b"".join(lines))
        self.next_id = first + count - 1
        seen = 0
        while seen < count:
            line = await self.process.stdout.readline()
            if b'"result"' in line:
                seen += 1
        return time.perf_counter() - started

    async def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


CALL = {"name": "echo", "arguments": {"message": "hello"}, "_meta": {"schemaVersion": "v1"}}


async def timed_call(peer: Peer) -> float:
    started = time.perf_counter_ns()
    answer = await peer.request("tools/call", CALL)
    elapsed = (time.perf_counter_ns() - started) / 1000
    assert answer["result"]["content"][0]["text"] == "Echo: hello", answer
    return elapsed


async def main_async(args: argparse.Namespace) -> int:
    upstream = everything_command()
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as work:
        direct = await Peer.start(upstream)
        listing = await direct.request("tools/list")
        toolset = Path(work) / "toolset.json"
        toolset.write_bytes(toolset_bytes("everything", listing["result"]["tools"]))
        registry = str(Path(sys.executable).parent / "registry")
        proxy_cmd = [registry, "proxy", "--namespace", "everything", "--toolset", str(toolset)]
        proxied = await Peer.start([*proxy_cmd, "--", *upstream])
        await proxied.request("tools/list")
        try:
            for peer in (direct, proxied):  # warm-up: JIT, caches, the gate's first calls
                for _ in range(200):
                    await timed_call(peer)
            times: dict[str, list[float]] = {"direct": [], "proxied": []}
            rates: dict[str, list[float]] = {"direct": [], "proxied": []}
            per_round = max(1, args.calls // args.rounds)
            proxy_pid = proxied.process.pid
            cpu: dict[str, float] = {"call": 0.0, "ping": 0.0}
            for _ in range(args.rounds):
                before = cpu_seconds(proxy_pid)
                for _ in range(per_round):  # alternate call by call
                    times["direct"].append(await timed_call(direct))
                    times["proxied"].append(await timed_call(proxied))
                middle = cpu_seconds(proxy_pid)
                for name, peer in (("direct", direct), ("proxied", proxied)):
                    rates[name].append(args.burst / await peer.burst(args.burst))
                after = cpu_seconds(proxy_pid)
                if before is not None and middle is not None and after is not None:
                    cpu["call"] += middle - before
                    cpu["ping"] += after - middle
        finally:
            await proxied.stop()
            await direct.stop()
    p50 = {k: statistics.median(v) for k, v in times.items()}
    p99 = {k: sorted(v)[int(len(v) * 0.99) - 1] for k, v in times.items()}
    rate = {k: statistics.median(v) for k, v in rates.items()}
    added = p50["proxied"] - p50["direct"]
    ratio = rate["proxied"] / rate["direct"]
    print(f"gated tools/call (echo, declared v1), {len(times['direct'])} calls each, interleaved")
    for name in ("direct", "proxied"):
        print(f"  {name:<8} p50 {p50[name]:8.1f} us   p99 {p99[name]:8.1f} us")
    print(
        f"  added p50: {added:.1f} us (goal <= {LATENCY_GOAL_US:.0f} us); "
        f"p50 ratio proxied/direct {p50['proxied'] / p50['direct']:.2f}x"
    )
    print(f"pass-through ping bursts of {args.burst}, {args.rounds} rounds, interleaved")
    for name in ("direct", "proxied"):
        print(f"  {name:<8} {rate[name]:10.0f} requests/s (median of rounds)")
    print(f"  throughput ratio proxied/direct: {ratio:.2f}x (goal >= {THROUGHPUT_GOAL}x)")
    calls, pings = len(times["proxied"]), args.burst * args.rounds
    if cpu["call"] or cpu["ping"]:  # what the proxy itself spends, whatever the machine's load
        print(
            f"proxy CPU (user+system, /proc, {_TICK} ticks/s): "
            f"{cpu['call'] / calls * 1e6:.0f} us per gated call, "
            f"{cpu['ping'] / pings * 1e6:.1f} us per pass-through request"
        )
    met = added <= LATENCY_GOAL_US and ratio >= THROUGHPUT_GOAL
    print("goals met" if met else "goals NOT met")
    return 0 if met else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls on each side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--burst", type=int, default=2000, help="pings per throughput burst")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
