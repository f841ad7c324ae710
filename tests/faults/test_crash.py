"""A process killed in the middle of a publish leaves nothing behind.

A publish is one transaction (`store.publish`): lock the tool's row, read
its state, `decide`, insert the version and its audit event, insert the plan's
converters, move states (deprecate, retire), notify, commit. A child process
runs such a publish (a plan with a converter, a deprecation and a retirement)
and is SIGKILLed at a chosen point while its transaction is open:

* `decide`: inside `decide` (the tool row locked, nothing inserted yet);
* `version`, `converter`, `deprecation`, `last-event`: right after the INSERT
  of the version row, of the converter row, after the UPDATE deprecating a
  version, and after the last audit event (the statement before the
  notification and COMMIT). A temporary trigger created in this test's own
  database holds the child's backend in `pg_sleep` right after that statement;
  `client_connection_check_interval` (set on the database) makes the server
  notice the dead client at once instead of when the sleep ends.

Then: no version, converter, state change or audit event of that publish, no
notification; the tool's row lock is free (checked held before the kill); the
same publish then succeeds with the next number, so versions stay contiguous.
The last test kills the served app (a uvicorn process) in the same way while
it handles a publish request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio

from registry import store
from registry.canonical import digest as canonical_digest
from registry.store import CHANNEL, Deprecation, NewConverter, PublishPlan, ToolState
from tests.api.conftest import ADMIN_TOKEN
from tests.fixtures.seeds import SEARCH_V1, SEARCH_V2
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
NS, TOOL = "crash", "search"
FILL_BOTH = [
    {"op": "fill", "path": "/filters", "value": {}},
    {"op": "fill", "path": "/limit", "value": 20},
]
SUNSET = datetime(2099, 1, 1, tzinfo=UTC)
V2 = {**SEARCH_V1, "description": "Search documents (v2)."}

# The publish of v3: converter 2 -> 3, deprecate v2 with a sunset, retire v1.
CHILD = """
import asyncio, datetime, json, sys, time
import asyncpg
from registry.canonical import digest
from registry import store
from registry.store import Deprecation, NewConverter, PublishPlan

url, point = sys.argv[1], sys.argv[2]
definition, ops = json.loads(sys.argv[3]), json.loads(sys.argv[4])
sunset = datetime.datetime(2099, 1, 1, tzinfo=datetime.timezone.utc)

def decide(state):
    if point == "decide":
        print("in-decide", flush=True)
        time.sleep(60)
    return PublishPlan(
        retire=[1],
        deprecate=[Deprecation(2, sunset)],
        converters=[NewConverter(2, ops)],
        detail={"by": "crash-child"},
    )

async def main():
    conn = await asyncpg.connect(url, server_settings={"application_name": "crash-child"})
    print("connected", flush=True)
    await store.publish(
        conn, "crash", "search", definition, digest(definition), decide, "crash-child", None
    )
    print("committed", flush=True)

asyncio.run(main())
"""

PAUSE = """
CREATE FUNCTION crash_pause() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(30);
    RETURN NULL;
END
$$;
"""
# kill point -> the trigger that holds the publishing backend right after that statement
TRIGGERS = {
    "version": "AFTER INSERT ON versions FOR EACH ROW",
    "converter": "AFTER INSERT ON converters FOR EACH ROW",
    "deprecation": "AFTER UPDATE ON versions FOR EACH ROW WHEN (NEW.state = 'deprecated')",
    "last-event": "AFTER INSERT ON audit_events FOR EACH ROW WHEN (NEW.action = 'version.retire')",
}


@dataclass
class Before:
    audit_id: int
    versions: list[tuple[int, str, Any]]


@pytest_asyncio.fixture
async def crash_db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """The test's database with v1 and v2 of crash/search, and a connection to it."""
    conn = await asyncpg.connect(database_url)
    try:
        name = await conn.fetchval("SELECT current_database()")
        await conn.execute(
            f"ALTER DATABASE \"{name}\" SET client_connection_check_interval = '100ms'"
        )
        await conn.execute(PAUSE)
        for definition in (SEARCH_V1, V2):
            await store.publish(
                conn,
                NS,
                TOOL,
                definition,
                canonical_digest(definition),
                lambda _state: PublishPlan(),
                "setup",
                None,
            )
        yield conn
    finally:
        await conn.close()


