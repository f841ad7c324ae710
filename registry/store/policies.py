"""Namespace policies (`namespace_policies`, migrations/0005_accept_policy.sql): read and set.

    record = await get_policy(db, "billing")          # None: the default policy
    record, changed = await put_policy(db, "billing", {"gating": True, "relax": [...]},
                                       actor=token_id, request_id=rid)

The document is stored as given (the service checks it against
`registry.policy.acceptance.NamespacePolicy` first). Setting it is audited
(`namespace.policy`, with the previous document) and notifies the namespace's
toolset listeners, since gating on or off is part of the sync payload. Setting
the document already stored changes nothing and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.store._db import Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.channel import notify
from registry.store.locks import lock_namespace
from registry.store.records import PolicyRecord
from registry.store.rows import encode_json, record_of

__all__ = ["get_policy", "put_policy"]

_COLUMNS = "namespace, policy::text AS policy, updated_at"


async def get_policy(db: Db, namespace: str) -> PolicyRecord | None:
    """The namespace's stored policy; None when it has never been set."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM namespace_policies WHERE namespace = $1", namespace
        )
    return record_of(row, PolicyRecord) if row else None


async def put_policy(
    db: Db,
    namespace: str,
    document: Mapping[str, Any],
    *,
    actor: str | None,
    request_id: str | None,
) -> tuple[PolicyRecord, bool]:
    """Set the namespace's policy; (record, changed). `NamespaceNotFound` when the
    namespace does not exist."""
    async with transaction(db) as conn:
        await lock_namespace(conn, namespace)
        text = encode_json(dict(document))
        old = await conn.fetchrow(
            f"SELECT {_COLUMNS}, policy = $2::text::jsonb AS same "
            "FROM namespace_policies WHERE namespace = $1",
            namespace,
            text,
        )
        if old is not None and old["same"]:
            return record_of(old, PolicyRecord), False
        row = await conn.fetchrow(
            f"""
            INSERT INTO namespace_policies (namespace, policy) VALUES ($1, $2::text::jsonb)
            ON CONFLICT (namespace) DO UPDATE
               SET policy = excluded.policy, updated_at = clock_timestamp()
            RETURNING {_COLUMNS}
            """,
            namespace,
            text,
        )
        assert row is not None
        await write_audit(
            conn,
            actor=actor,
            action="namespace.policy",
            request_id=request_id,
            namespace=namespace,
            detail={
                "policy": dict(document),
                "previous": record_of(old, PolicyRecord).policy if old is not None else None,
            },
        )
        await notify(conn, namespace)
        return record_of(row, PolicyRecord), True
