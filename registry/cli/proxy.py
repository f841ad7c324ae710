"""`registry proxy`: the gate in front of an unmodified MCP server (docs/proxy.md).

    registry proxy --namespace NS [--pin] -- COMMAND [ARGS...]      (stdio)
    registry proxy --namespace NS --upstream URL [--host H] [--port P] [--pin]   (HTTP)

Needs the `[proxy]` extra (the MCP SDK: the listing and refusal surface; uvloop); imported inside
`run`, so the other verbs start without it. Exit codes: 0 the host left (or
stdin closed), 1 the upstream or the registry failed (one line on stderr says
which), 2 usage error; 130 / 143 after SIGINT / SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Coroutine
from typing import Any

from registry.cli.common import NAMESPACE_PATTERN, InputError, Verb

__all__ = ["VERBS"]


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be in (0, 3600] seconds, not {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "registry proxy --namespace NS [--pin] -- COMMAND [ARGS...]\n"
        "       registry proxy --namespace NS --upstream URL [--host H] [--port P] [--pin]"
    )
    parser.add_argument("--namespace", required=True, help="the namespace whose toolset gates")
    parser.add_argument(
        "--upstream", metavar="URL", help="a streamable-HTTP server to stand in front of"
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP mode: address to serve on")
    parser.add_argument("--port", type=int, default=8090, help="HTTP mode: port (default 8090)")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="withhold (and refuse with -31005) a tool whose live definition is no served version",
    )
    parser.add_argument("--url", help="the registry's URL (default: REGISTRY_URL)")
    parser.add_argument("--token", help="the registry token (default: REGISTRY_TOKEN)")
    parser.add_argument(
        "--cache",
        metavar="PATH",
        help="the toolset cache (default: REGISTRY_CACHE, else "
        "$XDG_CACHE_HOME/mcp-tool-registry/NS.toolset.json)",
    )
    parser.add_argument(
        "--toolset", metavar="FILE", help="serve a saved toolset payload; no registry"
    )
    parser.add_argument(
        "--init-timeout",
        type=_positive,
        default=30.0,
        metavar="SECONDS",
        help="how long the upstream may take to answer initialize (default 30)",
    )


def run(args: argparse.Namespace) -> int:
    command = args.server_command
    if not re.fullmatch(NAMESPACE_PATTERN, args.namespace):
        raise InputError(f"--namespace {args.namespace!r} must match {NAMESPACE_PATTERN}")
    if args.upstream and command:
        raise InputError("give either --upstream URL or -- COMMAND, not both")
    if not args.upstream and not command:
        raise InputError(
            "give the server to stand in front of: -- COMMAND [ARGS...] or --upstream URL"
        )
    if args.upstream and not re.match(r"^https?://", args.upstream):
        raise InputError(f"--upstream {args.upstream!r} is not an http(s) URL")
    if not 0 <= args.port < 65536:
        raise InputError(f"--port {args.port} is not a port number")
    try:
        from registry.proxy import ProxyError, ProxyOptions, serve_http, serve_stdio
    except ImportError as error:
        raise InputError(
            f"registry proxy needs the [proxy] extra (pip install 'mcp-tool-registry[proxy]'): "
            f"{error}"
        ) from None
    from registry.cli.common import quiet_logs

    quiet_logs()
    try:
        options = ProxyOptions.from_arguments(args)
    except ProxyError as error:
        raise InputError(str(error)) from None
    try:
        if command:
            return _run(serve_stdio(command, options))
        return _run(serve_http(args.upstream, args.host, args.port, options))
    except KeyboardInterrupt:
        return 130
    except ProxyError as error:
        print(f"registry proxy: {error}", file=sys.stderr)
        return 1


def _run(main: Coroutine[Any, Any, int]) -> int:
    """The relay on uvloop where it is installed (the `[proxy]` extra): the proxy's
    cost is event-loop wakeups, two per message, and uvloop's are the cheaper."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


VERBS: list[Verb] = [
    Verb(
        "proxy",
        "Gate any MCP server: stand in front of it (stdio or HTTP) with the namespace's toolset.",
        add_arguments,
        run,
        takes_command=True,
    )
]
