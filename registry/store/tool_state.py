"""A tool's whole state (`ToolState`) in one round trip: what `decide()` and guards see.

state = await read_tool_state(conn, "billing", "search")   # under the caller's lock
state = await load_tool_state(db, "billing", "search")     # a dry run: no lock
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import msgspec

from registry.store._db import Connection, Db, snapshot
from registry.store.records import Acceptance, Alias, Converter, ToolState, Version
from registry.store.rows import decode_json

__all__ = ["Guard", "load_tool_state", "read_tool_state", "run_guard"]

# May be a coroutine function: called under the tool's lock (deprecate, retire,
# register_converter), it raises to refuse.
Guard: TypeAlias = Callable[[ToolState], "Awaitable[None] | None"]

# One round trip for a tool's whole state: arrays of anonymous records, their fields in
# the order of VERSION_COLUMNS, CONVERTER_COLUMNS and ALIAS_COLUMNS (the released
# versions, then the held ones: pending or rejected), the namespace's policy document,
# the highest number given, and the namespace's other tools.
_TOOL_STATE = """
SELECT
    ARRAY(
        SELECT ROW(namespace, tool, version, digest, definition::text, state::text, sunset,
                   created_at, acceptances::text)
        FROM versions_effective WHERE namespace = $1 AND tool = $2 ORDER BY version
    ) AS versions,
    ARRAY(
        SELECT ROW(namespace, tool, from_version, to_version, ops::text, created_at)
        FROM converters WHERE namespace = $1 AND tool = $2 ORDER BY from_version, to_version
    ) AS converters,
    ARRAY(
        SELECT ROW(namespace, name, target_tool, contract_tool, contract_version, created_at,
                   updated_at)
        FROM aliases WHERE namespace = $1 AND (target_tool = $2 OR contract_tool = $2)
        ORDER BY name COLLATE "C"
    ) AS aliases,
    (SELECT policy::text FROM namespace_policies WHERE namespace = $1) AS policy,
    ARRAY(
        SELECT ROW(namespace, tool, version, digest, definition::text, state::text, sunset,
                   created_at, acceptances::text)
        FROM versions_all WHERE namespace = $1 AND tool = $2
          AND state::text IN ('pending', 'rejected') ORDER BY version
    ) AS held,
    (SELECT max(version) FROM versions WHERE namespace = $1 AND tool = $2) AS latest,
    ARRAY(
        SELECT name FROM tools WHERE namespace = $1 AND name <> $2 ORDER BY name COLLATE "C"
    ) AS other_tools
"""


def _version_of(v: Any) -> Version:
    """A version from an anonymous record of `_TOOL_STATE`."""
    return Version(
        namespace=v[0],
        tool=v[1],
        version=v[2],
        digest=v[3],
        definition=decode_json(v[4]),
        state=v[5],
        sunset=v[6],
        created_at=v[7],
        acceptances=msgspec.json.decode(v[8], type=list[Acceptance]),
    )


async def read_tool_state(conn: Connection, namespace: str, tool: str) -> ToolState:
    """The tool's state as the caller's transaction sees it (under its lock, for `decide`)."""
    row = await conn.fetchrow(_TOOL_STATE, namespace, tool)
    assert row is not None
    versions = [_version_of(v) for v in row["versions"]]
    converters = [
        Converter(
            namespace=c[0],
            tool=c[1],
            from_version=c[2],
            to_version=c[3],
            ops=decode_json(c[4]),
            created_at=c[5],
        )
        for c in row["converters"]
    ]
    aliases = [
        Alias(
            namespace=a[0],
            name=a[1],
            target_tool=a[2],
            contract_tool=a[3],
            contract_version=a[4],
            created_at=a[5],
            updated_at=a[6],
        )
        for a in row["aliases"]
    ]
    return ToolState(
        namespace=namespace,
        tool=tool,
        versions=versions,
        converters=converters,
        aliases=aliases,
        next_version=(row["latest"] or 0) + 1,  # a number given to a held version included
        policy=decode_json(row["policy"]) if row["policy"] is not None else None,
        held=[_version_of(v) for v in row["held"]],
        other_tools=list(row["other_tools"]),
    )


async def load_tool_state(db: Db, namespace: str, tool: str) -> ToolState:
    """What `decide()` would see, read without a lock (for a dry run such as `check`)."""
    async with snapshot(db) as conn:
        return await read_tool_state(conn, namespace, tool)


async def run_guard(conn: Connection, namespace: str, tool: str, guard: Guard | None) -> None:
    """Call `guard` (when given) with the tool's state, under the caller's lock; it
    raises to refuse."""
    if guard is not None:
        guarded = guard(await read_tool_state(conn, namespace, tool))
        if inspect.isawaitable(guarded):
            await guarded