async def _before(conn: asyncpg.Connection) -> Before:
    return Before(
        audit_id=await conn.fetchval("SELECT coalesce(max(id), 0) FROM audit_events"),
        versions=await _versions(conn),
    )


async def _versions(conn: asyncpg.Connection) -> list[tuple[int, str, Any]]:
    rows = await conn.fetch(
        "SELECT version, state::text AS state, sunset FROM versions "
        "WHERE namespace = $1 AND tool = $2 ORDER BY version",
        NS,
        TOOL,
    )
    return [(r["version"], r["state"], r["sunset"]) for r in rows]


async def _tool_locked(conn: asyncpg.Connection, namespace: str = NS) -> bool:
    try:
        async with conn.transaction():
            await conn.execute(
                "SELECT 1 FROM tools WHERE namespace = $1 AND name = $2 FOR NO KEY UPDATE NOWAIT",
                namespace,
                TOOL,
            )
    except asyncpg.LockNotAvailableError:
        return True
    return False


async def _backend(conn: asyncpg.Connection, where: str) -> asyncpg.Record | None:
    await conn.execute("SELECT pg_stat_clear_snapshot()")
    return await conn.fetchrow(
        "SELECT pid, state, wait_event, backend_xid FROM pg_stat_activity "
        f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {where}"
    )


async def _wait_for(conn: asyncpg.Connection, where: str, present: bool) -> asyncpg.Record | None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        row = await _backend(conn, where)
        if (row is not None) == present:
            return row
        await asyncio.sleep(0.02)
    raise AssertionError(f"no backend {where}" if present else f"a backend {where} lingers")


async def _assert_nothing_left(conn: asyncpg.Connection, before: Before, heard: list[str]) -> None:
    assert await _versions(conn) == before.versions, "a version or a state change survived"
    assert await conn.fetchval("SELECT count(*) FROM converters") == 0, "a converter survived"
    events = await conn.fetch(
        "SELECT action, version FROM audit_events WHERE id > $1", before.audit_id
    )
    assert not events, f"audit events survived: {events}"
    await asyncio.sleep(0.1)
    assert not heard, f"a notification was sent: {heard}"
    assert not await _tool_locked(conn), "the tool's row lock outlived the killed process"


async def _publish_v3(conn: asyncpg.Connection) -> None:
    """The same publish, uninterrupted: it lands as version 3, with everything it planned."""

    def decide(_state: ToolState) -> PublishPlan:
        return PublishPlan(
            retire=[1],
            deprecate=[Deprecation(2, SUNSET)],
            converters=[NewConverter(2, FILL_BOTH)],
        )

    result = await store.publish(
        conn, NS, TOOL, SEARCH_V2, canonical_digest(SEARCH_V2), decide, "retry", None
    )
    assert result.created and result.version.version == 3
    assert result.retired == [1] and result.deprecated == [2]
    assert await _versions(conn) == [
        (1, "retired", None),
        (2, "deprecated", SUNSET),
        (3, "active", None),
    ]
    actions = await conn.fetch(
        "SELECT action, version FROM audit_events WHERE actor = 'retry' ORDER BY id"
    )
    assert [(r["action"], r["version"]) for r in actions] == [
        ("version.publish", 3),
        ("converter.register", 3),
        ("version.deprecate", 2),
        ("version.retire", 1),
    ]


