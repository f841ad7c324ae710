"""The official MCP TypeScript SDK client (tests/clients/ts) as a stock host, behind which
`registry proxy` stands in front of an ungated server.

tests/clients/ts/stale_client.mjs connects over stdio to the proxy (which spawns
tests/proxy/recording_server.py), lists db.query at v3, calls it version-less
with v3's arguments (accepted), publishes seed 000's v4 with v3 retired, waits
for `notifications/tools/list_changed` (the proxy's, on the toolset swap), gets
the model-facing refusal, rewrites its arguments as the text says and retries
once: the upstream receives the renamed arguments and nothing else stale.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.e2e.test_clients import RENAMED, STALE, TS_CLIENT, node, rename_message
from tests.e2e.test_mcp_e2e import seed_000_at_v3
from tests.fixtures.seeds import DB_QUERY_V4
from tests.proxy.harness import ROOT, Recorder, proxy_command, proxy_env


async def test_typescript_client_through_the_proxy_learns_the_rename_in_one_retry(
    registry: Registry, tmp_path: Path
) -> None:
    executable = node()
    await seed_000_at_v3(registry.client)
    recorder = Recorder.at(tmp_path, [DB_QUERY_V4])
    command = proxy_command("billing", recorder.command())
    given = {
        "server": {
            "command": command[0],
            "args": command[1:],
            "env": proxy_env(registry.url, tmp_path / "cache.json"),
            "cwd": str(ROOT),
        },
        "tool": "db.query",
        "stale": STALE,
        "publish": {
            "url": f"{registry.url}/v1/namespaces/billing/tools/db.query/versions",
            "token": ADMIN_TOKEN,
            "body": {"definition": DB_QUERY_V4, "retire": [1, 2, 3]},
        },
    }
    process = await asyncio.create_subprocess_exec(
        executable,
        str(TS_CLIENT / "stale_client.mjs"),
        json.dumps(given),
        cwd=str(TS_CLIENT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out)
    assert report["ok"], report.get("error")
    assert report["transportErrors"] == [], report["transportErrors"]
    assert report["serverCapabilities"]["tools"]["listChanged"] is True
    assert report["listedBefore"][0]["meta"]["schemaVersion"] == "v3"

    before, stale, retry = report["steps"]
    assert not before["isError"], before
    assert report["publishStatus"] == 201 and report["listChanged"] >= 1
    assert stale["isError"], stale
    assert "timeout_ms" in stale["text"] and rename_message() in stale["text"], stale["text"]
    assert stale["structuredContent"]["code"] == -31003
    assert stale["structuredContent"]["inferredVersion"] == "v3"
    assert retry["arguments"] == RENAMED and not retry["isError"], retry
    assert retry["structuredContent"] == {"received": RENAMED}
    assert report["listedAfter"][0]["meta"]["schemaVersion"] == "v4"
    # what the upstream received: the accepted v3 call, then the renamed retry; never the stale one
    assert [c["arguments"] for c in recorder.calls()] == [STALE, RENAMED]
    assert "Traceback" not in report["serverStderr"], report["serverStderr"]
