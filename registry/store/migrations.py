"""Schema migrations: plain SQL files applied in order, once, under an advisory lock.

Files are named `NNNN_description.sql` (`0001_init.sql`, `0002_...`) and are
applied in name order, each in its own transaction. The table
`schema_migrations` records every applied file with the SHA-256 of its text
(line endings normalised to LF, so a Windows checkout hashes the same). An
applied file whose checksum changed stops `migrate()` with a `MigrationError`
naming it: applied migrations are never edited, a new file is added instead.
A file that sorts before one already applied but is not applied itself is
refused too (it would run out of order). Applied files the code does not know
(a newer release ran against this database) are tolerated, so that a rollback
of the application can still start.

Every runner takes one session-level advisory lock for the whole run, so
replicas starting together serialise: the first applies, the others then find
nothing to do.

Migrations run while older replicas serve (docs/operations.md, "Upgrades").
A migration that changes a table waits for a lock on it, and while it waits
every later query on that table queues behind it: so each migration runs
with `lock_timeout` (`LOCK_TIMEOUT` seconds), and one that cannot get its
locks in time is rolled back and tried again (`LOCK_ATTEMPTS` times in all)
rather than stall the replicas' reads for as long as a long transaction lasts.

Where the files are found, first match wins:

1. the `directory` argument, or the `REGISTRY_MIGRATIONS_DIR` environment variable;
2. a source checkout: `migrations/` beside `pyproject.toml` above the `registry`
   package (editable installs and `python -m registry` from the repository);
3. an installed wheel: `<prefix>/share/mcp-tool-registry/migrations/` (the wheel
   ships the repository's `migrations/*.sql` there as data files), for the
   environment's prefix and the user scheme.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import asyncpg  # type: ignore[import-untyped, unused-ignore]
import msgspec

from registry.store._db import Connection, Db

__all__ = [
    "LOCK_ATTEMPTS",
    "LOCK_TIMEOUT",
    "MIGRATIONS_ENV",
    "Migration",
    "MigrationError",
    "applied_migrations",
    "at_head",
    "find_migrations_dir",
    "load_migrations",
    "migrate",
    "pending_migrations",
]

MIGRATIONS_ENV: Final = "REGISTRY_MIGRATIONS_DIR"
# Any fixed 64-bit key works; this one spells "registry".
_LOCK_KEY: Final = 8243108395577799289
_NAME = re.compile(r"^([0-9]{4})_[A-Za-z0-9_.-]+\.sql$")
_DATA_SUBDIR = Path("share") / "mcp-tool-registry" / "migrations"
LOCK_TIMEOUT: Final = 5.0  # seconds a migration may wait for a lock before it is retried
LOCK_ATTEMPTS: Final = 3

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    name        text PRIMARY KEY,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""


class MigrationError(Exception):
    """The migrations cannot be applied as they are (changed checksum, bad order, bad file)."""


class Migration(msgspec.Struct, frozen=True):
    name: str
    checksum: str
    sql: str


def find_migrations_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding the `NNNN_*.sql` files (see the module docstring)."""
    if directory is not None:
        return _existing(Path(directory))
    env = os.environ.get(MIGRATIONS_ENV)
    if env:
        return _existing(Path(env))
    candidates: list[Path] = []
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        candidates.append(checkout / "migrations")
    candidates.append(Path(sysconfig.get_path("data")) / _DATA_SUBDIR)
    candidates.append(Path(sys.prefix) / _DATA_SUBDIR)
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        candidates.append(Path(sysconfig.get_path("data", user_scheme)) / _DATA_SUBDIR)
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob("*.sql")):
            return candidate
    raise MigrationError(
        "no migrations directory found; looked in: "
        + ", ".join(str(c) for c in candidates)
        + f" (set {MIGRATIONS_ENV} to point at one)"
    )


def _existing(path: Path) -> Path:
    if not path.is_dir():
        raise MigrationError(f"migrations directory {path} does not exist")
    return path


