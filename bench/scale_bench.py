"""Scale benchmark (issue 14): every row of its table, each a figure measured here and,
where one exists, a ratio against a baseline measured in the same run.

    .venv/bin/python bench/scale_bench.py            # the issue's sizes (about 10 minutes)
    .venv/bin/python bench/scale_bench.py --quick    # small sizes, a sanity run (~2 minutes)
    .venv/bin/python bench/scale_bench.py --rows waiters,wake,sdk   # some rows only

Everything runs on loopback, in bounded loops: an embedded PostgreSQL (fsync
off) in a temporary directory, replicas of the registry as `registry serve`
runs it (`registry.server.build_app` under granian, each in its own process,
plus a bare Litestar route that answers the toolset's bytes), and clients in
their own processes (`bench/scale_clients.py`, raw HTTP/1.1; autocannon from
npm under `.bench-tools/` for throughput). On a machine whose cores are shared
with other work, the figures move with the load average, printed with them.

Rows (see `--rows`): waiters (held at once, RSS), wake (same replica), cross
(another replica), big (a namespace of 10,000 tools after a write), sdk
(`Toolset.from_json` of its payload), throughput (200/304 against the bare
route), storm (2,000 new connections at once), publish (8 concurrent publishers).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from service_bench import autocannon, free_port  # noqa: E402

from tests.fixtures.seeds import DB_QUERY_V4  # noqa: E402

TOKEN = "scale-bench-bootstrap-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CLIENTS = [sys.executable, str(ROOT / "bench" / "scale_clients.py")]

# A replica: the registry as `registry serve` builds it, plus a bare Litestar route that
# answers the same bytes as a toolset (read from a file the bench writes).
REPLICA = r"""
import asyncio, os
from litestar import Request, Response, get
from registry.api.settings import Settings
from registry.logging_setup import configure_logging
from registry.server import build_app, serve_app

BODY = {}

@get("/bench/bare", include_in_schema=False)
async def bare(request: Request) -> Response[bytes]:
    if not BODY:
        with open(os.environ["BENCH_BODY"], "rb") as f:
            BODY["bytes"] = f.read()
        with open(os.environ["BENCH_BODY"] + ".etag") as f:
            BODY["etag"] = f.read()
    headers = {"ETag": BODY["etag"]}
    if request.headers.get("if-none-match") == BODY["etag"]:
        return Response(b"", status_code=304, headers=headers)
    return Response(BODY["bytes"], media_type="application/json", headers=headers)

