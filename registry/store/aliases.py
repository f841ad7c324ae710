"""Aliases: a name that serves another tool under a pinned contract; set, list, get.

change = await set_alias(db, "billing", "find", target_tool="search",
                         contract_tool="find", contract_version=3, actor=..., request_id=...)
"""

from __future__ import annotations

from registry.store._db import Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.channel import notify
from registry.store.locks import lock_namespace
from registry.store.records import Alias, AliasChange, NotFound
from registry.store.rows import ALIAS_COLUMNS, check_tool_name, record_of

__all__ = ["get_alias", "list_aliases", "set_alias"]


async def set_alias(
    db: Db,
    namespace: str,
    name: str,
    *,
    target_tool: str,
    contract_tool: str,
    contract_version: int,
    actor: str | None,
    request_id: str | None,
) -> AliasChange:
    """Create or re-point an alias; the audit event keeps the previous target and contract."""
    check_tool_name(name)
    async with transaction(db) as conn:
        await lock_namespace(conn, namespace)
        if not await conn.fetchval(
            "SELECT true FROM tools WHERE namespace = $1 AND name = $2", namespace, target_tool
        ):
            raise NotFound(f"tool {namespace}/{target_tool} does not exist")
        if not await conn.fetchval(
            "SELECT true FROM versions_effective "
            "WHERE namespace = $1 AND tool = $2 AND version = $3",
            namespace,
            contract_tool,
            contract_version,
        ):
            raise NotFound(
                f"version {contract_version} of {namespace}/{contract_tool} does not exist, "
                "or is not released"
            )
        old = await conn.fetchrow(
            f"SELECT {ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 AND name = $2",
            namespace,
            name,
        )
        previous = record_of(old, Alias) if old else None
        if previous is not None and (
            previous.target_tool,
            previous.contract_tool,
            previous.contract_version,
        ) == (target_tool, contract_tool, contract_version):
            return AliasChange(alias=previous, previous=previous, changed=False)
        row = await conn.fetchrow(
            f"""
            INSERT INTO aliases (namespace, name, target_tool, contract_tool, contract_version)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (namespace, name) DO UPDATE
               SET target_tool = excluded.target_tool,
                   contract_tool = excluded.contract_tool,
                   contract_version = excluded.contract_version,
                   updated_at = clock_timestamp()
            RETURNING {ALIAS_COLUMNS}
            """,
            namespace,
            name,
            target_tool,
            contract_tool,
            contract_version,
        )
        assert row is not None
        alias = record_of(row, Alias)
        await write_audit(
            conn,
            actor=actor,
            action="alias.set",
            request_id=request_id,
            namespace=namespace,
            tool=name,
            detail={
                "alias": name,
                "target": target_tool,
                "contract": {"tool": contract_tool, "version": contract_version},
                "previous": None
                if previous is None
                else {
                    "target": previous.target_tool,
                    "contract": {
                        "tool": previous.contract_tool,
                        "version": previous.contract_version,
                    },
                },
            },
        )
        await notify(conn, namespace, target_tool)  # the alias list is rebuilt with any tool
        return AliasChange(alias=alias, previous=previous, changed=True)


async def list_aliases(db: Db, namespace: str) -> list[Alias]:
    async with connection(db) as conn:
        rows = await conn.fetch(
            f'SELECT {ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 ORDER BY name COLLATE "C"',
            namespace,
        )
    return [record_of(r, Alias) for r in rows]


async def get_alias(db: Db, namespace: str, name: str) -> Alias | None:
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 AND name = $2",
            namespace,
            name,
        )
    return record_of(row, Alias) if row else None
