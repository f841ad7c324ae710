"""Call one tool of an MCP server over stdio with the official MCP client, as a host would.

    # the gated example server (REGISTRY_URL etc. in the environment), a version-less call
    python examples/call_tool.py db.query '{"query": "SELECT 1", "timeout": 5000}'
    # declaring the contract the caller speaks (`_meta.schemaVersion`)
    python examples/call_tool.py db.query '{"query": "SELECT 1", "timeout_ms": 5000}' --version v1
    # any stdio server: the command after `--`
    python examples/call_tool.py search '{"query": "q"}' -- python my_server.py

It lists the server's tools first (as hosts do), then calls the tool and prints
one line per outcome:

    listed: db.query v2
    result: {"rows": [], "received": {...}}             # the server's answer
    refused: <the tool result's text>                   # a result with isError: true
    error -31001: <message> {<data>}                    # a JSON-RPC error

Exit status: 0 for a result, 1 for a refusal or an error, 2 for bad usage. A server
that exits or breaks the stream gets one line on stderr with the last line of its
own stderr (a registry's 401, a missing package), not the client's traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.shared.exceptions import MCPError

GATED_SERVER = [sys.executable, str(Path(__file__).with_name("gated_server.py"))]
# what the gated example reads; the MCP client passes only a safe default environment
_SERVER_ENV = (
    "REGISTRY_URL",
    "REGISTRY_TOKEN",
    "REGISTRY_NAMESPACE",
    "REGISTRY_CACHE",
    "REGISTRY_USAGE_INTERVAL",
    "REGISTRY_SERVER_NAME",
)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call(
    command: list[str], tool: str, arguments: dict[str, Any], version: str | None
) -> int:
    env = {
        **get_default_environment(),
        **{k: os.environ[k] for k in _SERVER_ENV if k in os.environ},
    }
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    # the server's log is not the conversation: kept aside, shown only if the server fails
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            return await _converse(params, errlog, tool, arguments, version)
        except Exception:  # the server exited or broke the stream: say why, no traceback
            errlog.seek(0)
            lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
            said = lines[-1] if lines else "(nothing on its stderr)"
            print(f"call_tool: the server ended before answering: {said}", file=sys.stderr)
            return 1


async def _converse(
    params: StdioServerParameters,
    errlog: Any,
    tool: str,
    arguments: dict[str, Any],
    version: str | None,
) -> int:
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listing = await session.list_tools()
        for listed in listing.tools:
            if listed.name == tool:
                declared = (listed.meta or {}).get("schemaVersion", "(no version)")
                print(f"listed: {listed.name} {declared}")
        meta = {"schemaVersion": version} if version else None
        try:
            result = await session.call_tool(tool, arguments, meta=meta)
        except MCPError as exc:
            data = exc.error.data
            suffix = f" {_compact(data)}" if data is not None else ""
            print(f"error {exc.error.code}: {exc.error.message}{suffix}")
            return 1
    if not isinstance(result, types.CallToolResult):
        print(f"result: {_compact(result.model_dump(mode='json'))}")
        return 0
    if result.is_error:
        print(f"refused: {_text(result)}")
        return 1
    answer = result.structured_content if result.structured_content is not None else _text(result)
    print(f"result: {_compact(answer)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = GATED_SERVER
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tool", help="the tool to call")
    parser.add_argument("arguments", help="the arguments, a JSON object")
    parser.add_argument("--version", help="declare this contract in _meta.schemaVersion (v3)")
    args = parser.parse_args(argv)
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        parser.error(f"arguments are not JSON: {exc}")
    if not isinstance(arguments, dict) or not command:
        parser.error("arguments must be a JSON object, and `--` needs a command after it")
    # The client library warns when a called tool was not listed (an alias is not):
    # a host's log line, not part of what this example prints.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    return asyncio.run(call(command, args.tool, arguments, args.version))


if __name__ == "__main__":
    sys.exit(main())
