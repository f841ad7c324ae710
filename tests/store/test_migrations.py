"""The migration runner: once, in order, checksummed, under an advisory lock."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import asyncpg
import pytest

from registry.store.migrations import (
    MIGRATIONS_ENV,
    MigrationError,
    at_head,
    find_migrations_dir,
    load_migrations,
    migrate,
    pending_migrations,
)

REPO_MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def test_the_repository_migrations_are_found() -> None:
    assert find_migrations_dir() == REPO_MIGRATIONS
    names = [m.name for m in load_migrations()]
    assert names[0] == "0001_init.sql"
    assert names == sorted(names)


def test_the_environment_variable_points_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "0001_x.sql").write_text("SELECT 1;")
    monkeypatch.setenv(MIGRATIONS_ENV, str(tmp_path))
    assert find_migrations_dir() == tmp_path


def test_badly_named_and_duplicate_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "init.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"init\.sql"):
        load_migrations(tmp_path)
    (tmp_path / "init.sql").unlink()
    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0001_b.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="share the number 0001"):
        load_migrations(tmp_path)


def test_line_endings_do_not_change_the_checksum(tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_bytes(b"SELECT 1;\nSELECT 2;\n")
    lf = load_migrations(tmp_path)[0].checksum
    (tmp_path / "0001_a.sql").write_bytes(b"SELECT 1;\r\nSELECT 2;\r\n")
    assert load_migrations(tmp_path)[0].checksum == lf


async def test_applies_once_and_rerun_is_a_no_op(empty_database_url: str) -> None:
    conn = await asyncpg.connect(empty_database_url)
    try:
        assert not await at_head(conn)
        applied = await migrate(conn)
        assert applied == [m.name for m in load_migrations()]
        assert await at_head(conn)
        assert await migrate(conn) == []
        rows = await conn.fetch("SELECT name, checksum FROM schema_migrations ORDER BY name")
        assert [(r["name"], r["checksum"]) for r in rows] == [
            (m.name, m.checksum) for m in load_migrations()
        ]
        assert await conn.fetchval("SELECT to_regclass('versions') IS NOT NULL")
    finally:
        await conn.close()


async def test_a_changed_checksum_stops_with_the_file_name(
    empty_database_url: str, tmp_path: Path
) -> None:
    shutil.copytree(REPO_MIGRATIONS, tmp_path, dirs_exist_ok=True)
    await migrate(empty_database_url, tmp_path)
    init = tmp_path / "0001_init.sql"
    init.write_text(init.read_text() + "\n-- an edit after the fact\n")
    (tmp_path / "9999_later.sql").write_text("CREATE TABLE later (id int);")
    with pytest.raises(MigrationError, match=r"0001_init\.sql was changed after it was applied"):
        await migrate(empty_database_url, tmp_path)
    conn = await asyncpg.connect(empty_database_url)
    try:
        assert not await at_head(conn, tmp_path)
        # Nothing after the changed file ran either.
        assert not await conn.fetchval("SELECT to_regclass('later') IS NOT NULL")
    finally:
        await conn.close()


async def test_new_files_apply_in_order_and_out_of_order_ones_are_refused(
    empty_database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a (id int);")
    (tmp_path / "0003_c.sql").write_text("CREATE TABLE c (id int REFERENCES b (id));")
    (tmp_path / "0002_b.sql").write_text("CREATE TABLE b (id int PRIMARY KEY);")
    assert await migrate(empty_database_url, tmp_path) == [
        "0001_a.sql",
        "0002_b.sql",
        "0003_c.sql",
    ]
    (tmp_path / "0004_d.sql").write_text("CREATE TABLE d (id int);")
    conn = await asyncpg.connect(empty_database_url)
    try:
        assert not await at_head(conn, tmp_path)
        assert await pending_migrations(conn, tmp_path) == ["0004_d.sql"]
        assert await migrate(conn, tmp_path) == ["0004_d.sql"]
        assert await at_head(conn, tmp_path)
    finally:
        await conn.close()
    (tmp_path / "0000_early.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"0000_early\.sql is not applied but 0004_d\.sql is"):
        await migrate(empty_database_url, tmp_path)


async def test_a_failing_migration_is_rolled_back_and_named(
    empty_database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a (id int);")
    (tmp_path / "0002_bad.sql").write_text("CREATE TABLE b (id int); SELECT * FROM nowhere;")
    with pytest.raises(MigrationError, match=r"0002_bad\.sql failed"):
        await migrate(empty_database_url, tmp_path)
    conn = await asyncpg.connect(empty_database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == 1
        assert not await conn.fetchval("SELECT to_regclass('b') IS NOT NULL")
    finally:
        await conn.close()


async def test_concurrent_runners_apply_once(empty_database_url: str, tmp_path: Path) -> None:
    # A slow first migration keeps the window open: without the advisory lock
    # both runners would apply it, and the second CREATE TABLE would fail.
    (tmp_path / "0001_slow.sql").write_text(
        "SELECT pg_sleep(0.5); CREATE TABLE slow (id int); INSERT INTO slow VALUES (1);"
    )
    (tmp_path / "0002_next.sql").write_text("INSERT INTO slow VALUES (2);")
    results = await asyncio.gather(*(migrate(empty_database_url, tmp_path) for _ in range(4)))
    assert sorted(results, key=len) == [[], [], [], ["0001_slow.sql", "0002_next.sql"]]
    conn = await asyncpg.connect(empty_database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == 2
        assert await conn.fetchval("SELECT array_agg(id ORDER BY id) FROM slow") == [1, 2]
    finally:
        await conn.close()
