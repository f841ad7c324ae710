"""Each serving replica's clock and limits, as it last reported them (table `replicas`).

    await report_replica(db, "host:1234", release="0.1.0", started_at=t0, clock=now,
                         limits={"fd_limit": 1024, ...})
    rows = await live_replicas(db, within=timedelta(minutes=2))
    await forget_replica(db, "host:1234")

`seen_at` is the database's clock at the report, so `clock - seen_at` is how
far the replica's clock is from the database's (give or take the one-way
latency of the report): `registry doctor` compares them across replicas.
Rows of replicas silent for a day are deleted by the next report.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

import msgspec

from registry.store._db import Db, connection

__all__ = ["ReplicaClock", "forget_replica", "live_replicas", "report_replica"]

FORGET_AFTER: Final = timedelta(days=1)


class ReplicaClock(msgspec.Struct, frozen=True):
    replica: str
    release: str
    started_at: datetime
    clock: datetime  # the replica's own clock at its last report
    seen_at: datetime  # the database's clock then
    limits: dict[str, Any]

    @property
    def skew(self) -> timedelta:
        """How far ahead of the database's clock the replica's is (negative: behind)."""
        return self.clock - self.seen_at


async def report_replica(
    db: Db,
    replica: str,
    *,
    release: str,
    started_at: datetime,
    clock: datetime,
    limits: Mapping[str, Any],
) -> None:
    async with connection(db) as conn:
        await conn.execute(
            """
            WITH forgotten AS (
                DELETE FROM replicas WHERE seen_at < clock_timestamp() - $6::interval
            )
            INSERT INTO replicas (replica, release, started_at, clock, seen_at, limits)
            VALUES ($1, $2, $3, $4, clock_timestamp(), $5::text::jsonb)
            ON CONFLICT (replica) DO UPDATE
               SET release = excluded.release, started_at = excluded.started_at,
                   clock = excluded.clock, seen_at = excluded.seen_at, limits = excluded.limits
            """,
            replica,
            release,
            started_at,
            clock,
            msgspec.json.encode(dict(limits)).decode(),
            FORGET_AFTER,
        )


async def forget_replica(db: Db, replica: str) -> None:
    async with connection(db) as conn:
        await conn.execute("DELETE FROM replicas WHERE replica = $1", replica)


async def live_replicas(db: Db, *, within: timedelta) -> list[ReplicaClock]:
    """The replicas that reported within `within` of the database's clock, by name."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            """
            SELECT replica, release, started_at, clock, seen_at, limits::text AS limits
            FROM replicas WHERE seen_at >= clock_timestamp() - $1::interval
            ORDER BY replica COLLATE "C"
            """,
            within,
        )
    return [
        ReplicaClock(
            replica=r["replica"],
            release=r["release"],
            started_at=r["started_at"],
            clock=r["clock"],
            seen_at=r["seen_at"],
            limits=msgspec.json.decode(r["limits"]),
        )
        for r in rows
    ]
