"""A database written by the first release, upgraded by today's code.

The first release is commit 8f3c4a4 (2026-12-02, the last commit of the first
round, before the second round's first merge; pyproject says 0.1.0 throughout
and the history has no tags). `tests/ops/upgrade/0.1.0/` holds its migrations,
byte for byte, and `seed.sql`, the data that release's own API and store wrote
(`tests/ops/upgrade/make_seed.py` made both once, from git; the tests read
only the files). Then every later migration of today's `migrations/` is
applied in turn, and after each one the rows of `tests/ops/upgrade/data/<its
file name>` (records of the kinds it brought) are written. A future migration
gets the same test by adding its data file there.

What must hold afterwards: every row written at any step is still there with
the same values (new columns aside); every digest is the canonical digest of
its definition, recomputed by today's code, and `GET /v1/digests/{d}` finds
it; the toolsets serve the routes the history makes; old tokens still
authenticate (the revoked one still does not); publishing goes on from the
numbers stored; an export of the upgraded registry imports into a new one
with the same toolsets. And no migration rewrote a table (a rewrite holds
ACCESS EXCLUSIVE for as long as it copies), and a migration that cannot get
its lock gives up after `lock_timeout` rather than stall an old replica's reads.
"""

from __future__ import annotations

import asyncio
import copy
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import pytest
import pytest_asyncio

from registry.canonical import digest
from registry.store.migrations import MigrationError, load_migrations, migrate
from registry.store.transfer import export_lines, import_lines
from tests.api.conftest import Registry
from tests.conftest import _create_database, _drop_database
from tests.fixtures.seeds import DB_QUERY_V4
from tests.ops.conftest import module_registry
from tests.ops.records import toolset_tags

UPGRADE = Path(__file__).resolve().parent / "upgrade"
RELEASE = UPGRADE / "0.1.0"
DATA = UPGRADE / "data"
RELEASE_SECRETS = {"publisher": "mtr_release-publisher", "revoked": "mtr_release-revoked"}


@dataclass
class Upgraded:
    database_url: str
    written: dict[str, list[dict[str, Any]]]  # every row as each step left it, by table
    rewritten: list[str]  # "migration: table" for each table a migration rewrote
    steps: list[str]  # the migrations applied after the release's, in order


async def _tables(conn: asyncpg.Connection) -> dict[str, list[str]]:
    """The registry's tables and each one's primary key columns."""
    rows = await conn.fetch(
        """
        SELECT c.relname AS table, array_agg(a.attname ORDER BY k.ord) AS key
        FROM pg_class c
        JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
        JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
          AND c.relname NOT IN ('schema_migrations', 'replicas')
        GROUP BY c.relname
        """
    )
    return {row["table"]: list(row["key"]) for row in rows}


async def _rows(conn: asyncpg.Connection) -> dict[str, list[dict[str, Any]]]:
    found = {}
    for table in await _tables(conn):
        rows = await conn.fetch(f"SELECT to_jsonb(t)::text FROM {table} t")
        found[table] = [msgspec.json.decode(row[0]) for row in rows]
    return found


async def _relfilenodes(conn: asyncpg.Connection) -> dict[str, int]:
    rows = await conn.fetch(
        "SELECT relname, relfilenode FROM pg_class "
        "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'"
    )
    return {row["relname"]: row["relfilenode"] for row in rows}


async def _load(database_url: str, sql: Path) -> None:
    # its own connection: a pg_dump file empties search_path for the session
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(sql.read_text(encoding="utf-8"))
    finally:
        await conn.close()


