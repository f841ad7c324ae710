"""Wiring: options, the registry connection and the gate, then the relay of a transport.

options = ProxyOptions(access=RegistryAccess.from_environment("billing", url=..., token=...))
code = await serve_stdio(["npx", "server"], options)          # the exit code
code = await serve_http("http://127.0.0.1:9000/mcp", "127.0.0.1", 8090, options)
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from registry.proxy.access import Connected, ProxyError, RegistryAccess, connect
from registry.proxy.front import ProxyFront
from registry.sdk.toolset import ToolsetError

__all__ = ["ProxyOptions", "make_front", "serve_http", "serve_stdio"]


@dataclass(frozen=True)
class ProxyOptions:
    access: RegistryAccess
    pin: bool = False
    init_timeout: float = 30.0
    request_timeout: float = 30.0

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> ProxyOptions:
        access = RegistryAccess.from_environment(
            args.namespace,
            url=args.url,
            token=args.token,
            cache=args.cache,
            toolset_file=args.toolset,
        )
        return cls(access=access, pin=args.pin, init_timeout=args.init_timeout)


async def make_front(options: ProxyOptions) -> tuple[ProxyFront, Connected]:
    """The registry connection and the gate on it; ProxyError when there is no toolset."""
    connected = await connect(options.access)
    reporter = connected.reporter
    try:
        front = ProxyFront(
            connected.source,
            pin=options.pin,
            on_decision=reporter.record if reporter is not None else None,
        )
    except ToolsetError as exc:
        await connected.close()
        raise ProxyError(f"the toolset cannot gate: {exc}") from exc
    return front, connected


async def serve_stdio(command: Sequence[str], options: ProxyOptions) -> int:
    from registry.proxy.stdio import run_stdio

    return await run_stdio(
        command,
        lambda: make_front(options),
        init_timeout=options.init_timeout,
        request_timeout=options.request_timeout,
    )


async def serve_http(upstream: str, host: str, port: int, options: ProxyOptions) -> int:
    from registry.proxy.http import run_http

    return await run_http(upstream, host, port, options)
