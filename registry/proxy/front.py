"""The gate as the proxy serves it, whatever the transport: listing, calls, pin verdicts.

    front = ProxyFront(watcher, pin=True, on_decision=reporter.record)
    live = LiveListing()                            # one per upstream connection (session)
    front.set_live(live, upstream_tools, "2025-06-18")   # its own tools/list, every page
    front.list_tools(params, revision, live)        # Answer: a tools/list result or error
    front.call(params, revision, live)              # Forward(params) or Answer(refusal)

Everything here is the SDK's (`registry.sdk.mcp_adapter.GatedTools`): the
snapshot a toolset swap compiles, the gate's decisions, the per-revision
listing with `_meta`, cursors and `ttlMs`, and the per-revision refusal
surface (`registry.sdk._mcp_results.refusal`). The proxy adds two things: the
listing holds only tools the upstream really serves, and in pin mode a tool
whose live definition is no served version is withheld and refused with
-31005 (registry/proxy/pin.py).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import msgspec
from mcp.shared.exceptions import MCPError

from registry.proxy.pin import PinError, Unapproved, compare, warning_line
from registry.sdk._mcp_results import Refusals, refusal, revision
from registry.sdk.gate import GateError, OnDecision
from registry.sdk.mcp_adapter import GatedTools, ToolsetSource
from registry.sdk.toolset import Toolset

__all__ = [
    "PROTOCOL_VERSION_META",
    "Answer",
    "Forward",
    "LiveListing",
    "ProxyFront",
    "request_revision",
]

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
"""Where a 2026-07-28 request carries its revision (no `initialize` on that wire)."""


class Answer(msgspec.Struct, frozen=True):
    """What the proxy answers itself: a result, or a JSON-RPC error object."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Forward(msgspec.Struct, frozen=True):
    """A call the gate accepted: these params go to the upstream."""

    params: dict[str, Any]


def request_revision(params: Any, session: str | None) -> str | None:
    """The revision a request speaks: its own `_meta` (2026-07-28), else the session's."""
    if isinstance(params, Mapping):
        meta = params.get("_meta")
        if isinstance(meta, Mapping):
            version = meta.get(PROTOCOL_VERSION_META)
            if isinstance(version, str):
                return version
    return session


def error_object(error: GateError | MCPError) -> dict[str, Any]:
    """A JSON-RPC error object of a gate refusal or an SDK error."""
    out: dict[str, Any] = {"code": error.code, "message": error.message}
    data = error.data
    if data is not None:
        out["data"] = data
    return out


class LiveListing:
    """One upstream connection's own `tools/list` (every page) and pin verdicts on it.

    `tools` is None until it was fetched (or after the upstream said its tools
    changed: `stale()`); `unapproved` holds the tools pin mode withholds."""

    __slots__ = ("revision", "tools", "unapproved")

    def __init__(self) -> None:
        self.tools: dict[str, dict[str, Any]] | None = None
        self.revision: str | None = None
        self.unapproved: dict[str, Unapproved] = {}

    def stale(self) -> None:
        self.tools = None

    def listable(self) -> frozenset[str]:
        """Names the listing may hold: served by the upstream, not withheld."""
        return frozenset(name for name in self.tools or () if name not in self.unapproved)


class ProxyFront:
    """The toolset's listing and gate in front of one upstream (see the module docstring);
    shared by every connection, each with its own `LiveListing`."""

    def __init__(
        self,
        source: Toolset | ToolsetSource,
        *,
        pin: bool = False,
        on_decision: OnDecision | None = None,
        refusals: Refusals = "auto",
        warnings: TextIO | None = None,
        page_size: int = 100,
    ) -> None:
        self.gated = GatedTools(
            source, list_changed=False, on_decision=on_decision, page_size=page_size
        )
        self._refusals: Refusals = refusals
        self.pin = pin
        self._warnings = warnings if warnings is not None else sys.stderr
        self._warned: set[tuple[str, str]] = set()  # (tool, live digest) said on stderr

    @property
    def toolset(self) -> Toolset:
        return self.gated.toolset

    # ------------------------------------------------------------ the upstream's tools

    def set_live(self, live: LiveListing, tools: Sequence[Any], revision: str | None) -> None:
        """Take the upstream's own listing (every page) and, in pin mode, compare it."""
        live.tools = {
            t["name"]: dict(t)
            for t in tools
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)
        }
        live.revision = revision
        self.recompare(live)

    def recompare(self, live: LiveListing) -> None:
        """Pin verdicts anew (after a new live listing or a toolset swap); one stderr
        line for each tool withheld with a definition not said before."""
        if not self.pin or live.tools is None:
            return
        try:
            found = compare(self.toolset, list(live.tools.values()), revision(live.revision))
        except PinError as exc:
            print(f"registry proxy: --pin: {exc}", file=self._warnings, flush=True)
            return
        live.unapproved = found
        for name, unapproved in sorted(found.items()):
            key = (name, unapproved.live_digest)
            if key not in self._warned:
                self._warned.add(key)
                print(warning_line(unapproved), file=self._warnings, flush=True)

    # ------------------------------------------------------------ tools/list, tools/call

    def list_tools(self, params: Any, revision: str | None, live: LiveListing) -> Answer:
        """One page of the toolset's listing, only what the upstream serves."""
        cursor = params.get("cursor") if isinstance(params, Mapping) else None
        if cursor is not None and not isinstance(cursor, str):
            return Answer(error={"code": -32602, "message": "Invalid cursor"})
        try:
            result = self.gated.list_tools(cursor, protocol_version=revision, only=live.listable())
        except MCPError as exc:
            return Answer(error=error_object(exc))
        return Answer(result=result)

    def call(self, params: Any, revision: str | None, live: LiveListing) -> Forward | Answer:
        """Gate one `tools/call`: the params to forward (the gated arguments, an
        alias's target), or the refusal in the revision's surface."""
        if not isinstance(params, Mapping) or not isinstance(params.get("name"), str):
            return Answer(error={"code": -32602, "message": "tools/call needs params.name"})
        name = params["name"]
        if live.unapproved:
            alias = self.toolset.alias(name)
            withheld = live.unapproved.get(alias.target if alias is not None else name)
            if withheld is not None:
                return Answer(error=error_object(withheld.error()))
        meta = params.get("_meta")
        decision = self.gated.check(
            name, params.get("arguments"), meta if isinstance(meta, Mapping) else None
        )
        if decision.error is None:
            forwarded = dict(params)
            forwarded["name"] = decision.tool
            forwarded["arguments"] = decision.arguments
            return Forward(forwarded)
        try:
            return Answer(result=refusal(decision.error, revision, self._refusals))
        except MCPError as exc:
            return Answer(error=error_object(exc))
