"""The registry's mode and each namespace's (migrations/0007_modes_replicas.sql): read and set.

    mode = await get_mode(db)                       # the registry's: ModeRecord
    mode = await get_mode(db, "billing")            # the namespace's own, or None
    record, changed = await set_mode(db, "read-only", reason="moving to db2",
                                     actor=token_id, request_id=rid)           # the registry's
    record, changed = await set_mode(db, "import", namespace="billing", ...)  # one namespace's
    await set_mode(db, None, namespace="billing", ...)   # the namespace follows the registry again

`read-write` accepts every write; `read-only` refuses every write to the
registry's records; `import` refuses them too, except an import
(`registry.store.transfer`). A namespace's own mode wins over the registry's.
The database refuses the writes (the migration's triggers), whatever path they
take: they raise `asyncpg.ReadOnlySQLTransactionError` with HINT
`registry-mode`, which `not_writable` reads. Setting a mode takes the modes'
advisory lock exclusively, so it waits for the writes in flight, and is
audited (`registry.mode` or `namespace.mode`, with the previous mode).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal, get_args

import msgspec

from registry.store._db import Connection, Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.records import NamespaceNotFound

__all__ = [
    "MODES",
    "Mode",
    "ModeRecord",
    "NotWritable",
    "effective_mode",
    "get_mode",
    "lock_modes",
    "not_writable",
    "set_mode",
]

Mode = Literal["read-write", "read-only", "import"]
MODES: Final[tuple[str, ...]] = get_args(Mode)
# the triggers' advisory lock: (7, "mode" in ASCII)
_LOCK: Final = (7, 1836016741)


class ModeRecord(msgspec.Struct, frozen=True):
    mode: Mode
    reason: str
    updated_at: datetime
    namespace: str | None = None  # None: the registry's mode


class NotWritable(msgspec.Struct, frozen=True):
    """What a write refused by a mode says: the mode, where it is set, the namespace."""

    mode: Mode
    scope: Literal["registry", "namespace"]
    namespace: str | None
    message: str


def not_writable(exc: BaseException) -> NotWritable | None:
    """The refusal of a mode, from the database error a refused write raised; None for
    any other error (a hot standby also refuses writes with the same SQLSTATE)."""
    if getattr(exc, "sqlstate", None) != "25006" or getattr(exc, "hint", None) != "registry-mode":
        return None
    try:
        detail = msgspec.json.decode(str(getattr(exc, "detail", "") or ""), type=dict[str, Any])
        return NotWritable(
            mode=detail["mode"],
            scope=detail["scope"],
            namespace=detail.get("namespace"),
            message=str(getattr(exc, "message", exc)),
        )
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError):
        return None


_COLUMNS = "mode, reason, updated_at"


async def get_mode(db: Db, namespace: str | None = None) -> ModeRecord | None:
    """The registry's mode (`namespace=None`), or the namespace's own (None when it has none)."""
    async with connection(db) as conn:
        if namespace is None:
            row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM registry_mode")
        else:
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS}, namespace FROM namespace_modes WHERE namespace = $1",
                namespace,
            )
    return msgspec.convert(dict(row), ModeRecord) if row is not None else None


async def effective_mode(db: Db, namespace: str) -> ModeRecord:
    """The mode a namespace's writes meet: its own, else the registry's."""
    own = await get_mode(db, namespace)
    if own is not None:
        return own
    registry = await get_mode(db)
    assert registry is not None  # the migration inserts the row
    return registry


async def lock_modes(conn: Connection) -> None:
    """Hold the modes' lock exclusively until the transaction ends."""
    await conn.execute("SELECT pg_advisory_xact_lock($1, $2)", *_LOCK)


async def set_mode(
    db: Db,
    mode: Mode | None,
    *,
    namespace: str | None = None,
    reason: str = "",
    actor: str | None,
    request_id: str | None,
) -> tuple[ModeRecord | None, bool]:
    """Set the registry's mode (`namespace=None`) or a namespace's; (record, changed).

    `mode=None` removes a namespace's own mode (it follows the registry's again).
    `NamespaceNotFound` for a namespace that does not exist."""
    if mode is None and namespace is None:
        raise ValueError("the registry always has a mode")
    async with transaction(db) as conn:
        await lock_modes(conn)
        if namespace is not None and not await conn.fetchval(
            "SELECT true FROM namespaces WHERE name = $1", namespace
        ):
            raise NamespaceNotFound(namespace)
        previous = await get_mode(conn, namespace)
        if (previous.mode if previous else None) == mode and (
            mode is None or (previous is not None and previous.reason == reason)
        ):
            return previous, False
        if namespace is None:
            row = await conn.fetchrow(
                f"UPDATE registry_mode SET mode = $1, reason = $2, "
                f"updated_at = clock_timestamp() RETURNING {_COLUMNS}",
                mode,
                reason,
            )
        elif mode is None:
            row = None
            await conn.execute("DELETE FROM namespace_modes WHERE namespace = $1", namespace)
        else:
            row = await conn.fetchrow(
                f"""
                INSERT INTO namespace_modes (namespace, mode, reason) VALUES ($1, $2, $3)
                ON CONFLICT (namespace) DO UPDATE
                   SET mode = excluded.mode, reason = excluded.reason,
                       updated_at = clock_timestamp()
                RETURNING {_COLUMNS}, namespace
                """,
                namespace,
                mode,
                reason,
            )
        record = msgspec.convert(dict(row), ModeRecord) if row is not None else None
        await write_audit(
            conn,
            actor=actor,
            action="registry.mode" if namespace is None else "namespace.mode",
            request_id=request_id,
            namespace=namespace,
            detail={
                "mode": mode,
                "reason": reason,
                "previous": None
                if previous is None
                else {"mode": previous.mode, "reason": previous.reason},
            },
        )
        return record, True
