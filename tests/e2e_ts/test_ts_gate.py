"""The TypeScript gate (sdk-ts/): its own tests, and seed 000 end to end.

* `npm test --prefix sdk-ts` (tsc --noEmit strict, the build, node's test
  runner: every row of tests/golden/gate_decisions.json, canonical digests
  against the Python SDK's, the adapters) must pass: a failure fails `make test`.
* A TypeScript MCP server on the official SDK's McpServer, gated by the
  package (sdk-ts/e2e/gated_server.ts), a live registry, and the official
  TypeScript client (sdk-ts/e2e/seed_000_client.ts) tell seed 000's story:
  a stale declared call refused -31001, the current call served, a
  version-less stale call refused with an isError result naming the rename,
  list_changed after a publish. Then the registry is gone and the server
  boots from the cache the first run wrote.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from registry.compat import classify
from registry.sdk import strict_schema
from tests.api.conftest import ADMIN_TOKEN, Registry, free_port
from tests.e2e.test_mcp_e2e import seed_000_at_v3
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

ROOT = Path(__file__).resolve().parents[2]
SDK_TS = ROOT / "sdk-ts"
SERVER = SDK_TS / "dist" / "e2e" / "gated_server.js"
CLIENT = SDK_TS / "dist" / "e2e" / "seed_000_client.js"
STALE = {"query": "SELECT * FROM orders", "timeout_ms": 5000}
CURRENT = {"query": "SELECT * FROM orders", "timeout": 5000}


def node() -> str:
    found = shutil.which("node")
    if found is None or not (SDK_TS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail(
            "the TypeScript gate is not installed: `make test` installs and builds it "
            f"(npm ci --prefix sdk-ts && npm run build --prefix sdk-ts); node found: {found}"
        )
    return found


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        pytest.fail("npm is not on PATH: the TypeScript gate's tests need Node 20 and npm")
    return found


def test_the_typescript_gates_own_tests_pass() -> None:
    node()
    done = subprocess.run(
        [npm(), "test", "--prefix", str(SDK_TS)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    assert re.search(r"\bfail 0\b", output), output[-4000:]
    assert "row 17" in output, "the golden table did not run"


def server_env(url: str, cache: Path) -> dict[str, str]:
    return {
        "REGISTRY_URL": url,
        "REGISTRY_TOKEN": ADMIN_TOKEN,
        "REGISTRY_NAMESPACE": "billing",
        "REGISTRY_CACHE": str(cache),
        "REGISTRY_WAIT": "2",
        "PATH": str(Path(node()).parent),
    }


async def run_client(given: dict[str, Any], client: Path = CLIENT) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        node(),
        str(client),
        json.dumps(given),
        cwd=str(SDK_TS),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(120):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out)
    assert report["ok"], (report.get("error"), report.get("serverStderr"))
    assert report["transportErrors"] == [], report[
        "transportErrors"
    ]  # nothing but protocol on stdout
    return report


def rename_message() -> str:
    (change,) = [
        c for c in classify(DB_QUERY_V3, DB_QUERY_V4).changes if c.kind == "property-renamed"
    ]
    return change.message


async def test_seed_000_on_a_typescript_server_with_the_official_typescript_client(
    registry: Registry, tmp_path: Path
) -> None:
    await seed_000_at_v3(registry.client)
    cache = tmp_path / "billing.toolset.json"
    server = {
        "command": node(),
        "args": [str(SERVER)],
        "env": server_env(registry.url, cache),
        "cwd": str(SDK_TS),
    }
    report = await run_client(
        {
            "server": server,
            "publish": {
                "url": f"{registry.url}/v1/namespaces/billing/tools/db.query/versions",
                "token": ADMIN_TOKEN,
                "body": {"definition": DB_QUERY_V4, "retire": [1, 2, 3]},
            },
            "stale": STALE,
            "current": CURRENT,
        }
    )
    assert report["serverCapabilities"]["tools"]["listChanged"] is True
    (before,) = report["listedBefore"]
    assert before["_meta"]["schemaVersion"] == "v3"
    assert before["inputSchema"] == DB_QUERY_V3["inputSchema"]
    steps = report["steps"]
    served_v3 = steps["declaredV3"]["result"]
    assert not served_v3.get("isError"), served_v3
    assert served_v3["structuredContent"] == {"rows": [], "received": STALE}

    assert report["publishStatus"] == 201
    assert report["listChanged"] >= 1
    (after,) = report["listedAfter"]
    assert after["_meta"]["schemaVersion"] == "v4"

    # a stale declared call: a JSON-RPC error, -31001, the current contract in its data
    refused = steps["staleDeclared"]["error"]
    assert refused["code"] == -31001, refused
    data = refused["data"]
    assert data["reason"] == "schema_version_retired"
    assert (data["declaredVersion"], data["currentVersion"], data["action"]) == (
        "v3",
        "v4",
        "relist",
    )
    assert data["retired"] == ["v1", "v2", "v3"]
    assert data["inputSchema"] == strict_schema(DB_QUERY_V4["inputSchema"])
    assert "property-renamed" in {c["kind"] for c in data["changes"]}

    # the current call, declaring v4: served with exactly its arguments
    current = steps["currentDeclared"]["result"]
    assert not current.get("isError"), current
    assert current["structuredContent"] == {"rows": [], "received": CURRENT}

    # a version-less stale call: an isError result naming the rename, in the engine's words
    versionless = steps["staleVersionless"]["result"]
    assert versionless["isError"] is True, versionless
    text = versionless["content"][0]["text"]
    assert "`timeout_ms` is not part of db.query v4" in text, text
    assert rename_message() in text, text
    structured = versionless["structuredContent"]
    assert structured["code"] == -31003
    assert (structured["inferredVersion"], structured["currentVersion"]) == ("v3", "v4")
    assert structured["action"] == "relist"
    assert "Traceback" not in report["serverStderr"] and "Error:" not in report["serverStderr"]

    # the registry is gone: the server boots from the cache the first run wrote
    assert json.loads(cache.read_text())["format"] == "mcp-tool-registry/toolset-cache@1"
    dead = f"http://127.0.0.1:{free_port()}"
    listed = await run_client(
        {
            "mode": "list",
            "server": {**server, "env": server_env(dead, cache)},
            "stale": {},
            "current": {},
        }
    )
    (cached,) = listed["listedBefore"]
    assert cached["_meta"]["schemaVersion"] == "v4"
    assert "RUNNING FROM CACHE" in listed["serverStderr"], listed["serverStderr"]
