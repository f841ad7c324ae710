"""The registry's own database role: it owns the registry's tables and nothing more.

    await provision_app_role(admin_dsn, "registry", password)   # as a superuser

`registry serve` on the embedded PostgreSQL connects as this role, not as the
superuser: the migrations run as it (so what they create is its own), and the
app can then read and write the registry's tables, and alter or drop them
(an owner can), but not create databases or roles, read other databases,
files or `pg_authid`, or run programs. The role:

* `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`;
* `CONNECT` on the registry's database (and `PUBLIC` loses it there);
* `USAGE, CREATE` on its `public` schema, for the migrations;
* owns every table, view, sequence, function and type in that schema. A
  database made by an earlier release, whose objects the superuser owns, is
  handed over here.

`deploy/registry-role.sql` grants the same on a PostgreSQL you administer.
"""

from __future__ import annotations

from typing import Final

import asyncpg  # type: ignore[import-untyped, unused-ignore]

__all__ = ["APP_ROLE", "provision_app_role"]

APP_ROLE: Final = "registry"
_ATTRIBUTES: Final = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"

# What in `public` another role owns. Tables carry their indexes, triggers,
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
) -> None:
    """As a superuser connected to `admin_dsn` (the registry's database): make `role`
    what the module docstring says, with this password. Safe to run at every start."""
    conn = await asyncpg.connect(admin_dsn)
    try:
        async with conn.transaction():
            exists = await conn.fetchval("SELECT true FROM pg_roles WHERE rolname = $1", role)
            verb = "ALTER" if exists else "CREATE"
            await _run(conn, f"{verb} ROLE %I {_ATTRIBUTES} PASSWORD %L", role, password)
            await _run(conn, "REVOKE ALL ON DATABASE %I FROM PUBLIC", database)
            await _run(conn, "GRANT CONNECT ON DATABASE %I TO %I", database, role)
            await _run(conn, "GRANT USAGE, CREATE ON SCHEMA public TO %I", role)
            for query in (_FOREIGN_RELATIONS, _FOREIGN_ROUTINES, _FOREIGN_TYPES):
                for (statement,) in await conn.fetch(query, role):
                    await conn.execute(statement)
    finally:
        await conn.close()


async def _run(conn: asyncpg.Connection, template: str, *values: str) -> None:
    """A utility statement with identifiers and literals quoted by PostgreSQL's own
    `format()` (utility statements take no bind parameters)."""
    placeholders = ", ".join(f"${i}::text" for i in range(1, len(values) + 1))
    statement = await conn.fetchval(f"SELECT format($q${template}$q$, {placeholders})", *values)
    await conn.execute(statement)
