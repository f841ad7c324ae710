"""The proxy's registry access, as a gated server has it: boot sync, cache, watcher, usage.

    access = RegistryAccess.from_environment(namespace="billing", url=..., token=...)
    connected = await connect(access)     # ProxyError (one line) when there is no toolset
    connected.source                      # the watcher (or a Toolset from --toolset FILE)
    await connected.close()               # watcher stopped, last usage counts flushed

`REGISTRY_URL`, `REGISTRY_TOKEN` (flags win), `REGISTRY_CACHE` (default
`$XDG_CACHE_HOME/mcp-tool-registry/<namespace>.toolset.json`: a host starts the
proxy in a directory nobody chose), `REGISTRY_WAIT` (watch long-poll, 1..60 s,
default 30), `REGISTRY_USAGE_INTERVAL` (seconds between usage reports, default
10, 0: off), `REGISTRY_SERVER_NAME` (default `<namespace>-proxy@<host name>`).
Boot sync, the digest-checked cache and the watcher are the SDK's
(`registry.sdk.sync`), usage reports too (`registry.sdk.usage`).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import msgspec

from registry.sdk.sync import Backoff, ToolsetWatcher, sync_toolset
from registry.sdk.toolset import Toolset, ToolsetError
from registry.sdk.usage import UsageReporter

__all__ = ["Connected", "ProxyError", "RegistryAccess", "connect"]

_DEFAULT_WAIT = 30
_DEFAULT_USAGE_INTERVAL = 10.0


class ProxyError(Exception):
    """A failure the proxy reports as one line on stderr before a non-zero exit."""


def _cache_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg else Path.home() / ".cache"


@dataclass(frozen=True)
class RegistryAccess:
    """Where the toolset comes from and where usage goes."""

    namespace: str
    url: str | None
    token: str | None
    cache: Path | None
    toolset_file: Path | None = None
    wait: int = _DEFAULT_WAIT
    usage_interval: float = _DEFAULT_USAGE_INTERVAL
    server_name: str = ""
    backoff: Backoff | None = None

    @classmethod
    def from_environment(
        cls,
        namespace: str,
        *,
        url: str | None,
        token: str | None,
        cache: str | None = None,
        toolset_file: str | None = None,
    ) -> RegistryAccess:
        """Flags given, the environment for the rest; ProxyError on a bad value."""
        wait_text = os.environ.get("REGISTRY_WAIT") or str(_DEFAULT_WAIT)
        if not wait_text.isdigit() or not 1 <= int(wait_text) <= 60:
            raise ProxyError(f"REGISTRY_WAIT must be 1..60 seconds, not {wait_text!r}")
        interval_text = os.environ.get("REGISTRY_USAGE_INTERVAL") or str(_DEFAULT_USAGE_INTERVAL)
        try:
            interval = float(interval_text)
        except ValueError:
            interval = -1.0
        if not 0 <= interval <= 3600:
            raise ProxyError(
                f"REGISTRY_USAGE_INTERVAL must be 0..3600 seconds, not {interval_text!r}"
            )
        cache_text = cache or os.environ.get("REGISTRY_CACHE")
        cache_path = (
            Path(cache_text)
            if cache_text
            else _cache_home() / "mcp-tool-registry" / f"{namespace}.toolset.json"
        )
        name = os.environ.get("REGISTRY_SERVER_NAME") or f"{namespace}-proxy@{socket.gethostname()}"
        return cls(
            namespace=namespace,
            url=url or os.environ.get("REGISTRY_URL") or None,
            token=token or os.environ.get("REGISTRY_TOKEN") or None,
            cache=cache_path,
            toolset_file=Path(toolset_file) if toolset_file else None,
            wait=int(wait_text),
            usage_interval=interval,
            server_name=name,
        )


@dataclass
class Connected:
    """A toolset source for the gate, and the usage reporter beside it."""

    source: Toolset | ToolsetWatcher
    reporter: UsageReporter | None

    async def close(self) -> None:
        if isinstance(self.source, ToolsetWatcher):
            await self.source.stop()
        if self.reporter is not None:
            await self.reporter.stop(flush=True, timeout=2.0)


async def connect(access: RegistryAccess) -> Connected:
    """Boot sync (the cache when the registry is down) and a started watcher, or the
    saved toolset of `--toolset FILE`; a started usage reporter where one can report."""
    if access.toolset_file is not None:
        try:
            toolset = Toolset.from_json(access.toolset_file.read_bytes())
        except (OSError, ToolsetError) as exc:
            raise ProxyError(f"--toolset {access.toolset_file}: {exc}") from exc
        if toolset.namespace != access.namespace:
            raise ProxyError(
                f"--toolset {access.toolset_file} holds namespace {toolset.namespace!r}, "
                f"not {access.namespace!r}"
            )
        return Connected(toolset, None)
    if not access.url:
        raise ProxyError("no registry: set REGISTRY_URL (or --url), or give --toolset FILE")
    try:
        toolset = await sync_toolset(
            access.url,
            access.namespace,
            cache=access.cache,
            token=access.token,
            backoff=access.backoff,
        )
    except ToolsetError as exc:  # SyncError: no registry and no usable cache
        raise ProxyError(f"no toolset for namespace {access.namespace!r}: {exc}") from exc
    except ValueError as exc:
        raise ProxyError(str(exc)) from exc
    watcher = ToolsetWatcher(
        access.url,
        access.namespace,
        toolset,
        token=access.token,
        cache=access.cache,
        wait=access.wait,
        backoff=access.backoff,
    ).start()
    reporter = None
    if access.usage_interval > 0:
        try:
            reporter = UsageReporter(
                access.url,
                access.namespace,
                server=access.server_name,
                source=watcher,
                token=access.token,
                interval=access.usage_interval,
            ).start()
        except (ValueError, msgspec.ValidationError) as exc:
            await watcher.stop()
            raise ProxyError(f"REGISTRY_SERVER_NAME: {exc}") from exc
    return Connected(watcher, reporter)