def _up_to(name: str, folder: Path) -> Path:
    """`folder` holding today's migrations up to `name`, as a release with it would ship."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for migration in load_migrations():
        if migration.name <= name:
            (folder / migration.name).write_text(migration.sql, encoding="utf-8")
    return folder


@pytest_asyncio.fixture(scope="module")
async def upgraded(postgres_server: Any) -> AsyncIterator[Upgraded]:
    name = await _create_database(postgres_server, "template0")
    url = postgres_server.dsn(name)
    work = Path(tempfile.mkdtemp(prefix="registry-upgrade-"))
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn, RELEASE / "migrations")
        await _load(url, RELEASE / "seed.sql")
        written = await _rows(conn)
        released = {path.name for path in (RELEASE / "migrations").glob("*.sql")}
        rewritten: list[str] = []
        steps = [m.name for m in load_migrations() if m.name not in released]
        for step in steps:
            before = await _relfilenodes(conn)
            assert await migrate(conn, _up_to(step, work / "migrations")) == [step]
            after = await _relfilenodes(conn)
            rewritten += [f"{step}: {table}" for table in before if after[table] != before[table]]
            if (DATA / step).is_file():
                await _load(url, DATA / step)
                for table, rows in (await _rows(conn)).items():
                    known = written.setdefault(table, [])
                    known += [row for row in rows if row not in known]
        assert await migrate(conn) == [], "today's migrations are all applied"
        yield Upgraded(url, written, rewritten, steps)
    finally:
        await conn.close()
        shutil.rmtree(work, ignore_errors=True)
        await _drop_database(postgres_server, name)


@pytest_asyncio.fixture(scope="module")
async def served(upgraded: Upgraded) -> AsyncIterator[Registry]:
    import httpx

    from tests.api.conftest import ADMIN_TOKEN, serve

    app = await serve(upgraded.database_url, namespaces=())
    client = httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        yield Registry(app.url, upgraded.database_url, client)
    finally:
        await client.aclose()
        await app.stop()


def test_every_later_migration_and_its_data_ran(upgraded: Upgraded) -> None:
    released = {path.name for path in (RELEASE / "migrations").glob("*.sql")}
    assert released == {"0001_init.sql"}
    assert upgraded.steps == sorted(m.name for m in load_migrations() if m.name not in released)
    for data in DATA.glob("*.sql"):
        assert data.name in upgraded.steps, f"{data.name} names no migration"


def test_no_migration_rewrites_a_table(upgraded: Upgraded) -> None:
    assert upgraded.rewritten == []


async def test_every_row_written_at_any_step_is_still_there(upgraded: Upgraded) -> None:
    conn = await asyncpg.connect(upgraded.database_url)
    try:
        keys = await _tables(conn)
        now = await _rows(conn)
    finally:
        await conn.close()
    assert set(upgraded.written) <= set(now)
    for table, rows in upgraded.written.items():
        by_key = {tuple(row[k] for k in keys[table]): row for row in now[table]}
        for row in rows:
            current = by_key.get(tuple(row[k] for k in keys[table]))
            assert current is not None, f"{table}: {row} is gone"
            # a later migration may add columns; the ones written keep their values
            assert {k: current[k] for k in row} == row, table


async def test_every_digest_is_its_definitions_and_is_found(
    upgraded: Upgraded, served: Registry
) -> None:
    conn = await asyncpg.connect(upgraded.database_url)
    try:
        versions = await conn.fetch(
            "SELECT namespace, tool, version, digest, definition::text AS definition, state::text "
            "AS state FROM versions_effective ORDER BY namespace, tool, version"
        )
    finally:
        await conn.close()
    assert len(versions) == 8
    for row in versions:
        assert digest(msgspec.json.decode(row["definition"])) == row["digest"], dict(row)
        answer = await served.client.get(f"/v1/digests/{row['digest']}")
        assert answer.status_code == 200, answer.text
        found = answer.json()
        assert found["digest"] == row["digest"]
        published = {(p["namespace"], p["tool"], p["version"]): p for p in found["matches"]}
        entry = published[(row["namespace"], row["tool"], row["version"])]
        assert entry["state"] == row["state"]


def _routes(payload: dict[str, Any]) -> dict[str, Any]:
    """Each tool's current version, served versions with their routes (steps as
    (from, to, the ops' names, accepted)) and retired versions; the aliases."""
    tools = {
        tool["name"]: {
            "current": tool["current"],
            "served": {
                served["version"]: [
                    (s["from"], s["to"], [op["op"] for op in s["ops"]], s.get("accepted", False))
                    for s in served["route"]
                ]
                for served in tool["versions"]
            },
            "retired": [retired["version"] for retired in tool["retired"]],
        }
        for tool in payload["tools"]
    }
    aliases = {
        alias["name"]: (alias["target"], alias["contract"]["tool"], alias["contract"]["version"])
        for alias in payload["aliases"]
    }
    return {"tools": tools, "aliases": aliases}


async def test_the_toolsets_serve_the_routes_of_the_history(served: Registry) -> None:
    billing = (await served.client.get("/v1/namespaces/billing/toolset")).json()
    assert _routes(billing) == {
        "tools": {
            "db.query": {
                "current": 2,
                "served": {2: [], 1: [(1, 2, ["reject", "rename", "fill"], False)]},
                "retired": [],
            },
            # 1 retired by a publish, 2 by its sunset (2026-01-01), which has passed
            "search": {"current": 3, "served": {3: []}, "retired": [1, 2]},
        },
        "aliases": {"db_query_v1": ("db.query", "db.query", 1)},
    }
    docs = (await served.client.get("/v1/namespaces/docs/toolset")).json()
    assert _routes(docs) == {
        "tools": {
            "notes.add": {
                "current": 3,
                "served": {
                    3: [],
                    # accepted on purpose from both (data/0005_accept_policy.sql)
                    2: [(2, 3, [], True)],
                    1: [(1, 3, [], True)],
                },
                "retired": [],
            }
        },
        "aliases": {},
    }


async def test_old_tokens_and_numbers_and_modes_hold_after_the_upgrade(served: Registry) -> None:
    v4 = copy.deepcopy(DB_QUERY_V4)
    v4["inputSchema"]["properties"]["limit"] = {"type": "integer"}  # additive
    async with served.with_token(RELEASE_SECRETS["publisher"]) as publisher:
        landed = await publisher.post(
            "/v1/namespaces/billing/tools/db.query/versions", json={"definition": v4}
        )
        assert landed.status_code == 201, landed.text
        assert landed.json()["version"] == 3, "numbering goes on from the release's versions"
    async with served.with_token(RELEASE_SECRETS["revoked"]) as revoked:
        assert (await revoked.get("/v1/namespaces")).status_code == 401
    frozen = await served.client.post(
        "/v1/namespaces/docs/tools/notes.add/versions/1/deprecate", json={}
    )
    assert frozen.status_code == 409, frozen.text
    assert frozen.json()["type"].endswith("/not-writable")
    assert frozen.json()["namespace"] == "docs"


async def test_an_upgraded_registry_exports_into_a_new_one_whole(
    upgraded: Upgraded, served: Registry, postgres_server: Any, migrated_template: str
) -> None:
    async with module_registry(postgres_server, migrated_template) as target:
        pool = await asyncpg.create_pool(upgraded.database_url, min_size=1, max_size=2)
        target_pool = await asyncpg.create_pool(target.database_url, min_size=1, max_size=2)
        try:
            collected = [item async for item in _export(pool)]
            summary = await import_lines(
                target_pool, _replay(collected), actor="test", request_id=None
            )
        finally:
            await pool.close()
            await target_pool.close()
        assert summary.namespaces == ["billing", "docs"]
        assert summary.verified_digests == summary.counts["version"]
        tags = ("billing", "docs")
        assert await toolset_tags(target.client, tags) == await toolset_tags(served.client, tags)


async def _export(pool: Any) -> AsyncIterator[tuple[int, bytes]]:
    number = 0
    async for line in export_lines(pool, None):
        number += 1
        yield number, line.rstrip(b"\n")


async def _replay(lines: list[tuple[int, bytes]]) -> AsyncIterator[tuple[int, bytes]]:
    for item in lines:
        yield item


async def test_a_migration_waiting_on_an_old_replica_gives_up_instead_of_stalling_reads(
    postgres_server: Any, tmp_path: Path
) -> None:
    """An old replica in the middle of a long read holds ACCESS SHARE on `versions`;
    0005 alters `versions`. While it waits, a new read on the table queues behind it;
    `lock_timeout` ends the wait, the read goes on, and nothing of 0005 is applied
    until the migration is run again."""
    name = await _create_database(postgres_server, "template0")
    url = postgres_server.dsn(name)
    try:
        await migrate(url, _up_to("0004_usage.sql", tmp_path / "old"))
        replica, reader, runner = [await asyncpg.connect(url) for _ in range(3)]
        replica_tx = replica.transaction()
        await replica_tx.start()
        await replica.fetchval("SELECT count(*) FROM versions")
        migration = asyncio.create_task(
            migrate(
                runner,
                _up_to("0005_accept_policy.sql", tmp_path / "new"),
                lock_timeout=0.5,
                attempts=2,
            )
        )
        while not await reader.fetchval(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'"
        ):
            await asyncio.sleep(0.01)
        assert await reader.fetchval("SELECT count(*) FROM versions") == 0, "the read went on"
        with pytest.raises(MigrationError, match=r"waited 0\.5 s for a lock 2 times"):
            await migration
        assert "0005_accept_policy.sql" not in {
            row["name"] for row in await reader.fetch("SELECT name FROM schema_migrations")
        }
        await replica_tx.commit()
        assert await migrate(runner, tmp_path / "new") == ["0005_accept_policy.sql"]
        for conn in (replica, reader, runner):
            await conn.close()
    finally:
        await _drop_database(postgres_server, name)
