"""Gate a FastMCP server (the standalone `fastmcp` package, 4.x) in one line.

Needs the `[fastmcp]` extra (`pip install 'mcp-tool-registry[fastmcp]'`);
`registry.sdk` itself never imports `fastmcp`.

    app = FastMCP("billing")

    @app.tool(name="db.query")
    def db_query(query: str, timeout: int | None = None) -> dict: ...

    gated = gate_fastmcp(app, source)       # the keywords of gate_mcpserver
    await app.run_async(transport="stdio")

`source` is a `Toolset` or a source with `.current` (the sync watcher), as for
`gate_mcpserver` (registry/sdk/mcp_adapter.py, whose `GatedTools` this extends).

What it installs:

* A FastMCP `Middleware`, first in `app.middleware`, whose `on_call_tool` runs
  `Gate.check` on the call's raw `arguments` and the request's raw `_meta`
  before any other middleware and before FastMCP binds the arguments to the
  function (pydantic validation, coercion, Python defaults). Same decision
  table, codes and refusal surface as the low-level adapter: `refusals="auto"`
  answers a refusal of the arguments themselves as an `isError` result from
  2025-11-25 on and everything else as a JSON-RPC error (`MCPError`, which
  FastMCP passes through untouched). An accepted call continues into FastMCP
  as `decision.tool` (an alias resolved to its target) with
  `decision.arguments` (converted along the route). A call a tool body makes
  in turn (`ctx.fastmcp.call_tool(...)`) is gated as a version-less call: the
  client's `_meta` belongs to the client's own call only.
* `tools/list` from the toolset (the low-level handler of `GatedTools`: every
  tool's current definition with `_meta.schemaVersion`/`schemaHash`, by name,
  `page_size` per page from one snapshot, the negotiated revision's fields,
  `ttlMs` on 2026-07-28 sessions). FastMCP's own listing (its signature-derived
  schemas, `list_page_size`, list middleware and transforms) no longer reaches
  the wire: the registry's definition is the contract.
* `notifications/tools/list_changed` to handshake-era sessions and
  `subscriptions/listen` streams on every toolset swap (`list_changed=True`).
* A report, at server start (a provider's lifespan is FastMCP's startup hook)
  and after every swap, of the tools FastMCP implements that the toolset lacks
  (never listed; calls refused as unknown tools) and the toolset's tools
  FastMCP lacks (calls pass the gate and FastMCP answers "Unknown tool"): one
  WARNING each on the `registry.sdk.fastmcp` logger, naming them.
  `await gated.report_mismatch()` runs it on demand and returns the names.

What FastMCP still does after the gate: it validates the gated arguments
against the function's signature with pydantic (lax by default: `"5"` becomes
`5` where the annotation says `int` and the registry's schema did not already
refuse it), refuses a keyword the function does not take (a property the
registry's schema allows, say under `additionalProperties: true`), and fills
the function's own Python defaults for parameters the caller did not send. The
gate never fills a default (seed 002); a function that needs to know what the
caller sent reads `gated_arguments()`, exactly the arguments the gate accepted
(after conversion), inside any tool body, sync or async. FastMCP refuses
`**kwargs` functions; a `fastmcp.tools.Tool` subclass (as FastMCP's proxy and
OpenAPI tools are) receives the dict in `run(arguments)` without binding.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from fastmcp import FastMCP
from fastmcp.server.dependencies import _is_client_tool_call, fastmcp_request_ctx
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers import Provider
from fastmcp.tools.base import ToolResult
from mcp import types
from mcp.server.subscriptions import SubscriptionBus

from registry.sdk._logging import get_logger
from registry.sdk._mcp_results import Refusals, Snapshot, project_result, refusal
from registry.sdk.gate import OnDecision
from registry.sdk.handlers import HandlerMismatch, HandlerReport, compare_handlers
from registry.sdk.mcp_adapter import GatedTools, ToolsetSource
from registry.sdk.toolset import Toolset

__all__ = ["GatedFastMCP", "ToolMismatch", "gate_fastmcp", "gated_arguments"]

_log = get_logger("registry.sdk.fastmcp")

_GATED_ARGUMENTS: ContextVar[dict[str, Any] | None] = ContextVar(
    "registry_gated_arguments", default=None
)


def gated_arguments() -> dict[str, Any]:
    """The arguments the gate accepted for the call being served: the caller's
    own object (or the converter's output), before FastMCP's binding, with no
    default filled. Raises `LookupError` outside a gated tool call."""
    arguments = _GATED_ARGUMENTS.get()
    if arguments is None:
        raise LookupError("gated_arguments() is only available inside a gated tool call")
    return arguments


@dataclass(frozen=True, slots=True)
class ToolMismatch:
    """Tool names on one side only, sorted."""

    namespace: str
    not_implemented: tuple[str, ...]
    """In the toolset; FastMCP has no tool of that name."""
    not_registered: tuple[str, ...]
    """FastMCP tools the toolset does not hold (an alias name included: the
    gate sends an alias's calls to its target, never to a tool of its name)."""

    @property
    def empty(self) -> bool:
        return not (self.not_implemented or self.not_registered)


class GatedFastMCP(GatedTools):
    """`GatedTools` bound to a FastMCP app: its snapshot, listing and change
    notifications, plus the implemented-versus-registered report."""

    def __init__(self, app: FastMCP[Any], source: Toolset | ToolsetSource, **options: Any) -> None:
        self._app = app
        self._reports: set[asyncio.Task[ToolMismatch | None]] = set()
        self._reporting = False  # set once installed: the boot report runs at server start
        super().__init__(source, **options)

    def _warn_names(self, report: HandlerReport) -> None:
        """Names on one side only are `report_mismatch`'s (at start and after swaps)."""

    @property
    def refusals(self) -> Refusals:
        return self._refusals

    def _compile(self, toolset: Toolset) -> Snapshot:
        snapshot = super()._compile(toolset)
        if self._reporting:
            self._schedule_report()
        return snapshot

    def _schedule_report(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._report_logged())
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

    async def _report_logged(self) -> ToolMismatch | None:  # after a swap
        try:
            return await self.report_mismatch()
        except Exception:
            _log.exception("fastmcp.gate.report_failed")
            return None

    async def _handler_schemas_now(self) -> dict[str, Any]:
        """The input schema FastMCP parses each tool's arguments with (its
        pydantic signature), as FastMCP lists it."""
        return {
            tool.name: tool.parameters for tool in await self._app.list_tools(run_middleware=False)
        }

    async def start(self) -> None:
        """At server start: hold the handlers to the toolset (`HandlerMismatch`,
        one line per mismatch, stops the server), and name each side's extras."""
        schemas = await self._handler_schemas_now()
        try:
            self.hold_handlers_to(schemas)
        except HandlerMismatch as exc:
            for tool, lines in exc.mismatches.items():
                for line in lines:
                    _log.error(
                        "fastmcp.gate.handler_mismatch", message=f"{tool}: {line}", tool=tool
                    )
            raise

    async def report_mismatch(self) -> ToolMismatch:
        """Compare the tools FastMCP implements with the toolset being served;
        log a WARNING naming each side's extras; return them. The handler schemas
        read are those later swaps are held to."""
        toolset = self.snapshot.toolset
        schemas = await self._handler_schemas_now()
        self._handler_schemas = schemas
        report = compare_handlers(toolset, schemas)
        for event, message in report.warnings():
            _log.warning(
                f"fastmcp.gate.{event}",
                message=message,
                namespace=toolset.namespace,
                tools=list(
                    report.not_implemented
                    if event == "tools_not_implemented"
                    else report.not_registered
                ),
            )
        return ToolMismatch(
            namespace=toolset.namespace,
            not_implemented=report.not_implemented,
            not_registered=report.not_registered,
        )


class _GateCalls(Middleware):
    """The FastMCP middleware: every `tools/call` through `Gate.check` first."""

    def __init__(self, gated: GatedFastMCP) -> None:
        self._gated = gated

    async def on_call_tool(
        self,
        context: MiddlewareContext[types.CallToolRequestParams],
        call_next: CallNext[types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        call = context.message
        request = fastmcp_request_ctx.get()
        # the request's raw `_meta` (FastMCP rebuilds the message without it);
        # it belongs to the client's own call, not to calls its tool body makes
        meta = request.meta if request is not None and _is_client_tool_call() else None
        protocol_version = request.protocol_version if request is not None else None
        decision = self._gated.decide(call.name, call.arguments, meta)
        if decision.error is not None:
            answer = refusal(decision.error, protocol_version, self._gated.refusals)
            return ToolResult.from_mcp_result(types.CallToolResult.model_validate(answer))
        assert decision.arguments is not None
        gated = call.model_copy(update={"name": decision.tool, "arguments": decision.arguments})
        token = _GATED_ARGUMENTS.set(decision.arguments)
        try:
            result = await call_next(context.copy(message=gated))
        finally:
            _GATED_ARGUMENTS.reset(token)
        return _projected(result, protocol_version)


def _projected(result: ToolResult, protocol_version: str | None) -> ToolResult:
    """A tool's result with only the fields of the session's revision (no
    `structuredContent` before 2025-06-18, ...): the other adapters' projection
    (registry/sdk/revisions.py). FastMCP's own multi-round-trip results pass."""
    if type(result) is not ToolResult:
        return result
    answer = types.CallToolResult(
        content=result.content,
        structured_content=result.structured_content,
        is_error=result.is_error,
        _meta=result.meta,
    )
    projected = project_result(answer, protocol_version)
    assert isinstance(projected, dict)
    return ToolResult.from_mcp_result(types.CallToolResult.model_validate(projected))


class _ReportAtStart(Provider):
    """No components; its lifespan holds the handlers to the toolset and runs the
    mismatch report when the server starts, after the providers registered
    before the gate have started."""

    def __init__(self, gated: GatedFastMCP) -> None:
        super().__init__()
        self._gated = gated

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        await self._gated.start()  # HandlerMismatch: the server does not start
        await self._gated._report_logged()
        yield


def gate_fastmcp(
    app: FastMCP[Any],
    source: Toolset | ToolsetSource,
    *,
    ttl_ms: int | None = None,
    page_size: int = 100,
    cache_scope: Literal["public", "private"] = "private",
    list_changed: bool = True,
    subscriptions: SubscriptionBus | None = None,
    on_decision: OnDecision | None = None,
    refusals: Refusals = "auto",
) -> GatedFastMCP:
    """Gate a `fastmcp.FastMCP` app: its tools (registered under the toolset's
    names, `@app.tool(name="db.query")`) receive the calls the gate accepts.

    Register the tools before the server starts (the report at start reads
    them). `subscriptions`: the bus 2026-07-28 `subscriptions/listen` streams
    are fed from (default: a `ListenHandler` is installed unless the server
    serves `subscriptions/listen` already). The other keywords are those of
    `gate_mcpserver`. Returns the `GatedFastMCP` (`update`, `on_change`,
    `check`, `report_mismatch`, ...).
    """
    gated = GatedFastMCP(
        app,
        source,
        ttl_ms=ttl_ms,
        page_size=page_size,
        cache_scope=cache_scope,
        list_changed=list_changed,
        on_decision=on_decision,
        refusals=refusals,
    )
    # FastMCP keeps its low-level server private; the listing and the
    # initialize hook of GatedTools live at that level
    gated.install_listing(app._mcp_server, subscriptions=subscriptions)
    app.middleware.insert(0, _GateCalls(gated))
    app.add_provider(_ReportAtStart(gated))
    gated._reporting = True
    return gated