settings = Settings.from_env()
configure_logging(json=True)
asyncio.run(serve_app(build_app(settings, extra_routes=[bare]), settings.host, settings.port))
"""


def load_average() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


def definition(name: str, note: str = "") -> dict[str, Any]:
    found = copy.deepcopy(DB_QUERY_V4)
    found["name"] = name
    found["description"] = f"Tool {name}.{note}"
    return found


# -- the cluster ---------------------------------------------------------------------------


@dataclass
class Replica:
    proc: subprocess.Popen[bytes]
    url: str

    @property
    def pid(self) -> int:
        return self.proc.pid

    def metric(self, name: str, labels: str = "") -> float:
        text = httpx.get(self.url + "/metrics", timeout=30).text
        prefix = name + (("{" + labels + "}") if labels else "")
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(prefix + " ") or (not labels and line.startswith(name + "{"))
        )


@dataclass
class Cluster:
    dsn: str
    workdir: Path
    replicas: list[Replica] = field(default_factory=list)

    def start_replica(self, **env: str) -> Replica:
        port = free_port()
        environ = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
        environ.update(
            REGISTRY_DATABASE_URL=self.dsn,
            REGISTRY_PORT=str(port),
            REGISTRY_BOOTSTRAP_TOKEN=TOKEN,
            BENCH_BODY=str(self.workdir / "body.json"),
            **env,
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", REPLICA],
            env=environ,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=None if os.environ.get("BENCH_DEBUG") else subprocess.DEVNULL,
        )
        replica = Replica(proc, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"replica exited {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(replica.url + "/healthz", timeout=1).status_code == 200:
                    self.replicas.append(replica)
                    return replica
            time.sleep(0.1)
        raise RuntimeError("replica did not start")

    def stop_replicas(self) -> None:
        for replica in self.replicas:
            replica.proc.terminate()
        for replica in self.replicas:
            try:
                replica.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                replica.proc.kill()
        self.replicas.clear()


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    from registry.store import EmbeddedPostgres, migrate

    workdir = Path(tempfile.mkdtemp(prefix="registry-scale-"))
    server = EmbeddedPostgres(workdir / "pg", settings={"fsync": "off", "max_connections": "200"})
    dsn = server.start()
    asyncio.run(migrate(dsn))
    found = Cluster(dsn, workdir)
    try:
        yield found
    finally:
        found.stop_replicas()
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


async def populate(dsn: str, namespace: str, tools: int, prefix: str = "tool") -> None:
    """`tools` tools of one version each, written through the store (fast, no HTTP)."""
    import asyncpg

    from registry import store
    from registry.canonical import digest
    from registry.store import PublishPlan

    pool = await asyncpg.create_pool(dsn, min_size=4, max_size=4)
    try:
        await store.create_namespace(pool, namespace, actor=None, request_id=None)

        async def one(index: int) -> None:
            found = definition(f"{prefix}-{index:05d}")
            await store.publish(
                pool,
                namespace,
                found["name"],
                found,
                digest(found),
                lambda _state: PublishPlan(),
                None,
                None,
                create_namespace=False,
            )

        for start in range(0, tools, 200):
            await asyncio.gather(*(one(i) for i in range(start, min(start + 200, tools))))
    finally:
        await pool.close()


_CLIENT: list[httpx.Client] = []


def http() -> httpx.Client:
    """One kept-alive client (a new httpx client costs tens of ms: its TLS context)."""
    if not _CLIENT:
        _CLIENT.append(httpx.Client(headers=AUTH, timeout=120))
    return _CLIENT[0]


def publish(url: str, namespace: str, tool: str, note: str) -> float:
    """Publish a cosmetic change; the monotonic time it was sent."""
    body = json.dumps({"definition": definition(tool, note)}).encode()
    headers = {"Content-Type": "application/json"}
    started = time.monotonic()
    answer = http().post(
        f"{url}/v1/namespaces/{namespace}/tools/{tool}/versions", content=body, headers=headers
    )
    assert answer.status_code in (200, 201), answer.text
    return started


def etag_of(url: str, namespace: str) -> str:
    answer = http().get(f"{url}/v1/namespaces/{namespace}/toolset")
    assert answer.status_code == 200, answer.text
    return answer.headers["etag"]


# -- clients ---------------------------------------------------------------------------------


class Holder:
    """A `scale_clients.py hold` process: `count` long-polls held on one replica."""

    def __init__(self, url: str, path: str, count: int, headers: dict[str, str]) -> None:
        args = [*CLIENTS, "hold", url, path, str(count)]
        for key, value in headers.items():
            args += ["--header", f"{key}:{value}"]
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )

    def held(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        return dict(json.loads(self.proc.stdout.readline()))

    def answers(self, timeout: float) -> dict[str, Any]:
        """The answers once all arrived (or after `timeout`: stdin is closed)."""
        assert self.proc.stdout is not None and self.proc.stdin is not None
        timer = threading.Timer(timeout, self._close)
        timer.start()
        try:
            line = self.proc.stdout.readline()
        finally:
            timer.cancel()
        self._close()
        self.proc.wait(timeout=60)
        return dict(json.loads(line)) if line else {"answers": [], "lost_count": -1}

    def _close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()


def hold(url: str, namespace: str, etag: str, count: int, wait: int = 60) -> list[Holder]:
    """`count` long-polls on `url`, in processes of at most 9,000 (descriptor limits)."""
    path = f"/v1/namespaces/{namespace}/toolset?wait={wait}"
    headers = {**AUTH, "If-None-Match": etag}
    holders = []
    left = count
    while left > 0:
        share = min(left, 9_000)
        holders.append(Holder(url, path, share, headers))
        left -= share
    return holders


def storm(url: str, path: str, count: int, headers: dict[str, str]) -> dict[str, Any]:
    args = [*CLIENTS, "storm", url, path, str(count)]
    for key, value in headers.items():
        args += ["--header", f"{key}:{value}"]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=300, check=True)
    return dict(json.loads(done.stdout))


def cannon(url: str, headers: dict[str, str], seconds: int, connections: int) -> tuple[float, int]:
    """(requests/s, requests answered) of an autocannon run."""
    command = [*autocannon(), "-j", "-c", str(connections), "-d", str(seconds)]
    for key, value in headers.items():
        command += ["-H", f"{key}={value}"]
    done = subprocess.run([*command, url], capture_output=True, text=True, check=True)
    data = json.loads(done.stdout)
    assert data["non2xx"] == 0 or headers.get("If-None-Match"), data
    return float(data["requests"]["average"]), int(data["requests"]["total"])


# -- rows ---------------------------------------------------------------------------------


@dataclass
class Row:
    scenario: str
    figure: str
    ratio: str
    goal: str


@dataclass
class Sizes:
    waiters: int
    wake: int
    cross: int
    big: int
    storm: int
    slice_seconds: int
    slices: int
    publishes: int

    @classmethod
    def of(cls, quick: bool) -> Sizes:
        if quick:
            return cls(2_000, 1_000, 300, 2_000, 500, 1, 2, 20)
        return cls(20_000, 10_000, 1_000, 10_000, 2_000, 3, 6, 50)


def _latencies(holders: list[Holder], since: float, timeout: float) -> tuple[list[float], int]:
    seconds: list[float] = []
    lost = 0
    for holder in holders:
        got = holder.answers(timeout)
        seconds += [at - since for status, at in got["answers"] if status == 200]
        lost += got.get("lost_count", 0)
    return seconds, lost


def row_waiters(c: Cluster, sizes: Sizes) -> list[Row]:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    # Each held long-poll is a descriptor of the replica: hold what its limit allows.
    count = min(sizes.waiters, hard - 1_000)
    replica = c.start_replica(REGISTRY_MAX_WAITERS=str(count))
    asyncio.run(populate(c.dsn, "hold", 5))
    etag = etag_of(replica.url, "hold")
    idle = rss_mib(replica.pid)
    holders = hold(replica.url, "hold", etag, count)
    held = sum(h.held()["held"] for h in holders)
    _all_held(replica, held)
    full = rss_mib(replica.pid)
    started = time.monotonic()
    extra = httpx.get(
        f"{replica.url}/v1/namespaces/hold/toolset?wait=30",
        headers={**AUTH, "If-None-Match": etag},
        timeout=30,
    )
    refused_ms = (time.monotonic() - started) * 1000
    reached = replica.metric("registry_limit_reached_total", 'limit="waiters"')
    for holder in holders:
        holder.answers(0.1)
    c.stop_replicas()
    each = (full - idle) * 1024 / max(held, 1)
    projected = idle + each * 20_000 / 1024
    rows = [
        Row(
            "long-poll waiters on one replica",
            f"{held:,} held (descriptor limit {hard:,}): {full:.0f} MiB RSS, {each:.1f} KiB "
            f"each over the idle replica's {idle:.0f} MiB; 20,000 would be {projected:.0f} MiB",
            f"{projected / 1024:.2f}x of 1 GiB at 20,000",
            "20,000 under 1 GiB",
        ),
        Row(
            "the long-poll past the waiter limit",
            f"answered {extra.status_code} (Retry-After {extra.headers.get('retry-after')}) "
            f"in {refused_ms:.0f} ms; registry_limit_reached_total{{limit=waiters}} {reached:.0f}",
            "-",
            "a setting; logged and counted when reached",
        ),
    ]
    rows.append(_connection_limit(c))
    return rows


def _connection_limit(c: Cluster) -> Row:
    """A replica with a small connection limit, filled: the connections past it wait,
    and the replica says so (counted in /metrics, a warning in the log)."""
    limit = 300
    replica = c.start_replica(REGISTRY_MAX_CONNECTIONS=str(limit), REGISTRY_MAX_WAITERS="250")
    etag = etag_of(replica.url, "hold")
    with httpx.Client(base_url=replica.url, timeout=30) as kept:  # one connection kept open
        kept.get("/healthz")
        holders = hold(replica.url, "hold", etag, limit + 50)
        for holder in holders:
            holder.held()
        time.sleep(3.0)  # two checks, a second apart, find connections waiting
        text = kept.get("/metrics").text
    reached = sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('registry_limit_reached_total{limit="connections"}')
    )
    refused = sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('registry_limit_reached_total{limit="waiters"}')
    )
    for holder in holders:
        holder.answers(0.1)
    c.stop_replicas()
    return Row(
        "connections past the connection limit",
        f"limit {limit}, {limit + 51} opened: limit_reached{{connections}} {reached:.0f} "
        f"(checked each second), {{waiters}} {refused:.0f} (250 held, then 503)",
        "-",
        "logged once a minute and counted in /metrics",
    )


def _all_held(replica: Replica, count: int) -> None:
    """Until the replica holds `count` long-polls (the clients' requests are sent
    before the replica has read them all)."""
    deadline = time.monotonic() + 120
    while replica.metric("registry_toolset_longpoll_waiters") < count:
        if time.monotonic() > deadline:
            raise RuntimeError("the long-polls were never all held")
        time.sleep(0.2)


def _wake(url: str, publish_url: str, waiters: int, c: Cluster, namespace: str) -> dict[str, Any]:
    etag = etag_of(url, namespace)
    holders = hold(url, namespace, etag, waiters)
    held = sum(h.held()["held"] for h in holders)
    replica = next(r for r in c.replicas if r.url == url)
    _all_held(replica, held)
    cpu = cpu_seconds(replica.pid)
    since = publish(publish_url, namespace, "tool-00000", f" {time.monotonic()}")
    seconds, lost = _latencies(holders, since, timeout=60)
    return {
        "held": held,
        "woken": len(seconds),
        "lost": lost,
        "p50": percentile(seconds, 0.5) * 1000,
        "p99": percentile(seconds, 0.99) * 1000,
        "max": max(seconds, default=float("nan")) * 1000,
        "cpu_ms": (cpu_seconds(replica.pid) - cpu) * 1000,
    }


def row_wake(c: Cluster, sizes: Sizes) -> list[Row]:
    replica = c.start_replica()
    asyncio.run(populate(c.dsn, "wake", 5))
    found = _wake(replica.url, replica.url, sizes.wake, c, "wake")
    c.stop_replicas()
    return [
        Row(
            "wake-up after a publish, same replica",
            f"{found['woken']:,} of {found['held']:,} waiters: p50 {found['p50']:.0f} ms, "
            f"p99 {found['p99']:.0f} ms, max {found['max']:.0f} ms; replica CPU "
            f"{found['cpu_ms'] / max(found['woken'], 1) * 1000:.0f} us per waiter",
            f"p99 {found['p99'] / 1000:.2f}x of 1 s",
            "10,000 waiters p99 <= 1 s",
        )
    ]


def row_cross(c: Cluster, sizes: Sizes) -> list[Row]:
    first = c.start_replica()
    second = c.start_replica()
    asyncio.run(populate(c.dsn, "cross", 5))
    runs = [_wake(second.url, first.url, sizes.cross, c, "cross") for _ in range(3)]
    c.stop_replicas()
    p99 = [r["p99"] for r in runs]
    p50 = [r["p50"] for r in runs]
    return [
        Row(
            "wake-up on another replica (LISTEN/NOTIFY)",
            f"{runs[0]['woken']:,} waiters, 3 runs: p50 {min(p50):.0f}-{max(p50):.0f} ms, "
            f"p99 {min(p99):.0f}-{max(p99):.0f} ms",
            f"p99 {statistics.median(p99) / 100:.2f}x of 100 ms (median run)",
            "1,000 waiters p99 <= 100 ms",
        )
    ]


class Prober:
    """GET /healthz every 10 ms on a kept-alive connection, noting each latency."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.samples: list[tuple[float, float]] = []  # (started, seconds)
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while self.running:
                started = time.monotonic()
                client.get("/healthz")
                self.samples.append((started, time.monotonic() - started))
                time.sleep(0.01)

    def between(self, start: float, end: float) -> list[float]:
        return [s * 1000 for at, s in self.samples if start <= at <= end]

    def stop(self) -> None:
        self.running = False
        self.thread.join()


