"""What usage reports cost the registry: 100 gated servers reporting every 10 s.

    .venv/bin/python bench/usage_load_bench.py [--servers 100] [--interval 10]
                                               [--window 20] [--rounds 3]

`registry serve` runs as an operator runs it (a subprocess, granian, its
request log on), on an embedded PostgreSQL this script starts (fsync off, as
the other benches). The simulated servers are each an httpx client, as
`registry.sdk.usage.UsageReporter` is (a new connection per report: httpx
drops idle connections after 5 s), each with its own `billing:report` token
(looked up in the database per request, as real tokens are), reporting a
batch of 20 counts (5 tools x 4 versions/decisions) every `--interval` seconds,
their start times spread evenly over the interval.

CPU is read with psutil (user + system) for the service's process tree and,
separately, for PostgreSQL's (the postmaster and its backends). The run
alternates idle windows (nobody reports) and load windows of `--window`
seconds, `--rounds` of each, idle first: the cost is the mean CPU of the load
windows minus that of the idle windows, as a percentage of one core, measured
in the same run. Target: < 5% of one core for the service and PostgreSQL
together. At the end the registry's own answer is checked: every call sent was
counted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.seeds import DB_QUERY_V3  # noqa: E402
from tests.ports import free_port  # noqa: E402

ADMIN = "bench-bootstrap-token"
TOOLS = [f"tool.{i}" for i in range(5)]
TARGET_PERCENT = 5.0


def tree_cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its living descendants."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def definition(tool: str, version: int) -> dict[str, Any]:
    return dict(DB_QUERY_V3, name=tool, description=f"{tool}, revision {version}.")


def batch(server: str, toolset: str, round_: int) -> tuple[bytes, int]:
    """A report of 20 counts (the calls vary a little between rounds); its total calls."""
    counts = []
    for index, tool in enumerate(TOOLS):
        base = 50 + index + round_ % 7
        counts += [
            {"tool": tool, "version": 3, "decision": "accepted", "calls": base * 4},
            {"tool": tool, "version": 2, "decision": "converted", "calls": base},
            {
                "tool": tool,
                "version": 1,
                "decision": "refused",
                "reason": "schema_version_retired",
                "calls": 2,
            },
            {
                "tool": tool,
                "version": None,
                "decision": "refused",
                "reason": "strict_validation_failed",
                "calls": 1,
            },
        ]
    body = {"server": server, "toolset": toolset, "counts": counts}
    return msgspec.json.encode(body), sum(c["calls"] for c in counts)  # type: ignore[misc]


async def setup(url: str, dsn: str, servers: int) -> tuple[str, list[str]]:
    """The namespace, its tools (3 versions each), and a report token per server."""
    import asyncpg

    from registry import store

    async with httpx.AsyncClient(
        base_url=url, timeout=60, headers={"Authorization": f"Bearer {ADMIN}"}
    ) as admin:
        assert (await admin.put("/v1/namespaces/billing")).status_code in (200, 201)
        for tool in TOOLS:
            for version in (1, 2, 3):
                answer = await admin.post(
                    f"/v1/namespaces/billing/tools/{tool}/versions",
                    json={"definition": definition(tool, version)},
                )
                assert answer.status_code == 201, answer.text
        toolset = (await admin.get("/v1/namespaces/billing/toolset")).headers["etag"].strip('"')
    conn = await asyncpg.connect(dsn)
    tokens = []
    try:
        for index in range(servers):
            secret = f"mtr_bench_{index:04d}_{os.urandom(8).hex()}"
            await store.create_token(
                conn,
                store.hash_token(secret),
                ["billing:report"],
                actor=None,
                request_id=None,
            )
            tokens.append(secret)
    finally:
        await conn.close()
    return toolset, tokens


class Load:
    """The simulated servers: each reports every `interval` s while `active` is set."""

    def __init__(self, url: str, toolset: str, tokens: list[str], interval: float) -> None:
        self.url = f"{url}/v1/namespaces/billing/usage"
        self.toolset = toolset
        self.tokens = tokens
        self.interval = interval
        self.active = asyncio.Event()
        self.sent_calls = 0
        self.reports = 0
        self.failures = 0

    async def server(self, index: int) -> None:
        name = f"billing-{index:03d}"
        headers = {
            "Authorization": f"Bearer {self.tokens[index]}",
            "Content-Type": "application/json",
        }
        offset = self.interval * index / len(self.tokens)
        async with httpx.AsyncClient(timeout=10) as client:
            round_ = 0
            while True:
                await self.active.wait()
                await asyncio.sleep(offset)
                began = time.monotonic()
                while self.active.is_set():
                    body, calls = batch(name, self.toolset, round_)
                    round_ += 1
                    answer = await client.post(self.url, content=body, headers=headers)
                    if answer.status_code == 200:
                        self.sent_calls += calls
                        self.reports += 1
                    else:
                        self.failures += 1
                    began += self.interval
                    await asyncio.sleep(max(0.0, began - time.monotonic()))


async def measure(
    args: argparse.Namespace, url: str, dsn: str, server_pid: int, pg_pid: int
) -> int:
    toolset, tokens = await setup(url, dsn, args.servers)
    load = Load(url, toolset, tokens, args.interval)
    tasks = [asyncio.create_task(load.server(i)) for i in range(args.servers)]
    windows: list[tuple[str, float, float, float]] = []  # (kind, app %, db %, seconds)
    try:
        await asyncio.sleep(2)  # settle after setup
        for index in range(args.rounds * 2):
            kind = "idle" if index % 2 == 0 else "load"
            if kind == "load":
                load.active.set()
            app0, db0, t0 = tree_cpu(server_pid), tree_cpu(pg_pid), time.monotonic()
            await asyncio.sleep(args.window)
            app1, db1, t1 = tree_cpu(server_pid), tree_cpu(pg_pid), time.monotonic()
            load.active.clear()
            seconds = t1 - t0
            windows.append(
                (kind, 100 * (app1 - app0) / seconds, 100 * (db1 - db0) / seconds, seconds)
            )
            print(
                f"  window {index + 1} {kind}: service {windows[-1][1]:5.2f}% "
                f"PostgreSQL {windows[-1][2]:5.2f}% of one core over {seconds:.1f} s",
                file=sys.stderr,
            )
            if kind == "load":
                await asyncio.sleep(1.0)  # let reports in flight land before the idle window
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def mean(kind: str, column: int) -> float:
        values = [w[column] for w in windows if w[0] == kind]
        return sum(values) / len(values)

    app_cost = mean("load", 1) - mean("idle", 1)
    db_cost = mean("load", 2) - mean("idle", 2)
    async with httpx.AsyncClient(
        base_url=url, timeout=60, headers={"Authorization": f"Bearer {ADMIN}"}
    ) as admin:
        counted = 0
        for tool in TOOLS:
            usage = (await admin.get(f"/v1/namespaces/billing/tools/{tool}/usage")).json()
            counted += sum(v["calls"] for v in usage["versions"])
    rate = load.reports / (args.rounds * args.window)
    print()
    print("| measure | figure |")
    print("|---|---|")
    print(
        f"| reports | {load.reports:,} from {args.servers} servers every {args.interval:g} s "
        f"({rate:.1f}/s over the load windows), {load.failures} failed |"
    )
    print(f"| calls counted by the registry / sent | {counted:,} / {load.sent_calls:,} |")
    print(
        f"| service CPU, load vs idle windows | {mean('load', 1):.2f}% vs {mean('idle', 1):.2f}% "
        f"-> {app_cost:.2f}% of one core |"
    )
    print(
        f"| PostgreSQL CPU, load vs idle windows | {mean('load', 2):.2f}% vs "
        f"{mean('idle', 2):.2f}% -> {db_cost:.2f}% of one core |"
    )
    total = app_cost + db_cost
    met = total < TARGET_PERCENT and counted == load.sent_calls and load.failures == 0
    print(
        f"| cost of the reports, service + PostgreSQL | {total:.2f}% of one core "
        f"(target < {TARGET_PERCENT:g}%: {'met' if met else 'MISSED'}) |"
    )
    return 0 if met else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between reports")
    parser.add_argument("--window", type=float, default=20.0, help="seconds per window")
    parser.add_argument("--rounds", type=int, default=3, help="idle + load window pairs")
    args = parser.parse_args(argv)

    from registry.store import EmbeddedPostgres

    data_dir = Path(tempfile.mkdtemp(prefix="registry-bench-pg-"))
    embedded = EmbeddedPostgres(data_dir, settings={"fsync": "off"})
    dsn = embedded.start()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(REGISTRY_BOOTSTRAP_TOKEN=ADMIN)
    server = subprocess.Popen(
        [sys.executable, "-m", "registry", "serve", "--database-url", dsn, "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("usage_load_bench: the registry did not start")
            time.sleep(0.2)
        postmaster = int((embedded.pgdata / "postmaster.pid").read_text().split()[0])
        print(
            f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs); "
            f"{args.rounds} idle and {args.rounds} load windows of {args.window:g} s",
            file=sys.stderr,
        )
        code = asyncio.run(measure(args, url, dsn, server.pid, postmaster))
        print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
        return code
    finally:
        server.terminate()
        server.wait(timeout=30)
        embedded.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
