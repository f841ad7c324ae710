"""Service benchmark: toolset sync throughput against a bare route, big-namespace sync, publishes/s.

    python bench/service_bench.py                     # embedded PostgreSQL in a temp dir
    python bench/service_bench.py --database-url postgresql://...  --duration 10

What it prints (issue 3's targets; figures are ratios measured in the same run,
since these machines are noisy):

* requests/s and p99 of `GET /v1/namespaces/{ns}/toolset` (200, and 304 with
  If-None-Match) against a bare Litestar route on the same server process that
  returns the same bytes (200) or an empty 304: targets >= 0.8x and >= 0.9x
  (each pair is loaded in interleaved slices, ours-bare-bare-ours, `--slices`,
  so a burst of outside load on a shared machine falls on both);
* a namespace of 10,000 tools: the server time of a sync (cold: built from the
  database; warm: the pre-serialized payload): target < 50 ms;
* publishes/s with 8 concurrent publishers over HTTP: target >= 300/s.

The load generator is autocannon (Node.js, from the npm registry), installed on
first use under `.bench-tools/`: a Python load generator on the same 2 cores
measures itself, not the server. The server runs in its own process.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = ROOT / ".bench-tools"
TOKEN = "bench-bootstrap-token"
sys.path.insert(0, str(ROOT))

from tests.fixtures.seeds import DB_QUERY_V4  # noqa: E402
from tests.ports import free_port  # noqa: E402

SERVER_SCRIPT = r"""
import os, sys
from litestar import Request, Response, get
from registry.api.app import create_app
from registry.api.observe import Observed
from registry.api.settings import Settings

BODY = {"bytes": None, "etag": None}

@get("/bench/bare", include_in_schema=False)
async def bare(request: Request) -> Response[bytes]:
    if BODY["bytes"] is None:
        with open(os.environ["BENCH_BODY"], "rb") as f:
            BODY["bytes"] = f.read()
        BODY["etag"] = open(os.environ["BENCH_BODY"] + ".etag").read()
    headers = {"ETag": BODY["etag"]}
    if request.headers.get("if-none-match") == BODY["etag"]:
        return Response(b"", status_code=304, headers=headers)
    return Response(BODY["bytes"], media_type="application/json", headers=headers)

settings = Settings(database_url=os.environ["BENCH_DSN"], port=int(os.environ["BENCH_PORT"]),
                    bootstrap_token=os.environ["BENCH_TOKEN"], pool_max=10)