def _built(replica: Replica, kind: str) -> tuple[float, float]:
    return (
        replica.metric("registry_toolset_build_seconds_sum", f'kind="{kind}"'),
        replica.metric("registry_toolset_build_seconds_count", f'kind="{kind}"'),
    )


def row_big(c: Cluster, sizes: Sizes) -> list[Row]:
    replica = c.start_replica()
    asyncio.run(populate(c.dsn, "big", sizes.big))
    started = time.monotonic()
    first = httpx.get(f"{replica.url}/v1/namespaces/big/toolset", headers=AUTH, timeout=120)
    cold_ms = (time.monotonic() - started) * 1000
    (c.workdir / "big.json").write_bytes(first.content)
    prober = Prober(replica.url)
    time.sleep(3.0)
    quiet_end = time.monotonic()
    quiet = prober.between(quiet_end - 3.0, quiet_end)
    sum0, count0 = _built(replica, "tools")
    after: list[float] = []
    etag = first.headers["etag"]
    # The long-poll from a thread of this process: a client process started per write
    # would take the cores from the replica just when it is measured.
    with httpx.Client(base_url=replica.url, headers=AUTH, timeout=120) as poller:
        for n in range(5):
            answered: list[float] = []

            def poll(tag: str = etag, into: list[float] = answered) -> None:
                poller.get("/v1/namespaces/big/toolset?wait=60", headers={"If-None-Match": tag})
                into.append(time.monotonic())

            thread = threading.Thread(target=poll)
            thread.start()
            _all_held(replica, 1)
            since = publish(replica.url, "big", f"tool-{n * 7:05d}", f" write {n}")
            thread.join(timeout=60)
            after += [(at - since) * 1000 for at in answered]
            etag = etag_of(replica.url, "big")
            time.sleep(0.5)
    writes = prober.between(quiet_end, time.monotonic())
    prober.stop()
    sum1, count1 = _built(replica, "tools")
    build_ms = (sum1 - sum0) / max(count1 - count0, 1) * 1000
    c.stop_replicas()
    mb = len(first.content) / 1e6
    return [
        Row(
            f"namespace of {sizes.big:,} tools ({mb:.1f} MB): toolset after a write",
            f"rebuilt in {build_ms:.1f} ms (one tool, in the build thread; mean of "
            f"{count1 - count0:.0f}); a long-poll had the new payload "
            f"{statistics.median(after):.0f} ms (median of 5) after the publish was sent; "
            f"first build {cold_ms:.0f} ms",
            f"{build_ms / 50:.2f}x of 50 ms",
            "<= 50 ms, off the loop",
        ),
        Row(
            "other requests meanwhile (/healthz every 10 ms)",
            f"during the writes: p99 {percentile(writes, 0.99):.1f} ms, max {max(writes):.1f} ms; "
            f"before them: p99 {percentile(quiet, 0.99):.1f} ms, max {max(quiet):.1f} ms",
            f"max {max(writes) / max(*quiet, 0.001):.2f}x of the quiet max",
            "none delayed > 20 ms",
        ),
    ]


