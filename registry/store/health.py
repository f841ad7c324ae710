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
SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls
FROM pg_roles WHERE rolname = ANY($1::text[]) ORDER BY rolname
"""
# every object of `public` and its owner
_OWNED = """
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
) o ORDER BY kind, name
"""
# what the app role may do to each table and sequence of `public`
_TABLE_GRANTS = """
SELECT c.relname AS name, c.relkind = 'S' AS sequence,
       array(SELECT p FROM unnest($2::text[]) AS p
             WHERE has_table_privilege($1, c.oid, p)) AS held
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S')
ORDER BY c.relname
"""
_TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
_APP_TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE")


async def role_findings(conn: Connection, *, app_role: str, owner_role: str | None) -> list[str]:
    """What differs from the documented roles and grants (registry/store/roles.py,
    deploy/registry-role.sql). With `owner_role`: it owns every object of `public` and
    may create there; `app_role` owns nothing, may use (not create in) the schema, and
    holds SELECT, INSERT, UPDATE and DELETE on every table (no more) and USAGE on every
    sequence. Without (one role): `app_role` owns every object and may create there.
    Either way neither role is a superuser or holds CREATEDB, CREATEROLE, REPLICATION or
    BYPASSRLS, and only they (not PUBLIC) may connect to the database."""
    roles = [app_role] if owner_role is None else [app_role, owner_role]
    owner = owner_role or app_role
    found: list[str] = []
    rows = {row["rolname"]: row for row in await conn.fetch(_ATTRIBUTES, roles)}
    for role in roles:
        row = rows.get(role)
        if row is None:
            found.append(f"role {role} does not exist (deploy/registry-role.sql makes it)")
            continue
        held = [name[3:].upper() for name, value in row.items() if value is True]
        if held:
            found.append(f"{role} holds {', '.join(held)}: the documented role holds none of them")
    for kind, name, actual in await conn.fetch(_OWNED):
        if actual != owner:
            found.append(f"{kind} {name} is owned by {actual}, not by {owner}")
    if owner_role is not None:
        for name, sequence, held in await conn.fetch(_TABLE_GRANTS, app_role, _TABLE_PRIVILEGES):
            wanted = ("SELECT",) if sequence else _APP_TABLE_PRIVILEGES
            missing = [p for p in wanted if p not in held]
            extra = [p for p in held if p not in wanted and not sequence]
            if missing:
                found.append(f"{app_role} lacks {', '.join(missing)} on {name}")
            if extra:
                found.append(
                    f"{app_role} holds {', '.join(extra)} on {name}, beyond the documented"
                )
    schema = await conn.fetchrow(
        "SELECT has_schema_privilege($1, 'public', 'USAGE') AS app_usage, "
        "has_schema_privilege($1, 'public', 'CREATE') AS app_create, "
        "has_schema_privilege($2, 'public', 'CREATE') AS owner_create",
        app_role,
        owner,
    )
    assert schema is not None
    if not schema["owner_create"] or not schema["app_usage"]:
        found.append(f"{owner} may not create in the schema public, or {app_role} not use it")
    if owner_role is not None and schema["app_create"]:
        found.append(f"{app_role} may create in the schema public: only {owner_role} may")
    if await conn.fetchval(
        "SELECT has_database_privilege('public', current_database(), 'CONNECT')"
    ):
        found.append(
            "any role (PUBLIC) may connect to the registry's database: REVOKE ALL ON DATABASE "
            "... FROM PUBLIC (deploy/registry-role.sql)"
        )
    return found
