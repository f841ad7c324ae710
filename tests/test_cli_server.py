"""The service verbs of the CLI: `migrate`, `token`, `serve` (a real subprocess), `sync`.

`serve` runs as `.venv/bin/registry serve` in a subprocess and is stopped with
SIGTERM, as an orchestrator would; the in-process app of `tests/api/conftest.py`
serves the `token` and `sync` tests.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from registry.cli import main
from registry.sdk import Toolset
from registry.store import hash_token
from registry.store.migrations import load_migrations
from tests.api.conftest import ADMIN_TOKEN, free_port, serve
from tests.fixtures.seeds import DB_QUERY_V3
from tests.serving import REGISTRY, env_with

VERSIONS = "/v1/namespaces/billing/tools/db.query/versions"
LONG_POLLS = 150


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def run_in_thread(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`main()` from an async test: its asyncio.run needs a thread of its own."""
    code = await asyncio.to_thread(main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(err: str, *parts: str) -> None:
    assert err.count("\n") == 1, err
    assert err.startswith("registry: "), err
    assert "Traceback" not in err
    for part in parts:
        assert part in err, err


# -- migrate ------------------------------------------------------------------------------


def test_migrate_applies_then_finds_nothing_to_do(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [m.name for m in load_migrations()]
    code, out, err = run(capsys, "migrate", "--database-url", empty_database_url)
    assert code == 0, err
    assert out.splitlines() == names
    assert "at head" in err

    code, out, err = run(capsys, "migrate", "--database-url", empty_database_url)
    assert (code, out) == (0, "")
    assert "nothing to apply" in err


async def test_migrate_refuses_a_changed_migration(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE schema_migrations SET checksum = repeat('0', 64)")
    finally:
        await conn.close()
    code, out, err = await run_in_thread(capsys, "migrate", "--database-url", database_url)
    assert (code, out) == (2, "")
    assert_one_line_error(err, "was changed after it was applied")


# -- token ----------------------------------------------------------------------------------


async def test_token_create_prints_a_secret_that_authenticates(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await run_in_thread(
        capsys,
        "token",
        "create",
        "--scope",
        "billing:publish",
        "--scope",
        "billing:publish",
        "--description",
        "release pipeline",
        "--database-url",
        database_url,
    )
    assert code == 0, err
    secret = out.strip()
    assert out == secret + "\n" and secret.startswith("mtr_") and len(secret) > 40
    token_id = err.split()[2]
    assert token_id.startswith("tok_") and secret not in err

    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT id, scopes, description FROM tokens WHERE hash = $1", hash_token(secret)
        )
    finally:
        await conn.close()
    assert row is not None
    assert (row["id"], row["scopes"], row["description"]) == (
        token_id,
        ["billing:publish"],
        "release pipeline",
    )

    app = await serve(database_url)
    try:
        async with httpx.AsyncClient(
            base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {secret}"}
        ) as client:
            published = await client.post(VERSIONS, json={"definition": DB_QUERY_V3})
            assert published.status_code == 201, published.text
            other = await client.post(
                "/v1/namespaces/other/tools/db.query/versions", json={"definition": DB_QUERY_V3}
            )
            assert other.status_code == 403

            code, out, err = await run_in_thread(
                capsys, "token", "list", "--database-url", database_url
            )
            assert code == 0, err
            assert token_id in out and "billing:publish" in out and secret not in out
            code, out, err = await run_in_thread(
                capsys, "token", "list", "--format", "json", "--database-url", database_url
            )
            listed = json.loads(out)
            assert [t["id"] for t in listed] == [token_id]
            assert listed[0]["revoked_at"] is None and "hash" not in listed[0]

            code, out, err = await run_in_thread(
                capsys, "token", "revoke", token_id, "--database-url", database_url
            )
            assert code == 0, err
            assert out.startswith(f"{token_id} revoked at ")
            refused = await client.get("/v1/namespaces/billing/toolset")
            assert refused.status_code == 401

            code, out, err = await run_in_thread(
                capsys, "token", "revoke", "tok_nope", "--database-url", database_url
            )
            assert (code, out) == (2, "")
            assert_one_line_error(err, "tok_nope does not exist")
    finally:
        await app.stop()


@pytest.mark.parametrize(
    "verb", [["token", "create", "--scope", "*:admin"], ["token", "list"], ["migrate"]]
)
def test_verbs_refuse_a_data_dir_without_a_registry(
    verb: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only `serve` creates an embedded registry: run elsewhere, the other verbs say
    where they looked, in one line, and build nothing (no second, empty registry)."""
    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    monkeypatch.delenv("REGISTRY_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *verb)
    assert (code, out) == (2, "")
    assert_one_line_error(
        err, f"no registry data directory at {(tmp_path / '.registry').resolve()}", "--data-dir"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("scope", "says"),
    [
        ("billing:write", "'billing:write' is not <namespace>:<action>"),
        ("billing", "'billing' is not <namespace>:<action>"),
        ("Billing:read", "'Billing' is not a namespace"),
    ],
)
def test_token_create_refuses_a_bad_scope(
    scope: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # the scope is checked before any database is touched
    code, out, err = run(
        capsys, "token", "create", "--scope", scope, "--database-url", "postgresql://127.0.0.1:1/x"
    )
    assert (code, out) == (2, "")
    assert_one_line_error(err, says)


# -- serve ------------------------------------------------------------------------------------


def fails(*argv: str, **env: str) -> tuple[int, str]:
    done = subprocess.run(
        [*REGISTRY, "serve", *argv],
        capture_output=True,
        env=env_with(**env),
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr.decode()


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_serve_answers_and_stops_on_sigterm(
    server: str, empty_database_url: str, spawn: Any
) -> None:
    served = spawn(
        "--database-url",
        empty_database_url,
        "--server",
        server,
        REGISTRY_BOOTSTRAP_TOKEN=ADMIN_TOKEN,
    )
    assert httpx.get(served.url + "/healthz").json()["status"] == "ok"
    ready = httpx.get(served.url + "/readyz")
    assert ready.status_code == 200, ready.text
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    created = httpx.put(served.url + "/v1/namespaces/billing", headers=admin)
    assert created.status_code == 201, created.text
    published = httpx.post(served.url + VERSIONS, json={"definition": DB_QUERY_V3}, headers=admin)
    assert published.status_code == 201, published.text
    toolset = httpx.get(served.url + "/v1/namespaces/billing/toolset", headers=admin)
    etag = toolset.headers["etag"]

    # Long-polls in flight, more than granian's default limit of concurrent requests
    # (128): the server still answers, and shutdown ends them, not waiting for their 30 s.
    async def long_polls_then_sigterm() -> tuple[list[httpx.Response], int, float]:
        limits = httpx.Limits(max_connections=LONG_POLLS + 10)
        async with httpx.AsyncClient(
            base_url=served.url, headers=admin, timeout=30, limits=limits
        ) as client:
            polls = [
                asyncio.ensure_future(
                    client.get(
                        "/v1/namespaces/billing/toolset?wait=30", headers={"If-None-Match": etag}
                    )
                )
                for _ in range(LONG_POLLS)
            ]
            await asyncio.sleep(1.0)
            assert not any(poll.done() for poll in polls)
            async with httpx.AsyncClient(base_url=served.url, timeout=5) as other:
                assert (await other.get("/healthz")).status_code == 200
            code, took = await asyncio.to_thread(served.stop, 10.0)
            return await asyncio.gather(*polls), code, took

    polls, code, took = asyncio.run(long_polls_then_sigterm())
    assert {(poll.status_code, poll.headers.get("etag")) for poll in polls} == {(304, etag)}
    assert code == 0, served.errors()
    assert took < 5.0
    events = [line["event"] for line in served.lines()]  # every stdout line is JSON
    assert {"migrations_applied", "serving", "request", "stopping", "stopped"} <= set(events)
    assert any(line.get("server") == server for line in served.lines())


def test_serve_on_the_embedded_postgres(spawn: Any) -> None:
    # Not pytest's tmp_path: run as root, PostgreSQL runs as another user.
    data_dir = Path(tempfile.mkdtemp(prefix="registry-serve-test-"))
    try:
        served = spawn("--data-dir", str(data_dir / "data"), ready=60.0)
        deadline = time.monotonic() + 30
        while (ready := httpx.get(served.url + "/readyz")).status_code != 200:
            assert time.monotonic() < deadline, ready.text
            time.sleep(0.1)
        assert ready.json()["checks"]["migrations"] == "head"
        # `token create` on the same data dir works on the running server.
        created = subprocess.run(
            [
                str(Path(sys.executable).parent / "registry"),
                "token",
                "create",
                "--data-dir",
                str(data_dir / "data"),
                "--scope",
                "*:admin",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert created.returncode == 0, created.stderr
        secret = created.stdout.strip()
        answer = httpx.get(
            served.url + "/v1/namespaces", headers={"Authorization": f"Bearer {secret}"}
        )
        assert answer.status_code == 200, answer.text
        pgdata = (data_dir / "data" / "pgdata").resolve()
        assert pgdata.is_dir()
        code, _ = served.stop(30.0)
        assert code == 0, served.errors()
        assert "embedded_postgres_stopped" in [line["event"] for line in served.lines()]
        assert not [p for p in psutil.process_iter(["name"]) if _works_in(p, pgdata)]
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _works_in(process: psutil.Process, directory: Path) -> bool:
    try:
        return process.info["name"] == "postgres" and Path(process.cwd()) == directory
    except (psutil.Error, OSError):
        return False


def test_serve_refuses_a_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = fails("--database-url", "postgresql://127.0.0.1:1/x", "--port", str(port))
    assert code == 2
    assert_one_line_error(err, f"cannot listen on 127.0.0.1:{port}: the port is in use")


def test_serve_refuses_an_unwritable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, err = fails("--data-dir", str(blocker / "data"), "--port", str(free_port()))
    assert code == 2
    assert_one_line_error(err, f"data directory {blocker / 'data'} is not writable")


def test_serve_refuses_an_unreachable_database() -> None:
    url = f"postgresql://registry:s3cret@127.0.0.1:{free_port()}/registry"
    code, err = fails("--port", str(free_port()), REGISTRY_DATABASE_URL=url)
    assert code == 2
    assert_one_line_error(err, "cannot connect to the database at postgresql://registry:***@")
    assert "s3cret" not in err


async def test_serve_refuses_a_changed_migration(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE schema_migrations SET checksum = repeat('0', 64)")
    finally:
        await conn.close()
    code, err = await asyncio.to_thread(
        fails, "--database-url", database_url, "--port", str(free_port())
    )
    assert code == 2
    assert_one_line_error(err, "migration 0001_init.sql was changed after it was applied")


# -- sync ---------------------------------------------------------------------------------------


async def registry_cli(*argv: str, **env: str) -> tuple[int, bytes, str]:
    proc = await asyncio.create_subprocess_exec(
        *REGISTRY,
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env_with(**env),
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out, err.decode()


async def test_sync_writes_the_payload(database_url: str, tmp_path: Path) -> None:
    app = await serve(database_url)
    try:
        async with httpx.AsyncClient(
            base_url=app.url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30
        ) as client:
            assert (
                await client.post(VERSIONS, json={"definition": DB_QUERY_V3})
            ).status_code == 201
            served = (await client.get("/v1/namespaces/billing/toolset")).content

        output, cache = tmp_path / "billing.json", tmp_path / "cache" / "billing.cache.json"
        code, out, err = await registry_cli(
            "sync",
            "billing",
            "--output",
            str(output),
            "--cache",
            str(cache),
            REGISTRY_URL=app.url,
            REGISTRY_TOKEN=ADMIN_TOKEN,
        )
        assert (code, out) == (0, b""), err
        assert output.read_bytes() == served
        assert Toolset.from_json(served).tool("db.query") is not None
        assert cache.exists()

        code, out, err = await registry_cli(
            "sync", "billing", "--url", app.url, "--token", ADMIN_TOKEN
        )
        assert (code, out) == (0, served), err

        code, out, err = await registry_cli("sync", "billing", "--url", app.url)
        assert (code, out) == (2, b"")
        assert_one_line_error(err, app.url, "401")
    finally:
        await app.stop()

    # The registry is gone: the cache (digest-checked) answers, and says so on stderr.
    code, out, err = await registry_cli(
        "sync", "billing", "--url", app.url, "--cache", str(cache), "--retries", "0"
    )
    assert (code, out) == (0, served)
    assert "cache" in err


async def test_sync_fails_in_one_line_when_the_registry_is_down(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = await registry_cli(
        "sync", "billing", "--url", url, "--retries", "0", "--cache", str(tmp_path / "none.json")
    )
    assert (code, out) == (2, b"")
    assert_one_line_error(err, url, "after 1 attempt:")
    code, out, err = await registry_cli("sync", "billing", "--url", url, "--retries", "0")
    assert (code, out) == (2, b"")
    assert_one_line_error(err, url, "no --cache FILE given")
    assert "cache=PATH" not in err

    code, out, err = await registry_cli("sync", "billing")
    assert (code, out) == (2, b"")
    assert_one_line_error(err, "no registry URL")


async def test_namespace_create_and_list(database_url: str) -> None:
    """Namespaces are explicit: `registry namespace create` makes one (admin on it),
    `list` shows what the token may read."""
    app = await serve(database_url, namespaces=())
    try:
        env = {"REGISTRY_URL": app.url, "REGISTRY_TOKEN": ADMIN_TOKEN}
        assert await registry_cli("namespace", "create", "billing", **env) == (
            0,
            b"namespace billing: created\n",
            "",
        )
        code, out, _ = await registry_cli("namespace", "create", "billing", **env)
        assert (code, out) == (0, b"namespace billing: exists already\n")
        code, out, _ = await registry_cli("namespace", "list", **env)
        assert (code, out) == (0, b"billing\n")
        code, out, err = await registry_cli("namespace", "create", "Billing", **env)
        assert (code, out) == (2, b"")
        assert_one_line_error(err, "HTTP 400")
        code, out, err = await registry_cli("namespace", "create", "search", "--url", app.url)
        assert (code, out) == (2, b"")
        assert_one_line_error(err, "HTTP 401")
    finally:
        await app.stop()
