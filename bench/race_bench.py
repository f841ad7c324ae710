"""Concurrent publishers racing on a few tools, across app replicas on one database.

    .venv/bin/python bench/race_bench.py            # 32 x 1,000 publishes, 8 tools, 2 replicas
    .venv/bin/python bench/race_bench.py --publishers 8 --publishes 50 --tools 4
    .venv/bin/python bench/race_bench.py --database-url postgresql://...   # an existing server

Each replica is the app as `asgi(settings)` serves it, under uvicorn, in its
own process (its own connection pool and LISTEN connection); the publishers
run in this process, publisher `p` talking to replica `p % replicas` over
keep-alive HTTP. Every publish is cosmetic (only the description changes), so
every one is accepted in whatever order the publishes land; every fourth
publisher re-sends its neighbour's definitions (the same digest raced from two
clients) and every publisher re-sends one of its own earlier definitions now
and then. Then the invariants are checked through the API:

* every publish answered 201 (stored) or 200 (that digest was stored already);
* one digest, one version; versions contiguous per tool (1..N), none lost
  (every answered digest is stored under the answered number), none extra;
* one 201 per stored version, and exactly one `version.publish` audit event
  per stored version (with its digest), one `namespace.create`.

It prints publishes/s, p50/p99/max latency and the checks, and exits 1 if one
fails. Without `--database-url` it starts an embedded PostgreSQL (default,
durable settings) in a temporary directory and removes it afterwards.
`tests/faults/test_races.py` runs the same scenario, smaller, in `make test`.
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
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from registry.canonical import digest as canonical_digest  # noqa: E402
from tests.ports import free_port  # noqa: E402

TOKEN = "race-bench-token"
NAMESPACE = "races"

# The replica process: the app exactly as `asgi(settings)` builds it, under uvicorn.
REPLICA = """
import sys, uvicorn
from registry.api.app import asgi
from registry.api.settings import Settings
url, port, token, pool = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
settings = Settings(database_url=url, port=port, bootstrap_token=token, pool_max=pool)
uvicorn.run(asgi(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
"""


# -- the workload ------------------------------------------------------------------


def tool_names(count: int) -> list[str]:
    return [f"race.tool{index}" for index in range(count)]


def definition(tool: str, label: str) -> dict[str, Any]:
    """A definition of `tool` whose only difference between labels is the description."""
    return {
        "name": tool,
        "description": f"Race revision {label}.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    }


def planned(publisher: int, publish: int, tools: Sequence[str]) -> tuple[str, str]:
    """(tool, label) of a publisher's n-th publish.

    Publisher 3 (7, 11, ...) sends exactly what publisher 2 (6, 10, ...) sends,
    at about the same time; every fifth publish re-sends the publisher's own
    third-last one.
    """
    ident = publisher - 1 if publisher % 4 == 3 else publisher
    step = publish - 3 if publish % 5 == 4 else publish
    return tools[(ident + step) % len(tools)], f"{ident}.{step}"


@dataclass
class Outcome:
    publisher: int
    tool: str
    digest: str  # computed here, from the definition sent
    status: int
    version: int | None
    answered_digest: str | None
    seconds: float
    finished: float  # perf_counter() when the answer came
    error: str = ""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class RaceReport:
    outcomes: list[Outcome]
    started: float  # perf_counter()
    seconds: float
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def failures(self) -> list[str]:
        return [f"{c.name}: {c.detail}" for c in self.checks if not c.ok]


async def _publisher(
    client: httpx.AsyncClient,
    publisher: int,
    publishes: int,
    namespace: str,
    tools: Sequence[str],
    out: list[Outcome],
) -> None:
    for publish in range(publishes):
        tool, label = planned(publisher, publish, tools)
        body = definition(tool, label)
        started = time.perf_counter()
        try:
            answer = await client.post(
                f"/v1/namespaces/{namespace}/tools/{tool}/versions", json={"definition": body}
            )
        except httpx.HTTPError as exc:
            out.append(
                Outcome(
                    publisher,
                    tool,
                    canonical_digest(body),
                    0,
                    None,
                    None,
                    time.perf_counter() - started,
                    time.perf_counter(),
                    f"{type(exc).__name__}: {exc}",
                )
            )
            continue
        seconds = time.perf_counter() - started
        data = answer.json() if answer.status_code in (200, 201) else {}
        out.append(
            Outcome(
                publisher,
                tool,
                canonical_digest(body),
                answer.status_code,
                data.get("version"),
                data.get("digest"),
                seconds,
                time.perf_counter(),
                "" if data else answer.text[:300],
            )
        )


async def run_race(
    urls: Sequence[str],
    *,
    publishers: int,
    publishes: int,
    tools: Sequence[str],
    token: str,
    namespace: str = NAMESPACE,
) -> RaceReport:
    """Run the publishers (publisher p against urls[p % len(urls)]); no checks yet."""
    clients = [
        httpx.AsyncClient(
            base_url=urls[p % len(urls)],
            headers={"Authorization": f"Bearer {token}"},
            timeout=120,
        )
        for p in range(publishers)
    ]
    outcomes: list[Outcome] = []
    created = await clients[0].put(f"/v1/namespaces/{namespace}")
    if created.status_code not in (200, 201):
        raise RuntimeError(f"cannot create namespace {namespace}: {created.text}")
    started = time.perf_counter()
    try:
        await asyncio.gather(
            *(
                _publisher(client, p, publishes, namespace, tools, outcomes)
                for p, client in enumerate(clients)
            )
        )
    finally:
        for client in clients:
            await client.aclose()
    return RaceReport(outcomes, started, time.perf_counter() - started)


async def _audit_events(
    client: httpx.AsyncClient, namespace: str, action: str
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    after: int | None = None
    while True:
        params: dict[str, Any] = {"action": action, "namespace": namespace, "limit": 1000}
        if after is not None:
            params["after"] = after
        answer = await client.get("/v1/audit", params=params)
        answer.raise_for_status()
        page = answer.json()
        events += page["events"]
        after = page["next_after"]
        if after is None:
            return events


async def check_invariants(
    client: httpx.AsyncClient, report: RaceReport, tools: Sequence[str], namespace: str = NAMESPACE
) -> list[Check]:
    """Check the stored history and the audit log against what the publishers were told."""
    checks: list[Check] = []

    def check(name: str, problems: list[str], ok_detail: str) -> None:
        shown = "; ".join(problems[:5]) + (
            f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        )
        checks.append(Check(name, not problems, shown if problems else ok_detail))

    outcomes = report.outcomes
    statuses = Counter(o.status for o in outcomes)
    bad = [f"{o.tool} {o.status} {o.error}" for o in outcomes if o.status not in (200, 201)]
    check("every publish accepted (200/201)", bad, f"{dict(sorted(statuses.items()))}")

    answered: dict[tuple[str, str], set[int]] = defaultdict(set)
    wrong_digest = []
    for o in outcomes:
        if o.version is not None:
            answered[(o.tool, o.digest)].add(o.version)
            if o.answered_digest != o.digest:
                wrong_digest.append(f"{o.tool}: sent {o.digest}, answered {o.answered_digest}")
    split = [f"{t} {d[:15]}: versions {sorted(v)}" for (t, d), v in answered.items() if len(v) > 1]
    check(
        "same digest -> same version",
        split + wrong_digest,
        f"{len(answered)} distinct digests, each answered with one version",
    )

    stored: dict[str, dict[int, str]] = {}
    contiguity, lost, extra, created = [], [], [], []
    for tool in tools:
        answer = await client.get(f"/v1/namespaces/{namespace}/tools/{tool}/versions")
        history = answer.json()["versions"] if answer.status_code == 200 else []
        numbers = [v["version"] for v in history]
        stored[tool] = {v["version"]: v["digest"] for v in history}
        if numbers != list(range(1, len(numbers) + 1)):
            contiguity.append(f"{tool}: {numbers[:10]}... ({len(numbers)} versions)")
        sent = {d for (t, d) in answered if t == tool}
        by_digest = {d: n for n, d in stored[tool].items()}
        for digest in sent:
            versions = answered[(tool, digest)]
            if by_digest.get(digest) not in versions:
                lost.append(
                    f"{tool} {digest[:15]}: answered {sorted(versions)}, stored as "
                    f"{by_digest.get(digest)}"
                )
        extra += [f"{tool} v{n}" for n, d in stored[tool].items() if d not in sent]
        made = sum(1 for o in outcomes if o.tool == tool and o.status == 201)
        if made != len(numbers):
            created.append(f"{tool}: {made} answers 201 for {len(numbers)} stored versions")
    total = sum(len(v) for v in stored.values())
    check(
        "versions contiguous per tool (1..N)",
        contiguity,
        f"{total} versions over {len(tools)} tools",
    )
    check("no version lost or duplicated", lost + extra, "every answered digest stored as answered")
    check("one 201 per stored version", created, "201 count == stored versions, per tool")

    events = await _audit_events(client, namespace, "version.publish")
    per_version = Counter((e["tool"], e["version"]) for e in events)
    audit = [f"{t} v{n}: {c} events" for (t, n), c in per_version.items() if c != 1]
    audit += [
        f"{tool} v{n}: no event"
        for tool, versions in stored.items()
        for n in versions
        if (tool, n) not in per_version
    ]
    audit += [
        f"{e['tool']} v{e['version']}: event for a version not stored"
        for e in events
        if e["version"] not in stored.get(e["tool"], {})
    ]
    audit += [
        f"{e['tool']} v{e['version']}: event digest differs"
        for e in events
        if stored.get(e["tool"], {}).get(e["version"], e["detail"].get("digest"))
        != e["detail"].get("digest")
    ]
    creates = await _audit_events(client, namespace, "namespace.create")
    if len(creates) != 1:
        audit.append(f"{len(creates)} namespace.create events")
    check(
        "one version.publish audit event per stored version",
        audit,
        f"{len(events)} events for {total} versions; 1 namespace.create",
    )
    return checks


def latency_figures(outcomes: Sequence[Outcome]) -> dict[str, float]:
    seconds = sorted(o.seconds for o in outcomes)
    if not seconds:
        return {}
    cuts = statistics.quantiles(seconds, n=100, method="inclusive") if len(seconds) > 1 else []
    return {
        "p50_ms": 1000 * statistics.median(seconds),
        "p99_ms": 1000 * (cuts[98] if cuts else seconds[0]),
        "max_ms": 1000 * seconds[-1],
    }


# -- replicas and the database ---------------------------------------------------


def _database(dsn: str, name: str) -> str:
    return urlunsplit(urlsplit(dsn)._replace(path="/" + name))


async def _fresh_database(admin_dsn: str, name: str) -> str:
    import asyncpg

    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return _database(admin_dsn, name)


async def _start_replica(
    database_url: str, pool_max: int, log_dir: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    # The request log (one line per request) goes to a file: it is part of the cost
    # of serving, but would drown this script's output.
    log = log_dir / f"replica-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-c", REPLICA, database_url, str(port), TOKEN, str(pool_max)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"replica on port {port} exited ({process.returncode}):\n{tail}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/readyz")).status_code == 200:
                    return process, url
            await asyncio.sleep(0.2)
    process.kill()
    raise RuntimeError(f"replica on port {port} did not become ready")


def _stop_replica(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def bench(args: argparse.Namespace, admin_dsn: str) -> RaceReport:
    database_url = await _fresh_database(admin_dsn, args.database)
    tools = tool_names(args.tools)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        # One at a time: the first applies the migrations (the second would wait on the lock).
        urls = []
        for _ in range(args.replicas):
            process, url = await _start_replica(database_url, args.pool_max, args.log_dir)
            processes.append(process)
            urls.append(url)
        print(
            f"{args.publishers} publishers x {args.publishes} publishes over {args.tools} tools, "
            f"{args.replicas} replicas (pool_max {args.pool_max} each): {', '.join(urls)}",
            flush=True,
        )
        report = await run_race(
            urls,
            publishers=args.publishers,
            publishes=args.publishes,
            tools=tools,
            token=TOKEN,
        )
        async with httpx.AsyncClient(
            base_url=urls[0], headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300
        ) as client:
            report.checks = await check_invariants(client, report, tools)
        return report
    finally:
        for process in processes:
            _stop_replica(process)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--publishers", type=int, default=32)
    parser.add_argument("--publishes", type=int, default=1000, help="per publisher")
    parser.add_argument("--tools", type=int, default=8)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--pool-max", type=int, default=10, help="connections per replica")
    parser.add_argument("--database-url", help="a superuser URL; default: embedded PostgreSQL")
    parser.add_argument("--database", default="race_bench", help="created (dropped first) there")
    args = parser.parse_args(argv)
    args.log_dir = Path(tempfile.mkdtemp(prefix="registry-race-bench-logs-"))

    data_dir: Path | None = None
    server = None
    admin_dsn = args.database_url
    if admin_dsn is None:
        from registry.store.embedded import EmbeddedPostgres

        # Not under /tmp's private dirs: run as root, the server runs as another user.
        data_dir = Path(tempfile.mkdtemp(prefix="registry-race-bench-"))
        server = EmbeddedPostgres(data_dir, settings={"max_connections": "200"})
        admin_dsn = server.start()
    try:
        report = asyncio.run(bench(args, admin_dsn))
    finally:
        if server is not None:
            server.stop()
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)

    total = len(report.outcomes)
    figures = latency_figures(report.outcomes)
    statuses = Counter(o.status for o in report.outcomes)
    print(
        f"{total} publishes in {report.seconds:.1f} s: {total / report.seconds:.0f} publishes/s; "
        f"{statuses.get(201, 0)} stored (201), {statuses.get(200, 0)} already stored (200), "
        f"{total - statuses.get(201, 0) - statuses.get(200, 0)} other"
    )
    print(
        f"latency p50 {figures['p50_ms']:.1f} ms, p99 {figures['p99_ms']:.1f} ms, "
        f"max {figures['max_ms']:.1f} ms"
    )
    # Each publish reads its tool's whole history under the lock: show how the rate moves.
    tenths = Counter(
        min(int(10 * (o.finished - report.started) / report.seconds), 9) for o in report.outcomes
    )
    rates = [tenths[i] / (report.seconds / 10) for i in range(10)]
    print("publishes/s by tenth of the run: " + " ".join(f"{r:.0f}" for r in rates))
    for check in report.checks:
        print(f"  {'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
    if not report.ok:
        print(f"replica logs kept in {args.log_dir}")
        return 1
    shutil.rmtree(args.log_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
