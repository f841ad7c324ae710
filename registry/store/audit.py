"""The audit trail (`audit_events`): one event per stored change, written and listed.

event_id = await write_audit(conn, actor=token_id, action="token.create",
                             request_id=rid, detail={"token": token.id})
events = await list_audit(db, namespace="billing", after=event_id, limit=100)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.store._db import Connection, Db, connection
from registry.store.records import AuditEvent
from registry.store.rows import encode_json, record_of

__all__ = ["list_audit", "write_audit"]

_AUDIT_COLUMNS = (
    "id, at, actor, action, namespace, tool, version, request_id, detail::text AS detail"
)


async def write_audit(
    conn: Connection,
    *,
    actor: str | None,
    action: str,
    request_id: str | None,
    namespace: str | None = None,
    tool: str | None = None,
    version: int | None = None,
    detail: Mapping[str, Any] | None = None,
) -> int:
    """Append one audit event; its id."""
    event_id: int = await conn.fetchval(
        """
        INSERT INTO audit_events (actor, action, namespace, tool, version, request_id, detail)
        VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb)
        RETURNING id
        """,
        actor,
        action,
        namespace,
        tool,
        version,
        request_id,
        encode_json(dict(detail or {})),
    )
    return event_id


async def list_audit(
    db: Db,
    *,
    namespace: str | None = None,
    tool: str | None = None,
    action: str | None = None,
    actor: str | None = None,
    after: int | None = None,
    before: int | None = None,
    limit: int = 100,
    newest_first: bool = False,
) -> list[AuditEvent]:
    """Audit events by id, filtered; page with `after`/`before` (event ids)."""
    order = "DESC" if newest_first else "ASC"
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"""
            SELECT {_AUDIT_COLUMNS} FROM audit_events
            WHERE ($1::text IS NULL OR namespace = $1)
              AND ($2::text IS NULL OR tool = $2)
              AND ($3::text IS NULL OR action = $3)
              AND ($4::text IS NULL OR actor = $4)
              AND ($5::bigint IS NULL OR id > $5)
              AND ($6::bigint IS NULL OR id < $6)
            ORDER BY id {order}
            LIMIT $7
            """,
            namespace,
            tool,
            action,
            actor,
            after,
            before,
            limit,
        )
    return [record_of(r, AuditEvent) for r in rows]
