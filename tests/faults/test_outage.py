"""PostgreSQL stopped, or frozen, under load; then back. The service recovers by itself.

The module owns its PostgreSQL server (not the session's: it stops it), in a
temporary directory on a free port, and serves the app on it (one database per
test). Under light load (toolset reads, publishes, long-polls):

* stopped: every request is answered, within seconds, 503 with `Retry-After`
  and a problem body (never a 500, a hang or a reset connection); `/readyz` is
  503 and `/healthz` stays 200; long-polls waiting at that moment end cleanly;
* started again: the service recovers by itself (same process, no restart):
  publishes succeed, `/readyz` is 200 with `listen: ok`, the toolset cached
  before the outage is gone (a change written straight into the database,
  with no notification, shows), toolsets are cached again and invalidated by
  notifications (a long-poll is woken), and every acknowledged publish is
  stored; re-sending the ones answered 503 stores each exactly once;
* frozen (SIGSTOP of every server process: a hung host or a partition, where
  nothing is refused and nothing answers): requests needing the database get
  503 within the pool's connect and command timeouts, never a hang; thawed,
  publishes succeed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest_asyncio

from registry.canonical import digest as canonical_digest
from registry.sdk import Toolset
from registry.store.embedded import EmbeddedPostgres
from tests.api.conftest import ADMIN_TOKEN, ServedApp, free_port, serve
from tests.fixtures.seeds import DB_QUERY_V4, SEARCH_V1

BUSY = "busy"  # published to all along
QUIET = "quiet"  # only long-polled, changed by the test itself
HANG = 10.0  # no request may take longer than this, outage or not
FROZEN = 8.0  # seconds the server is kept frozen
# With statement_timeout 2 s the client gives up on a statement after 3 s, and asyncpg
# waits as long again for its cancel request: ~6 s at worst.
FROZEN_BOUND = 10.0


@dataclass
class Postgres:
    server: EmbeddedPostgres

    async def stop(self) -> None:
        await asyncio.to_thread(self.server.stop)

    async def start(self) -> None:
        await asyncio.to_thread(self.server.start)

    async def database(self, name: str) -> str:
        conn = await asyncpg.connect(self.server.dsn())
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        return self.server.dsn(name)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Every process of the server stopped (SIGSTOP): a hung host, or a partition."""
        pids = []
        for process in psutil.process_iter(["name"]):
            with contextlib.suppress(psutil.Error):
                if process.info["name"] == "postgres" and Path(process.cwd()) == self.server.pgdata:
                    pids.append(process.pid)  # every postgres process runs in its data dir
        assert pids, "no PostgreSQL process found"
        try:
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            yield
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)


@pytest_asyncio.fixture(scope="module")
async def own_postgres() -> AsyncIterator[Postgres]:
    """A PostgreSQL server of this module's own, on a free port it keeps across restarts."""
    # tempfile, not pytest's tmp_path: run as root, the server runs as another user.
    data_dir = Path(tempfile.mkdtemp(prefix="registry-outage-pg-"))
    server = EmbeddedPostgres(data_dir, port=free_port(), settings={"fsync": "off"})
    try:
        await asyncio.to_thread(server.start)
        yield Postgres(server)
    finally:
        await asyncio.to_thread(server.stop)
        shutil.rmtree(data_dir, ignore_errors=True)


@dataclass
class Sample:
    kind: str
    started: float
    seconds: float
    status: int  # 0: no HTTP answer (the error says why)
    retry_after: str | None = None
    problem: str | None = None
    error: str = ""
    body: dict[str, Any] | None = None


