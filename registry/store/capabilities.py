"""A namespace's captured capabilities (`initialize` results), one record per change.

record, created = await put_capabilities(db, "billing", document, actor=..., request_id=...)
record = await get_capabilities(db, "billing")   # the latest; seq= for an older one
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.store._db import Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.locks import ensure_namespace, lock_namespace
from registry.store.records import Capabilities
from registry.store.rows import encode_json, record_of

__all__ = ["get_capabilities", "put_capabilities"]


async def put_capabilities(
    db: Db,
    namespace: str,
    document: Mapping[str, Any],
    *,
    actor: str | None,
    request_id: str | None,
    create_namespace: bool = True,
) -> tuple[Capabilities, bool]:
    """Store a captured `initialize` result as the namespace's next record; (record, created).

    A document equal to the latest one changes nothing.
    """
    async with transaction(db) as conn:
        audit_ids: list[int] = []
        await ensure_namespace(
            conn,
            namespace,
            create=create_namespace,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        await lock_namespace(conn, namespace)
        text = encode_json(dict(document))
        latest = await conn.fetchrow(
            "SELECT namespace, seq, document::text AS document, created_at, "
            "document = $2::text::jsonb AS same FROM capabilities "
            "WHERE namespace = $1 ORDER BY seq DESC LIMIT 1",
            namespace,
            text,
        )
        if latest is not None and latest["same"]:
            return record_of(latest, Capabilities), False
        row = await conn.fetchrow(
            """
            INSERT INTO capabilities (namespace, seq, document)
            VALUES ($1, $2, $3::text::jsonb)
            RETURNING namespace, seq, document::text AS document, created_at
            """,
            namespace,
            latest["seq"] + 1 if latest is not None else 1,
            text,
        )
        assert row is not None
        record = record_of(row, Capabilities)
        await write_audit(
            conn,
            actor=actor,
            action="capabilities.put",
            request_id=request_id,
            namespace=namespace,
            detail={"seq": record.seq},
        )
        return record, True


async def get_capabilities(db: Db, namespace: str, seq: int | None = None) -> Capabilities | None:
    """The latest captured capabilities of the namespace (or record `seq`)."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            "SELECT namespace, seq, document::text AS document, created_at FROM capabilities "
            "WHERE namespace = $1 AND ($2::int IS NULL OR seq = $2) ORDER BY seq DESC LIMIT 1",
            namespace,
            seq,
        )
    return record_of(row, Capabilities) if row else None
