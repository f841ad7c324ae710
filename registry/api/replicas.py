"""Each replica reports its clock and limits to the database while it serves (`registry doctor`).

    Litestar(..., lifespan=[lifespan, report_clock])

Every `INTERVAL` seconds (and once at start) the replica writes its name
(`host:pid`), release, start time, its own clock and the limits it runs with
(`registry.api.limits`: connections, long-polls, the descriptor limit and what
they need) to the `replicas` table, whose `seen_at` the database stamps with
its clock (`registry.store.replicas`). At shutdown the row is removed. A
report that fails (the database away) is skipped and tried again next time;
serving never waits for one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped, unused-ignore]
import structlog
from litestar import Litestar

from registry import __version__
from registry.api.services import Services
from registry.store.replicas import forget_replica, report_replica

__all__ = ["INTERVAL", "replica_name", "report_clock"]

INTERVAL: Final = 15.0
_log = structlog.get_logger("registry.api")


def replica_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


async def _report(svc: Services, name: str, started_at: datetime) -> None:
    limits = svc.limits
    settings = svc.settings
    await report_replica(
        svc.database,
        name,
        release=__version__,
        started_at=started_at,
        clock=datetime.now(UTC),
        limits={
            "fd_limit": limits.fd_limit,
            "needs_fds": limits.needs_fds,
            "max_connections": limits.connections,
            "max_waiters": limits.waiters,
            "pool_max": settings.pool_max,
            "read_pool_max": settings.read_pool_max if settings.read_database_url else 0,
        },
    )


@contextlib.asynccontextmanager
async def report_clock(app: Litestar) -> AsyncIterator[None]:
    svc: Services = app.state.services
    if not isinstance(svc.db, asyncpg.Pool):  # a connection handed in is the caller's alone
        yield
        return
    name = replica_name()
    started_at = datetime.now(UTC)

    async def loop() -> None:
        while True:
            try:
                await _report(svc, name, started_at)
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                _log.info("replica_report_skipped", error=type(exc).__name__)
            await asyncio.sleep(INTERVAL)

    task: asyncio.Task[Any] = asyncio.create_task(loop(), name="replica-clock")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        with contextlib.suppress(
            OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError
        ):
            await forget_replica(svc.database, name)
