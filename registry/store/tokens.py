"""API tokens, stored by hash only: create, look up, get, list, revoke.

token = await create_token(db, hash_token(secret), ["billing:read"], actor=..., request_id=...)
token = await lookup_token(db, hash_token(secret))   # None: unknown or revoked
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence

from registry.store._db import Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.records import NotFound, Token
from registry.store.rows import record_of

__all__ = [
    "create_token",
    "get_token",
    "hash_token",
    "list_tokens",
    "lookup_token",
    "lookup_tokens",
    "revoke_token",
]

_TOKEN_COLUMNS = "id, scopes, description, created_at, revoked_at"


def hash_token(secret: str) -> str:
    """What the store keeps of a token: `sha256:` + hex (secrets are random: no salt needed)."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()


async def create_token(
    db: Db,
    token_hash: str,
    scopes: Sequence[str],
    *,
    description: str = "",
    actor: str | None,
    request_id: str | None,
) -> Token:
    """Store a token by its hash (see `hash_token`); the returned record carries its id."""
    async with transaction(db) as conn:
        row = await conn.fetchrow(
            f"INSERT INTO tokens (hash, scopes, description) VALUES ($1, $2, $3) "
            f"RETURNING {_TOKEN_COLUMNS}",
            token_hash,
            list(scopes),
            description,
        )
        assert row is not None
        token = record_of(row, Token)
        await write_audit(
            conn,
            actor=actor,
            action="token.create",
            request_id=request_id,
            detail={"token": token.id, "scopes": token.scopes, "description": description},
        )
        return token


async def lookup_token(db: Db, token_hash: str) -> Token | None:
    """The unrevoked token with this hash, or None."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE hash = $1 AND revoked_at IS NULL",
            token_hash,
        )
    return record_of(row, Token) if row else None


async def lookup_tokens(db: Db, token_hashes: Collection[str]) -> dict[str, Token]:
    """The unrevoked tokens with these hashes, by hash (one query for many requests)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT hash, {_TOKEN_COLUMNS} FROM tokens "
            "WHERE hash = ANY($1::text[]) AND revoked_at IS NULL",
            list(token_hashes),
        )
    return {row["hash"]: record_of(row, Token) for row in rows}


async def get_token(db: Db, token_id: str) -> Token | None:
    async with connection(db) as conn:
        row = await conn.fetchrow(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE id = $1", token_id)
    return record_of(row, Token) if row else None


async def list_tokens(db: Db) -> list[Token]:
    async with connection(db) as conn:
        rows = await conn.fetch(f"SELECT {_TOKEN_COLUMNS} FROM tokens ORDER BY created_at, id")
    return [record_of(r, Token) for r in rows]


async def revoke_token(
    db: Db, token_id: str, *, actor: str | None, request_id: str | None
) -> Token:
    """Revoke a token; revoking a revoked token changes nothing. NotFound when unknown."""
    async with transaction(db) as conn:
        row = await conn.fetchrow(
            f"UPDATE tokens SET revoked_at = clock_timestamp() "
            f"WHERE id = $1 AND revoked_at IS NULL RETURNING {_TOKEN_COLUMNS}",
            token_id,
        )
        if row is None:
            existing = await conn.fetchrow(
                f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE id = $1", token_id
            )
            if existing is None:
                raise NotFound(f"token {token_id!r} does not exist")
            return record_of(existing, Token)
        await write_audit(
            conn,
            actor=actor,
            action="token.revoke",
            request_id=request_id,
            detail={"token": token_id},
        )
        return record_of(row, Token)
