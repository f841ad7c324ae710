"""granian against uvicorn, serving the same apps the way `registry serve` does.

    .venv/bin/python bench/asgi_bench.py                      # all scenarios, both servers
    .venv/bin/python bench/asgi_bench.py --seconds 5 --no-registry

Each server runs in its own subprocess with one worker, through
`registry.server.serve_app` (the code path of `registry serve`), pinned to
CPU 0; the load generator runs in this process, pinned to CPU 1 (the
machines have 2 cores). It is a small asyncio HTTP/1.1 client over raw
sockets: a fixed number of keep-alive connections, each sending its next
request when the previous answer is complete, for a fixed time after a
warm-up. It reports requests/s, p50 and p99 latency, errors, and its own CPU
use (near 100% would mean the generator, not the server, is the limit).

Scenarios:

* `bytes`: a bare Litestar route answering fixed ~20 KB JSON bytes;
* `toolset-200`, `toolset-304`: the registry app as served (request ids, JSON
  request logs to /dev/null, metrics, bearer auth) answering
  `GET /v1/namespaces/bench/toolset` (~20 KB payload, from the in-memory
  cache) and the same with `If-None-Match` (304). They need the embedded
  PostgreSQL (started here in a temp directory); `--no-registry` skips them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar import Litestar, Response, get

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ports import free_port  # noqa: E402

SERVERS = ("granian", "uvicorn")
TOKEN = "bench-bootstrap-token"
NAMESPACE = "bench"
PAYLOAD_TOOLS = 40


# -- the apps (in the server subprocess) --------------------------------------------


def fixed_body(size: int = 20_000) -> bytes:
    items: list[str] = []
    i = 0
    while sum(len(x) for x in items) < size:
        items.append(
            f'{{"name":"tool-{i}","description":"A tool that does thing {i}.",'
            f'"inputSchema":{{"type":"object","properties":{{"q":{{"type":"string"}}}}}}}}'
        )
        i += 1
    return ("[" + ",".join(items) + "]").encode()


def bare_app() -> Any:
    body = fixed_body()

    @get("/bytes", media_type="application/json")
    async def answer() -> Response[bytes]:
        return Response(body, media_type="application/json")

    return Litestar(route_handlers=[answer], logging_config=None, openapi_config=None)


def child(server: str, app_name: str, port: int, database_url: str | None) -> None:
    from registry.api.settings import Settings
    from registry.logging_setup import configure_logging
    from registry.server import ServedApp, build_app, serve_app

    configure_logging(json=True)  # stdout is /dev/null: the cost of the request log stays

    async def main() -> None:
        if app_name == "bytes":
            app = ServedApp.bare(bare_app())
        else:
            settings = Settings(
                database_url=database_url, port=port, bootstrap_token=TOKEN, pool_min=1
            )
            app = build_app(settings)
        await serve_app(app, "127.0.0.1", port, server=server)

    asyncio.run(main())


# -- the load generator ---------------------------------------------------------------


@dataclass
class Result:
    requests: int
    errors: int
    seconds: float
    latencies: list[float]
    cpu: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, int]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        lowered = name.strip().lower()
        if lowered == b"content-length":
            length = int(value)
        elif lowered == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        total = 0
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            await reader.readexactly(size + 2)
            total += size
            if size == 0:
                return status, total
    if length:
        await reader.readexactly(length)
    return status, length


async def _connection(
    port: int, request: bytes, expect: int, stop_at: float, measure_from: float, out: Result
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    clock = time.perf_counter
    try:
        while True:
            start = clock()
            if start >= stop_at:
                return
            writer.write(request)
            status, _ = await _read_response(reader)
            end = clock()
            if start >= measure_from:
                out.requests += 1
                out.latencies.append(end - start)
                if status != expect:
                    out.errors += 1
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def load(
    port: int, request: bytes, expect: int, connections: int, warmup: float, seconds: float
) -> Result:
    now = time.perf_counter()
    measure_from = now + warmup
    stop_at = measure_from + seconds
    out = Result(0, 0, seconds, [], 0.0)
    cpu_before = time.process_time()
    await asyncio.gather(
        *(
            _connection(port, request, expect, stop_at, measure_from, out)
            for _ in range(connections)
        )
    )
    out.cpu = (time.process_time() - cpu_before) / (warmup + seconds)
    return out


def http_request(path: str, headers: dict[str, str]) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# -- orchestration ------------------------------------------------------------------------


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > cpu:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})


@contextlib.contextmanager
def running(server: str, app: str, database_url: str | None, pin: bool) -> Any:
    import httpx

    port = free_port()
    argv = [sys.executable, __file__, "--child", server, app, str(port)]
    if database_url:
        argv.append(database_url)
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=(lambda: _pin(0)) if pin else None,  # noqa: PLW1509 - no threads yet
    )
    try:
        deadline = time.monotonic() + 30
        path = "/bytes" if app == "bytes" else "/readyz"
        while True:
            if proc.poll() is not None:
                errors = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"{server} exited: {errors}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}{path}", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{server} did not start")
            time.sleep(0.1)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def publish_namespace(port: int) -> tuple[str, int]:
    import httpx

    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
        client.put(f"/v1/namespaces/{NAMESPACE}").raise_for_status()  # namespaces are explicit
        for i in range(PAYLOAD_TOOLS):
            definition = {
                "name": f"tool.{i:03d}",
                "description": f"Tool number {i}: reads rows from a table and returns them.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "table": {"type": "string", "description": "the table to read"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                        "columns": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["table"],
                },
            }
            answer = client.post(
                f"/v1/namespaces/{NAMESPACE}/tools/tool.{i:03d}/versions",
                json={"definition": definition},
            )
            answer.raise_for_status()
        toolset = client.get(f"/v1/namespaces/{NAMESPACE}/toolset")
        toolset.raise_for_status()
        return toolset.headers["etag"], len(toolset.content)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per run")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs per server and scenario (median reported)"
    )
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--no-registry", action="store_true", help="only the bare route")
    parser.add_argument("--no-pin", action="store_true", help="do not pin CPUs")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        server, app, port, *rest = args.child
        child(server, app, int(port), rest[0] if rest else None)
        return 0

    servers = [s for s in args.servers.split(",") if s]
    pin = not args.no_pin
    if pin:
        _pin(1)
    results: dict[tuple[str, str], list[Result]] = {}
    notes: list[str] = []

    def run(server: str, scenario: str, port: int, request: bytes, expect: int) -> None:
        result = asyncio.run(
            load(port, request, expect, args.connections, args.warmup, args.seconds)
        )
        results.setdefault((scenario, server), []).append(result)
        print(
            f"  {scenario:12} {server:8} {result.rps:9.0f} req/s"
            f"  p99 {result.percentile(0.99):6.2f} ms"
            f"  errors {result.errors}  loadgen cpu {result.cpu:.0%}",
            file=sys.stderr,
        )

    pg = data_dir = database_url = None
    etag: str | None = None
    if not args.no_registry:
        from registry.store.embedded import EmbeddedPostgres

        data_dir = Path(tempfile.mkdtemp(prefix="asgi-bench-pg-"))
        pg = EmbeddedPostgres(data_dir, settings={"fsync": "off", "synchronous_commit": "off"})
        database_url = pg.start()
    try:
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr)
            # alternate the order, so that neither server always runs first
            order = servers if round_ % 2 == 0 else list(reversed(servers))
            for server in order:
                with running(server, "bytes", None, pin) as port:
                    run(server, "bytes", port, http_request("/bytes", {}), 200)
                if database_url is None:
                    continue
                with running(server, "registry", database_url, pin) as port:
                    if etag is None:
                        etag, size = publish_namespace(port)
                        notes.append(f"toolset payload: {size} bytes, {PAYLOAD_TOOLS} tools")
                    auth = {"Authorization": f"Bearer {TOKEN}"}
                    path = f"/v1/namespaces/{NAMESPACE}/toolset"
                    run(server, "toolset-200", port, http_request(path, auth), 200)
                    conditional = http_request(path, {**auth, "If-None-Match": etag})
                    run(server, "toolset-304", port, conditional, 304)
    finally:
        if pg is not None:
            pg.stop()
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)
    report(args, servers, pin, results, notes)
    return 0


def report(
    args: argparse.Namespace,
    servers: list[str],
    pin: bool,
    results: dict[tuple[str, str], list[Result]],
    notes: list[str],
) -> None:
    def median(runs: list[Result], key: Callable[[Result], float]) -> float:
        return float(statistics.median(key(r) for r in runs))

    print(
        f"\n{args.connections} connections, {args.warmup:g} s warm-up + {args.seconds:g} s "
        f"measured, {args.rounds} rounds (medians; req/s range in brackets), "
        f"1 worker per server{', server on CPU 0, load generator on CPU 1' if pin else ''}"
    )
    for note in notes:
        print(note)
    print(
        f"\n{'scenario':12}  {'server':8}  {'req/s':>7}  {'(min-max)':>13}  "
        f"{'p50 ms':>7}  {'p99 ms':>7}  errors"
    )
    scenarios = list(dict.fromkeys(scenario for scenario, _ in results))
    rps: dict[tuple[str, str], float] = {}
    p99: dict[tuple[str, str], float] = {}
    for scenario in scenarios:
        for server in servers:
            runs = results.get((scenario, server))
            if not runs:
                continue
            rps[(scenario, server)] = median(runs, lambda r: r.rps)
            p99[(scenario, server)] = median(runs, lambda r: r.percentile(0.99))
            spread = f"({min(r.rps for r in runs):.0f}-{max(r.rps for r in runs):.0f})"
            print(
                f"{scenario:12}  {server:8}  {rps[(scenario, server)]:7.0f}  {spread:>13}  "
                f"{median(runs, lambda r: r.percentile(0.5)):7.2f}  "
                f"{p99[(scenario, server)]:7.2f}  {sum(r.errors for r in runs)}"
            )
    if set(servers) >= set(SERVERS):
        print("\ngranian / uvicorn (medians):")
        for scenario in scenarios:
            g, u = (scenario, "granian"), (scenario, "uvicorn")
            print(f"  {scenario:12}  throughput x{rps[g] / rps[u]:.2f}, p99 x{p99[g] / p99[u]:.2f}")
    cpu = [r.cpu for runs in results.values() for r in runs]
    if cpu:
        print(f"\nload generator CPU: median {statistics.median(cpu):.0%}, max {max(cpu):.0%}")


if __name__ == "__main__":
    raise SystemExit(main())
