"""The fixed cost of a request: `registry serve` vs a bare Litestar app answering the same bytes.

    .venv/bin/python bench/fixed_cost_bench.py                  # 5 rounds of 3 s per row
    .venv/bin/python bench/fixed_cost_bench.py --rounds 3 --seconds 2 --rows healthz,toolset-304

Two servers run side by side, each in its own process through
`registry.server.serve_app` on granian (what `registry serve` runs), both
pinned to CPU 0: the registry as served (request ids, one JSON log line per
request to /dev/null, metrics, bearer auth with a `bench:read` token from the
database, as a gated server holds) and a bare Litestar app with no middleware
whose routes answer the registry's own bytes and headers, fetched from it
first. The load is wrk (Debian's `wrk`: `apt-get install wrk`), one thread and
32 keep-alive connections, pinned to CPU 1: the machines have 2 cores, and a
Python load generator tops out below what the bare app answers.

Rows, each measured against the bare app in the same round, the two taking
turns first (rounds interleaved; the machine is shared and noisy):

* `healthz`: `GET /healthz` (open, no token);
* `toolset-200`: `GET /v1/namespaces/bench/toolset` (50 tools, from the cache);
* `toolset-304`: the same with `If-None-Match` (304);
* `tools`: `GET /v1/namespaces/bench/tools` (the list of 50 tools, from the database).

For each row it prints req/s of both, their ratio (median over rounds, and
its range), and the ratio of the server CPU each request took (bare / ours,
from /proc: less sensitive to what else the machine runs). The goal of issue
28: `healthz`, `toolset-200` and `toolset-304` at >= 0.6x the bare app.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from litestar import Litestar, Response, get

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ports import free_port  # noqa: E402

BOOTSTRAP = "bench-bootstrap-token"
NAMESPACE = "bench"
TOOLS = 50
CONNECTIONS = 32
GOAL = 0.6


@dataclass(frozen=True)
class Row:
    name: str
    path: str
    status: int
    goal: bool  # the issue's >= 0.6x applies


ROWS = (
    Row("healthz", "/healthz", 200, True),
    Row("toolset-200", f"/v1/namespaces/{NAMESPACE}/toolset", 200, True),
    Row("toolset-304", f"/v1/namespaces/{NAMESPACE}/toolset", 304, True),
    Row("tools", f"/v1/namespaces/{NAMESPACE}/tools", 200, False),
)


class Answer(msgspec.Struct, frozen=True):
    """What the registry answered a row's request: the bare app answers the same."""

    row: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes


# -- the servers (child processes) ----------------------------------------------------

_ANSWERED = ("content-type", "etag", "cache-control", "vary")


def bare_app(answers: list[Answer]) -> Any:
    def route(answer: Answer) -> Any:
        headers = {k: v for k, v in answer.headers if k != "content-type"}
        media = dict(answer.headers).get("content-type", "application/json")

        async def answering() -> Response[bytes]:
            return Response(
                answer.body, status_code=answer.status, headers=headers, media_type=media
            )

        return get(f"/{answer.row}", name=answer.row)(answering)

    return Litestar(
        route_handlers=[route(a) for a in answers], logging_config=None, openapi_config=None
    )


def child(kind: str, port: int, argument: str) -> None:
    from registry.api.settings import Settings
    from registry.logging_setup import configure_logging
    from registry.server import ServedApp, build_app, serve_app

    configure_logging(json=True)  # stdout is /dev/null: the cost of the request log stays

    async def main() -> None:
        if kind == "bare":
            answers = msgspec.json.decode(Path(argument).read_bytes(), type=list[Answer])
            app = ServedApp.bare(bare_app(answers))
        else:
            settings = Settings(
                database_url=argument, port=port, bootstrap_token=BOOTSTRAP, pool_min=1
            )
            app = build_app(settings)
        await serve_app(app, "127.0.0.1", port)

    asyncio.run(main())


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > cpu:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})


