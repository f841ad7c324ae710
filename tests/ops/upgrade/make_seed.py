"""Write a release's frozen migrations and seed data: how tests/ops/upgrade/<release>/ was made.

    .venv/bin/python tests/ops/upgrade/make_seed.py 8f3c4a4 tests/ops/upgrade/0.1.0

Not run by the tests (it needs the git history; the tests read what it wrote).
It checks the release out of git into a temporary directory, starts that
release's own `registry serve` on a new embedded PostgreSQL (this virtual
environment's libraries, the release's code), writes every kind of record
that release knows through its own API and its own store (`RECORDS` below),
then dumps the data with the wheel's `pg_dump` as INSERTs. The output
directory gets `migrations/` (the release's files, byte for byte) and
`seed.sql`. Tokens are made with known secrets (`TOKENS`), so a test can
check they still authenticate after an upgrade.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from registry.store.embedded import postgres_bin_dir  # noqa: E402
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2  # noqa: E402
from tests.ops.records import INITIALIZE, NOTES_V1, NOTES_V2  # noqa: E402
from tests.ports import free_port  # noqa: E402

ADMIN = "release-admin"
TOKENS = {  # secret -> scopes; the second is revoked
    "mtr_release-publisher": ["billing:publish"],
    "mtr_release-revoked": ["*:read"],
}
SEARCH_V3 = {**SEARCH_V2, "description": "Search documents, with filters."}


def ok(answer: httpx.Response) -> dict:
    if answer.status_code >= 300:
        raise SystemExit(f"{answer.request.method} {answer.request.url}: {answer.text}")
    return answer.json()


def records(client: httpx.Client) -> None:
    """Every kind of record of the first release: namespaces made by publishing, versions in
    every state (a sunset past and one to come), converters with a publish and alone, an
    alias set and re-pointed, two capability records; the audit events of each."""
    db = "/v1/namespaces/billing/tools/db.query"
    ok(client.post(f"{db}/versions", json={"definition": DB_QUERY_V3}))
    refused = client.post(f"{db}/versions", json={"definition": DB_QUERY_V4})
    order = ["reject", "rename", "drop", "map", "fill"]  # that release suggested fill first
    ops = sorted(
        refused.json()["decisions"][0]["suggested_ops"], key=lambda op: order.index(op["op"])
    )
    ok(
        client.post(
            f"{db}/versions",
            json={"definition": DB_QUERY_V4, "converters": [{"from": 1, "ops": ops}]},
        )
    )
    ok(client.post(f"{db}/versions/1/deprecate", json={"sunset": "2999-01-01T00:00:00Z"}))
    alias = "/v1/namespaces/billing/aliases/db_query_v1"
    ok(
        client.put(
            alias, json={"target": "db.query", "contract": {"tool": "db.query", "version": 2}}
        )
    )
    ok(
        client.put(
            alias, json={"target": "db.query", "contract": {"tool": "db.query", "version": 1}}
        )
    )
    search = "/v1/namespaces/billing/tools/search"
    ok(client.post(f"{search}/versions", json={"definition": SEARCH_V1}))
    ok(client.post(f"{search}/versions", json={"definition": SEARCH_V2, "retire": [1]}))
    ok(client.post(f"{search}/versions", json={"definition": SEARCH_V3}))
    ok(client.post(f"{search}/versions/2/deprecate", json={"sunset": "2026-01-01T00:00:00Z"}))
    notes = "/v1/namespaces/docs/tools/notes.add"
    ok(client.post(f"{notes}/versions", json={"definition": NOTES_V1}))
    ok(client.post(f"{notes}/versions", json={"definition": NOTES_V2}))
    ok(
        client.post(
            f"{notes}/converters",
            json={"from": 2, "to": 1, "ops": [{"op": "drop", "path": "/tags"}]},
        )
    )
    ok(client.put("/v1/namespaces/billing/capabilities", json=INITIALIZE))
    second = {**INITIALIZE, "serverInfo": {"name": "billing-server", "version": "1.1.0"}}
    ok(client.put("/v1/namespaces/billing/capabilities", json=second))


_TOKENS_SCRIPT = """
import asyncio, json, sys
from registry import store
import asyncpg

async def main(dsn, tokens):
    conn = await asyncpg.connect(dsn)
    for index, (secret, scopes) in enumerate(tokens.items()):
        token = await store.create_token(
            conn, store.hash_token(secret), scopes, description=f"release token {index}",
            actor="cli", request_id=None)
        if index == 1:
            await store.revoke_token(conn, token.id, actor="cli", request_id=None)
    await conn.close()

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""


def main(commit: str, output: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="release-seed-"))
    try:
        source = work / "source"
        source.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
        env = {**os.environ, "PYTHONPATH": str(source), "REGISTRY_BOOTSTRAP_TOKEN": ADMIN}
        env = {k: v for k, v in env.items() if k not in {"REGISTRY_DATABASE_URL", "REGISTRY_URL"}}
        port = free_port()
        data = work / "data"
        serve = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "registry",
                "serve",
                "--data-dir",
                str(data),
                "--port",
                str(port),
            ],
            env=env,
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as client:
                records(client)
            password = (data / "password").read_text().strip()
            pg_port = (data / "pgdata" / "postmaster.pid").read_text().splitlines()[3]
            dsn = f"postgresql://postgres:{password}@127.0.0.1:{pg_port}/registry"
            subprocess.run(
                [sys.executable, "-c", _TOKENS_SCRIPT, dsn, json.dumps(TOKENS)], env=env, check=True
            )
            dump = subprocess.run(
                [
                    str(postgres_bin_dir() / "pg_dump"),
                    "--data-only",
                    "--column-inserts",
                    "--no-owner",
                    "--no-privileges",
                    "--exclude-table=schema_migrations",
                    dsn,
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        finally:
            serve.terminate()
            serve.wait(timeout=60)
        output.mkdir(parents=True, exist_ok=True)
        migrations = output / "migrations"
        shutil.rmtree(migrations, ignore_errors=True)
        shutil.copytree(source / "migrations", migrations)
        lines = [
            line for line in dump.splitlines() if line.strip() and not line.startswith(("--", "\\"))
        ]
        header = (
            f"-- The data release {commit} wrote, as its own API and store wrote it\n"
            f"-- (tests/ops/upgrade/make_seed.py; pg_dump --data-only --column-inserts).\n"
        )
        (output / "seed.sql").write_text(header + "\n".join(lines) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