@contextlib.asynccontextmanager
async def _listening(database_url: str) -> AsyncIterator[list[str]]:
    heard: list[str] = []
    conn = await asyncpg.connect(database_url)
    await conn.add_listener(CHANNEL, lambda *args: heard.append(args[-1]))
    try:
        yield heard
    finally:
        await conn.close()


@pytest.mark.parametrize("point", ["decide", *TRIGGERS])
async def test_publish_killed_midway_leaves_no_trace(
    crash_db: asyncpg.Connection, database_url: str, point: str
) -> None:
    conn = crash_db
    if point in TRIGGERS:
        await conn.execute(
            f"CREATE TRIGGER crash_pause {TRIGGERS[point]} EXECUTE FUNCTION crash_pause()"
        )
    before = await _before(conn)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        database_url,
        point,
        json.dumps(SEARCH_V2),
        json.dumps(FILL_BOTH),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    async with _listening(database_url) as heard:
        try:
            assert await asyncio.wait_for(child.stdout.readline(), 30) == b"connected\n"
            if point == "decide":
                assert await asyncio.wait_for(child.stdout.readline(), 30) == b"in-decide\n"
                found = await _backend(conn, "application_name = 'crash-child'")
                assert found is not None and found["state"] == "idle in transaction", found
            else:
                found = await _wait_for(
                    conn, "application_name = 'crash-child' AND wait_event = 'PgSleep'", True
                )
            assert found is not None and found["backend_xid"] is not None, "not writing yet"
            assert await _tool_locked(conn), "the child holds the tool's row lock"
        finally:
            child.kill()  # SIGKILL: no cleanup, no ROLLBACK sent
            await child.wait()
        assert child.returncode == -signal.SIGKILL
        await _wait_for(conn, "application_name = 'crash-child'", False)
        if point in TRIGGERS:
            await conn.execute(f"DROP TRIGGER crash_pause ON {TRIGGERS[point].split()[3]}")
        await _assert_nothing_left(conn, before, heard)
    await _publish_v3(conn)


# -- the served app, killed while it handles a publish -----------------------------------------

SERVER = """
import sys, uvicorn
from registry.api.app import asgi
from registry.api.settings import Settings
url, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
settings = Settings(database_url=url, port=port, bootstrap_token=token)
uvicorn.run(asgi(settings), host="127.0.0.1", port=port, log_level="warning")
"""


async def test_server_killed_during_a_publish_request_leaves_no_trace(
    crash_db: asyncpg.Connection, database_url: str
) -> None:
    conn = crash_db
    await conn.execute(
        f"CREATE TRIGGER crash_pause {TRIGGERS['version']} EXECUTE FUNCTION crash_pause()"
    )
    before = await _before(conn)
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SERVER,
        database_url,
        str(port),
        ADMIN_TOKEN,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    body = {
        "definition": SEARCH_V2,
        "converters": [{"from": 2, "ops": FILL_BOTH}],
        "deprecate": [{"version": 2, "sunset": "2099-01-01T00:00:00Z"}],
        "retire": [1],
    }
    async with (
        _listening(database_url) as heard,
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            timeout=60,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        ) as client,
    ):
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get("/readyz")).status_code == 200:
                        break
                assert time.monotonic() < deadline and server.returncode is None
                await asyncio.sleep(0.1)
            request = asyncio.ensure_future(
                client.post(f"/v1/namespaces/{NS}/tools/{TOOL}/versions", json=body)
            )
            found = await _wait_for(conn, "wait_event = 'PgSleep'", True)
            assert found is not None and found["backend_xid"] is not None
            assert await _tool_locked(conn)
        finally:
            server.kill()
            await server.wait()
        with pytest.raises(httpx.TransportError):
            await request  # the connection dies with the process: no answer at all
        await _wait_for(conn, "wait_event = 'PgSleep'", False)
        await conn.execute("DROP TRIGGER crash_pause ON versions")
        await _assert_nothing_left(conn, before, heard)
    await _publish_v3(conn)
