"""`registry doctor`'s roles check (`registry.store.health.role_findings`) on the two-role
arrangement: an owner that migrates and owns the tables, and an app role that only reads
and writes them (deploy/registry-role.sql of the security work). Set up here by the
statements that file runs; the one-role arrangement is checked through the doctor
itself (tests/ops/test_doctor.py)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from registry.store.health import role_findings
from registry.store.migrations import migrate
from tests.conftest import _create_database, _drop_database

ARRANGE = """
CREATE ROLE {owner} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE ROLE {app} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
REVOKE ALL ON DATABASE {database} FROM PUBLIC;
GRANT CONNECT ON DATABASE {database} TO {app}, {owner};
GRANT USAGE, CREATE ON SCHEMA public TO {owner};
REVOKE CREATE ON SCHEMA public FROM {app};
GRANT USAGE ON SCHEMA public TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO {app};
"""


async def test_the_two_role_arrangement_and_what_breaks_it(postgres_server: Any) -> None:
    suffix = uuid.uuid4().hex[:8]
    app, owner = f"app_{suffix}", f"app_{suffix}_owner"
    database = await _create_database(postgres_server, "template0")
    conn = await asyncpg.connect(postgres_server.dsn(database))
    try:
        await conn.execute(ARRANGE.format(owner=owner, app=app, database=database))
        await conn.execute(f"SET ROLE {owner}")
        await migrate(conn)
        await conn.execute("RESET ROLE")
        assert await role_findings(conn, app_role=app, owner_role=owner) == []

        await conn.execute(f"GRANT TRUNCATE ON versions TO {app}")
        await conn.execute(f"REVOKE INSERT ON audit_events FROM {app}")
        await conn.execute(f"GRANT CREATE ON SCHEMA public TO {app}")
        await conn.execute(f"ALTER TABLE replicas OWNER TO {app}")
        await conn.execute(f"ALTER ROLE {owner} CREATEROLE")
        assert await role_findings(conn, app_role=app, owner_role=owner) == [
            f"{owner} holds CREATEROLE: the documented role holds none of them",
            f"table replicas is owned by {app}, not by {owner}",
            f"{app} lacks INSERT on audit_events",
            f"{app} holds TRUNCATE, REFERENCES, TRIGGER on replicas, beyond the documented",
            f"{app} holds TRUNCATE on versions, beyond the documented",
            f"{app} may create in the schema public: only {owner} may",
        ]
    finally:
        await conn.close()
        await _drop_database(postgres_server, database)
        admin = await asyncpg.connect(postgres_server.admin_dsn)
        try:
            for role in (app, owner):
                await admin.execute(f"DROP ROLE IF EXISTS {role}")
        finally:
            await admin.close()
