"""A runnable MCP server whose tools/call is gated by a registry toolset.

    # the toolset of a namespace, synced from a registry at boot and kept current
    REGISTRY_URL=http://127.0.0.1:8080 REGISTRY_TOKEN=... python examples/gated_server.py
    # a toolset payload saved to a file (`registry sync billing > billing.json`)
    python examples/gated_server.py --toolset billing.json
    # seed 000 built in: db.query v4 current, v3 retired
    python examples/gated_server.py --demo
    # streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio
    python examples/gated_server.py --demo --http 8765

Environment: `REGISTRY_URL`, `REGISTRY_TOKEN`, `REGISTRY_NAMESPACE` (default
`billing`), `REGISTRY_CACHE` (the toolset cache file; default
`.registry-cache/<namespace>.toolset.json`), `REGISTRY_WAIT` (seconds each watch
long-poll may be held, 1..60, default 30), `REGISTRY_USAGE_INTERVAL` (seconds
between usage reports, default 10; `0` turns reporting off), `REGISTRY_SERVER_NAME`
(the name usage reports carry; default `<namespace>-gated@<host name>`),
`REGISTRY_LOG_LEVEL` (unset: logging
is left unconfigured, as an application embedding the SDK leaves it, and only
warnings reach stderr; `INFO` or `DEBUG`: one line per record on stderr). With a
registry, the server boots
from the cache when the registry is down, and a publish reaches it through the
watcher: connected clients get `notifications/tools/list_changed`. Serving the
namespace's toolset from the registry, the server also counts its calls per
tool, version and decision (never an argument value) and reports them every
`REGISTRY_USAGE_INTERVAL` seconds (`registry usage NAMESPACE TOOL` shows them);
the token then needs `<namespace>:report` (or publish). With `--demo` or
`--toolset` it never reports, whatever the environment: its calls are not the
namespace's, and retirements trust those counts.

The toy handlers answer with the arguments they received, exactly as the gate
passed them (converted along the route for older contracts and aliases).
Nothing but the protocol reaches stdout: the SDK writes nothing there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from mcp.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server

from registry.canonical import digest
from registry.sdk import Toolset, ToolsetError, payload_digest
from registry.sdk.mcp_adapter import ToolsetSource, gate_server
from registry.sdk.usage import UsageReporter

DB_QUERY_V3: dict[str, Any] = {
    "name": "db.query",
    "description": "Run a SQL query.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "timeout_ms": {"type": "integer", "default": 30000},
            "mode": {"type": "string", "enum": ["read", "write"]},
        },
        "required": ["query"],
    },
}

DB_QUERY_V4: dict[str, Any] = {
    "name": "db.query",
    "description": "Run a SQL query.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "timeout": {"type": "integer"},
            "mode": {"type": "string", "enum": ["read"]},
        },
        "required": ["query"],
        "additionalProperties": True,
    },
}


def demo_toolset(namespace: str) -> Toolset:
    """Seed 000 after the cutover: db.query v4 current, v3 retired."""
    tool = {
        "name": "db.query",
        "current": 4,
        "versions": [
            {
                "version": 4,
                "digest": digest(DB_QUERY_V4),
                "state": "active",
                "sunset": None,
                "definition": DB_QUERY_V4,
                "route": [],
            }
        ],
        "retired": [{"version": 3, "digest": digest(DB_QUERY_V3)}],
    }
    body: dict[str, Any] = {"namespace": namespace, "tools": [tool], "aliases": []}
    return Toolset.from_payload({**body, "digest": payload_digest(body)})


async def db_query(arguments: dict[str, Any]) -> dict[str, Any]:
    """A toy db.query: no database, it shows what it would run."""
    return {"rows": [], "received": arguments}


async def echo(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"received": arguments}


HANDLERS = {"db.query": db_query, "search": echo}


async def registry_source(url: str, namespace: str) -> ToolsetSource:
    """Boot sync (falling back to the cache) and a started watcher."""
    from registry.sdk.sync import ToolsetWatcher, sync_toolset

    token = os.environ.get("REGISTRY_TOKEN") or None
    cache = Path(os.environ.get("REGISTRY_CACHE") or f".registry-cache/{namespace}.toolset.json")
    cache.parent.mkdir(parents=True, exist_ok=True)
    wait_text = os.environ.get("REGISTRY_WAIT") or "30"
    if not wait_text.isdigit() or not 1 <= int(wait_text) <= 60:
        raise SystemExit(f"gated_server: REGISTRY_WAIT must be 1..60 seconds, not {wait_text!r}")
    toolset = await sync_toolset(url, namespace, cache=cache, token=token)
    watcher = ToolsetWatcher(url, namespace, toolset, token=token, cache=cache, wait=int(wait_text))
    return watcher.start()


async def toolset_source(
    args: argparse.Namespace, namespace: str, program: str
) -> Toolset | ToolsetSource:
    """What `--toolset FILE`, `--demo` or `REGISTRY_URL` names; SystemExit without one."""
    try:
        if args.toolset is not None:
            return Toolset.from_json(Path(args.toolset).read_bytes())
        if args.demo:
            return demo_toolset(namespace)
        if os.environ.get("REGISTRY_URL"):
            return await registry_source(os.environ["REGISTRY_URL"], namespace)
    except (OSError, ToolsetError) as exc:  # SyncError is a ToolsetError
        raise SystemExit(f"{program}: no toolset to serve: {exc}") from exc
    raise SystemExit(f"{program}: give --toolset FILE, --demo, or set REGISTRY_URL")


async def publish_own_capabilities(url: str, namespace: str, options: Any) -> None:
    """Seed 004: the registry keeps what this server declares, so pipelines can check
    the methods they need (`registry capabilities check`). A refusal (a token without
    the publish scope, say) is logged; serving does not depend on it."""
    from registry.sdk.capabilities import CapabilitiesError, publish_capabilities
    from registry.sdk.mcp_adapter import captured_initialize

    try:
        record = await publish_capabilities(
            url,
            namespace,
            captured_initialize(options),
            token=os.environ.get("REGISTRY_TOKEN") or None,
        )
    except CapabilitiesError as exc:
        print(f"gated_server: capabilities not published: {exc}", file=sys.stderr)
        return
    print(f"gated_server: capabilities published as record {record['seq']}", file=sys.stderr)


def usage_interval() -> float:
    """REGISTRY_USAGE_INTERVAL in seconds (default 10; 0: no reporting)."""
    text = os.environ.get("REGISTRY_USAGE_INTERVAL") or "10"
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 3600:
        raise SystemExit(
            f"gated_server: REGISTRY_USAGE_INTERVAL must be 0..3600 seconds, not {text!r}"
        )
    return seconds


@contextlib.asynccontextmanager
async def usage_reporting(
    args: argparse.Namespace, namespace: str, source: Toolset | ToolsetSource, program: str
) -> AsyncIterator[UsageReporter | None]:
    """A started usage reporter while the server runs (None when it does not serve the
    registry's toolset: `--demo`, `--toolset`, no REGISTRY_URL; or REGISTRY_USAGE_INTERVAL
    is 0); its last counts are flushed at exit."""
    url = os.environ.get("REGISTRY_URL")
    interval = usage_interval()
    if not url or interval == 0 or args.demo or args.toolset is not None:
        yield None
        return
    kind = program.removesuffix("_server")
    name = os.environ.get("REGISTRY_SERVER_NAME") or f"{namespace}-{kind}@{socket.gethostname()}"
    try:
        reporter = UsageReporter(
            url,
            namespace,
            server=name,
            source=source,
            token=os.environ.get("REGISTRY_TOKEN") or None,
            interval=interval,
        )
    except ValueError as exc:  # a msgspec.ValidationError too: the name the registry refuses
        raise SystemExit(f"{program}: REGISTRY_SERVER_NAME {name!r}: {exc}") from exc
    reporter.start()
    try:
        yield reporter
    finally:
        # bounded: a client closing stdio gives the server a few seconds to go
        await reporter.stop(timeout=2.0)


async def serve(args: argparse.Namespace) -> None:
    namespace = os.environ.get("REGISTRY_NAMESPACE") or "billing"
    usage_interval()  # a bad setting stops the server before it syncs anything
    source = await toolset_source(args, namespace, "gated_server")

    async with usage_reporting(args, namespace, source, "gated_server") as reporter:
        server: Server[Any] = Server(f"{namespace}-gated", version="0.1.0")
        # the gate follows a watcher source by itself: every swap is announced
        gate_server(
            server,
            source,
            handlers=HANDLERS,
            on_decision=reporter.record if reporter is not None else None,
        )

        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        if os.environ.get("REGISTRY_URL"):
            await publish_own_capabilities(os.environ["REGISTRY_URL"], namespace, options)
        if args.http is None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, options)
            return

        await serve_http(server.streamable_http_app(host=args.host), args.host, args.http)


async def serve_http(app: Any, host: str, port: int) -> None:
    """uvicorn on `app` until SIGTERM, which shuts it down gracefully (connections closed,
    the app's lifespan ended), then returns, so the caller's way out runs as on stdio."""
    import uvicorn

    class _Served(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # one owner of SIGTERM: the handler below, not uvicorn's re-raise

    served = _Served(uvicorn.Config(app, host=host, port=port, log_config=None))
    with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows loops
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGTERM, lambda: setattr(served, "should_exit", True)
        )
    await served.serve()


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(__doc__.splitlines()[0], argv)
    configure_logging("gated_server")
    asyncio.run(run(args, serve))


def parse_arguments(description: str, argv: list[str] | None) -> argparse.Namespace:
    """The example servers' command line: where the toolset comes from, stdio or HTTP."""
    parser = argparse.ArgumentParser(description=description)
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--toolset", metavar="FILE", help="a toolset payload (JSON)")
    given.add_argument("--demo", action="store_true", help="the built-in seed 000 toolset")
    parser.add_argument("--http", metavar="PORT", type=int, help="streamable HTTP on PORT")
    parser.add_argument("--host", default="127.0.0.1")
    return parser.parse_args(argv)


def configure_logging(program: str) -> None:
    """`REGISTRY_LOG_LEVEL` set: one line per record on stderr; unset: nothing configured."""
    level = os.environ.get("REGISTRY_LOG_LEVEL")
    if level:
        if level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise SystemExit(
                f"{program}: REGISTRY_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, "
                f"not {level!r}"
            )
        logging.basicConfig(
            stream=sys.stderr, level=level.upper(), format="%(asctime)s %(levelname)s %(message)s"
        )


async def run(
    args: argparse.Namespace, serving: Callable[[argparse.Namespace], Awaitable[None]]
) -> None:
    """`serving` (an example's `serve`), ended by SIGTERM as by the end of its input: the
    way out flushes the last usage counts (an MCP client closing a stdio server sends
    SIGTERM after 2 s)."""
    task = asyncio.current_task()
    assert task is not None
    with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows loops
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await serving(args)


if __name__ == "__main__":
    main()
