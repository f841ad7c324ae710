"""Namespaces: create, get and list them, and read one whole from one snapshot.

record, created = await create_namespace(db, "billing", actor=token_id, request_id=rid)
snapshot = await load_namespace(db, "billing")   # versions, converters, aliases
"""

from __future__ import annotations

from registry.store._db import Db, connection, snapshot, transaction
from registry.store.audit import write_audit
from registry.store.channel import notify
from registry.store.records import (
    Alias,
    Converter,
    Namespace,
    NamespaceSnapshot,
    Version,
)
from registry.store.rows import (
    ALIAS_COLUMNS,
    CONVERTER_COLUMNS,
    VERSION_COLUMNS,
    check_namespace_name,
    record_of,
)

__all__ = ["create_namespace", "get_namespace", "list_namespaces", "load_namespace"]


async def create_namespace(
    db: Db, name: str, *, actor: str | None, request_id: str | None
) -> tuple[Namespace, bool]:
    """Create a namespace; (record, created). Creating an existing one changes nothing."""
    check_namespace_name(name)
    async with transaction(db) as conn:
        row = await conn.fetchrow(
            "INSERT INTO namespaces (name) VALUES ($1) ON CONFLICT DO NOTHING "
            "RETURNING name, created_at",
            name,
        )
        if row is None:
            row = await conn.fetchrow(
                "SELECT name, created_at FROM namespaces WHERE name = $1", name
            )
            assert row is not None
            return Namespace(name=row["name"], created_at=row["created_at"]), False
        await write_audit(
            conn, actor=actor, action="namespace.create", request_id=request_id, namespace=name
        )
        await notify(conn, name)
        return Namespace(name=row["name"], created_at=row["created_at"]), True


async def get_namespace(db: Db, name: str) -> Namespace | None:
    async with connection(db) as conn:
        row = await conn.fetchrow("SELECT name, created_at FROM namespaces WHERE name = $1", name)
    return Namespace(name=row["name"], created_at=row["created_at"]) if row else None


async def list_namespaces(db: Db) -> list[Namespace]:
    async with connection(db) as conn:
        rows = await conn.fetch('SELECT name, created_at FROM namespaces ORDER BY name COLLATE "C"')
    return [Namespace(name=r["name"], created_at=r["created_at"]) for r in rows]


async def load_namespace(db: Db, namespace: str) -> NamespaceSnapshot | None:
    """The namespace's versions, converters and aliases from one consistent snapshot."""
    async with snapshot(db) as conn:
        ns = await conn.fetchrow(
            "SELECT name, created_at, now() AS now, (SELECT (policy->>'gating')::boolean "
            "FROM namespace_policies WHERE namespace = $1) AS gating "
            "FROM namespaces WHERE name = $1",
            namespace,
        )
        if ns is None:
            return None
        versions = await conn.fetch(
            f"SELECT {VERSION_COLUMNS} FROM versions_effective WHERE namespace = $1 "
            'ORDER BY tool COLLATE "C", version',
            namespace,
        )
        converters = await conn.fetch(
            f"SELECT {CONVERTER_COLUMNS} FROM converters WHERE namespace = $1 "
            'ORDER BY tool COLLATE "C", from_version, to_version',
            namespace,
        )
        aliases = await conn.fetch(
            f'SELECT {ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 ORDER BY name COLLATE "C"',
            namespace,
        )
    records = [record_of(r, Version) for r in versions]
    future = [
        v.sunset
        for v in records
        if v.state == "deprecated" and v.sunset is not None and v.sunset > ns["now"]
    ]
    return NamespaceSnapshot(
        namespace=Namespace(name=ns["name"], created_at=ns["created_at"]),
        versions=records,
        converters=[record_of(r, Converter) for r in converters],
        aliases=[record_of(r, Alias) for r in aliases],
        next_sunset=min(future, default=None),
        gating=ns["gating"] is not False,
    )
