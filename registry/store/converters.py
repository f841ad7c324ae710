"""Converters between two released versions of a tool: register (immutable) and list.

converter, created = await register_converter(db, "billing", "search", 1, 2, ops,
                                              actor=token_id, request_id=rid)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from registry.store._db import Connection, Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.channel import notify
from registry.store.locks import lock_tool
from registry.store.records import Conflict, Converter, NotFound
from registry.store.rows import CONVERTER_COLUMNS, encode_json, record_of
from registry.store.tool_state import Guard, run_guard

__all__ = ["insert_converter", "list_converters", "register_converter"]


async def insert_converter(
    conn: Connection,
    namespace: str,
    tool: str,
    from_version: int,
    to_version: int,
    ops: Sequence[Mapping[str, Any]],
    *,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> tuple[Converter, bool]:
    """Store one converter of a locked tool, audited; (record, created). `Conflict` for
    other operations on the same pair, `NotFound` when either version is not released."""
    existing = await conn.fetchrow(
        f"SELECT {CONVERTER_COLUMNS}, ops = $5::text::jsonb AS same FROM converters "
        "WHERE namespace = $1 AND tool = $2 AND from_version = $3 AND to_version = $4",
        namespace,
        tool,
        from_version,
        to_version,
        encode_json(list(ops)),
    )
    if existing is not None:
        if existing["same"]:
            return record_of(existing, Converter), False
        raise Conflict(
            f"a converter {from_version} -> {to_version} of {namespace}/{tool} is already "
            "registered with other operations; converters are immutable"
        )
    missing = await conn.fetch(
        "SELECT n FROM unnest($3::int[]) AS n WHERE NOT EXISTS "
        "(SELECT 1 FROM versions_effective WHERE namespace = $1 AND tool = $2 AND version = n)",
        namespace,
        tool,
        [from_version, to_version],
    )
    if missing:
        raise NotFound(
            f"version {missing[0]['n']} of {namespace}/{tool} does not exist, or is not released"
        )
    row = await conn.fetchrow(
        f"""
        INSERT INTO converters (namespace, tool, from_version, to_version, ops)
        VALUES ($1, $2, $3, $4, $5::text::jsonb)
        RETURNING {CONVERTER_COLUMNS}
        """,
        namespace,
        tool,
        from_version,
        to_version,
        encode_json(list(ops)),
    )
    assert row is not None
    converter = record_of(row, Converter)
    audit_ids.append(
        await write_audit(
            conn,
            actor=actor,
            action="converter.register",
            request_id=request_id,
            namespace=namespace,
            tool=tool,
            version=to_version,
            detail={"from": from_version, "to": to_version, "ops": converter.ops},
        )
    )
    return converter, True


async def register_converter(
    db: Db,
    namespace: str,
    tool: str,
    from_version: int,
    to_version: int,
    ops: Sequence[Mapping[str, Any]],
    *,
    actor: str | None,
    request_id: str | None,
    guard: Guard | None = None,
) -> tuple[Converter, bool]:
    """Store a converter (verified by the caller); (record, created).

    The same operations again change nothing; other operations for the same
    pair raise `Conflict`: converters are immutable.
    """
    if from_version == to_version:
        raise ValueError("a converter goes from one version to another")
    async with transaction(db) as conn:
        await lock_tool(conn, namespace, tool, create=False)
        await run_guard(conn, namespace, tool, guard)
        audit_ids: list[int] = []
        converter, created = await insert_converter(
            conn,
            namespace,
            tool,
            from_version,
            to_version,
            ops,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        if created:
            await notify(conn, namespace, tool)
        return converter, created


async def list_converters(db: Db, namespace: str, tool: str | None = None) -> list[Converter]:
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT {CONVERTER_COLUMNS} FROM converters "
            "WHERE namespace = $1 AND ($2::text IS NULL OR tool = $2) "
            'ORDER BY tool COLLATE "C", from_version, to_version',
            namespace,
            tool,
        )
    return [record_of(r, Converter) for r in rows]