def reference_from_json(data: bytes) -> Any:
    """What `Toolset.from_json` did before issue 14: every digest with the reference
    (pure Python) RFC 8785 implementation."""
    import hashlib

    import msgspec
    import rfc8785

    from registry.sdk.toolset import ToolsetPayload

    raw = msgspec.json.decode(data)
    body = {k: v for k, v in raw.items() if k != "digest"}
    assert "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest() == raw["digest"]
    payload = msgspec.convert(raw, ToolsetPayload)
    for tool in payload.tools:
        for entry in tool.versions:
            plain = {k: v for k, v in entry.definition.items() if k != "_meta"}
            assert "sha256:" + hashlib.sha256(rfc8785.dumps(plain)).hexdigest() == entry.digest
    return payload


def row_sdk(c: Cluster, sizes: Sizes) -> list[Row]:
    from registry.sdk import Toolset

    path = c.workdir / "big.json"
    if not path.exists():
        replica = c.start_replica()
        asyncio.run(populate(c.dsn, "big", sizes.big))
        path.write_bytes(
            httpx.get(f"{replica.url}/v1/namespaces/big/toolset", headers=AUTH, timeout=120).content
        )
        c.stop_replicas()
    data = path.read_bytes()
    ours: list[float] = []
    reference: list[float] = []
    keep = Toolset.from_json(data)  # a process that already holds one, as a watcher's does
    # Timed: reading the payload; not freeing the one read before (that happens when a
    # watcher swaps toolsets, whatever reads them).
    for _ in range(3):
        for runs, load in ((ours, Toolset.from_json), (reference, reference_from_json)):
            started = time.perf_counter()
            found = load(data)
            runs.append((time.perf_counter() - started) * 1000)
            del found
    for _ in range(4):
        started = time.perf_counter()
        found = Toolset.from_json(data)
        ours.append((time.perf_counter() - started) * 1000)
        del found
    del keep
    return [
        Row(
            f"the SDK reading that {len(data) / 1e6:.1f} MB payload (Toolset.from_json)",
            f"median {statistics.median(ours):.0f} ms (min {min(ours):.0f}, max {max(ours):.0f}, "
            f"{len(ours)} runs); the pure-Python RFC 8785 path {statistics.median(reference):.0f} "
            "ms in the same run",
            f"{statistics.median(reference) / statistics.median(ours):.1f}x faster; "
            f"{statistics.median(ours) / 200:.2f}x of 200 ms",
            "<= 200 ms, exact RFC 8785",
        )
    ]


