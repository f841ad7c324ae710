"""The registry works as its own database role, and its data directory is private
(issue 18, item 7; issue 24, item 7).

* `start_embedded` (what `registry serve` runs) creates the data directory
  0700 and hands back a URL for the role `registry`, not the superuser; the
  migrations run as `registry_owner`, which owns every object they create;
  `registry` reads and writes, and can do nothing a superuser, CREATEDB or
  CREATEROLE role could, nor alter a table or disable its triggers.
* A database an earlier release migrated (as the superuser, or as `registry`,
  which then owned the tables) is handed to the owner.
* `deploy/registry-role.sql`, run with `psql` as documented, is all a managed
  PostgreSQL needs: the migrations as the owner, a publish as the app role.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from registry import store
from registry.server import prepare_database, running_embedded_dsn, start_embedded
from registry.store.embedded import EmbeddedPostgres, postgres_bin_dir
from registry.store.migrations import MigrationError, migrate
from registry.store.roles import APP_ROLE, provision_app_role
from tests.store.helpers import accept, digest_of, variant

ROLE_SQL = Path(__file__).resolve().parents[2] / "deploy" / "registry-role.sql"

# Statements the role must be refused, each with what PostgreSQL says.
REFUSED = [
    ("CREATE DATABASE other", "permission denied to create database"),
    ("CREATE ROLE other", "permission denied to create role"),
    ("SELECT rolpassword FROM pg_authid", "permission denied for table pg_authid"),
    ("COPY (SELECT 1) TO PROGRAM 'true'", "permission denied to COPY to or from an external"),
    ("SELECT pg_read_file('postgresql.conf')", "permission denied for function pg_read_file"),
    ("ALTER SYSTEM SET work_mem = '1MB'", "permission denied to set parameter"),
    # not the tables' owner: the immutability triggers stay on (issue 24, item 7)
    ("ALTER TABLE versions DISABLE TRIGGER USER", "must be owner of table versions"),
    ("DROP TABLE audit_events", "must be owner of table audit_events"),
    ("CREATE TABLE extra (x int)", "permission denied for schema public"),
]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[EmbeddedPostgres, str, Path]]:
    """`start_embedded` on a new data directory: (server, the registry's URL, the directory)."""
    root = Path(tempfile.mkdtemp(prefix="registry-privilege-test-"))
    data_dir = root / "data"
    server, dsn = start_embedded(str(data_dir))
    try:
        yield server, dsn, data_dir
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _with_database(dsn: str, database: str) -> str:
    return urlunsplit(urlsplit(dsn)._replace(path="/" + database))


async def _as_role_publish_and_check(dsn: str, owner: str = "registry_owner") -> None:
    """As the app role: nothing left to migrate, publish, and be refused everything
    beyond reading and writing its tables."""
    assert await migrate(dsn) == [], "the owner applied them all"
    conn = await asyncpg.connect(dsn)
    try:
        attributes = await conn.fetchrow(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls "
            "FROM pg_roles WHERE rolname = current_user"
        )
        assert not any(attributes.values()), dict(attributes)
        owners = await conn.fetch(
            "SELECT DISTINCT pg_get_userbyid(c.relowner) AS owner FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
        )
        assert [r["owner"] for r in owners] == [owner], "the owner role holds every relation"
        definition = variant(1)
        await store.publish(
            conn, "billing", "db.query", definition, digest_of(definition), accept, None, None
        )
        for sql, says in REFUSED:
            with pytest.raises(asyncpg.PostgresError, match=re.escape(says)):
                await conn.execute(sql)
        # The immutability triggers hold for the role's own statements too.
        with pytest.raises(asyncpg.PostgresError, match="immutable"):
            await conn.execute("DELETE FROM versions")
    finally:
        await conn.close()


def test_serve_makes_its_data_directory_private(served: Any) -> None:
    _, _, data_dir = served
    mode = stat.S_IMODE(data_dir.stat().st_mode)
    # Run as root the server's OS user needs search (x, not read) to reach pgdata.
    allowed = 0o701 if os.geteuid() == 0 else 0o700
    assert mode == allowed, oct(mode)
    assert stat.S_IMODE((data_dir / "app-password").stat().st_mode) == 0o600


def test_serve_works_as_the_registry_role_not_the_superuser(served: Any) -> None:
    _, dsn, data_dir = served
    assert urlsplit(dsn).username == APP_ROLE
    assert asyncio.run(prepare_database(dsn)) == [], "the owner ran the migrations first"
    asyncio.run(_as_role_publish_and_check(dsn))
    # CLI verbs on the running server (token create, migrate) use the role too.
    assert running_embedded_dsn(str(data_dir)) == dsn


@pytest.mark.parametrize("earlier", ["postgres", APP_ROLE])
def test_a_database_an_earlier_release_migrated_is_handed_to_the_owner(
    served: Any, earlier: str
) -> None:
    """Migrated as the superuser (two releases ago) or as `registry`, then the owner of
    its tables (the last release): this release's start hands them to the owner."""
    server, _, _ = served
    legacy = f"legacy_{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        admin = await asyncpg.connect(server.dsn())
        try:
            await admin.execute(f'CREATE DATABASE "{legacy}"')
        finally:
            await admin.close()
        conn = await asyncpg.connect(server.dsn(legacy))
        try:
            await conn.execute(f'GRANT CREATE ON SCHEMA public TO "{earlier}"')
            await conn.execute(f'SET ROLE "{earlier}"')
            await migrate(conn)  # what an earlier release did
            await conn.execute("RESET ROLE")
            # its data comes along: a version stored then is still there, still immutable
            definition = variant(1)
            await store.publish(
                conn, "billing", "db.query", definition, digest_of(definition), accept, None, None
            )
        finally:
            await conn.close()
        await provision_app_role(server.dsn(legacy), legacy, server.app_password())
        await _as_role_publish_and_check(server.app_dsn(legacy))

    asyncio.run(scenario())


async def test_the_documented_grants_are_all_a_managed_postgresql_needs(
    empty_database_url: str, postgres_server: Any
) -> None:
    role = f"registry_{uuid.uuid4().hex[:8]}"
    owner = f"{role}_owner"
    password = uuid.uuid4().hex
    # The file as shipped, for roles of this test's own (roles are cluster-wide).
    script = re.sub(r"\bregistry\b", role, ROLE_SQL.read_text().replace("registry_owner", owner))
    done = await asyncio.to_thread(
        subprocess.run,
        [
            str(postgres_bin_dir() / "psql"),
            *("-X", "-v", "ON_ERROR_STOP=1", "-v", f"password={password}"),
            *("-v", f"owner_password={password}"),
            *("-f", "-", empty_database_url),
        ],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    parts = urlsplit(empty_database_url)
    as_role = urlunsplit(parts._replace(netloc=f"{role}:{password}@{parts.hostname}:{parts.port}"))
    as_owner = urlunsplit(
        parts._replace(netloc=f"{owner}:{password}@{parts.hostname}:{parts.port}")
    )
    try:
        with pytest.raises(MigrationError, match="run `registry migrate` with the owner"):
            await migrate(as_role)
        assert await migrate(as_owner), "the owner applies the migrations"
        await _as_role_publish_and_check(as_role, owner)
        # Nobody else may connect to the registry's database any more.
        admin = await asyncpg.connect(postgres_server.admin_dsn)
        try:
            public = await admin.fetchval(
                "SELECT has_database_privilege('public', $1, 'CONNECT')", parts.path[1:]
            )
        finally:
            await admin.close()
        assert public is False
    finally:
        admin = await asyncpg.connect(postgres_server.admin_dsn)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{parts.path[1:]}" WITH (FORCE)')
            await admin.execute(f'DROP ROLE IF EXISTS "{role}"')
            await admin.execute(f'DROP ROLE IF EXISTS "{owner}"')
        finally:
            await admin.close()
