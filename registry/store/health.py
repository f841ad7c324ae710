"""What `registry doctor` reads from the database: the server's facts and the migrations.

    facts = await server_facts(conn)     # its clock, connection limits, version, user
    state = await migration_state(conn)  # pending, changed and unknown migration files

Read-only: nothing here writes.
"""

from __future__ import annotations

import os
from datetime import datetime

import msgspec

from registry.store._db import Connection
from registry.store.migrations import applied_migrations, load_migrations

__all__ = ["MigrationState", "ServerFacts", "migration_state", "role_findings", "server_facts"]


class ServerFacts(msgspec.Struct, frozen=True):
    now: datetime  # the database's clock
    version: str  # PostgreSQL's, e.g. "17.2"
    user: str  # the role connected
    database: str
    max_connections: int
    reserved_connections: int  # kept for superusers and roles with pg_use_reserved_connections
    open_connections: int  # to this database, now


async def server_facts(conn: Connection) -> ServerFacts:
    row = await conn.fetchrow(
        """
        SELECT clock_timestamp() AS now, current_setting('server_version') AS version,
               current_user AS "user", current_database() AS database,
               current_setting('max_connections')::int AS max_connections,
               current_setting('superuser_reserved_connections')::int
                 + coalesce(current_setting('reserved_connections', true)::int, 0)
                 AS reserved_connections,
               (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database())::int
                 AS open_connections
        """
    )
    assert row is not None
    return msgspec.convert(dict(row), ServerFacts)


class MigrationState(msgspec.Struct, frozen=True):
    known: int  # files this release ships
    pending: list[str]  # shipped, not applied
    changed: list[str]  # applied with another checksum than the file's
    unknown: list[str]  # applied, not shipped: a newer release migrated this database


async def migration_state(
    conn: Connection, directory: str | os.PathLike[str] | None = None
) -> MigrationState:
    files = load_migrations(directory)
    applied = await applied_migrations(conn)
    shipped = {m.name: m.checksum for m in files}
    return MigrationState(
        known=len(files),
        pending=[m.name for m in files if m.name not in applied],
        changed=[m.name for m in files if applied.get(m.name, m.checksum) != m.checksum],
        unknown=sorted(name for name in applied if name not in shipped),
    )


_ATTRIBUTES = """
SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls
FROM pg_roles WHERE rolname = current_user
"""
_FOREIGN_OBJECTS = """
SELECT kind, name, owner FROM (
    SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence' ELSE 'table' END AS kind,
           c.relname AS name, pg_get_userbyid(c.relowner) AS owner
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
    UNION ALL
    SELECT 'function', p.oid::regprocedure::text, pg_get_userbyid(p.proowner)
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
    UNION ALL
    SELECT 'type', t.typname, pg_get_userbyid(t.typowner)
    FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd', 'r')
) o WHERE owner <> current_user ORDER BY kind, name
"""


async def role_findings(conn: Connection) -> list[str]:
    """What differs from the documented arrangement (registry/store/roles.py,
    deploy/registry-role.sql), for the role connected: it holds no SUPERUSER, CREATEDB,
    CREATEROLE, REPLICATION or BYPASSRLS; it owns every object of the `public` schema;
    only it (no PUBLIC) may connect to the database."""
    found: list[str] = []
    attributes = await conn.fetchrow(_ATTRIBUTES)
    user = await conn.fetchval("SELECT current_user")
    if attributes is not None:
        held = [name[3:].upper() for name, value in attributes.items() if value]
        if held:
            found.append(
                f"the registry connects as {user}, which holds {', '.join(held)}: the documented "
                "role holds none of them (deploy/registry-role.sql)"
            )
    for kind, name, owner in await conn.fetch(_FOREIGN_OBJECTS):
        found.append(f"{kind} {name} is owned by {owner}, not by {user}, the registry's role")
    if await conn.fetchval(
        "SELECT has_database_privilege('public', current_database(), 'CONNECT')"
    ):
        found.append(
            "any role (PUBLIC) may connect to the registry's database: REVOKE ALL ON DATABASE "
            "... FROM PUBLIC (deploy/registry-role.sql)"
        )
    return found