def load_migrations(directory: str | os.PathLike[str] | None = None) -> list[Migration]:
    """The migration files in name order, with their checksums."""
    folder = find_migrations_dir(directory)
    found: list[Migration] = []
    numbers: dict[str, str] = {}
    for path in sorted(folder.glob("*.sql")):
        match = _NAME.fullmatch(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_description.sql")
        if match.group(1) in numbers:
            raise MigrationError(
                f"{path.name} and {numbers[match.group(1)]} share the number {match.group(1)}"
            )
        numbers[match.group(1)] = path.name
        text = path.read_bytes().replace(b"\r\n", b"\n")
        found.append(
            Migration(
                name=path.name,
                checksum=hashlib.sha256(text).hexdigest(),
                sql=text.decode("utf-8"),
            )
        )
    return found


async def applied_migrations(conn: Connection) -> dict[str, str]:
    """Applied file name -> checksum; empty when the table does not exist yet."""
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return {}
    rows = await conn.fetch("SELECT name, checksum FROM schema_migrations ORDER BY name")
    return {row["name"]: row["checksum"] for row in rows}


def _plan(migrations: Sequence[Migration], applied: dict[str, str]) -> list[Migration]:
    """The files still to apply; raises on a changed checksum or an out-of-order file."""
    pending: list[Migration] = []
    last_applied = max(applied, default="")
    for migration in migrations:
        checksum = applied.get(migration.name)
        if checksum is None:
            if migration.name < last_applied:
                raise MigrationError(
                    f"migration {migration.name} is not applied but {last_applied} is: "
                    "it would run out of order; give it a number after the last applied file"
                )
            pending.append(migration)
        elif checksum != migration.checksum:
            raise MigrationError(
                f"migration {migration.name} was changed after it was applied "
                f"(checksum {checksum[:12]}... in the database, {migration.checksum[:12]}... "
                "on disk); restore the file and put the change in a new migration"
            )
    return pending


async def pending_migrations(
    conn: Connection, directory: str | os.PathLike[str] | None = None
) -> list[str]:
    """Names of the files `migrate()` would apply (raises `MigrationError` like it)."""
    return [m.name for m in _plan(load_migrations(directory), await applied_migrations(conn))]


async def at_head(conn: Db, directory: str | os.PathLike[str] | None = None) -> bool:
    """True when every migration file is applied with an unchanged checksum (readiness)."""
    migrations = load_migrations(directory)
    if isinstance(conn, asyncpg.Pool):
        async with conn.acquire() as acquired:
            applied = await applied_migrations(acquired)
    else:
        applied = await applied_migrations(conn)
    return all(applied.get(m.name) == m.checksum for m in migrations)


async def migrate(
    db: Db | str,
    directory: str | os.PathLike[str] | None = None,
    *,
    lock_timeout: float = LOCK_TIMEOUT,
    attempts: int = LOCK_ATTEMPTS,
) -> list[str]:
    """Apply the pending migrations; returns the names applied by this call.

    `db` is a connection (not inside a transaction), a pool or a DSN. Each migration
    waits at most `lock_timeout` seconds for a lock, `attempts` times.
    """
    migrations = load_migrations(directory)
    run = _Run(lock_timeout, attempts)
    if isinstance(db, str):
        conn = await asyncpg.connect(db)
        try:
            return await _migrate(conn, migrations, run)
        finally:
            await conn.close()
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as acquired:
            return await _migrate(acquired, migrations, run)
    return await _migrate(db, migrations, run)


class _Run(msgspec.Struct, frozen=True):
    lock_timeout: float
    attempts: int


async def _apply(conn: Connection, migration: Migration, run: _Run) -> None:
    """One migration in its own transaction, retried when it waits too long for a lock."""
    for attempt in range(1, run.attempts + 1):
        try:
            async with conn.transaction():
                await conn.execute(
                    "SELECT set_config('lock_timeout', $1, true)",
                    f"{max(int(run.lock_timeout * 1000), 1)}ms",
                )
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)",
                    migration.name,
                    migration.checksum,
                )
            return
        except asyncpg.LockNotAvailableError as exc:
            if attempt == run.attempts:
                raise MigrationError(
                    f"migration {migration.name} waited {run.lock_timeout:g} s for a lock "
                    f"{run.attempts} times ({exc}): a long transaction holds a table it "
                    "changes; nothing of it was applied: run the migrations again"
                ) from exc
            await asyncio.sleep(run.lock_timeout)
        except asyncpg.InsufficientPrivilegeError as exc:
            raise MigrationError(
                f"migration {migration.name} is pending and this database role may not "
                f"apply it ({exc}): run `registry migrate` with the owner role's URL "
                "(deploy/README.md, 'The database roles')"
            ) from exc
        except asyncpg.PostgresError as exc:
            raise MigrationError(f"migration {migration.name} failed: {exc}") from exc


async def _migrate(conn: Connection, migrations: Sequence[Migration], run: _Run) -> list[str]:
    if conn.is_in_transaction():
        raise MigrationError("migrate() needs a connection outside any transaction")
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        # Only when it is missing: the app's role, which may not create tables
        # (registry.store.roles), starts with nothing to apply.
        if not await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
            try:
                await conn.execute(_CREATE_TABLE)
            except asyncpg.InsufficientPrivilegeError as exc:
                raise MigrationError(
                    f"the database has no registry schema and this role may not create it "
                    f"({exc}): run `registry migrate` with the owner role's URL"
                ) from exc
        pending = _plan(migrations, await applied_migrations(conn))
        done: list[str] = []
        for migration in pending:
            await _apply(conn, migration, run)
            done.append(migration.name)
        return done
    finally:
        if not conn.is_closed():
            await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