@dataclass
class Load:
    """A few loops of toolset reads and publishes, recording every answer."""

    client: httpx.AsyncClient
    samples: list[Sample] = field(default_factory=list)
    sent: list[tuple[dict[str, Any], Sample]] = field(default_factory=list)
    running: bool = True
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    revision: int = 0

    def start(self) -> None:
        self.running = True
        self.tasks = [
            asyncio.ensure_future(self._reads()),
            asyncio.ensure_future(self._reads()),
            asyncio.ensure_future(self._publishes()),
        ]

    async def stop(self) -> None:
        self.running = False
        await asyncio.gather(*self.tasks)

    async def request(self, kind: str, method: str, path: str, **kwargs: Any) -> Sample:
        started = time.monotonic()
        try:
            answer = await self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            sample = Sample(kind, started, time.monotonic() - started, 0, error=repr(exc))
        else:
            sample = Sample(
                kind,
                started,
                time.monotonic() - started,
                answer.status_code,
                retry_after=answer.headers.get("retry-after"),
            )
            if answer.status_code >= 400:
                assert answer.headers["content-type"] == "application/problem+json", answer.text
                body = answer.json()
                sample.problem = body["type"].rsplit("/", 1)[-1]
                assert body["status"] == answer.status_code and body["detail"], body
            elif answer.status_code in (200, 201) and kind == "publish":
                sample.body = answer.json()
        self.samples.append(sample)
        return sample

    async def _reads(self) -> None:
        while self.running:
            await self.request("toolset", "GET", f"/v1/namespaces/{BUSY}/toolset")
            await asyncio.sleep(0.02)

    async def _publishes(self) -> None:
        while self.running:
            self.revision += 1
            definition = copy.deepcopy(DB_QUERY_V4)
            definition["description"] = f"Run a SQL query (revision {self.revision})."
            sample = await self.request(
                "publish",
                "POST",
                f"/v1/namespaces/{BUSY}/tools/db.query/versions",
                json={"definition": definition},
            )
            self.sent.append((definition, sample))
            await asyncio.sleep(0.05)


async def _until(what: str, check: Any, timeout: float, interval: float = 0.1) -> float:
    """Wait until `await check()` is true; the seconds it took."""
    started = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(interval)


async def _any_after(load: Load, kind: str, status: int, moment: float) -> bool:
    return any(s.kind == kind and s.status == status and s.started > moment for s in load.samples)


async def _toolset_builds(client: httpx.AsyncClient) -> float:
    text = (await client.get("/metrics")).text
    line = next(x for x in text.splitlines() if x.startswith("registry_toolset_builds_total"))
    return float(line.split()[-1])


async def test_postgres_outage_503_then_recovery_without_restart(own_postgres: Postgres) -> None:
    database_url = await own_postgres.database("outage")
    app: ServedApp = await serve(database_url, namespaces=(BUSY, QUIET))
    client = httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    load = Load(client)
    try:
        await _outage_and_recovery(own_postgres, database_url, client, load)
    finally:
        load.running = False
        with contextlib.suppress(Exception):
            await asyncio.gather(*load.tasks)
        await client.aclose()
        await app.stop()


