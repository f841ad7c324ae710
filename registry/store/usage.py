"""Usage counts in PostgreSQL (`usage_counts`, migrations/0004_usage.sql): add, read, prune.

    recorded = await record_usage(db, "billing", "srv-1", digest, counts, at=now)
    rows = await usage_rows(db, "billing", "db.query", since=now - window)
    await prune_usage(db, before=now - retention)

Times come from the caller (the service's clock), never from the database's
`now()`: a report lands in the hour bucket of `at`, and `last_seen` is `at`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Final

import msgspec

from registry.store._db import Db, connection

__all__ = [
    "BUCKET",
    "NO_VERSION",
    "CountIn",
    "UsageRow",
    "bucket_of",
    "prune_usage",
    "record_usage",
    "states_by_version",
    "usage_rows",
    "versions_never_had",
]

BUCKET: Final = timedelta(hours=1)
NO_VERSION: Final = 0  # stored for a count of no version (the wire's null)


class CountIn(msgspec.Struct, frozen=True):
    """One count to add: the calls of (tool, version, decision, reason)."""

    tool: str
    version: int | None
    decision: str
    reason: str | None
    calls: int


class UsageRow(msgspec.Struct, frozen=True):
    """The calls of one (version, decision, reason, server) within a window."""

    version: int | None
    decision: str
    reason: str | None
    server: str
    toolset: str  # the digest the server reported last, within the window
    calls: int
    last_seen: datetime


def bucket_of(moment: datetime) -> datetime:
    """The start of the hour bucket holding `moment`."""
    return moment.replace(minute=0, second=0, microsecond=0)


_RECORD = """
INSERT INTO usage_counts AS u
    (namespace, tool, version, decision, reason, server, toolset, bucket, calls, last_seen)
SELECT $1, c.tool, c.version, c.decision, c.reason, $2, $3, $4, c.calls, $5
FROM unnest($6::text[], $7::integer[], $8::text[], $9::text[], $10::bigint[])
     AS c (tool, version, decision, reason, calls)
JOIN tools t ON t.namespace = $1 AND t.name = c.tool
ON CONFLICT (namespace, tool, version, bucket, server, toolset, decision, reason)
DO UPDATE SET calls = u.calls + EXCLUDED.calls,
              last_seen = greatest(u.last_seen, EXCLUDED.last_seen)
RETURNING tool
"""


async def record_usage(
    db: Db, namespace: str, server: str, toolset: str, counts: Iterable[CountIn], *, at: datetime
) -> set[str]:
    """Add the counts (one statement, so all or none); the tools they were stored for.

    Counts naming a tool the namespace does not have are skipped (the caller
    compares the answer with what it sent). Equal keys are summed first.
    """
    merged: dict[tuple[str, int, str, str], int] = {}
    for count in counts:
        key = (count.tool, count.version or NO_VERSION, count.decision, count.reason or "")
        merged[key] = merged.get(key, 0) + count.calls
    if not merged:
        return set()
    keys = list(merged)
    async with connection(db) as conn:
        rows = await conn.fetch(
            _RECORD,
            namespace,
            server,
            toolset,
            bucket_of(at),
            at,
            [k[0] for k in keys],
            [k[1] for k in keys],
            [k[2] for k in keys],
            [k[3] for k in keys],
            list(merged.values()),
        )
    return {row["tool"] for row in rows}


_NEVER_HAD = """
SELECT DISTINCT c.tool, c.version
FROM unnest($2::text[], $3::integer[]) AS c (tool, version)
JOIN tools t ON t.namespace = $1 AND t.name = c.tool
WHERE NOT EXISTS (
    SELECT 1 FROM versions v WHERE v.namespace = $1 AND v.tool = c.tool AND v.version = c.version
)
ORDER BY c.tool, c.version
"""


async def versions_never_had(
    db: Db, namespace: str, pairs: Iterable[tuple[str, int]]
) -> list[tuple[str, int]]:
    """The (tool, version) pairs naming a tool of the namespace at a version it never
    had (versions are never deleted: one it had, it has). Tools it lacks are not judged."""
    pairs = list(pairs)
    if not pairs:
        return []
    async with connection(db) as conn:
        rows = await conn.fetch(
            _NEVER_HAD, namespace, [tool for tool, _ in pairs], [v for _, v in pairs]
        )
    return [(row["tool"], row["version"]) for row in rows]


_ROWS = """
SELECT version, decision, reason, server,
       (array_agg(toolset ORDER BY last_seen DESC))[1] AS toolset,
       sum(calls)::bigint AS calls,
       max(last_seen) AS last_seen
FROM usage_counts
WHERE namespace = $1 AND tool = $2 AND bucket >= $3 AND ($4::integer IS NULL OR version = $4)
GROUP BY version, decision, reason, server
ORDER BY version, decision, reason, server
"""


async def usage_rows(
    db: Db, namespace: str, tool: str, *, since: datetime, version: int | None = None
) -> list[UsageRow]:
    """The counts of a tool (or one of its versions) in every hour bucket touching
    [since, now], summed per version, decision, reason and server."""
    async with connection(db) as conn:
        rows = await conn.fetch(_ROWS, namespace, tool, bucket_of(since), version)
    return [
        UsageRow(
            version=row["version"] or None,
            decision=row["decision"],
            reason=row["reason"] or None,
            server=row["server"],
            toolset=row["toolset"],
            calls=row["calls"],
            last_seen=row["last_seen"],
        )
        for row in rows
    ]


async def prune_usage(db: Db, *, before: datetime) -> int:
    """Delete the buckets that ended before `before` (the retention); how many rows went."""
    async with connection(db) as conn:
        status = await conn.execute("DELETE FROM usage_counts WHERE bucket < $1", before - BUCKET)
    return int(status.split()[-1])


async def states_by_version(db: Db, namespace: str, tool: str) -> dict[int, str]:
    """A tool's version numbers, each with its effective state (empty: no such tool)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            "SELECT version, state::text AS state FROM versions_effective "
            "WHERE namespace = $1 AND tool = $2",
            namespace,
            tool,
        )
    return {row["version"]: row["state"] for row in rows}
