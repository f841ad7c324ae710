"""Shared fixtures: one PostgreSQL server per test session, a fresh database per test.

The server is the embedded one (`registry.store.embedded`), started lazily by
the first test that needs a database and stopped at the end of the session.
Set `REGISTRY_TEST_DATABASE_URL` (a superuser URL) to use another server.

    async def test_x(db_pool):          # asyncpg pool on a fresh, migrated database
    async def test_y(database_url):     # its URL, for code that connects itself
    async def test_z(db_conn):          # one connection on it
    async def test_w(empty_database_url):  # a fresh database without the schema

Each test's database is a copy of a template migrated once per session, so
tests are isolated and a new database costs a few milliseconds.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import pytest_asyncio
from hypothesis import settings as hypothesis_settings

# Corpus tests never skip on CI, and a CI run in which none ran fails.
from tests.corpus.plugin import pytest_runtest_makereport, pytest_sessionfinish  # noqa: F401

# A session leaves no process behind (tests/processes.py).
pytest_plugins = ["tests.processes"]

if TYPE_CHECKING:
    import asyncpg

# asyncpg and the store are imported inside the fixtures: the suites that need
# no database must run with the [server] extra absent.

TEST_DATABASE_ENV = "REGISTRY_TEST_DATABASE_URL"

# A throwaway cluster: durability buys nothing and costs seconds.
# On CI (`CI` set) property tests draw the same examples every run, so a landing
# is never decided by luck; locally they explore new ones each run (and the
# .hypothesis database replays any failure found).
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

_FAST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
}


@dataclass(frozen=True)
class PostgresServer:
    """A PostgreSQL server the tests may create and drop databases on."""

    admin_dsn: str

    def dsn(self, database: str) -> str:
        parts = urlsplit(self.admin_dsn)
        return urlunsplit(parts._replace(path="/" + database))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    external = os.environ.get(TEST_DATABASE_ENV)
    if external:
        yield PostgresServer(admin_dsn=external)
        return
    from registry.store.embedded import EmbeddedPostgres

    # Not pytest's tmp_path: its base directory is private to the user, and
    # when the tests run as root the server runs as another user.
    data_dir = Path(tempfile.mkdtemp(prefix="registry-test-pg-"))
    server = EmbeddedPostgres(data_dir, settings=_FAST_SETTINGS)
    try:
        server.start()
        yield PostgresServer(admin_dsn=server.dsn())
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


async def _create_database(server: PostgresServer, template: str) -> str:
    import asyncpg

    name = f"test_{uuid.uuid4().hex[:20]}"
    conn = await asyncpg.connect(server.admin_dsn)
    try:
        # FILE_COPY (PostgreSQL 15+) copies a small template ~6x faster than WAL_LOG.
        strategy = " STRATEGY FILE_COPY" if conn.get_server_version().major >= 15 else ""
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"{strategy}')
    finally:
        await conn.close()
    return name


async def _drop_database(server: PostgresServer, name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(server.admin_dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest_asyncio.fixture(scope="session")
async def migrated_template(postgres_server: PostgresServer) -> AsyncIterator[str]:
    """The name of a database with every migration applied, copied by `database_url`."""
    import asyncpg

    from registry.store.migrations import migrate

    name = await _create_database(postgres_server, "template0")
    admin = await asyncpg.connect(postgres_server.admin_dsn)
    try:
        await migrate(postgres_server.dsn(name))
        # No session (autovacuum included) may hold the template while it is copied.
        await admin.execute(
            f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false IS_TEMPLATE true'
        )
        yield name
    finally:
        await admin.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
        await admin.close()
        await _drop_database(postgres_server, name)


@pytest_asyncio.fixture
async def database_url(
    postgres_server: PostgresServer, migrated_template: str
) -> AsyncIterator[str]:
    """The URL of a fresh database with the registry's schema, dropped after the test."""
    name = await _create_database(postgres_server, migrated_template)
    try:
        yield postgres_server.dsn(name)
    finally:
        await _drop_database(postgres_server, name)


@pytest_asyncio.fixture
async def empty_database_url(postgres_server: PostgresServer) -> AsyncIterator[str]:
    """The URL of a fresh database without any schema, dropped after the test."""
    name = await _create_database(postgres_server, "template0")
    try:
        yield postgres_server.dsn(name)
    finally:
        await _drop_database(postgres_server, name)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    """`registry serve` subprocesses (tests/serving.py), killed after the test."""
    from tests.serving import spawner

    yield from spawner(tmp_path)


@pytest_asyncio.fixture
async def db_pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """An asyncpg pool (up to 20 connections) on a fresh migrated database."""
    import asyncpg

    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=20)
    try:
        yield pool
    finally:
        await pool.close()


@pytest_asyncio.fixture
async def db_conn(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """One asyncpg connection on a fresh migrated database."""
    import asyncpg

    conn = await asyncpg.connect(database_url)
    try:
        yield conn
    finally:
        await conn.close()