class Server:
    def __init__(self, kind: str, argument: str, pin: bool) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--child", kind, str(self.port), argument],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=(lambda: _pin(0)) if pin else None,  # noqa: PLW1509 - no threads yet
        )

    def wait_ready(self, path: str) -> None:
        import httpx

        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                errors = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"server exited: {errors}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + path, timeout=1).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.1)

    def cpu_seconds(self) -> float:
        """user + system CPU of the server process so far (/proc, Linux)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the registry's data and answers -------------------------------------------------------


def create_read_token(database_url: str) -> str:
    """A `bench:read` token stored in the database, as `registry token create` makes one."""
    import secrets

    import asyncpg  # type: ignore[import-untyped, unused-ignore]

    from registry import store

    secret = "reg_" + secrets.token_urlsafe(24)

    async def create() -> None:
        conn = await asyncpg.connect(database_url)
        try:
            await store.create_token(
                conn,
                store.hash_token(secret),
                [f"{NAMESPACE}:read"],
                description="fixed_cost_bench",
                actor=None,
                request_id=None,
            )
        finally:
            await conn.close()

    asyncio.run(create())
    return secret


def publish(url: str) -> None:
    import httpx

    auth = {"Authorization": f"Bearer {BOOTSTRAP}"}
    with httpx.Client(base_url=url, headers=auth, timeout=30) as client:
        client.put(f"/v1/namespaces/{NAMESPACE}").raise_for_status()
        for i in range(TOOLS):
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
            client.post(
                f"/v1/namespaces/{NAMESPACE}/tools/tool.{i:03d}/versions",
                json={"definition": definition},
            ).raise_for_status()


def request_headers(row: Row, token: str, etag: str) -> dict[str, str]:
    headers = {} if row.name == "healthz" else {"Authorization": f"Bearer {token}"}
    if row.status == 304:
        headers["If-None-Match"] = etag
    return headers


def fetch_answers(url: str, token: str) -> tuple[list[Answer], str]:
    import httpx

    etag = httpx.get(url + ROWS[1].path, headers={"Authorization": f"Bearer {token}"}).headers[
        "etag"
    ]
    answers = []
    for row in ROWS:
        got = httpx.get(url + row.path, headers=request_headers(row, token, etag))
        if got.status_code != row.status:
            raise RuntimeError(f"{row.name}: {got.status_code} {got.text[:200]}")
        kept = [(k, v) for k, v in got.headers.items() if k in _ANSWERED]
        answers.append(Answer(row.name, got.status_code, kept, got.content))
    return answers, etag


# -- the load -----------------------------------------------------------------------------------

_RPS = re.compile(r"Requests/sec:\s+([0-9.]+)")
_TOTAL = re.compile(r"([0-9]+) requests in")
_BAD = re.compile(r"Non-2xx or 3xx responses:\s+([0-9]+)")
_SOCKET_ERRORS = re.compile(r"Socket errors: (.*)")


@dataclass
class Run:
    rps: float
    requests: int
    cpu_us: float  # server CPU per request
    errors: str


def wrk(server: Server, path: str, headers: dict[str, str], seconds: float, pin: bool) -> Run:
    argv = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds:g}s"]
    for name, value in headers.items():
        argv += ["-H", f"{name}: {value}"]
    argv.append(server.url + path)
    cpu_before = server.cpu_seconds()
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=(lambda: _pin(1)) if pin else None,
    ).stdout
    cpu = server.cpu_seconds() - cpu_before
    rps, total = _RPS.search(out), _TOTAL.search(out)
    if rps is None or total is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    bad, socket_errors = _BAD.search(out), _SOCKET_ERRORS.search(out)
    errors = ", ".join(
        e
        for e in (bad and f"{bad.group(1)} non-2xx/3xx", socket_errors and socket_errors.group(1))
        if e
    )
    requests = int(total.group(1))
    return Run(float(rps.group(1)), requests, cpu / max(requests, 1) * 1e6, errors)


# -- orchestration ------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time per run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", default=",".join(r.name for r in ROWS))
    parser.add_argument("--no-pin", action="store_true", help="do not pin CPUs")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, port, argument = args.child
        child(kind, int(port), argument)
        return 0
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install wrk", file=sys.stderr)
        return 2
    rows = [r for r in ROWS if r.name in args.rows.split(",")]
    pin = not args.no_pin
    results = measure(rows, args.rounds, args.seconds, pin)
    report(args, rows, results, pin)
    return 0


def measure(
    rows: list[Row], rounds: int, seconds: float, pin: bool
) -> dict[str, dict[str, list[Run]]]:
    """wrk runs of each row against both servers ("ours", "bare"), `rounds` interleaved
    rounds of `seconds` each after a 1 s warm-up, the two sides taking turns first.
    Starts its own embedded PostgreSQL and both servers, and stops them."""
    from registry.store.embedded import EmbeddedPostgres

    work = Path(tempfile.mkdtemp(prefix="fixed-cost-bench-"))
    pg = EmbeddedPostgres(work / "pg", settings={"fsync": "off", "synchronous_commit": "off"})
    servers: list[Server] = []
    results: dict[str, dict[str, list[Run]]] = {r.name: {"bare": [], "ours": []} for r in rows}
    try:
        database_url = pg.start()
        ours = Server("registry", database_url, pin)
        servers.append(ours)
        ours.wait_ready("/readyz")
        publish(ours.url)
        token = create_read_token(database_url)
        answers, etag = fetch_answers(ours.url, token)
        answers_file = work / "answers.json"
        answers_file.write_bytes(msgspec.json.encode(answers))
        bare = Server("bare", str(answers_file), pin)
        servers.append(bare)
        bare.wait_ready("/healthz")
        pair = {"bare": bare, "ours": ours}
        paths = {
            "bare": {r.name: f"/{r.name}" for r in rows},
            "ours": {r.name: r.path for r in rows},
        }
        for row in rows:  # warm-up: both servers, every row
            for side, server in pair.items():
                wrk(server, paths[side][row.name], request_headers(row, token, etag), 1, pin)
        for round_ in range(rounds):
            print(f"round {round_ + 1}/{rounds}", file=sys.stderr)
            order = ("bare", "ours") if round_ % 2 == 0 else ("ours", "bare")
            for row in rows:
                for side in order:
                    run = wrk(
                        pair[side],
                        paths[side][row.name],
                        request_headers(row, token, etag),
                        seconds,
                        pin,
                    )
                    results[row.name][side].append(run)
                    print(
                        f"  {row.name:12} {side:5} {run.rps:8.0f} req/s "
                        f"{run.cpu_us:6.1f} us CPU/request {run.errors}",
                        file=sys.stderr,
                    )
    finally:
        for server in servers:
            server.stop()
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def report(
    args: argparse.Namespace, rows: list[Row], results: dict[str, dict[str, list[Run]]], pin: bool
) -> None:
    load = os.getloadavg()
    print(
        f"\n`registry serve` vs a bare Litestar app answering the same bytes, granian, "
        f"wrk {CONNECTIONS} connections, {args.rounds} interleaved rounds of {args.seconds:g} s"
        f"{' (servers on CPU 0, wrk on CPU 1)' if pin else ''}; load average "
        f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}\n"
    )
    print(
        f"{'row':12}  {'ours req/s':>10}  {'bare req/s':>10}  {'ratio':>6}  {'(range)':>13}  "
        f"{'CPU ratio':>9}  {'us/req ours':>11}  {'bare':>5}  goal"
    )
    for row in rows:
        ours, bare = results[row.name]["ours"], results[row.name]["bare"]
        ratios = [o.rps / b.rps for o, b in zip(ours, bare, strict=True)]
        cpu_ratios = [b.cpu_us / o.cpu_us for o, b in zip(ours, bare, strict=True)]
        ratio = statistics.median(ratios)
        goal = f">= {GOAL}x: {'met' if ratio >= GOAL else 'NOT met'}" if row.goal else "(no goal)"
        errors = [r.errors for r in ours + bare if r.errors]
        print(
            f"{row.name:12}  {statistics.median(r.rps for r in ours):10.0f}  "
            f"{statistics.median(r.rps for r in bare):10.0f}  {ratio:5.2f}x  "
            f"({min(ratios):.2f}-{max(ratios):.2f}x)  {statistics.median(cpu_ratios):8.2f}x  "
            f"{statistics.median(r.cpu_us for r in ours):11.1f}  "
            f"{statistics.median(r.cpu_us for r in bare):5.1f}  {goal}"
            f"{'  errors: ' + '; '.join(errors) if errors else ''}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