def _bare_body(c: Cluster, replica: Replica, namespace: str) -> str:
    """The bare route answers exactly the toolset's bytes and ETag."""
    answer = httpx.get(f"{replica.url}/v1/namespaces/{namespace}/toolset", headers=AUTH)
    (c.workdir / "body.json").write_bytes(answer.content)
    (c.workdir / "body.json.etag").write_text(answer.headers["etag"])
    return answer.headers["etag"]


def row_throughput(c: Cluster, sizes: Sizes) -> list[Row]:
    replica = c.start_replica()
    asyncio.run(populate(c.dsn, "small", 20))
    etag = _bare_body(c, replica, "small")
    rows = []
    for kind, extra, goal in (("200", {}, 0.8), ("304", {"If-None-Match": etag}, 0.9)):
        pair = (f"{replica.url}/v1/namespaces/small/toolset", f"{replica.url}/bench/bare")
        runs: dict[str, list[float]] = {pair[0]: [], pair[1]: []}
        cpu: dict[str, list[float]] = {pair[0]: [], pair[1]: []}
        for index in range(sizes.slices * 2):  # T B B T T B B T: outside load falls on both
            url = pair[(index + index // 2) % 2]
            before = cpu_seconds(replica.pid)
            rate, answered = cannon(url, {**AUTH, **extra}, sizes.slice_seconds, 32)
            runs[url].append(rate)
            cpu[url].append((cpu_seconds(replica.pid) - before) / max(answered, 1) * 1e6)
        ours, bare = (statistics.mean(runs[u]) for u in pair)
        ours_cpu, bare_cpu = (statistics.mean(cpu[u]) for u in pair)
        rows.append(
            Row(
                f"toolset {kind} req/s vs a bare Litestar route, same bytes, same server",
                f"{ours:,.0f} vs {bare:,.0f} req/s (32 connections, "
                f"{sizes.slices} x {sizes.slice_seconds} s each, interleaved; slices "
                f"{'/'.join(f'{r:.0f}' for r in runs[pair[0]])} vs "
                f"{'/'.join(f'{r:.0f}' for r in runs[pair[1]])}); replica CPU per request "
                f"{ours_cpu:.0f} vs {bare_cpu:.0f} us",
                f"{ours / bare:.2f}x req/s ({bare_cpu / ours_cpu:.2f}x by CPU per request)",
                f">= {goal}x",
            )
        )
    c.stop_replicas()
    return rows


def row_storm(c: Cluster, sizes: Sizes) -> list[Row]:
    replica = c.start_replica()
    asyncio.run(populate(c.dsn, "storm", 50))
    _bare_body(c, replica, "storm")
    paths = ("/v1/namespaces/storm/toolset", "/bench/bare")
    cpu: dict[str, list[float]] = {p: [] for p in paths}
    p99: dict[str, list[float]] = {p: [] for p in paths}
    statuses: dict[str, set[int]] = {p: set() for p in paths}
    for index in range(4):  # T B B T
        path = paths[(index + index // 2) % 2]
        time.sleep(1.0)
        before = cpu_seconds(replica.pid)
        got = storm(replica.url, path, sizes.storm, AUTH)
        cpu[path].append((cpu_seconds(replica.pid) - before) * 1000 / sizes.storm)
        p99[path].append(percentile([s for _, s in got["answers"]], 0.99) * 1000)
        statuses[path] |= {status for status, _ in got["answers"]}
        if len(got["answers"]) != sizes.storm:
            statuses[path].add(-len(got["errors"]))
    c.stop_replicas()
    ours, bare = (statistics.mean(cpu[p]) for p in paths)
    return [
        Row(
            f"boot storm: {sizes.storm:,} new connections at once, 50 tools",
            f"replica CPU {ours * 1000:.0f} us per request (bare route {bare * 1000:.0f} us); "
            f"p99 {statistics.mean(p99[paths[0]]):.0f} ms "
            f"(bare {statistics.mean(p99[paths[1]]):.0f} ms); "
            f"statuses {sorted(statuses[paths[0]])}",
            f"{ours / bare:.2f}x the bare route's CPU",
            "<= 1.5x",
        )
    ]


def row_publish(c: Cluster, sizes: Sizes) -> list[Row]:
    from scale_clients import KeptAlive

    first = c.start_replica()
    second = c.start_replica()
    with httpx.Client(headers=AUTH) as client:
        client.put(f"{first.url}/v1/namespaces/publish")

    async def run(urls: list[str], publishers: int, label: str) -> tuple[float, int]:
        bodies = [
            [
                json.dumps({"definition": definition(f"pub-{p % 8}", f" {label} {p}.{n}")}).encode()
                for n in range(sizes.publishes)
            ]
            for p in range(publishers)
        ]
        clients = [KeptAlive(urls[p % len(urls)], AUTH) for p in range(publishers)]
        for client in clients:
            await client.connect()

        async def one(p: int) -> int:
            stored = 0
            for body in bodies[p]:
                status, text = await clients[p].post_json(
                    f"/v1/namespaces/publish/tools/pub-{p % 8}/versions", body
                )
                assert status in (200, 201), text
                stored += status == 201
            return stored

        started = time.perf_counter()
        stored = sum(await asyncio.gather(*(one(p) for p in range(publishers))))
        elapsed = time.perf_counter() - started
        for client in clients:
            await client.close()
        return publishers * sizes.publishes / elapsed, stored

    one_rate, one_stored = asyncio.run(run([first.url], 8, "one"))
    two_rate, two_stored = asyncio.run(run([first.url, second.url], 8, "two"))
    gaps = []
    with httpx.Client(headers=AUTH, base_url=first.url) as client:
        for tool in range(8):
            versions = client.get(f"/v1/namespaces/publish/tools/pub-{tool}/versions").json()
            numbers = [v["version"] for v in versions["versions"]]
            if numbers != list(range(1, len(numbers) + 1)):
                gaps.append(tool)
            assert numbers
    total = sum(
        len(
            httpx.get(
                f"{first.url}/v1/namespaces/publish/tools/pub-{t}/versions", headers=AUTH
            ).json()["versions"]
        )
        for t in range(8)
    )
    c.stop_replicas()
    return [
        Row(
            "publishes, 8 concurrent publishers",
            f"one replica {one_rate:.0f}/s; two replicas {two_rate:.0f}/s; "
            f"{total} versions stored for {one_stored + two_stored} 201s, "
            f"{'contiguous' if not gaps else f'GAPS in {gaps}'}",
            f"{one_rate / 300:.2f}x of 300/s",
            ">= 300/s on one replica, versions contiguous",
        )
    ]


ROWS = {
    "waiters": row_waiters,
    "wake": row_wake,
    "cross": row_cross,
    "big": row_big,
    "sdk": row_sdk,
    "throughput": row_throughput,
    "storm": row_storm,
    "publish": row_publish,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a sanity run")
    parser.add_argument("--rows", default=",".join(ROWS), help="which rows, comma separated")
    args = parser.parse_args()
    sizes = Sizes.of(args.quick)
    chosen = [name.strip() for name in args.rows.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")
    rows: list[Row] = []
    print(f"load average {load_average()} at start; {os.cpu_count()} cores", file=sys.stderr)
    with cluster() as c:
        for name in chosen:
            began = time.monotonic()
            found = ROWS[name](c, sizes)
            rows += found
            for row in found:
                print(f"  {row.scenario}: {row.figure} [{row.ratio}]", file=sys.stderr)
            print(
                f"  ({name}: {time.monotonic() - began:.0f} s, load average {load_average()})",
                file=sys.stderr,
            )
    print()
    print(f"load average {load_average()} at the end ({'--quick' if args.quick else 'full'})")
    print()
    print("| scenario | measured | ratio | goal |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row.scenario} | {row.figure} | {row.ratio} | {row.goal} |")


if __name__ == "__main__":
    main()
