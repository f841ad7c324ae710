"""`registry export` and `registry import` as an operator runs them: on the databases, and
through the HTTP API, a pipe between the two, and what each refuses."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.ops.records import table_rows, toolset_tags
from tests.serving import REGISTRY, env_with


async def registry(*argv: str, shell: str | None = None) -> tuple[int, str]:
    """Exit code and stderr of `registry ARGV` (or of a shell pipeline of them), run in a
    thread: the registries it talks to are served by this test's event loop."""
    command = ["bash", "-c", shell] if shell else [*REGISTRY, *argv]
    done = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, env=env_with(), timeout=120, check=False
    )
    return done.returncode, done.stderr.decode()


async def test_export_then_import_through_the_databases(
    source: Registry, target: Registry, tmp_path: Path
) -> None:
    file = tmp_path / "registry.jsonl"
    code, err = await registry(
        "export", "--output", str(file), "--database-url", source.database_url,
        "--namespace", "billing", "--namespace", "quiet",
    )  # fmt: skip
    assert code == 0, err
    assert err == (
        "exported 28 records (2 namespaces, 2 tools, 5 versions, 1 converter, 1 alias, 1 policy, "
        f"2 capability records, 14 audit events) to {file}\n"
    )
    assert oct(file.stat().st_mode & 0o777) == "0o600", "an export holds the audit log"
    code, err = await registry("import", str(file), "--database-url", target.database_url)
    assert code == 0, err
    assert err.startswith("imported billing, quiet (2 namespaces, 2 tools, 5 versions, ")
    assert err.rstrip().endswith("; 5 digests verified")
    tags = ("billing", "quiet")
    assert await toolset_tags(target.client, tags) == await toolset_tags(source.client, tags)
    mine = await table_rows(target.database_url, usage=False)
    theirs = await table_rows(source.database_url, usage=False)
    for table, rows in mine.items():
        wanted = [r for r in theirs[table] if r.get("namespace", r.get("name")) in tags]
        assert rows == wanted, table

    code, err = await registry("import", str(file), "--database-url", target.database_url)
    assert code == 1, "the registry refused it: the namespaces exist"
    assert err.count("\n") == 1 and "line 1: namespaces billing, quiet already exist here" in err


async def test_a_pipe_from_one_registry_to_another_over_http(
    source: Registry, target: Registry
) -> None:
    src = f"--url {source.url} --token {ADMIN_TOKEN}"
    dst = f"--url {target.url} --token {ADMIN_TOKEN}"
    code, err = await registry(
        shell=f"{REGISTRY[-1]} export -o - --namespace docs {src} | "
        f"{REGISTRY[-1]} import - --mode import {dst}"
    )
    assert code == 0, err
    assert (
        "imported docs (1 namespace, 1 tool, 4 versions, 2 reviews, 1 converter, 1 policy, "
    ) in err
    assert err.rstrip().endswith("; 4 digests verified; mode import")
    assert await toolset_tags(target.client, ("docs",)) == await toolset_tags(
        source.client, ("docs",)
    )


async def test_what_export_and_import_refuse(
    source: Registry, database_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "missing.jsonl"
    code, err = await registry(
        "export", "-o", str(out), "--namespace", "nowhere", "--database-url", source.database_url
    )
    assert (code, err) == (2, "registry: namespace nowhere does not exist\n")
    assert list(tmp_path.iterdir()) == [], "nothing written, not even a part"
    code, err = await registry(
        "export", "-o", str(out), "--url", source.url, "--database-url", source.database_url
    )
    assert code == 2 and "not both" in err
    good = tmp_path / "good.jsonl"
    code, err = await registry("export", "-o", str(good), "--database-url", source.database_url)
    assert code == 0, err
    lines = good.read_bytes().splitlines(keepends=True)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"".join([*lines[:4], lines[4].replace(b"SQL", b"sql"), *lines[5:]]))
    code, err = await registry("import", str(tampered), "--database-url", database_url)
    assert code == 2
    assert err.startswith(f"registry: {tampered}: line 5: version 1 of billing/db.query: ")
    assert err.count("\n") == 1 and "Traceback" not in err
    code, err = await registry("import", str(tmp_path / "absent.jsonl"))
    assert (code, err) == (2, f"registry: {tmp_path / 'absent.jsonl'}: No such file or directory\n")
