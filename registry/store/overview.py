"""Aggregates for the web console's front page: each namespace with its tool count and
the time of its last audited change, in one query (no query per namespace).

    rows = await namespace_overview(db)   # [NamespaceOverview(name, created_at, tools, ...)]
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from registry.store._db import Db, connection

__all__ = ["NamespaceOverview", "namespace_overview"]


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
