"""The rows a namespace's toolset is built from: read on the event loop, decoded off it.

    rows = await read_toolset_rows(db, "billing")                  # every tool
    rows = await read_toolset_rows(db, "billing", {"db.query"})    # one tool (and the
                                                                   # aliases' contract tools)
    snapshot = rows.decode()   # records; plain CPU work, for a worker thread

Everything is read in one snapshot. Reading a namespace of 10,000 tools takes
the event loop only as long as asyncpg takes to receive the rows; turning them
into records (JSON decoding, one Struct per row) is left to `decode`, which the
service runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Final

from registry.store._db import Db, Row, snapshot
from registry.store.records import Alias, Converter, Version
from registry.store.rows import ALIAS_COLUMNS, CONVERTER_COLUMNS, VERSION_COLUMNS, record_of

__all__ = ["DecodedRows", "ToolsetRows", "read_toolset_rows"]

_OF_ALL: Final = "namespace = $1"
# the tools named in $2 and the contract tools of the namespace's aliases
_OF_TOOLS: Final = (
    "namespace = $1 AND tool = ANY($2::text[] || "
    "ARRAY(SELECT contract_tool FROM aliases WHERE namespace = $1))"
)


class DecodedRows:
    __slots__ = ("aliases", "converters", "gating", "now", "tools", "versions")

    def __init__(
        self,
        versions: list[Version],
        converters: list[Converter],
        aliases: list[Alias],
        now: datetime,
        tools: frozenset[str] | None,
        gating: bool = True,
    ) -> None:
        self.versions = versions  # by tool, then version
        self.converters = converters
        self.aliases = aliases  # all of the namespace's
        self.now = now  # the database's time of the snapshot
        self.tools = tools  # the tools read (None: all); contract tools may come too
        self.gating = gating  # False: the namespace's policy turned gating off


class ToolsetRows:
    __slots__ = ("_aliases", "_converters", "_versions", "gating", "namespace", "now", "tools")

    def __init__(
        self,
        namespace: str,
        versions: list[Row],
        converters: list[Row],
        aliases: list[Row],
        now: datetime,
        tools: frozenset[str] | None,
        gating: bool = True,
    ) -> None:
        self.gating = gating
        self.namespace = namespace
        self._versions = versions
        self._converters = converters
        self._aliases = aliases
        self.now = now
        self.tools = tools

    def __len__(self) -> int:
        return len(self._versions)

    def decode(self) -> DecodedRows:
        return DecodedRows(
            [record_of(r, Version) for r in self._versions],
            [record_of(r, Converter) for r in self._converters],
            [record_of(r, Alias) for r in self._aliases],
            self.now,
            self.tools,
            self.gating,
        )


async def read_toolset_rows(
    db: Db, namespace: str, tools: Collection[str] | None = None
) -> ToolsetRows | None:
    """The rows of `namespace`'s toolset, of every tool or of `tools`; None when the
    namespace does not exist."""
    where, args = (_OF_ALL, ()) if tools is None else (_OF_TOOLS, (sorted(tools),))
    async with snapshot(db) as conn:
        found = await conn.fetchrow(
            "SELECT now() AS now, (SELECT (policy->>'gating')::boolean FROM namespace_policies "
            "WHERE namespace = $1) AS gating FROM namespaces WHERE name = $1",
            namespace,
        )
        if found is None:
            return None
        now = found["now"]
        versions = await conn.fetch(
            f"SELECT {VERSION_COLUMNS} FROM versions_effective WHERE {where} "
            'ORDER BY tool COLLATE "C", version',
            namespace,
            *args,
        )
        converters = await conn.fetch(
            f"SELECT {CONVERTER_COLUMNS} FROM converters WHERE {where} "
            'ORDER BY tool COLLATE "C", from_version, to_version',
            namespace,
            *args,
        )
        aliases = await conn.fetch(
            f'SELECT {ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 ORDER BY name COLLATE "C"',
            namespace,
        )
    return ToolsetRows(
        namespace,
        list(versions),
        list(converters),
        list(aliases),
        now,
        None if tools is None else frozenset(tools),
        gating=found["gating"] is not False,
    )
