"""Console sign-in sessions (`console_sessions`, migrations/0006): opaque ids, hashed.

    await open_session(db, hash_token(session_id), token_hash, expires_at)
    await session_token(db, hash_token(session_id), now)   # the token's hash, or None
    await close_session(db, hash_token(session_id))

The cookie holds the session id; the database holds its hash and the hash of
the token it stands for, so neither a database read nor the cookie gives
anyone the bearer token. Expired rows are deleted by the next sign-in.
"""

from __future__ import annotations

from datetime import datetime

from registry.store._db import Db, connection

__all__ = ["close_session", "open_session", "session_token"]


async def open_session(
    db: Db, session_hash: str, token_hash: str, expires_at: datetime, *, now: datetime
) -> None:
    async with connection(db) as conn:
        await conn.execute("DELETE FROM console_sessions WHERE expires_at <= $1", now)
        await conn.execute(
            "INSERT INTO console_sessions (id, token_hash, expires_at) VALUES ($1, $2, $3)",
            session_hash,
            token_hash,
            expires_at,
        )


async def session_token(db: Db, session_hash: str, now: datetime) -> str | None:
    """The hash of the token an unexpired session stands for; None for any other id."""
    async with connection(db) as conn:
        found = await conn.fetchval(
            "SELECT token_hash FROM console_sessions WHERE id = $1 AND expires_at > $2",
            session_hash,
            now,
        )
    return str(found) if found is not None else None


async def close_session(db: Db, session_hash: str) -> None:
    async with connection(db) as conn:
        await conn.execute("DELETE FROM console_sessions WHERE id = $1", session_hash)
