"""The `toolset_changed` channel: what a write that changes a namespace's toolset sends.

    await notify(conn, "billing", "search")   # delivered at commit

`registry.store.listen` is the other end.
"""

from __future__ import annotations

from typing import Final

from registry.store._db import Connection

__all__ = ["CHANNEL", "notify"]

CHANNEL: Final = "toolset_changed"


async def notify(conn: Connection, namespace: str, tool: str | None = None) -> None:
    """Listeners hear `namespace/tool` (what changed, for `registry.store.listen`), then
    `namespace` (what replicas that predate tool notices listen for)."""
    if tool is None:
        await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, namespace)
    else:
        await conn.execute(
            "SELECT pg_notify($1, $2 || '/' || $3), pg_notify($1, $2)", CHANNEL, namespace, tool
        )
