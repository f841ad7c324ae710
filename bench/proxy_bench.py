"""What `registry proxy` costs over stdio: added latency of a gated call, pass-through throughput.

    .venv/bin/python bench/proxy_bench.py [--calls 2000] [--rounds 20] [--burst 2000]

The upstream is `@modelcontextprotocol/server-everything` (tests/proxy/upstreams,
Node), spawned three times: bare (direct), behind `registry proxy --toolset FILE`
(its live tools served as v1, no registry in the loop), and behind
bench/splice_relay.py, a relay that only moves bytes (os.splice: none reaches
Python), the floor under any relay process: what the extra process hop costs on
this machine at its load. A minimal JSON-RPC client on each one's stdio
(newline-delimited JSON, no SDK in the way) does, round after round
(interleaved, so drift in the machine's load reaches all alike):

* latency: `tools/call echo` declaring `_meta.schemaVersion: "v1"`, one at a time,
  direct and proxied in turn; the proxy validates it (the gate's declared-current
  path) and forwards it; p50 and p99 over all calls, and the added p50 (goal:
  <= 100 us); then, in a shorter pass of their own, direct and the splice relay
  in turn: the hop alone;
* throughput: a burst of `ping` requests written at once (pass-through: the
  proxy only peeks at them), requests per second until the last answer; the
  ratio is the median over rounds of proxied / direct in the same round
  (goal: >= 0.8x), printed with the splice relay's beside it.

CPU per pass-through request (Linux: /proc schedstat, nanoseconds) of the proxy,
the splice relay, and the client itself: a relay that writes more often wakes
its reader more often, and the machine's two cores pay for both.

Prints the figures and the ratios; exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
THROUGHPUT_GOAL = 0.8
SPLICE_RELAY = ROOT / "bench" / "splice_relay.py"
PEERS = ("direct", "proxied", "splice")


def cpu_ns(pid: int) -> int:
    """CPU time of a process, every thread, in nanoseconds (Linux /proc); 0 elsewhere."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                total += int((task / "schedstat").read_text().split()[0])
    except OSError:
        return 0
    return total


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
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as work:
        direct = await Peer.start(upstream)
        listing = await direct.request("tools/list")
        toolset = Path(work) / "toolset.json"
        toolset.write_bytes(toolset_bytes("everything", listing["result"]["tools"]))
        registry = str(Path(sys.executable).parent / "registry")
        proxy_cmd = [registry, "proxy", "--namespace", "everything", "--toolset", str(toolset)]
        proxied = await Peer.start([*proxy_cmd, "--", *upstream])
        await proxied.request("tools/list")
        own = ["--own-session"] if args.splice_own_session else []
        splice = await Peer.start([sys.executable, str(SPLICE_RELAY), *own, *upstream])
        peers = {"direct": direct, "proxied": proxied, "splice": splice}
        try:
            for peer in peers.values():  # warm-up: JIT, caches, the gate's first calls
                for _ in range(200):
                    await timed_call(peer)
                await peer.burst(args.burst)
            times: dict[str, list[float]] = {name: [] for name in (*PEERS, "direct/splice")}
            rates: dict[str, list[float]] = {name: [] for name in PEERS}
            cpu = {"proxy": 0, "splice": 0, "direct client": 0, "proxied client": 0}
            per_round = max(1, args.calls // args.rounds)
            for turn in range(args.rounds):
                for _ in range(per_round):  # call by call, direct and proxied in turn
                    times["direct"].append(await timed_call(direct))
                    times["proxied"].append(await timed_call(proxied))
                for _ in range(per_round // 4):  # the hop alone, in a pass of its own
                    times["direct/splice"].append(await timed_call(direct))
                    times["splice"].append(await timed_call(splice))
                order = PEERS[turn % 3 :] + PEERS[: turn % 3]  # no side always first
                for name in order:
                    relay = {"proxied": proxied, "splice": splice}.get(name)
                    before = cpu_ns(relay.process.pid) if relay else 0
                    client_before = cpu_ns(os.getpid())
                    rates[name].append(args.burst / await peers[name].burst(args.burst))
                    client = cpu_ns(os.getpid()) - client_before
                    if relay is not None:
                        cpu["proxy" if name == "proxied" else "splice"] += (
                            cpu_ns(relay.process.pid) - before
                        )
                    if name != "splice":
                        cpu[f"{name} client"] += client
        finally:
            for peer in peers.values():
                await peer.stop()
    p50 = {k: statistics.median(v) for k, v in times.items()}
    p99 = {k: sorted(v)[int(len(v) * 0.99) - 1] for k, v in times.items()}
    rate = {k: statistics.median(v) for k, v in rates.items()}
    paired = {
        k: sorted(r / d for r, d in zip(rates[k], rates["direct"], strict=True))
        for k in ("proxied", "splice")
    }
    ratio = {k: statistics.median(v) for k, v in paired.items()}
    added = p50["proxied"] - p50["direct"]
    load_after = os.getloadavg()[0]
    print(f"load average {load_before:.2f} before, {load_after:.2f} after")
    print(f"gated tools/call (echo, declared v1), {len(times['direct'])} calls each, interleaved")
    print(f"  (splice relay: {len(times['splice'])} calls, interleaved with as many direct)")
    for name in PEERS:
        print(f"  {name:<8} p50 {p50[name]:8.1f} us   p99 {p99[name]:8.1f} us")
    print(
        f"  added p50: {added:.1f} us (goal <= {LATENCY_GOAL_US:.0f} us); "
        f"p50 ratio proxied/direct {p50['proxied'] / p50['direct']:.2f}x; "
        f"the splice relay's (the hop alone): {p50['splice'] - p50['direct/splice']:.1f} us"
    )
    print(f"pass-through ping bursts of {args.burst}, {args.rounds} rounds, interleaved")
    for name in PEERS:
        print(f"  {name:<8} {rate[name]:10.0f} requests/s (median of rounds)")
    for name in ("proxied", "splice"):
        low, high = paired[name][0], paired[name][-1]
        goal = f" (goal >= {THROUGHPUT_GOAL}x)" if name == "proxied" else ""
        print(
            f"  throughput ratio {name}/direct: {ratio[name]:.2f}x{goal}, "
            f"median of {args.rounds} rounds ({low:.2f}-{high:.2f}x)"
        )
    pings = args.burst * args.rounds
    if cpu["proxy"]:  # what each process spends, whatever the machine's load
        print(
            "CPU per pass-through request (/proc schedstat): "
            f"proxy {cpu['proxy'] / pings / 1000:.2f} us, "
            f"splice relay {cpu['splice'] / pings / 1000:.2f} us; the client's own: "
            f"{cpu['direct client'] / pings / 1000:.2f} us direct, "
            f"{cpu['proxied client'] / pings / 1000:.2f} us proxied"
        )
    met = added <= LATENCY_GOAL_US and ratio["proxied"] >= THROUGHPUT_GOAL
    print("goals met" if met else "goals NOT met")
    return 0 if met else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls on each side")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--burst", type=int, default=2000, help="pings per throughput burst")
    parser.add_argument(
        "--splice-own-session",
        action="store_true",
        help="the splice relay's upstream in a session of its own (Linux autogroup apart)",
    )
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
