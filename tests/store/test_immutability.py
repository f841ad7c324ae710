"""The database itself refuses to rewrite history, whatever SQL is sent to it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from registry import store
from registry.store.rows import encode_json
from tests.store.helpers import accept, digest_of, variant

NS = "billing"
TOOL = "db.query"
WHERE = f"WHERE namespace = '{NS}' AND tool = '{TOOL}' AND version = 1"


@pytest.fixture
async def pool(db_pool: asyncpg.Pool) -> asyncpg.Pool:
    for n in (1, 2):
        definition = variant(n)
        await store.publish(
            db_pool,
            NS,
            TOOL,
            definition,
            digest_of(definition),
            accept,
            actor=None,
            request_id=None,
        )
    await store.register_converter(db_pool, NS, TOOL, 1, 2, [], actor=None, request_id=None)
    await store.put_capabilities(db_pool, NS, {"capabilities": {}}, actor=None, request_id=None)
    await store.create_token(
        db_pool, store.hash_token("secret"), ["*:admin"], actor=None, request_id=None
    )
    return db_pool


async def _refused(pool: asyncpg.Pool, sql: str, sqlstate: str, match: str) -> None:
    with pytest.raises(asyncpg.PostgresError, match=match) as raised:
        await pool.execute(sql)
    assert raised.value.sqlstate == sqlstate


@pytest.mark.parametrize(
    "assignment",
    [
        """definition = '{"name": "db.query"}'""",
        "digest = 'sha256:" + "0" * 64 + "'",
        "version = 7",
        "tool = 'db.other'",
        "created_at = now() - interval '1 day'",
        # what a version accepted on purpose decides its routes: never rewritten
        """acceptances = '[{"kind": "property-removed", "path": "/x"}]'""",
    ],
)
async def test_a_stored_version_cannot_be_rewritten(pool: asyncpg.Pool, assignment: str) -> None:
    await _refused(
        pool, f"UPDATE versions SET {assignment} {WHERE}", "RG001", "only its state and sunset"
    )


async def test_versions_cannot_be_deleted(pool: asyncpg.Pool) -> None:
    await _refused(pool, f"DELETE FROM versions {WHERE}", "RG001", "immutable")
    await _refused(pool, "TRUNCATE versions CASCADE", "RG001", "immutable")
    assert await pool.fetchval("SELECT count(*) FROM versions") == 2


async def test_states_only_move_forward(pool: asyncpg.Pool) -> None:
    await pool.execute(f"UPDATE versions SET state = 'deprecated' {WHERE}")
    await _refused(pool, f"UPDATE versions SET state = 'active' {WHERE}", "RG002", "forward")
    await pool.execute(f"UPDATE versions SET state = 'retired' {WHERE}")
    for state in ("active", "deprecated"):
        await _refused(pool, f"UPDATE versions SET state = '{state}' {WHERE}", "RG002", "forward")
    await _refused(pool, f"UPDATE versions SET sunset = now() {WHERE}", "RG002", "final")
    # An active version has no sunset.
    with pytest.raises(asyncpg.CheckViolationError):
        await pool.execute(
            "UPDATE versions SET sunset = now() WHERE namespace = $1 AND version = 2", NS
        )


async def test_a_passed_sunset_is_final_too(pool: asyncpg.Pool) -> None:
    past = datetime.now(UTC) - timedelta(minutes=1)
    await pool.execute(f"UPDATE versions SET state = 'deprecated', sunset = $1 {WHERE}", past)
    future = datetime.now(UTC) + timedelta(days=1)
    await _refused(
        pool, f"UPDATE versions SET sunset = '{future.isoformat()}' {WHERE}", "RG002", "final"
    )
    # Writing down the retirement it already has is allowed.
    await pool.execute(f"UPDATE versions SET state = 'retired' {WHERE}")


async def test_a_sunset_may_move_but_not_disappear(pool: asyncpg.Pool) -> None:
    await pool.execute(
        f"UPDATE versions SET state = 'deprecated', sunset = now() + interval '1 day' {WHERE}"
    )
    await pool.execute(f"UPDATE versions SET sunset = now() + interval '2 days' {WHERE}")
    await _refused(pool, f"UPDATE versions SET sunset = NULL {WHERE}", "RG002", "not removed")


async def test_numbers_and_digests_are_unique_per_tool(pool: asyncpg.Pool) -> None:
    definition = variant(1)
    insert = (
        "INSERT INTO versions (namespace, tool, version, digest, definition) "
        "VALUES ($1, $2, $3, $4, $5::text::jsonb)"
    )
    other = variant(3)
    with pytest.raises(asyncpg.UniqueViolationError):
        await pool.execute(insert, NS, TOOL, 1, digest_of(other), encode_json(other))
    with pytest.raises(asyncpg.UniqueViolationError):
        await pool.execute(insert, NS, TOOL, 3, digest_of(definition), encode_json(definition))


@pytest.mark.parametrize(
    "sql",
    [
        'UPDATE converters SET ops = \'[{"op": "drop", "path": "/x"}]\'',
        "DELETE FROM converters",
        "UPDATE capabilities SET document = '{}'",
        "DELETE FROM capabilities",
        "UPDATE audit_events SET actor = 'someone else'",
        "DELETE FROM audit_events",
        "TRUNCATE audit_events",
        "UPDATE tokens SET scopes = '{*:admin,extra}'",
        "DELETE FROM tokens",
    ],
)
async def test_other_records_are_immutable(pool: asyncpg.Pool, sql: str) -> None:
    await _refused(pool, sql, "RG001", "immutable|only be revoked")


async def test_a_token_is_revoked_once(pool: asyncpg.Pool) -> None:
    await pool.execute("UPDATE tokens SET revoked_at = now()")
    await _refused(pool, "UPDATE tokens SET revoked_at = now()", "RG001", "only be revoked")
    await _refused(pool, "UPDATE tokens SET revoked_at = NULL", "RG001", "only be revoked")
