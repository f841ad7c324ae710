"""The rows a write locks first: the namespace's, or the tool's (created when asked).

Lifecycle writes on a tool (publish, deprecate, retire, converters, approval) first
lock the tool's row, so they run one at a time per tool; that is what makes version
numbers contiguous and a digest published concurrently land once. Writes on a
namespace's own records (aliases, capabilities, policy) lock the namespace's row.
"""

from __future__ import annotations

from registry.store._db import Connection
from registry.store.audit import write_audit
from registry.store.records import NamespaceNotFound, NotFound
from registry.store.rows import check_namespace_name

__all__ = ["ensure_namespace", "ensure_namespace_and_tool", "lock_namespace", "lock_tool"]


async def ensure_namespace(
    conn: Connection,
    namespace: str,
    *,
    create: bool,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> None:
    """Create the namespace when asked (audited `namespace.create`), else
    `NamespaceNotFound` when it does not exist."""
    check_namespace_name(namespace)
    if create:
        created = await conn.fetchval(
            "INSERT INTO namespaces (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING true",
            namespace,
        )
        if created:
            audit_ids.append(
                await write_audit(
                    conn,
                    actor=actor,
                    action="namespace.create",
                    request_id=request_id,
                    namespace=namespace,
                )
            )
    elif not await conn.fetchval("SELECT true FROM namespaces WHERE name = $1", namespace):
        raise NamespaceNotFound(namespace)


async def lock_namespace(conn: Connection, namespace: str) -> None:
    """Lock the namespace's row until commit; `NamespaceNotFound` when there is none."""
    # NO KEY UPDATE: serialises writers on the namespace row without blocking
    # the foreign-key checks of concurrent publishes.
    found = await conn.fetchval(
        "SELECT true FROM namespaces WHERE name = $1 FOR NO KEY UPDATE", namespace
    )
    if not found:
        raise NamespaceNotFound(namespace)


async def lock_tool(conn: Connection, namespace: str, tool: str, *, create: bool) -> None:
    """Lock the tool's row until commit (inserted first when `create`); `NotFound`
    when there is none."""
    if create:
        await conn.execute(
            "INSERT INTO tools (namespace, name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            namespace,
            tool,
        )
    found = await conn.fetchval(
        "SELECT true FROM tools WHERE namespace = $1 AND name = $2 FOR NO KEY UPDATE",
        namespace,
        tool,
    )
    if not found:
        raise NotFound(f"tool {namespace}/{tool} does not exist")


async def ensure_namespace_and_tool(
    conn: Connection,
    namespace: str,
    tool: str,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> None:
    """`ensure_namespace(create=True)` then `lock_tool(create=True)`, in one round trip
    when the tool exists or is new (its own insert holds it)."""
    check_namespace_name(namespace)
    row = await conn.fetchrow(
        """
        WITH ns AS (
            INSERT INTO namespaces (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING true
        ), inserted AS (
            INSERT INTO tools (namespace, name) VALUES ($1, $2) ON CONFLICT DO NOTHING
            RETURNING true
        )
        SELECT
            (SELECT true FROM ns) AS ns_created,
            (SELECT true FROM inserted) AS tool_created,
            (SELECT true FROM tools WHERE namespace = $1 AND name = $2 FOR NO KEY UPDATE)
                AS locked
        """,
        namespace,
        tool,
    )
    assert row is not None
    if row["ns_created"]:
        audit_ids.append(
            await write_audit(
                conn,
                actor=actor,
                action="namespace.create",
                request_id=request_id,
                namespace=namespace,
            )
        )
    if not (row["tool_created"] or row["locked"]):
        # Inserted by a transaction that committed after this statement's snapshot:
        # a new statement sees (and locks) it.
        found = await conn.fetchval(
            "SELECT true FROM tools WHERE namespace = $1 AND name = $2 FOR NO KEY UPDATE",
            namespace,
            tool,
        )
        if not found:
            raise NotFound(f"tool {namespace}/{tool} does not exist")
