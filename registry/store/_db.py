"""Connection types and the transaction helpers shared by the store modules."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeAlias

import asyncpg  # type: ignore[import-untyped, unused-ignore]

__all__ = ["Connection", "Db", "Row", "connection", "snapshot", "transaction"]

Row: TypeAlias = "asyncpg.Record"
Connection: TypeAlias = (
    "asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"
)
Db: TypeAlias = "Connection | asyncpg.Pool[asyncpg.Record]"


@asynccontextmanager
async def transaction(db: Db) -> AsyncIterator[Connection]:
    """A transaction on `db` (a savepoint when the connection is already in one)."""
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn, conn.transaction():
            yield conn
    else:
        async with db.transaction():
            yield db


@asynccontextmanager
async def connection(db: Db) -> AsyncIterator[Connection]:
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn:
            yield conn
    else:
        yield db


@asynccontextmanager
async def snapshot(db: Db) -> AsyncIterator[Connection]:
    """Several reads that see one snapshot (inside the caller's transaction if it has one)."""
    if isinstance(db, asyncpg.Pool):
        async with (
            db.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            yield conn
    elif db.is_in_transaction():
        yield db
    else:
        async with db.transaction(isolation="repeatable_read", readonly=True):
            yield db
