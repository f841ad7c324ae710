"""The embedded PostgreSQL: first start, reuse, ownership, and recovery from killed runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import psutil
import pytest

from registry.store.embedded import EmbeddedPostgres, EmbeddedPostgresError

_FAST = {"fsync": "off", "synchronous_commit": "off"}


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    """One cluster for the module (initdb once); each test leaves it stopped."""
    root = Path(tempfile.mkdtemp(prefix="registry-embedded-test-"))
    path = root / ".registry"
    try:
        yield path
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def _postmaster_pid(data_dir: Path) -> int | None:
    pid_file = data_dir / "pgdata" / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """True once `pid` has exited (a zombie not yet reaped by init counts as exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


async def _query(dsn: str, sql: str) -> object:
    conn = await asyncpg.connect(dsn)
    try:
        if ";" in sql:
            return await conn.execute(sql)
        return await conn.fetchval(sql)
    finally:
        await conn.close()


async def test_first_start_initialises_and_later_starts_reuse(data_dir: Path) -> None:
    async with EmbeddedPostgres(data_dir, settings=_FAST) as pg:
        assert pg.dsn().startswith("postgresql://postgres:")
        assert "@127.0.0.1:" in pg.dsn()
        await _query(pg.dsn(), "CREATE TABLE kept (id int); INSERT INTO kept VALUES (42)")
        assert (data_dir / "pgdata" / "PG_VERSION").exists()
        assert (data_dir / "password").stat().st_mode & 0o777 == 0o600
        postmaster = psutil.Process(_postmaster_pid(data_dir))
        # Never as root: PostgreSQL refuses, so root runs it as an unprivileged user.
        assert postmaster.uids().effective != 0
    assert _postmaster_pid(data_dir) is None
    assert not pg.running

    with EmbeddedPostgres(data_dir, settings=_FAST) as again:
        assert await _query(again.dsn(), "SELECT id FROM kept") == 42


async def test_the_password_is_required(data_dir: Path) -> None:
    with EmbeddedPostgres(data_dir, settings=_FAST) as pg:
        wrong = pg.dsn().replace(pg.dsn().split(":")[2].split("@")[0], "wrong")
        with pytest.raises(asyncpg.InvalidPasswordError):
            await _query(wrong, "SELECT 1")


def test_a_given_port_is_used(data_dir: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with EmbeddedPostgres(data_dir, port=port, settings=_FAST) as pg:
        assert pg.port == port
        assert pg.dsn().endswith(f":{port}/postgres")


def test_a_second_owner_is_refused(data_dir: Path) -> None:
    with (
        EmbeddedPostgres(data_dir, settings=_FAST),
        pytest.raises(EmbeddedPostgresError, match="in use by another process"),
    ):
        EmbeddedPostgres(data_dir, settings=_FAST).start()


async def test_a_stale_pid_file_is_ignored(data_dir: Path) -> None:
    # A PID file naming a live process that is not our server (PID reuse after a crash).
    pid_file = data_dir / "pgdata" / "postmaster.pid"
    pid_file.write_text(f"{os.getpid()}\n{data_dir / 'pgdata'}\n0\n5432\n\n127.0.0.1\n0 0\nready\n")
    if os.geteuid() == 0:
        os.chown(pid_file, (data_dir / "pgdata").stat().st_uid, -1)
    with EmbeddedPostgres(data_dir, settings=_FAST) as pg:
        assert _postmaster_pid(data_dir) != os.getpid()
        assert await _query(pg.dsn(), "SELECT 1") == 1


async def test_a_server_left_by_a_killed_run_is_replaced(data_dir: Path) -> None:
    script = (
        "import sys, time\n"
        "from registry.store.embedded import EmbeddedPostgres\n"
        "pg = EmbeddedPostgres(sys.argv[1], settings={'fsync': 'off'})\n"
        "pg.start()\n"
        "print(pg.port, flush=True)\n"
        "time.sleep(120)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip().isdigit()
        orphan = _postmaster_pid(data_dir)
        assert orphan is not None
    finally:
        owner.send_signal(signal.SIGKILL)  # no atexit, no stop(): the server stays behind
        owner.wait()
    assert not _wait_gone(orphan, timeout=0.2)

    with EmbeddedPostgres(data_dir, settings=_FAST) as pg:
        assert await _query(pg.dsn(), "SELECT 1") == 1
        assert _postmaster_pid(data_dir) != orphan
        assert _wait_gone(orphan)


async def test_a_killed_postmaster_is_recovered(data_dir: Path) -> None:
    pg = EmbeddedPostgres(data_dir, settings=_FAST)
    pg.start()
    try:
        pid = _postmaster_pid(data_dir)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid)
    finally:
        pg.stop()  # its server is gone: stop() only lets go of the data directory
    assert not pg.running
    with EmbeddedPostgres(data_dir, settings=_FAST) as again:
        assert await _query(again.dsn(), "SELECT 1") == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs PostgreSQL as another user")
def test_a_data_dir_closed_while_serving_still_stops(data_dir: Path) -> None:
    """`chmod 700` of the data directory takes the server user's way to pgdata (docs/
    operations.md's doctor story did): the stop opens it again, nothing is left."""
    server = EmbeddedPostgres(data_dir, settings=_FAST)
    server.start()
    pid = _postmaster_pid(data_dir)
    assert pid is not None
    os.chmod(data_dir, 0o700)
    server.stop()
    assert _wait_gone(pid)
    assert not server.running
