"""docs/proxy.md as written: its transcripts run, its host configuration works.

The transcripts run in order in one shell (tests/readme_transcripts.py) in a
copy of `examples/`, the virtual environment's `bin` first on PATH, against
`registry serve` in a subprocess (its address put where the guide says
`http://127.0.0.1:8080`). The host configuration snippet is
launched as a host launches it, with the official MCP client.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.e2e.harness import publish
from tests.proxy.harness import ROOT
from tests.readme_transcripts import parse, run
from tests.serving import env_with

GUIDE = ROOT / "docs" / "proxy.md"
BIN = Path(sys.executable).parent


def test_the_guide_runs_as_written(spawn: Any, database_url: str, tmp_path: Path) -> None:
    served = spawn("--database-url", database_url, REGISTRY_BOOTSTRAP_TOKEN="change-me")
    workdir = tmp_path / "work"
    workdir.mkdir()
    shutil.copytree(ROOT / "examples", workdir / "examples")
    commands = [
        replace(c, text=c.text.replace("http://127.0.0.1:8080", served.url))
        for c in parse(GUIDE.read_text(encoding="utf-8"), "docs/proxy.md")
    ]
    assert any("registry proxy --namespace time -- mcp-server-time" in c.text for c in commands)
    env = env_with(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path), NO_COLOR="1")
    mismatches = run(commands, workdir, env, timeout=240)
    assert not mismatches, "\n".join(str(m) for m in mismatches)


@pytest.mark.parametrize(
    ("document", "after"),
    [
        (GUIDE, "A host configures the proxy"),
        (ROOT / "README.md", "## Any server: `registry proxy`"),
    ],
    ids=["guide", "readme"],
)
async def test_the_host_configuration_launches_a_gated_server(
    registry: Registry, tmp_path: Path, document: Path, after: str
) -> None:
    text = document.read_text(encoding="utf-8").split(after, 1)[1]
    block = re.search(r"```json\n(.*?)```", text, re.DOTALL)
    assert block is not None
    server = json.loads(block.group(1))["mcpServers"]["time"]
    command = shutil.which(server["command"], path=str(BIN))
    assert command is not None
    env = server["env"] | {
        "REGISTRY_URL": registry.url,
        "REGISTRY_TOKEN": ADMIN_TOKEN,
        "REGISTRY_CACHE": str(tmp_path / "cache.json"),
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
    }
    await registry.client.put("/v1/namespaces/time")
    tool = {
        "name": "get_current_time",
        "description": "Get current time in a specific timezone",
        "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
    }
    await publish(registry.client, "time", "get_current_time", {"definition": tool})
    params = StdioServerParameters(command=command, args=server["args"], env=env, cwd=ROOT)
    with anyio.fail_after(60), (tmp_path / "err.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=30) as session,
        ):
            await session.initialize()
            listing = await session.list_tools()
            # the registry holds one of the server's two tools: only it is listed
            assert [t.name for t in listing.tools] == ["get_current_time"]
            with pytest.raises(MCPError) as caught:  # the other: unknown to the gate
                await session.call_tool("convert_time", {})
            assert caught.value.code == -32602
            now = await session.call_tool("get_current_time", {"timezone": "Etc/UTC"})
            assert not now.is_error
