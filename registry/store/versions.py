"""Tools and their versions, read: names, summaries, history, one version, by digest.

Reads of versions see held ones too (pending, rejected), with their state, except
`list_tools`, whose current version is the newest one served.
"""

from __future__ import annotations

from registry.store._db import Connection, Db, connection
from registry.store.records import NotFound, ToolSummary, Version
from registry.store.rows import VERSION_COLUMNS, record_of

__all__ = [
    "find_digest",
    "get_history",
    "get_version",
    "list_tools",
    "require_version",
    "tool_names",
]


async def tool_names(db: Db, namespace: str) -> list[str]:
    """The names of the namespace's tools, bytewise (what risk findings look for)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            'SELECT name FROM tools WHERE namespace = $1 ORDER BY name COLLATE "C"', namespace
        )
    return [row["name"] for row in rows]


async def list_tools(db: Db, namespace: str) -> list[ToolSummary]:
    """The namespace's tools by name, each with its current version (None: all retired)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"""
            SELECT t.name AS tool_name,
                   (SELECT max(version) FROM versions m
                     WHERE m.namespace = t.namespace AND m.tool = t.name) AS latest_version,
                   c.*
            FROM tools t
            LEFT JOIN LATERAL (
                SELECT {VERSION_COLUMNS} FROM versions_effective e
                WHERE e.namespace = t.namespace AND e.tool = t.name AND e.state <> 'retired'
                ORDER BY e.version DESC
                LIMIT 1
            ) c ON true
            WHERE t.namespace = $1
            ORDER BY t.name COLLATE "C"
            """,
            namespace,
        )
    return [
        ToolSummary(
            namespace=namespace,
            tool=r["tool_name"],
            latest_version=r["latest_version"] or 0,
            current=record_of(r, Version) if r["version"] is not None else None,
        )
        for r in rows
    ]


async def get_history(db: Db, namespace: str, tool: str) -> list[Version]:
    """Every version of the tool, oldest first, held ones included (pending, rejected);
    empty when the tool does not exist."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT {VERSION_COLUMNS} FROM versions_all "
            "WHERE namespace = $1 AND tool = $2 ORDER BY version",
            namespace,
            tool,
        )
    return [record_of(r, Version) for r in rows]


async def get_version(db: Db, namespace: str, tool: str, version: int) -> Version | None:
    """One version, held ones included (pending, rejected)."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {VERSION_COLUMNS} FROM versions_all "
            "WHERE namespace = $1 AND tool = $2 AND version = $3",
            namespace,
            tool,
            version,
        )
    return record_of(row, Version) if row else None


async def require_version(conn: Connection, namespace: str, tool: str, version: int) -> Version:
    """One version, held ones included; `NotFound` when there is none."""
    row = await conn.fetchrow(
        f"SELECT {VERSION_COLUMNS} FROM versions_all "
        "WHERE namespace = $1 AND tool = $2 AND version = $3",
        namespace,
        tool,
        version,
    )
    if row is None:
        raise NotFound(f"version {version} of {namespace}/{tool} does not exist")
    return record_of(row, Version)


async def find_digest(db: Db, digest: str) -> list[Version]:
    """Every stored version with this digest (one tool name may live in several namespaces),
    held ones included with their state (pending, rejected: served nowhere)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT {VERSION_COLUMNS} FROM versions_all WHERE digest = $1 "
            'ORDER BY namespace COLLATE "C", tool COLLATE "C", version',
            digest,
        )
    return [record_of(r, Version) for r in rows]