async def _outage_and_recovery(
    pg: Postgres, database_url: str, client: httpx.AsyncClient, load: Load
) -> None:
    quiet_path = f"/v1/namespaces/{QUIET}/tools/search/versions"
    assert (await client.post(quiet_path, json={"definition": SEARCH_V1})).status_code == 201
    busy_path = f"/v1/namespaces/{BUSY}/tools/db.query/versions"
    assert (await client.post(busy_path, json={"definition": DB_QUERY_V4})).status_code == 201
    ready = (await client.get("/readyz")).json()
    assert ready["checks"]["listen"] == "ok", ready
    quiet = await client.get(f"/v1/namespaces/{QUIET}/toolset")
    etag = quiet.headers["etag"]
    builds = await _toolset_builds(client)
    assert (await client.get(f"/v1/namespaces/{QUIET}/toolset")).status_code == 200
    assert await _toolset_builds(client) == builds, "the quiet toolset is cached"

    load.start()
    await asyncio.sleep(1.0)
    assert any(s.status == 201 for s in load.samples), load.samples

    # Long-polls on the quiet namespace: nothing will change it, they wait.
    polls = [
        asyncio.ensure_future(
            load.request(
                "long-poll",
                "GET",
                f"/v1/namespaces/{QUIET}/toolset",
                params={"wait": 25},
                headers={"If-None-Match": etag},
            )
        )
        for _ in range(3)
    ]
    await asyncio.sleep(0.5)
    assert not any(p.done() for p in polls), "the long-polls wait for a change"

    # -- the outage ---------------------------------------------------------------
    stopped_at = time.monotonic()
    await pg.stop()
    down_at = time.monotonic()
    ended = await asyncio.wait_for(asyncio.gather(*polls), timeout=HANG)
    for sample in ended:
        assert sample.status in (200, 304, 503), sample
        assert sample.started + sample.seconds - stopped_at < HANG
    await asyncio.sleep(2.0)  # load against a stopped database
    ready = await load.request("readyz", "GET", "/readyz")
    assert ready.status == 503 and ready.problem == "not-ready", ready
    health = await load.request("healthz", "GET", "/healthz")
    assert health.status == 200, health
    await load.stop()

    during = [s for s in load.samples if s.started >= down_at and s.kind in ("toolset", "publish")]
    assert len(during) >= 10, f"too little load during the outage: {len(during)} requests"
    for sample in during:
        assert sample.status == 503, sample
        assert sample.problem == "database-unavailable", sample
        assert sample.retry_after == "5", sample
    for sample in load.samples:
        assert sample.status in (200, 201, 304, 503), sample  # no 500, no dropped connection
        assert sample.seconds < HANG, sample
        if sample.status == 503 and sample.kind != "readyz":
            assert sample.retry_after is not None, sample

    # -- back ---------------------------------------------------------------------
    await pg.start()
    # Straight into the database, with no notification: only a dropped cache shows it.
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "UPDATE versions SET state = 'deprecated', sunset = '2099-01-01T00:00:00Z' "
            "WHERE namespace = $1 AND tool = 'search' AND version = 1",
            QUIET,
        )
    finally:
        await conn.close()
    recovery_from = time.monotonic()
    load.start()

    async def published() -> bool:
        return any(
            s.kind == "publish" and s.status == 201 and s.started > recovery_from
            for s in load.samples
        )

    async def listening() -> bool:
        answer = await client.get("/readyz")
        return answer.status_code == 200 and answer.json()["checks"]["listen"] == "ok"

    await _until("a publish succeeds again", published, timeout=20)
    await _until("/readyz 200 with listen ok", listening, timeout=25)
    await asyncio.sleep(0.5)
    await load.stop()

    answer = await client.get(f"/v1/namespaces/{QUIET}/toolset")
    assert answer.status_code == 200, answer.text
    entry = Toolset.from_json(answer.content).tool("search")
    assert entry is not None and entry.versions[0].state == "deprecated", (
        "the toolset cached before the outage was served after it"
    )
    assert entry.versions[0].sunset == "2099-01-01T00:00:00Z"

    # Cached again, and invalidated by a notification: a long-poll is woken by a publish.
    etag = answer.headers["etag"]
    builds = await _toolset_builds(client)
    again = await client.get(f"/v1/namespaces/{QUIET}/toolset", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert await _toolset_builds(client) == builds, "toolsets are cached again"
    poll = asyncio.ensure_future(
        client.get(
            f"/v1/namespaces/{QUIET}/toolset",
            params={"wait": 25},
            headers={"If-None-Match": etag},
        )
    )
    await asyncio.sleep(0.3)
    assert not poll.done()
    v2 = copy.deepcopy(SEARCH_V1)
    v2["description"] = "Search documents, again."
    assert (await client.post(quiet_path, json={"definition": v2})).status_code == 201
    woken = await asyncio.wait_for(poll, timeout=20)
    assert woken.status_code == 200 and woken.headers["etag"] != etag
    entry = Toolset.from_json(woken.content).tool("search")
    assert entry is not None and entry.current == 2

    await _check_busy_history(client, load)


async def _check_busy_history(client: httpx.AsyncClient, load: Load) -> None:
    """Every acknowledged publish is stored; re-sending the 503s stores each once."""
    history = (await client.get(f"/v1/namespaces/{BUSY}/tools/db.query/versions")).json()[
        "versions"
    ]
    numbers = [v["version"] for v in history]
    assert numbers == list(range(1, len(numbers) + 1))
    stored = {v["digest"]: v["version"] for v in history}
    for definition, sample in load.sent:
        if sample.status in (200, 201):
            assert sample.body is not None
            assert stored.get(canonical_digest(definition)) == sample.body["version"], sample
    unanswered = [d for d, s in load.sent if s.status not in (200, 201)]
    assert unanswered, "some publishes met the outage"
    for definition in unanswered:
        retry = await client.post(
            f"/v1/namespaces/{BUSY}/tools/db.query/versions", json={"definition": definition}
        )
        assert retry.status_code in (200, 201), retry.text
    history = (await client.get(f"/v1/namespaces/{BUSY}/tools/db.query/versions")).json()[
        "versions"
    ]
    assert [v["version"] for v in history] == list(range(1, len(history) + 1))
    digests = [v["digest"] for v in history]
    sent = {canonical_digest(d) for d, _ in load.sent} | {canonical_digest(DB_QUERY_V4)}
    assert len(set(digests)) == len(digests) == len(sent)
    toolset = Toolset.from_json((await client.get(f"/v1/namespaces/{BUSY}/toolset")).content)
    entry = toolset.tool("db.query")
    assert entry is not None and entry.current == len(history)


async def test_frozen_postgres_503_within_bounds_then_recovery(own_postgres: Postgres) -> None:
    """A server that answers nothing (SIGSTOP): bounded 503s, not a hang; then recovery.

    The pool's connect timeout (5 s) and command timeout (statement_timeout + 1 s,
    then as long again for the cancel request) bound each wait; statement_timeout
    is 2 s here to keep the test short (15 s by default: ~32 s at worst).
    Toolsets cached before the freeze are still served (200) meanwhile.
    """
    database_url = await own_postgres.database("frozen")
    app = await serve(database_url, namespaces=(BUSY, "cold"), statement_timeout_ms=2000)
    client = httpx.AsyncClient(
        base_url=app.url, timeout=60, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    load = Load(client)
    try:
        busy_path = f"/v1/namespaces/{BUSY}/tools/db.query/versions"
        assert (await client.post(busy_path, json={"definition": DB_QUERY_V4})).status_code == 201
        cold_path = "/v1/namespaces/cold/tools/search/versions"
        assert (await client.post(cold_path, json={"definition": SEARCH_V1})).status_code == 201
        load.start()
        await asyncio.sleep(1.0)
        with own_postgres.frozen():
            frozen_at = time.monotonic()
            # Readers of a toolset not cached: they queue for one build, and must not
            # each wait for the timeouts of all those before them.
            cold = asyncio.gather(
                *(load.request("cold", "GET", "/v1/namespaces/cold/toolset") for _ in range(6))
            )
            await asyncio.sleep(FROZEN)
            health = await load.request("healthz", "GET", "/healthz")
            assert health.status == 200 and health.seconds < 1, health
            ready = await load.request("readyz", "GET", "/readyz")
            assert ready.status == 503, ready
            for sample in await cold:
                assert sample.status == 503 and sample.retry_after == "5", sample
            thawed_at = time.monotonic()
        await _until(
            "a publish succeeds again",
            lambda: _any_after(load, "publish", 201, thawed_at),
            timeout=20,
        )
        await load.stop()
    finally:
        load.running = False
        with contextlib.suppress(Exception):
            await asyncio.gather(*load.tasks)
        await client.aclose()
        await app.stop()
    during = [s for s in load.samples if frozen_at <= s.started and s.kind != "healthz"]
    for sample in load.samples:
        assert sample.status in (200, 201, 304, 503), sample
        assert sample.seconds < FROZEN_BOUND, sample
    answered_frozen = [s for s in during if s.started + s.seconds <= thawed_at]
    assert any(s.status == 503 and s.retry_after == "5" for s in answered_frozen), during
