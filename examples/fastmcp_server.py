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
`REGISTRY_NAMESPACE`, `REGISTRY_CACHE`, `REGISTRY_WAIT`, `REGISTRY_USAGE_INTERVAL`,
`REGISTRY_SERVER_NAME`, `REGISTRY_LOG_LEVEL`), and so are the boot sync, the
cache fallback, the watcher and the usage reports (serving the registry's
toolset only; the name defaults to `<namespace>-fastmcp@<host>`); this one
needs the `[fastmcp]` extra.

seed 000's db.query is a decorated function whose signature takes what both
its versions accept (v3's `timeout_ms` and `mode: "write"`, v4's `timeout`),
as a server deployed across the cutover must: FastMCP parses every call with
the signature, and the gate refuses to start (one line per mismatch) when the
signature would strip, refuse or change what the current version accepts. It
answers with what FastMCP bound to it (the parameters a caller sent; none is
filled: every default is None), which is what the gate accepted
(`gated_arguments()`). At start the server reports, on stderr, tools it
implements that the registry lacks and the reverse. Nothing but the protocol
reaches stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any, Literal

from fastmcp import FastMCP
from gated_server import (
    configure_logging,
    parse_arguments,
    run,
    serve_http,
    toolset_source,
    usage_interval,
    usage_reporting,
)

from registry.sdk.fastmcp_adapter import gate_fastmcp, gated_arguments


def build_app(namespace: str) -> FastMCP[Any]:
    app: FastMCP[Any] = FastMCP(f"{namespace}-fastmcp", version="0.1.0")

    @app.tool(name="db.query")
    def db_query(
        query: str,
        timeout: int | None = None,
        timeout_ms: int | None = None,
        mode: Literal["read", "write"] | None = None,
    ) -> dict[str, Any]:
        """Run a SQL query (a toy: no database, it shows what it would run)."""
        bound = {"query": query, "timeout": timeout, "timeout_ms": timeout_ms, "mode": mode}
        received = {k: v for k, v in bound.items() if v is not None}
        assert received == gated_arguments()  # what the gate accepted, nothing filled
        return {"rows": [], "received": received}

    return app


async def serve(args: argparse.Namespace) -> None:
    namespace = os.environ.get("REGISTRY_NAMESPACE") or "billing"
    usage_interval()  # a bad setting stops the server before it syncs anything
    source = await toolset_source(args, namespace, "fastmcp_server")

    async with usage_reporting(args, namespace, source, "fastmcp_server") as reporter:
        app = build_app(namespace)
        # the gate follows a watcher source by itself: every swap is announced
        gate_fastmcp(app, source, on_decision=reporter.record if reporter is not None else None)
        if args.http is None:
            await app.run_stdio_async(show_banner=False)
        else:
            await serve_http(app.http_app(), args.host, args.http)


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(__doc__.splitlines()[0], argv)
    configure_logging("fastmcp_server")
    asyncio.run(run(args, serve))


if __name__ == "__main__":
    main()
