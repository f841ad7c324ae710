"""Adapters for the official `mcp` Python SDK (2.x): gate a server in a few lines.

Needs the `[mcp]` extra (`pip install 'mcp-tool-registry[mcp]'`); `registry.sdk`
itself never imports `mcp`.

Low-level server, one async handler per tool (it receives exactly the gated,
converted arguments):

    server = Server("billing")
    gated = gate_server(server, toolset, handlers={"db.query": run_query})

High-level server: the gate runs on the raw arguments and `_meta`, before the
framework binds, coerces or fills anything; accepted calls continue into the
framework with the converted arguments (and an alias resolved to its target):

    app = MCPServer("billing")

    @app.tool(name="db.query")
    def db_query(query: str, mode: str = "read") -> dict: ...

    gated = gate_mcpserver(app, toolset)

`source` is a `Toolset` or anything with a `.current` Toolset property (the sync
watcher): every request reads `source.current`, so a swap takes effect on the
next call; a call in flight finishes on the snapshot it started with.
A source with a `subscribe(callback)` method (the sync watcher) is followed:
each swap it reports is announced to connected clients at once. For other
sources hand `gated.on_change` to whatever learns of a change, or run
`gated.watch(interval)`.

What the adapter does to the server:

* `tools/list` answers from the toolset: every tool's current definition, by
  name, `page_size` per page, every page of one listing from the same snapshot
  (the cursor names it). Each tool's `_meta` carries `schemaVersion` ("v4") and
  `schemaHash` (its digest). Aliases are not listed: an alias exists so that
  clients holding an old listing keep working under the contract they hold; a
  fresh listing leads to the current tool. Listing `search_v1` would advertise
  a retired contract anew (seed 000: a capability you advertised is a promise
  you keep or revoke) under a definition whose digest no registered version
  has. Alias calls are still gated and converted (seed 002).
* `tools/call` runs `Gate.check` on the raw request `arguments` and `_meta`; an
  acceptance reaches the handler with exactly `decision.arguments`. Refusals
  follow `refusals=`: with `"auto"` (the default) a refusal of the arguments
  themselves is, from 2025-11-25 on (SEP-1303), an `isError` result the model
  reads (`GateError.model_text`, and `structuredContent` with `code`, `reason`,
  `tool`, `currentVersion`, `inferredVersion`, `changes`, `action`, ...), and
  every other refusal (a declared version retired, never served or without a
  route; an unknown tool), and every refusal on older revisions, is a JSON-RPC
  error with the gate's code, message and data (raised as `MCPError`, which the
  SDK never turns into a result). `"result"` answers every refusal of
  arguments as a result whatever the revision; `"jsonrpc"` never does.
* `tools/list` and `tools/call` results carry only the fields of the session's
  negotiated revision (registry/sdk/revisions.py: no `title`, `outputSchema`,
  `icons` or `structuredContent` on a 2025-03-26 session).
* On 2026-07-28 sessions `ttlMs` is 0 unless `ttl_ms` is given, and never
  longer than the watch interval (`source.wait_seconds`). Why 0: a client
  caches the listing for `ttlMs` and a re-list inside that time is served from
  its cache (the official Python client kept a retired listing for 30 s), so
  "re-list and retry" after a breaking publish would meet the stale contract
  again. With 0 a re-list always reaches the server, and the refusals that a
  retry can fix carry the current contract besides (`inputSchema`, `changes`,
  `currentVersion`), so a client following a refusal succeeds on its next call
  whether it re-lists or not. A server that prefers fewer listings passes
  `ttl_ms`; its clients then rely on the contract inside the refusal.
* `list_changed=True` declares `tools.listChanged` in handshake-era
  `initialize` results and sends `notifications/tools/list_changed` to those
  sessions when the toolset changes; 2026-07-28 sessions hear it on their
  `subscriptions/listen` streams (a `ListenHandler` is installed if the server
  serves none).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Container, Mapping
from dataclasses import replace
from typing import Any, Literal, Protocol, runtime_checkable

import anyio
from mcp import types
from mcp.server import MCPServer, Server
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import HandlerEntry
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    SubscriptionBus,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from registry.sdk._logging import get_logger
from registry.sdk._mcp_results import (
    Refusals,
    Snapshot,
    as_result,
    decode_cursor,
    encode_cursor,
    input_schemas,
    listed_tools,
    project_result,
    refusal,
)
from registry.sdk.gate import Decision, Gate, OnDecision
from registry.sdk.handlers import HandlerMismatch, HandlerReport, compare_handlers
from registry.sdk.toolset import Toolset, ToolsetError

__all__ = [
    "GatedTools",
    "HandlerMismatch",
    "Refusals",
    "ToolHandler",
    "ToolsetSource",
    "captured_initialize",
    "gate_mcpserver",
    "gate_server",
]

_log = get_logger("registry.sdk.mcp")

ToolHandler = Callable[[dict[str, Any]], Awaitable[Any]]
"""`async (arguments) -> result`: `arguments` are exactly the gate's
`decision.arguments`. The result may be a `CallToolResult`, a dict (structured
content, also sent as JSON text), a string, a list of content blocks or None."""

_Dispatch = Callable[
    [ServerRequestContext[Any, Any], types.CallToolRequestParams, Decision],
    Awaitable[HandlerResult],
]

_KEEP_SNAPSHOTS = 8
"""Snapshots kept for cursors of listings started before a swap."""


@runtime_checkable
class ToolsetSource(Protocol):
    """Anything that holds the latest toolset (the sync watcher, a test double)."""

    @property
    def current(self) -> Toolset: ...


class _Static:
    """The source of a toolset given as is; `GatedTools.update(new)` swaps it."""

    __slots__ = ("current",)

    def __init__(self, toolset: Toolset) -> None:
        self.current = toolset


class GatedTools:
    """The gate as an MCP server sees it: snapshot, listing, call gating, change
    notifications. Made and installed by `gate_server` / `gate_mcpserver`."""

    def __init__(
        self,
        source: Toolset | ToolsetSource,
        *,
        ttl_ms: int | None = None,
        page_size: int = 100,
        cache_scope: Literal["public", "private"] = "private",
        list_changed: bool = True,
        on_decision: OnDecision | None = None,
        refusals: Refusals = "auto",
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        if ttl_ms is not None and ttl_ms < 0:
            raise ValueError("ttl_ms must be >= 0")
        if refusals not in ("auto", "jsonrpc", "result"):
            raise ValueError(f"refusals must be 'auto', 'jsonrpc' or 'result', not {refusals!r}")
        self._refusals: Refusals = refusals
        self._source: ToolsetSource = _Static(source) if isinstance(source, Toolset) else source
        self._page_size = page_size
        self._cache_scope: Literal["public", "private"] = cache_scope
        self._list_changed = list_changed
        self._on_decision = on_decision
        self._ttl_ms = self._resolve_ttl(ttl_ms)
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()
        self._sessions: dict[object, ServerSession] = {}
        self._bus: SubscriptionBus | None = None
        self._tasks: set[asyncio.Task[bool]] = set()
        self._handlers: Mapping[str, ToolHandler] | None = None
        # the input schemas a framework's own parse holds the handlers to (None: no parse)
        self._handler_schemas: Mapping[str, Any] | None = None
        self._snapshot = self._compile(self._source.current)  # a bad boot toolset raises
        self._announced = self._snapshot.toolset.digest
        # a source with change callbacks (the sync watcher) announces swaps itself
        subscribe = getattr(self._source, "subscribe", None)
        self._unsubscribe: Callable[[], None] | None = (
            subscribe(self.on_change) if callable(subscribe) else None
        )

    # ------------------------------------------------------------ snapshot

    def _resolve_ttl(self, ttl_ms: int | None) -> int:
        wait = getattr(self._source, "wait_seconds", None)
        interval = (
            int(wait * 1000)
            if isinstance(wait, int | float) and not isinstance(wait, bool)
            else None
        )
        if ttl_ms is None:
            return 0  # see the module docstring: a re-list must reach the server
        return ttl_ms if interval is None else min(ttl_ms, interval)

    def _compile(self, toolset: Toolset) -> Snapshot:
        snapshot = Snapshot(
            toolset,
            Gate(toolset, on_decision=self._on_decision),
            listed_tools(toolset),
            input_schemas(toolset),
            {},
        )
        if self._handler_schemas is not None:
            snapshot = replace(snapshot, handlers=self._judge_handlers(toolset).checks)
        self._remember(snapshot)
        if self._handlers is not None:
            self._check_handlers(toolset)
        return snapshot

    def _judge_handlers(self, toolset: Toolset) -> HandlerReport:
        """The framework's handler schemas against `toolset`: one error per mismatch
        (a live swap cannot stop the server; its calls the handlers cannot take are
        refused), one warning per side's extra names."""
        assert self._handler_schemas is not None
        report = compare_handlers(toolset, self._handler_schemas)
        for tool, lines in report.mismatches.items():
            for line in lines:
                _log.error(
                    "mcp.gate.handler_mismatch",
                    message=f"{tool}: {line}",
                    namespace=toolset.namespace,
                    tool=tool,
                )
        self._warn_names(report)
        return report

    def _warn_names(self, report: HandlerReport) -> None:
        """One WARNING per side's extra tool names (FastMCP's adapter reports its own)."""
        for event, message in report.warnings():
            _log.warning(f"mcp.gate.{event}", message=message, namespace=report.namespace)

    def hold_handlers_to(self, schemas: Mapping[str, Any]) -> None:
        """Tell the gate the input schemas the server's framework parses each
        tool's arguments with (tool name -> JSON Schema, as the framework lists
        it): raises `HandlerMismatch` (one line per mismatch) when a handler would
        strip, refuse or change arguments the toolset's current version accepts;
        on later swaps, such calls are refused instead (registry/sdk/handlers.py)."""
        self._handler_schemas = dict(schemas)
        snapshot = self.snapshot
        report = compare_handlers(snapshot.toolset, self._handler_schemas)
        report.raise_if_mismatched()
        self._warn_names(report)
        self._snapshot = replace(snapshot, handlers=report.checks)
        self._remember(self._snapshot)

    def _remember(self, snapshot: Snapshot) -> None:
        self._snapshots[snapshot.toolset.digest] = snapshot
        self._snapshots.move_to_end(snapshot.toolset.digest)
        while len(self._snapshots) > _KEEP_SNAPSHOTS:
            self._snapshots.popitem(last=False)

    def _check_handlers(self, toolset: Toolset) -> None:
        assert self._handlers is not None
        names = {t.name for t in toolset.tools}
        missing = sorted(names - set(self._handlers))
        if missing:
            _log.warning("mcp.gate.handlers_missing", namespace=toolset.namespace, tools=missing)
        unused = sorted(set(self._handlers) - names)
        if unused:
            _log.info("mcp.gate.handlers_not_in_toolset", namespace=toolset.namespace, tools=unused)

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot of `source.current`, compiled once per toolset swap.
        A new toolset that does not compile is logged, and the last good one kept."""
        current = self._source.current
        snapshot = self._snapshot
        if current is snapshot.toolset:
            return snapshot
        known = self._snapshots.get(current.digest)
        if known is not None:
            snapshot = replace(known, toolset=current)
        else:
            try:
                snapshot = self._compile(current)
            except ToolsetError as exc:
                _log.error(
                    "mcp.gate.toolset_rejected",
                    digest=current.digest,
                    serving=snapshot.toolset.digest,
                    error=str(exc),
                )
                return snapshot
        self._snapshot = snapshot
        return snapshot

    @property
    def toolset(self) -> Toolset:
        return self.snapshot.toolset

    @property
    def gate(self) -> Gate:
        return self.snapshot.gate

    @property
    def ttl_ms(self) -> int:
        """`ttlMs` of `tools/list` results on 2026-07-28 sessions."""
        return self._ttl_ms

    def check(self, name: str, arguments: Any, meta: Mapping[str, Any] | None = None) -> Decision:
        """`Gate.check` on the current snapshot."""
        return self.gate.check(name, arguments, meta)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema a call of `name` is checked against (for the SDK's
        `Mcp-Param-*` header validation): current for a tool, the contract for an alias."""
        return self.snapshot.schemas.get(name)

    # ------------------------------------------------------------ tools/list

    def list_tools(
        self,
        cursor: str | None = None,
        *,
        protocol_version: str | None = None,
        only: Container[str] | None = None,
    ) -> dict[str, Any]:
        """One page of the listing as the session's revision defines it (wire
        form); a cursor continues the snapshot it came from. `only`: the names
        that may be listed (`registry proxy`: what the upstream really serves)."""
        if cursor is None:
            snapshot, offset = self.snapshot, 0
        else:
            digest, offset = decode_cursor(cursor)
            found = self._snapshots.get(digest)
            if found is None:
                raise MCPError(
                    types.INVALID_PARAMS,
                    "Invalid cursor: the toolset it pages through is no longer held; "
                    "re-issue tools/list without a cursor",
                    {"reason": "cursor_expired", "action": "relist"},
                )
            snapshot = found
        listing = snapshot.listing(protocol_version)
        if only is not None:
            listing = tuple(tool for tool in listing if tool["name"] in only)
        page = listing[offset : offset + self._page_size]
        end = offset + len(page)
        result: dict[str, Any] = {"tools": list(page)}
        if end < len(listing):
            result["nextCursor"] = encode_cursor(snapshot.toolset.digest, end)
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            result.update(ttlMs=self._ttl_ms, cacheScope=self._cache_scope, resultType="complete")
        return result

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        cursor = params.cursor if params is not None else None
        return self.list_tools(cursor, protocol_version=ctx.protocol_version)

    # ------------------------------------------------------------ tools/call

    def decide(self, name: str, arguments: Any, meta: Mapping[str, Any] | None = None) -> Decision:
        """`Gate.check` on the current snapshot, then the handler check where the
        server's framework parses the arguments again (`hold_handlers_to`)."""
        return self.snapshot.decide(name, arguments, meta)

    def _decide(self, ctx: ServerRequestContext[Any, Any], name: str) -> Decision:
        raw = ctx.params if isinstance(ctx.params, Mapping) else {}
        meta = raw.get("_meta")
        return self.decide(name, raw.get("arguments"), meta if isinstance(meta, Mapping) else None)

    def _dispatch_to_handlers(self, handlers: Mapping[str, ToolHandler]) -> _Dispatch:
        async def dispatch(
            ctx: ServerRequestContext[Any, Any],
            params: types.CallToolRequestParams,
            decision: Decision,
        ) -> HandlerResult:
            handler = handlers.get(decision.tool)
            if handler is None:
                raise MCPError(
                    types.INTERNAL_ERROR,
                    f"{decision.tool} is in the toolset but this server has no handler for it",
                    {"reason": "no_handler", "tool": decision.tool},
                )
            assert decision.arguments is not None
            try:
                value = await handler(decision.arguments)
            except MCPError:
                raise
            except Exception:
                # a tool failure is a result the model can read, not a protocol error;
                # its text stays in the server log
                _log.exception("mcp.tool.failed", tool=decision.tool)
                return types.CallToolResult(
                    content=[
                        types.TextContent(type="text", text=f"Error executing tool {decision.tool}")
                    ],
                    is_error=True,
                )
            return as_result(value)

        return dispatch

    @staticmethod
    def _dispatch_to_entry(entry: HandlerEntry[Any]) -> _Dispatch:
        async def dispatch(
            ctx: ServerRequestContext[Any, Any],
            params: types.CallToolRequestParams,
            decision: Decision,
        ) -> HandlerResult:
            raw = dict(ctx.params) if isinstance(ctx.params, Mapping) else {}
            raw.update(name=decision.tool, arguments=decision.arguments)
            typed = entry.params_type.model_validate(raw, by_name=False)
            return await entry.handler(replace(ctx, params=raw), typed)

        return dispatch

    # ------------------------------------------------------------ list_changed

    async def _middleware(
        self,
        ctx: ServerRequestContext[Any, Any],
        call_next: Callable[[ServerRequestContext[Any, Any]], Awaitable[HandlerResult]],
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize" and ctx.request_id is not None and isinstance(result, dict):
            self._initialized(ctx, result)
        return result

    def _initialized(self, ctx: ServerRequestContext[Any, Any], result: dict[str, Any]) -> None:
        """Declare `tools.listChanged` (when asked to) and remember the session
        if the server declared it: handshake-era change notifications go to it."""
        capabilities = result.get("capabilities")
        tools = capabilities.get("tools") if isinstance(capabilities, dict) else None
        if not isinstance(tools, dict):
            return
        if self._list_changed:
            tools["listChanged"] = True
        if not tools.get("listChanged"):
            return
        session = ctx.session
        # one proxy per connection, dropped when the connection closes; the SDK
        # does not expose the connection on the request context, hence getattr
        connection = getattr(session, "_connection", None)
        key: object = connection if connection is not None else session
        self._sessions[key] = session
        exit_stack = getattr(connection, "exit_stack", None)
        if exit_stack is not None:
            exit_stack.callback(self._sessions.pop, key, None)

    async def notify_tools_changed(self) -> None:
        """Send `notifications/tools/list_changed` to every handshake-era session
        that was told `tools.listChanged`, and publish it to 2026-07-28
        `subscriptions/listen` streams."""
        for session in list(self._sessions.values()):
            try:
                await session.send_tool_list_changed()
            except Exception:
                _log.warning("mcp.list_changed.send_failed", exc_info=True)
        if self._bus is not None:
            await self._bus.publish(ToolsListChanged())

    async def update(self, toolset: Toolset | None = None) -> bool:
        """Take the latest toolset (`toolset` replaces a static one; a watcher
        source is re-read) and, if it differs from the one last announced,
        notify the sessions. Returns whether it changed."""
        if toolset is not None:
            if isinstance(self._source, _Static):
                self._source.current = toolset
            elif toolset is not self._source.current:
                _log.warning(
                    "mcp.gate.update_ignored",
                    reason="the source decides the toolset",
                    given=toolset.digest,
                    source=self._source.current.digest,
                )
        digest = self.snapshot.toolset.digest
        if digest == self._announced:
            return False
        self._announced = digest
        _log.info("mcp.gate.toolset_changed", digest=digest)
        await self.notify_tools_changed()
        return True

    def on_change(self, toolset: Toolset | None = None) -> asyncio.Task[bool] | None:
        """A callback for the sync watcher: schedules `update(toolset)` on the
        running loop and returns the task (awaitable, so an awaiting watcher
        waits for the notifications). Without a running loop it swaps a static
        toolset and returns None."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if toolset is not None and isinstance(self._source, _Static):
                self._source.current = toolset
            return None
        task = loop.create_task(self.update(toolset))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def close(self) -> None:
        """Stop following the source's change callbacks."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    async def watch(self, interval_seconds: float = 1.0) -> None:
        """Poll the source forever, announcing changes; for sources without a
        change callback. Run it in the server's task group."""
        while True:
            await anyio.sleep(interval_seconds)
            try:
                await self.update()
            except Exception:
                _log.exception("mcp.gate.watch_failed")

    # ------------------------------------------------------------ install

    def install(
        self,
        server: Server[Any],
        *,
        handlers: Mapping[str, ToolHandler] | None = None,
        subscriptions: SubscriptionBus | None = None,
    ) -> None:
        """Take over `tools/list` and gate `tools/call` on `server`. Calls go to
        `handlers` when given, else to the `tools/call` handler already registered."""
        if handlers is not None:
            self._handlers = dict(handlers)
            self._check_handlers(self.snapshot.toolset)
            dispatch = self._dispatch_to_handlers(self._handlers)
        else:
            entry = server.get_request_handler("tools/call")
            if entry is None:
                raise ValueError(
                    "the server has no tools/call handler: pass handlers={tool: async fn}"
                )
            dispatch = self._dispatch_to_entry(entry)

        async def call_tool(
            ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
        ) -> HandlerResult:
            decision = self._decide(ctx, params.name)
            if decision.error is not None:
                return refusal(decision.error, ctx.protocol_version, self._refusals)
            result = await dispatch(ctx, params, decision)
            return project_result(result, ctx.protocol_version)

        server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
        self.install_listing(server, subscriptions=subscriptions)

    def install_listing(
        self, server: Server[Any], *, subscriptions: SubscriptionBus | None = None
    ) -> None:
        """Take over `tools/list` and announce swaps on `server`, leaving
        `tools/call` to the caller (FastMCP gates it in its own middleware)."""
        server.add_request_handler(
            "tools/list", types.PaginatedRequestParams, self._handle_list_tools
        )
        server.get_tool_input_schema = self.input_schema
        server.middleware.append(self._middleware)
        if self._list_changed:
            self._bus = subscriptions if subscriptions is not None else self._listen_bus(server)
        else:
            self._bus = subscriptions

    @staticmethod
    def _listen_bus(server: Server[Any]) -> SubscriptionBus | None:
        entry = server.get_request_handler("subscriptions/listen")
        if entry is None:
            bus = InMemorySubscriptionBus()
            server.add_request_handler(
                "subscriptions/listen", types.SubscriptionsListenRequestParams, ListenHandler(bus)
            )
            return bus
        # a ListenHandler keeps its bus private; pass subscriptions= to be explicit
        found = getattr(entry.handler, "_bus", None)
        if found is None:
            _log.warning(
                "mcp.list_changed.no_bus",
                detail="subscriptions/listen is served by an unknown handler; pass subscriptions=",
            )
        return found


def gate_server(
    server: Server[Any],
    source: Toolset | ToolsetSource,
    *,
    handlers: Mapping[str, ToolHandler] | None = None,
    ttl_ms: int | None = None,
    page_size: int = 100,
    cache_scope: Literal["public", "private"] = "private",
    list_changed: bool = True,
    subscriptions: SubscriptionBus | None = None,
    on_decision: OnDecision | None = None,
    refusals: Refusals = "auto",
) -> GatedTools:
    """Gate a low-level `mcp.server.Server` with a toolset.

    `handlers` maps tool names to `async (arguments) -> result`; without it the
    server's own `tools/call` handler receives the gated calls (with `name` the
    target tool and `arguments` the converted ones). `refusals`: `"auto"`
    (arguments refusals as `isError` results from 2025-11-25 on), `"jsonrpc"`
    or `"result"` (see the module docstring). Returns the `GatedTools`
    (`update`, `on_change`, `notify_tools_changed`, `check`, ...).
    """
    gated = GatedTools(
        source,
        ttl_ms=ttl_ms,
        page_size=page_size,
        cache_scope=cache_scope,
        list_changed=list_changed,
        on_decision=on_decision,
        refusals=refusals,
    )
    gated.install(server, handlers=handlers, subscriptions=subscriptions)
    return gated


def gate_mcpserver(
    app: MCPServer[Any],
    source: Toolset | ToolsetSource,
    *,
    ttl_ms: int | None = None,
    page_size: int = 100,
    cache_scope: Literal["public", "private"] = "private",
    list_changed: bool = True,
    subscriptions: SubscriptionBus | None = None,
    on_decision: OnDecision | None = None,
    refusals: Refusals = "auto",
) -> GatedTools:
    """Gate a high-level `mcp.server.MCPServer`: its tools (registered with
    `@app.tool(name=...)` under the toolset's names) receive the calls the gate
    accepts, bound by the framework from the converted arguments.

    Register every tool before calling this: MCPServer parses each call's
    arguments with the tool's signature (pydantic, which drops keys it lacks and
    fills its Python defaults), so this raises `HandlerMismatch`, one line per
    mismatch, when a signature would strip, refuse or change arguments the
    toolset's current version accepts (registry/sdk/handlers.py); after a swap
    such calls are refused (-31004 `handler_mismatch`). `subscriptions`
    defaults to the app's own subscription bus (the one
    `MCPServer(subscriptions=...)` got).
    """
    # MCPServer keeps its low-level server and bus private (the SDK's own
    # in-memory transport reaches for `_lowlevel_server` the same way)
    server: Server[Any] = app._lowlevel_server
    bus = subscriptions if subscriptions is not None else getattr(app, "_subscriptions", None)
    gated = GatedTools(
        source,
        ttl_ms=ttl_ms,
        page_size=page_size,
        cache_scope=cache_scope,
        list_changed=list_changed,
        on_decision=on_decision,
        refusals=refusals,
    )
    gated.install(server, subscriptions=bus)
    # the schemas MCPServer parses each tool's arguments with (its pydantic signature)
    gated.hold_handlers_to({t.name: t.parameters for t in app._tool_manager.list_tools()})
    return gated


def captured_initialize(options: Any, protocol_version: str | None = None) -> dict[str, Any]:
    """The `initialize` result a server built with these `InitializationOptions`
    answers, as `registry.sdk.capabilities.publish_capabilities` takes it."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    result: dict[str, Any] = {
        "protocolVersion": protocol_version or LATEST_PROTOCOL_VERSION,
        "capabilities": options.capabilities.model_dump(by_alias=True, exclude_none=True),
        "serverInfo": {"name": options.server_name, "version": options.server_version},
    }
    if getattr(options, "instructions", None):
        result["instructions"] = options.instructions
    return result
