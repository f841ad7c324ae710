"""A FastMCP server (the standalone `fastmcp` package), its tools/call gated by a registry toolset.

    # the toolset of a namespace, synced from a registry at boot and kept current
    REGISTRY_URL=http://127.0.0.1:8080 REGISTRY_TOKEN=... python examples/fastmcp_server.py
    # a toolset payload saved to a file (`registry sync billing > billing.json`)
    python examples/fastmcp_server.py --toolset billing.json
    # seed 000 built in: db.query v4 current, v3 retired
    python examples/fastmcp_server.py --demo
    # streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio
    python examples/fastmcp_server.py --demo --http 8765

The environment is examples/gated_server.py's (`REGISTRY_URL`, `REGISTRY_TOKEN`,
`REGISTRY_NAMESPACE`, `REGISTRY_CACHE`, `REGISTRY_WAIT`, `REGISTRY_LOG_LEVEL`),
and so are the boot sync, the cache fallback and the watcher; this one needs
the `[fastmcp]` extra.

seed 000's db.query is a decorated function. It answers with
`gated_arguments()`: exactly what the gate accepted, before FastMCP bound it
to the signature (where `timeout` would read None when the caller sent none).
At start the server reports, on stderr, tools it implements that the registry
lacks and the reverse. Nothing but the protocol reaches stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any, Literal

from fastmcp import FastMCP
from gated_server import configure_logging, parse_arguments, toolset_source

from registry.sdk.fastmcp_adapter import gate_fastmcp, gated_arguments


def build_app(namespace: str) -> FastMCP[Any]:
    app: FastMCP[Any] = FastMCP(f"{namespace}-fastmcp", version="0.1.0")

    @app.tool(name="db.query")
    def db_query(
        query: str, timeout: int | None = None, mode: Literal["read"] | None = None
    ) -> dict[str, Any]:
        """Run a read-only SQL query (a toy: no database, it shows what it would run)."""
        return {"rows": [], "received": gated_arguments()}

    return app


async def serve(args: argparse.Namespace) -> None:
    namespace = os.environ.get("REGISTRY_NAMESPACE") or "billing"
    source = await toolset_source(args, namespace, "fastmcp_server")

    app = build_app(namespace)
    # the gate follows a watcher source by itself: every swap is announced
    gate_fastmcp(app, source)
    if args.http is None:
        await app.run_stdio_async(show_banner=False)
    else:
        await app.run_http_async(show_banner=False, host=args.host, port=args.http)


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(__doc__.splitlines()[0], argv)
    configure_logging("fastmcp_server")
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
