"""An ungated MCP server written with the plain `mcp` SDK that records what it receives.

    python tests/proxy/recording_server.py --tools TOOLS.json --record LOG [--http PORT]

It lists the tool definitions of TOOLS.json as they are (no registry, no gate)
and answers every `tools/call` with `{"received": <arguments>}`, after
appending `{"name", "arguments"}` to LOG as one JSON line: the tests read LOG to
prove what an upstream behind `registry proxy` really received. A call of a tool
named `slow` sleeps `arguments.seconds` first (a cancellation of it is logged
too); a call of `relist` sends
`notifications/tools/list_changed` (as a server whose tools changed does).
Stdio by default; `--http PORT` serves streamable HTTP on /mcp (handshake-era
sessions and 2026-07-28).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from mcp import types
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server


def build(tools_file: Path, record: Path, page_size: int | None = None) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # read on every listing: a test changes the file to change the live tools
        definitions = json.loads(tools_file.read_text(encoding="utf-8"))
        tools = [types.Tool.model_validate(d) for d in definitions]
        if page_size is None:
            return types.ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size
        return types.ListToolsResult(
            tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        with record.open("a", encoding="utf-8") as log:
            log.write(json.dumps({"name": params.name, "arguments": arguments}) + "\n")
        if params.name == "slow":
            try:
                await asyncio.sleep(float(arguments.get("seconds", 1)))
            except asyncio.CancelledError:  # the client's notifications/cancelled reached it
                with record.open("a", encoding="utf-8") as log:
                    log.write(json.dumps({"name": params.name, "cancelled": True}) + "\n")
                raise
        if params.name == "relist":
            await ctx.session.send_tool_list_changed()
        received = {"received": arguments}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(received))],
            structured_content=received,
        )

    return Server("recording", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=Path, required=True)
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--pid", type=Path, help="write this process's id here")
    parser.add_argument("--page-size", type=int, help="list the tools in pages of this size")
    args = parser.parse_args()
    if args.pid is not None:
        args.pid.write_text(str(os.getpid()), encoding="utf-8")
    server = build(args.tools, args.record, args.page_size)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    if args.http is None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, options)
        return
    import uvicorn

    app = server.streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=args.http, log_level="warning")
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    asyncio.run(main())
