"""`registry doctor` against a healthy deployment, then against the same one broken.

The deployment is `registry serve` on an embedded PostgreSQL, as an operator
runs it. The faults are real ones: the data directory and a password file
opened to other users, a role given CREATEDB and PUBLIC given CONNECT, a table
the superuser owns, a migration the database lacks (a newer release's doctor),
a second replica started with a file-descriptor limit below what its
connection limit needs. One is not: a replica's clock an hour fast, which
cannot be had on a shared machine, is made by starting that replica with its
`datetime` replaced (its reports still go through the real code and table).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from registry.server import running_embedded_dsn
from registry.store.migrations import find_migrations_dir
from tests.ops.test_backup import superuser_url
from tests.ports import free_port
from tests.serving import REGISTRY, Served, env_with, spawner

SKEWED_REPLICA = """
import resource, sys
from datetime import datetime, timedelta
resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))
import registry.api.replicas as replicas
class Skewed(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + timedelta(hours=1)
replicas.datetime = Skewed
from registry.cli import main
sys.exit(main(sys.argv[1:]))
"""


def doctor(*argv: str, **env: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [*REGISTRY, "doctor", *argv],
        check=False,
        capture_output=True,
        text=True,
        env=env_with(**env),
        timeout=60,
    )
    assert done.stderr == "", done.stderr
    return done.returncode, done.stdout.splitlines()


@pytest.fixture(scope="module")
def deployment() -> Iterator[tuple[Served, Path]]:
    root = Path(tempfile.mkdtemp(prefix="registry-doctor-"))
    start = spawner(root)
    try:
        served = next(start)("--data-dir", str(root / "data"), REGISTRY_BOOTSTRAP_TOKEN="t")
        yield served, root / "data"
    finally:
        next(start, None)  # the spawner's teardown: its servers stopped (close() skips it)
        shutil.rmtree(root, ignore_errors=True)


def test_a_healthy_deployment_has_no_problem(deployment: tuple[Served, Path]) -> None:
    served, data_dir = deployment
    assert doctor("--data-dir", str(data_dir), "--url", served.url) == (
        0,
        ["no problems (8 checks)"],
    )


async def _break_the_database(data_dir: Path) -> None:
    admin = await asyncpg.connect(superuser_url(data_dir))
    try:
        await admin.execute("ALTER ROLE registry CREATEDB")
        await admin.execute("GRANT CONNECT ON DATABASE registry TO PUBLIC")
        await admin.execute("CREATE TABLE stray (x integer)")
    finally:
        await admin.close()


async def _replicas(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM replicas"))
    finally:
        await conn.close()


def test_a_broken_deployment_gets_one_line_per_problem(
    deployment: tuple[Served, Path], tmp_path: Path
) -> None:
    import asyncio

    _, data_dir = deployment
    dsn = running_embedded_dsn(str(data_dir))
    assert dsn is not None
    asyncio.run(_break_the_database(data_dir))
    data_dir.chmod(0o755)
    (data_dir / "app-password").chmod(0o644)
    newer = tmp_path / "migrations"
    shutil.copytree(find_migrations_dir(), newer)
    (newer / "0099_a_newer_release.sql").write_text("CREATE TABLE newer (x integer);\n")
    wrapper = tmp_path / "skewed_replica.py"
    wrapper.write_text(SKEWED_REPLICA)
    port = free_port()
    replica = subprocess.Popen(
        [
            sys.executable,
            str(wrapper),
            "serve",
            "--database-url",
            dsn,
            "--port",
            str(port),
            "--max-connections",
            "500",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env_with(),
    )
    try:
        deadline = time.monotonic() + 60
        while asyncio.run(_replicas(dsn)) < 2:
            assert replica.poll() is None, "the second replica exited"
            assert time.monotonic() < deadline, "the second replica never reported"
            time.sleep(0.1)
        code, lines = doctor(
            "--data-dir",
            str(data_dir),
            "--url",
            f"http://127.0.0.1:{free_port()}",
            REGISTRY_MIGRATIONS_DIR=str(newer),
        )
    finally:
        replica.terminate()
        replica.wait(timeout=30)
    assert code == 1
    by_check: dict[str, list[str]] = {}
    for line in lines[:-1]:
        check, _, problem = line.partition(": ")
        by_check.setdefault(check, []).append(problem)
    assert lines[-1] == f"{len(lines) - 1} problems (8 checks)"
    assert sorted(by_check) == ["clock", "data-dir", "limits", "migrations", "roles", "service"]
    data_dir_lines = " | ".join(by_check["data-dir"])
    assert f"{data_dir} is mode 0755" in data_dir_lines
    assert f"{data_dir / 'app-password'} is mode 0644, not 0600" in data_dir_lines
    assert by_check["migrations"] == [
        f"1 of {len(os.listdir(newer))} not applied (0099_a_newer_release.sql): "
        "run `registry migrate`"
    ]
    roles = " | ".join(by_check["roles"])
    assert "holds CREATEDB" in roles
    assert "table stray is owned by postgres" in roles
    assert "any role (PUBLIC) may connect" in roles
    (skew,) = by_check["clock"]
    # an hour ahead, as the fixture set it, give or take the time the probe took
    seconds = re.search(r"'s clock is ([0-9.]+) s ahead of the database's", skew)
    assert seconds is not None and abs(float(seconds.group(1)) - 3600) < 60, skew
    (limits,) = by_check["limits"]
    assert "500 connections need about" in limits and "its limit is 200" in limits
    (service,) = by_check["service"]
    assert service.startswith("http://127.0.0.1:") and "ConnectError" in service


def test_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    port = free_port()
    code, lines = doctor("--database-url", f"postgresql://registry:x@127.0.0.1:{port}/registry")
    assert code == 1
    assert len(lines) == 2 and lines[0].startswith("database: cannot connect to the database")
    assert "x@" not in lines[0], "the password is not printed"
    assert lines[1] == "1 problem (6 checks)"


def test_no_registry_under_the_data_directory_is_said(tmp_path: Path) -> None:
    code, lines = doctor("--data-dir", str(tmp_path / "nothing"))
    assert code == 1
    assert lines[0] == f"data-dir: {tmp_path / 'nothing'} holds no registry (no pgdata/ there)"
    assert lines[1].startswith("database: no registry is serving on")