app = create_app(settings)
app.register(bare)
served = Observed(app, app.state.services.metrics)
# As `registry serve` runs it: JSON log lines on stdout (to /dev/null here), same runner.
from registry.logging_setup import configure_logging
from registry.server import _RUNNERS
import asyncio
configure_logging(json=True)
runner = _RUNNERS[os.environ.get("BENCH_SERVER", "granian")](served, "127.0.0.1", settings.port)
asyncio.run(runner.serve())
"""


def autocannon() -> list[str]:
    binary = TOOLS_DIR / "node_modules" / ".bin" / "autocannon"
    if not binary.exists():
        TOOLS_DIR.mkdir(exist_ok=True)
        subprocess.run(
            ["npm", "install", "--silent", "--prefix", str(TOOLS_DIR), "autocannon@7"],
            check=True,
        )
    return ["node", str(binary)]


def load(url: str, headers: dict[str, str], duration: int, connections: int) -> dict[str, Any]:
    command = [*autocannon(), "-j", "-c", str(connections), "-d", str(duration)]
    for key, value in headers.items():
        command += ["-H", f"{key}={value}"]
    result = subprocess.run([*command, url], capture_output=True, text=True, check=True)
    data = json.loads(result.stdout)
    return {
        "rps": data["requests"]["average"],
        "p99_ms": data["latency"]["p99"],
        "non2xx": data["non2xx"],
        "errors": data["errors"],
    }


async def populate(dsn: str, namespace: str, tools: int) -> None:
    import asyncpg

    from registry import store
    from registry.canonical import digest
    from registry.store import PublishPlan

    pool = await asyncpg.create_pool(dsn, min_size=4, max_size=4)

    async def one(index: int) -> None:
        definition = copy.deepcopy(DB_QUERY_V4)
        definition["name"] = f"tool-{index:05d}"
        definition["description"] = f"Tool number {index}."
        await store.publish(
            pool,
            namespace,
            definition["name"],
            definition,
            digest(definition),
            lambda _state: PublishPlan(),
            None,
            None,
        )

    for start in range(0, tools, 200):
        await asyncio.gather(*(one(i) for i in range(start, min(start + 200, tools))))
    await pool.close()


async def sync_times(url: str, namespace: str, dsn: str, rounds: int = 5) -> dict[str, float]:
    import asyncpg

    headers = {"Authorization": f"Bearer {TOKEN}"}
    cold, warm = [], []
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        conn = await asyncpg.connect(dsn)
        try:
            for _ in range(rounds):
                # Any committed write notifies: the next sync rebuilds from the database.
                await conn.execute("SELECT pg_notify('toolset_changed', $1)", namespace)
                await asyncio.sleep(0.2)
                started = time.perf_counter()
                answer = await client.get(f"/v1/namespaces/{namespace}/toolset")
                cold.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
                for _ in range(5):
                    started = time.perf_counter()
                    await client.get(f"/v1/namespaces/{namespace}/toolset")
                    warm.append(time.perf_counter() - started)
        finally:
            await conn.close()
    return {
        "cold_ms": statistics.median(cold) * 1000,
        "warm_ms": statistics.median(warm) * 1000,
        "bytes": len(answer.content),
    }


class RawClient:
    """One keep-alive HTTP/1.1 connection with pre-encoded requests: an order of
    magnitude less client CPU per request than httpx, which on 2 shared cores
    otherwise takes a large share from the server and PostgreSQL it measures."""

    def __init__(self, url: str) -> None:
        self.host, _, port = url.removeprefix("http://").partition(":")
        self.port = int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post_json(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.reader is None or self.writer is None:
            await self.connect()
            assert self.reader is not None and self.writer is not None
        self.writer.write(
            (
                f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def publishes(
    url: str, publishers: int, per_publisher: int, client: str = "raw"
) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    latencies: list[float] = []

    def definition_of(index: int, n: int) -> dict[str, Any]:
        definition = copy.deepcopy(DB_QUERY_V4)
        definition["name"] = f"pub-{index % 8}"
        definition["description"] = f"Revision {index}.{n}."
        return definition

    async def publisher(index: int, http: httpx.AsyncClient) -> None:
        for n in range(per_publisher):
            definition = definition_of(index, n)
            started = time.perf_counter()
            answer = await http.post(
                f"/v1/namespaces/publish/tools/{definition['name']}/versions",
                json={"definition": definition},
            )
            latencies.append(time.perf_counter() - started)
            assert answer.status_code in (200, 201), answer.text

    async def raw_publisher(index: int) -> None:
        # The bodies are encoded before the clock starts: only the requests are timed.
        bodies = [
            json.dumps({"definition": definition_of(index, n)}).encode()
            for n in range(per_publisher)
        ]
        raw = RawClient(url)
        await raw.connect()
        await ready.wait()
        try:
            for body in bodies:
                started = time.perf_counter()
                status, text = await raw.post_json(
                    f"/v1/namespaces/publish/tools/pub-{index % 8}/versions", body
                )
                latencies.append(time.perf_counter() - started)
                assert status in (200, 201), text
        finally:
            await raw.close()

    ready = asyncio.Event()
    if client == "raw":
        tasks = [asyncio.ensure_future(raw_publisher(i)) for i in range(publishers)]
        await asyncio.sleep(0.5)
        started = time.perf_counter()
        ready.set()
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
    else:
        limits = httpx.Limits(max_connections=publishers)
        async with httpx.AsyncClient(
            base_url=url, headers=headers, timeout=60, limits=limits
        ) as http:
            started = time.perf_counter()
            await asyncio.gather(*(publisher(i, http) for i in range(publishers)))
            elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "per_second": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        "count": len(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--slices",
        type=int,
        default=4,
        help="interleaved loads per (toolset, bare) pair, ABBA order; each gets "
        "2 * duration / slices seconds, so each route still gets `duration` seconds",
    )
    parser.add_argument(
        "--publish-client",
        choices=["raw", "httpx"],
        default="raw",
        help="HTTP client of the publishers (raw: pre-encoded requests on keep-alive sockets)",
    )
    parser.add_argument("--big", type=int, default=10_000, help="tools in the big namespace")
    parser.add_argument("--server", choices=["uvicorn", "granian"], default="granian")
    args = parser.parse_args()

    embedded = None
    data_dir = None
    dsn = args.database_url
    if dsn is None:
        from registry.store import EmbeddedPostgres

        data_dir = Path(tempfile.mkdtemp(prefix="registry-bench-pg-"))
        embedded = EmbeddedPostgres(data_dir, settings={"fsync": "off"})
        dsn = embedded.start()
    from registry.store import migrate

    asyncio.run(migrate(dsn))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    body_file = Path(tempfile.mkdtemp(prefix="registry-bench-")) / "body.json"
    env = dict(
        os.environ,
        BENCH_DSN=dsn,
        BENCH_PORT=str(port),
        BENCH_TOKEN=TOKEN,
        BENCH_BODY=str(body_file),
        BENCH_SERVER=args.server,
    )
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT], env=env, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        print(f"load average {os.getloadavg()[0]:.2f}; server: {args.server}", file=sys.stderr)
        asyncio.run(populate(dsn, "small", 20))
        asyncio.run(populate(dsn, "big", args.big))
        auth = {"Authorization": f"Bearer {TOKEN}"}
        first = httpx.get(f"{url}/v1/namespaces/small/toolset", headers=auth)
        body_file.write_bytes(first.content)
        Path(str(body_file) + ".etag").write_text(first.headers["etag"])
        etag = first.headers["etag"]

        # The machine is shared: each pair (ours, bare) is measured in interleaved
        # slices, ours-bare-bare-ours..., so a burst of outside load lands on both.
        slices = max(2, args.slices - args.slices % 2)
        seconds = max(1, round(args.duration * 2 / slices))
        rows = []
        for kind, extra in (("200", {}), ("304", {"If-None-Match": etag})):
            pair = (
                (f"toolset {kind}", "/v1/namespaces/small/toolset"),
                (f"bare {kind}", "/bench/bare"),
            )
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in pair}
            for index in range(slices):
                label, path = pair[(index + index // 2) % 2]  # T B B T T B B T ...
                runs[label].append(load(url + path, {**auth, **extra}, seconds, args.connections))
            for label, _ in pair:
                result = {
                    "rps": statistics.mean(r["rps"] for r in runs[label]),
                    "p99_ms": statistics.median(r["p99_ms"] for r in runs[label]),
                    "non2xx": sum(r["non2xx"] for r in runs[label]),
                    "errors": sum(r["errors"] for r in runs[label]),
                }
                rows.append((label, result))
                print(
                    f"  {label:12} {result['rps']:9.0f} req/s  p99 {result['p99_ms']:6.1f} ms  "
                    f"non-2xx {result['non2xx']}  errors {result['errors']}  "
                    f"(slices: {', '.join(str(round(r['rps'])) for r in runs[label])})",
                    file=sys.stderr,
                )
        by = dict(rows)
        sync = asyncio.run(sync_times(url, "big", dsn))
        pubs = asyncio.run(publishes(url, 8, 50, args.publish_client))
        print(f"load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
        print()
        print("| measure | figure | target |")
        print("|---|---|---|")
        for kind, target in (("200", ">= 0.8x"), ("304", ">= 0.9x")):
            ours, bare = by[f"toolset {kind}"], by[f"bare {kind}"]
            print(
                f"| toolset {kind} req/s vs bare route | {ours['rps']:.0f} vs {bare['rps']:.0f}"
                f" = {ours['rps'] / bare['rps']:.2f}x (p99 {ours['p99_ms']:.0f} vs "
                f"{bare['p99_ms']:.0f} ms) | {target} |"
            )
        print(
            f"| sync of {args.big:,} tools ({sync['bytes'] / 1e6:.1f} MB), warm | "
            f"{sync['warm_ms']:.1f} ms | < 50 ms |"
        )
        print(
            f"| sync of {args.big:,} tools, cold (built from the database) | "
            f"{sync['cold_ms']:.0f} ms | - |"
        )
        print(
            f"| publishes/s, 8 concurrent publishers | {pubs['per_second']:.0f}/s "
            f"(p50 {pubs['p50_ms']:.1f} ms, p99 {pubs['p99_ms']:.1f} ms, {pubs['count']}) "
            f"| >= 300/s |"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        if embedded is not None:
            embedded.stop()
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
