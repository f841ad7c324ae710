"""The registry's database roles: an owner that migrates, and the app, which only reads and writes.

    await provision_app_role(admin_dsn, "registry", password)   # as a superuser

`registry serve` on the embedded PostgreSQL runs this at every start, as the
superuser, then connects as the app role:

* `registry_owner` (`OWNER_ROLE`, `NOLOGIN` here) owns every table, view,
  sequence, function and type of the `public` schema, and holds `CREATE` on
  it. The migrations run as it (the superuser's session `SET ROLE`s to it), so
  what they create is its own; a database made by an earlier release, whose
  objects the app role (or the superuser) owns, is handed over to it here.
* `registry` (`APP_ROLE`): `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE
  NOREPLICATION NOBYPASSRLS`, `CONNECT` on the database (`PUBLIC` loses it),
  `USAGE` (not `CREATE`) on `public`, and `SELECT, INSERT, UPDATE, DELETE` on
  the tables, `USAGE, SELECT` on the sequences, now and for what the owner
  creates later (default privileges). Not being their owner, it cannot alter
  or drop the tables, nor disable the triggers that keep versions immutable
  (`ALTER TABLE versions DISABLE TRIGGER USER` is refused).

`deploy/registry-role.sql` makes the same two roles on a PostgreSQL you
administer (there the owner logs in, to run `registry migrate`).
"""

from __future__ import annotations

from typing import Final

import asyncpg  # type: ignore[import-untyped, unused-ignore]

__all__ = ["APP_ROLE", "OWNER_ROLE", "provision_app_role"]

APP_ROLE: Final = "registry"
OWNER_ROLE: Final = "registry_owner"
_LIMITS: Final = "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
_ATTRIBUTES: Final = f"LOGIN {_LIMITS}"

# What in `public` another role than the owner owns. Tables carry their indexes, triggers,
# row types and owned (identity) sequences with them; array types follow their
# element type.
_FOREIGN_RELATIONS: Final = """
SELECT format('ALTER %s %I.%I OWNER TO %I',
              CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                             WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
              n.nspname, c.relname, $1::text)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
  AND pg_get_userbyid(c.relowner) <> $1
  AND NOT (c.relkind = 'S' AND EXISTS (
      SELECT 1 FROM pg_depend d
      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
ORDER BY c.relkind <> 'r', c.relname
"""
_FOREIGN_ROUTINES: Final = """
SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, $1::text)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> $1
"""
_FOREIGN_TYPES: Final = """
SELECT format('ALTER TYPE %s OWNER TO %I', t.oid::regtype, $1::text)
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd', 'r')
  AND pg_get_userbyid(t.typowner) <> $1
"""


async def provision_app_role(
    admin_dsn: str, database: str, password: str, *, role: str = APP_ROLE
) -> list[str]:
    """As a superuser connected to `admin_dsn` (the registry's database): make the two
    roles what the module docstring says (`role` with this password) and apply the
    pending migrations as the owner; the names applied. Safe to run at every start."""
    from registry.store.migrations import migrate

    owner = OWNER_ROLE if role == APP_ROLE else f"{role}_owner"
    conn = await asyncpg.connect(admin_dsn)
    try:
        async with conn.transaction():
            for name, attributes in ((owner, f"NOLOGIN {_LIMITS}"), (role, _ATTRIBUTES)):
                exists = await conn.fetchval("SELECT true FROM pg_roles WHERE rolname = $1", name)
                verb = "ALTER" if exists else "CREATE"
                await _run(conn, f"{verb} ROLE %I {attributes}", name)
            await _run(conn, "ALTER ROLE %I PASSWORD %L", role, password)
            await _run(conn, "REVOKE ALL ON DATABASE %I FROM PUBLIC", database)
            await _run(conn, "GRANT CONNECT ON DATABASE %I TO %I", database, role)
            await _run(conn, "GRANT USAGE, CREATE ON SCHEMA public TO %I", owner)
            for query in (_FOREIGN_RELATIONS, _FOREIGN_ROUTINES, _FOREIGN_TYPES):
                for (statement,) in await conn.fetch(query, owner):
                    await conn.execute(statement)
        await conn.execute(f'SET ROLE "{owner}"')
        applied = await migrate(conn)
        await conn.execute("RESET ROLE")
        async with conn.transaction():
            await _grant_app(conn, owner, role)
        return applied
    finally:
        await conn.close()


async def _grant_app(conn: asyncpg.Connection, owner: str, role: str) -> None:
    """What the app role may do: use the schema and read and write the owner's tables."""
    await _run(conn, "REVOKE CREATE ON SCHEMA public FROM %I", role)
    await _run(conn, "GRANT USAGE ON SCHEMA public TO %I", role)
    await _run(
        conn, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %I", role
    )
    await _run(conn, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO %I", role)
    await _run(
        conn,
        "ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public "
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I",
        owner,
        role,
    )
    await _run(
        conn,
        "ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public "
        "GRANT USAGE, SELECT ON SEQUENCES TO %I",
        owner,
        role,
    )


async def _run(conn: asyncpg.Connection, template: str, *values: str) -> None:
    """A utility statement with identifiers and literals quoted by PostgreSQL's own
    `format()` (utility statements take no bind parameters)."""
    placeholders = ", ".join(f"${i}::text" for i in range(1, len(values) + 1))
    statement = await conn.fetchval(f"SELECT format($q${template}$q$, {placeholders})", *values)
    await conn.execute(statement)
