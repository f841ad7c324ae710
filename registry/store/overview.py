"""Reads for the web console's lists, each one query however many rows (no query per row).

rows = await namespace_overview(db)          # each namespace, its tool count, last change
states = await version_states(db, "billing")  # (tool, version, state), no definitions
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from registry.store._db import Db, connection

__all__ = ["NamespaceOverview", "VersionState", "namespace_overview", "version_states"]


class NamespaceOverview(msgspec.Struct, frozen=True):
    name: str
    created_at: datetime
    tools: int
    last_change: datetime  # the newest audit event of the namespace (its creation at least)


async def namespace_overview(db: Db) -> list[NamespaceOverview]:
    """Every namespace by name (bytewise, as `list_namespaces`)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            """
            SELECT n.name, n.created_at,
                   (SELECT count(*) FROM tools t WHERE t.namespace = n.name) AS tools,
                   greatest(n.created_at,
                            (SELECT max(a.at) FROM audit_events a WHERE a.namespace = n.name))
                       AS last_change
            FROM namespaces n
            ORDER BY n.name COLLATE "C"
            """
        )
    return [
        NamespaceOverview(r["name"], r["created_at"], r["tools"], r["last_change"]) for r in rows
    ]


class VersionState(msgspec.Struct, frozen=True, array_like=True):
    tool: str
    version: int
    state: str  # effective: a deprecated version past its sunset reads retired


async def version_states(db: Db, namespace: str) -> list[VersionState]:
    """Every version of the namespace (held ones included: pending, rejected), by tool
    (bytewise) then number, without definitions."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            "SELECT tool, version, state::text AS state FROM versions_all "
            'WHERE namespace = $1 ORDER BY tool COLLATE "C", version',
            namespace,
        )
    return [VersionState(r["tool"], r["version"], r["state"]) for r in rows]
