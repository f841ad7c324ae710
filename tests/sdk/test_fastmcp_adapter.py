"""The FastMCP adapter with FastMCP's own server and the official MCP SDK's client.

Each test builds a `fastmcp.FastMCP` app with decorated functions, gates it
with `gate_fastmcp`, and drives its low-level server (where FastMCP's own
request dispatch and middleware chain run) in memory with `mcp.Client` or a
handshake session at a chosen revision. The server's lifespan (and so the
start-up report) runs as it does under `app.run_async()`.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

pytest.importorskip("fastmcp")

from fastmcp import Context, FastMCP
from mcp import Client, types

from registry.canonical import digest
from registry.sdk import strict_schema
from registry.sdk.fastmcp_adapter import GatedFastMCP, gate_fastmcp, gated_arguments
from registry.sdk.handlers import HandlerMismatch
from tests.e2e.harness import initialize_request
from tests.fixtures.seeds import DB_QUERY_V4, SEARCH_V2
from tests.readme_transcripts import python_block
from tests.sdk import payload, seed_000, seed_002, served
from tests.sdk.test_mcp_adapter import (
    LEGACY,
    MODERN,
    MODES,
    V3_CALL,
    Watched,
    billing,
    refused,
    refused_as_result,
    session_at,
    toolset_of,
)

REPORT_LOGGER = "registry.sdk.fastmcp"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "fastmcp_server.py"


def billing_payload() -> dict[str, Any]:
    """tests.sdk.test_mcp_adapter.billing() as a payload: db.query, search, search_v1."""
    s000, s002 = seed_000(), seed_002(with_route=True)
    return payload(s000["tools"] + s002["tools"], s002["aliases"])


class App:
    """A FastMCP app implementing db.query (seed 000) and search (seed 002), gated.

    Each function records what FastMCP bound to its signature and what the
    gate passed (`gated_arguments()`)."""

    def __init__(self, source: Any, *, extra_tools: tuple[str, ...] = (), **options: Any) -> None:
        self.bound: list[tuple[str, dict[str, Any]]] = []
        self.gated_seen: list[dict[str, Any]] = []
        self.app: FastMCP[Any] = FastMCP("billing")
        app = self.app

        # every property of v4, optional ones None (a Python default the registry's v4
        # does not have refuses to start: test_a_python_default_..._refuses_to_start)
        @app.tool(name="db.query")
        def db_query(
            query: str, timeout: int | None = None, mode: str | None = None
        ) -> dict[str, Any]:
            self.bound.append(("db.query", {"query": query, "timeout": timeout, "mode": mode}))
            self.gated_seen.append(gated_arguments())  # a sync tool: run in a worker thread
            return {"rows": []}

        # the value the function sees through the alias is the converter's fill (20)
        @app.tool(name="search")
        async def search(
            query: str, filters: dict[str, Any], limit: int | None = None
        ) -> dict[str, Any]:
            self.bound.append(("search", {"query": query, "filters": filters, "limit": limit}))
            self.gated_seen.append(gated_arguments())
            return {"hits": []}

        for name in extra_tools:
            app.tool(name=name)(lambda: "done")
        self.gated: GatedFastMCP = gate_fastmcp(app, source, **options)

    @property
    def server(self) -> Any:
        return self.app._mcp_server

    @asynccontextmanager
    async def client(self, mode: str, **kwargs: Any) -> AsyncIterator[Client]:
        async with Client(self.server, mode=mode, **kwargs) as client:
            yield client


def reports(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == REPORT_LOGGER]


# ---------------------------------------------------------------- tools/list


@pytest.mark.parametrize("mode", MODES)
async def test_list_is_the_registry_s_not_the_one_fastmcp_derives(mode: str) -> None:
    host = App(billing())
    async with host.client(mode) as client:
        first = await client.list_tools(cache_mode="refresh")
        second = await client.list_tools(cache_mode="refresh")
    assert first.tools == second.tools
    # by name, no alias; exactly the registry's definitions and stamps: no title
    # FastMCP makes up, no `_meta.fastmcp`, no schema derived from a signature
    assert [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in first.tools] == [
        {**DB_QUERY_V4, "_meta": {"schemaVersion": "v4", "schemaHash": digest(DB_QUERY_V4)}},
        {**SEARCH_V2, "_meta": {"schemaVersion": "v2", "schemaHash": digest(SEARCH_V2)}},
    ]
    if mode == MODERN:
        assert (first.ttl_ms, first.cache_scope) == (0, "private")


async def test_list_pages_come_from_one_snapshot() -> None:
    watched = Watched(billing())
    host = App(watched, page_size=1)
    async with host.client(LEGACY) as client:
        page1 = await client.list_tools()
        assert [t.name for t in page1.tools] == ["db.query"]
        assert page1.next_cursor is not None
        watched.current = toolset_of(seed_000())  # search is gone from the new toolset
        page2 = await client.list_tools(cursor=page1.next_cursor)
        assert [t.name for t in page2.tools] == ["search"]
        assert page2.next_cursor is None
        fresh = await client.list_tools()
    assert [t.name for t in fresh.tools] == ["db.query"]


async def test_list_carries_only_the_negotiated_revision_s_fields() -> None:
    body = seed_000()
    body["tools"][0]["versions"][0]["definition"] = {
        **DB_QUERY_V4,
        "title": "Query",
        "outputSchema": {"type": "object"},
    }
    body["tools"][0]["versions"][0]["digest"] = digest(
        body["tools"][0]["versions"][0]["definition"]
    )
    titled = toolset_of(payload(body["tools"]))
    host = App(titled)
    async with session_at(host.server, "2025-03-26") as session:
        (tool,) = (await session.list_tools()).tools
    assert tool.title is None and tool.output_schema is None
    assert tool.meta is not None and tool.meta["schemaVersion"] == "v4"


# ---------------------------------------------------------------- tools/call, seed 000


@pytest.mark.parametrize("mode", MODES)
async def test_seed_000_declared_retired_v3_is_a_relist_error(mode: str) -> None:
    host = App(billing())
    async with host.client(mode) as client:
        call = client.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": "v3"})
        data = await refused(call, -31001)
        assert (data["reason"], data["action"]) == ("schema_version_retired", "relist")
        assert (data["declaredVersion"], data["currentVersion"]) == ("v3", "v4")
        assert data["inputSchema"] == strict_schema(DB_QUERY_V4["inputSchema"])
        served = await client.call_tool(
            "db.query", {"query": "SELECT 1", "timeout": 5}, meta={"schemaVersion": "v4"}
        )
    assert not served.is_error
    assert host.bound == [("db.query", {"query": "SELECT 1", "timeout": 5, "mode": None})]


@pytest.mark.parametrize("mode", MODES)
async def test_seed_000_versionless_stale_call_is_a_result_naming_the_rename(mode: str) -> None:
    """2025-11-25 and later (the client's legacy mode offers 2025-11-25)."""
    host = App(billing())
    async with host.client(mode) as client:
        call = client.call_tool("db.query", {"query": "SELECT 1", "timeout_ms": 5000})
        text, data = await refused_as_result(call, -31003)
    assert (data["inferredVersion"], data["currentVersion"], data["action"]) == (
        "v3",
        "v4",
        "relist",
    )
    renamed = next(c for c in data["changes"] if c["kind"] == "property-renamed")
    assert renamed["message"] in text
    assert "`timeout_ms` is not part of db.query v4" in text
    assert host.bound == []


async def test_before_2025_11_25_argument_refusals_are_json_rpc_errors() -> None:
    host = App(billing())
    async with session_at(host.server, "2025-06-18") as session:
        call = session.call_tool("db.query", {"query": "SELECT 1", "timeout_ms": 5000})
        assert (await refused(call, -31003))["inferredVersion"] == "v3"
    assert host.bound == []


@pytest.mark.parametrize(("refusals", "as_result"), [("jsonrpc", False), ("result", True)])
async def test_refusals_option(refusals: str, as_result: bool) -> None:
    host = App(billing(), refusals=refusals)
    async with session_at(host.server, "2025-06-18" if as_result else "2025-11-25") as session:
        call = session.call_tool("db.query", {"query": "SELECT 1", "timeout_ms": 5000})
        if as_result:
            result = await call
            assert result.is_error and "timeout_ms" in str(result.content[0])
        else:
            await refused(call, -31003)


@pytest.mark.parametrize("mode", MODES)
async def test_the_gate_sees_the_raw_value_before_fastmcp_coerces_it(mode: str) -> None:
    """FastMCP (lax pydantic) would bind "5" to `timeout: int` as 5."""
    host = App(billing())
    async with host.client(mode) as client:
        call = client.call_tool(
            "db.query", {"query": "SELECT 1", "timeout": "5"}, meta={"schemaVersion": "v4"}
        )
        text, data = await refused_as_result(call, -32602)
    assert data["reason"] == "invalid_arguments"
    assert data["errors"][0]["path"] == "/timeout"
    assert "`timeout` must be of type integer" in text
    assert host.bound == []


async def test_a_python_default_the_registry_lacks_refuses_to_start_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """FastMCP fills a function's Python defaults after the gate: `timeout: int =
    30000` where v4 has no default is seed 000's misread, so the server does not
    start; one line per mismatch, in the exception and the log."""
    app: FastMCP[Any] = FastMCP("billing")

    @app.tool(name="db.query")
    def db_query(query: str, timeout: int = 30000) -> dict[str, Any]:
        return {"rows": []}

    gate_fastmcp(app, toolset_of(seed_000()))
    with pytest.raises(BaseException) as caught:  # an exception group holds it
        async with Client(app._mcp_server, mode=LEGACY):
            pass
    (error,) = flat(caught.value, HandlerMismatch)
    assert str(error).splitlines()[1:] == [
        "- db.query: the handler fills `timeout` with 30000 when a call leaves it out, where "
        "db.query v4 has no default: the handler would read a value the caller did not send",
        "- db.query: the handler's input schema has no `mode`, which db.query v4 declares: "
        "the framework would drop or refuse it",
    ]
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert sum("handler_mismatch" in line for line in logged) == 2, logged


def flat(error: BaseException, kind: type[BaseException]) -> list[BaseException]:
    """The exceptions of `kind` in `error` and the groups it is nested in."""
    if isinstance(error, kind):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        return [e for inner in error.exceptions for e in flat(inner, kind)]
    return flat(error.__cause__, kind) if error.__cause__ is not None else []


async def test_the_readme_snippet_runs_as_written() -> None:
    """docs/sdk.md "FastMCP": its snippet, run as written, gates seed 000's db.query."""
    snippet = python_block((ROOT / "docs" / "sdk.md").read_text(encoding="utf-8"), "## FastMCP")
    ran: list[tuple[str, int | None]] = []

    def run(query: str, timeout: int | None) -> dict[str, Any]:
        ran.append((query, timeout))
        return {"rows": []}

    scope: dict[str, Any] = {"source": billing(), "run": run}
    exec(snippet, scope)  # the guide's own text: its imports, the app, gate_fastmcp
    async with Client(scope["app"]._mcp_server, mode=LEGACY) as client:
        await refused(
            client.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": "v3"}), -31001
        )
        result = await client.call_tool(
            "db.query", {"query": "SELECT 1", "timeout": 5}, meta={"schemaVersion": "v4"}
        )
    assert not result.is_error
    assert ran == [("SELECT 1", 5)]


def test_gated_arguments_outside_a_call_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="inside a gated tool call"):
        gated_arguments()


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_and_unregistered_tools_are_invalid_params(mode: str) -> None:
    """A name the toolset lacks is the protocol's -32602, never FastMCP's
    `Unknown tool` result, and a tool FastMCP implements but the registry does
    not hold is never called."""
    host = App(billing(), extra_tools=("admin.reset",))
    async with host.client(mode) as client:
        assert (await refused(client.call_tool("db.drop", {}), -32602))["reason"] == "unknown_tool"
        data = await refused(client.call_tool("admin.reset", {}), -32602)
    assert (data["reason"], data["tool"]) == ("unknown_tool", "admin.reset")


@pytest.mark.parametrize("mode", MODES)
async def test_seed_002_alias_reaches_the_target_with_the_converter_s_values(mode: str) -> None:
    host = App(billing())
    async with host.client(mode) as client:
        result = await client.call_tool("search_v1", {"query": "foo"})
    assert not result.is_error
    converted = {"query": "foo", "filters": {}, "limit": 20}
    assert host.bound == [("search", converted)]  # 20, not the Python default 99
    assert host.gated_seen == [converted]


async def test_seed_002_alias_without_route_is_a_mismatch() -> None:
    host = App(billing(alias_route=False))
    async with host.client(LEGACY) as client:
        data = await refused(client.call_tool("search_v1", {"query": "foo"}), -31004)
    assert data["reason"] == "schema_version_mismatch"
    assert host.bound == []


async def test_a_call_a_tool_body_makes_is_gated_without_the_client_s_meta() -> None:
    """The client's `_meta` declares its own call's contract, not the calls its
    tool body makes: those are version-less, so strictly validated."""
    host = App(billing())
    inner: list[str] = []

    @host.app.tool(name="report")
    async def report(ctx: Context) -> str:
        for arguments in ({"query": "q", "timeout_ms": 1}, {"query": "q"}):
            result = await ctx.fastmcp.call_tool("db.query", arguments)
            inner.append("refused" if result.is_error else "served")
        return "ok"

    # `report` joins the registry's toolset so that its own call passes the gate
    reporting = {"name": "report", "current": 1, "versions": [served(REPORT_V1, 1)], "retired": []}
    body = payload([*seed_000()["tools"], reporting])
    await host.gated.update(toolset_of(body))
    async with host.client(MODERN) as client:
        # inherited, this `_meta` would refuse both inner calls (db.query never served a v1)
        result = await client.call_tool("report", {}, meta={"schemaVersion": "v1"})
    assert not result.is_error, result.content
    assert inner == ["refused", "served"]
    assert host.gated_seen == [{"query": "q"}]


REPORT_V1: dict[str, Any] = {
    "name": "report",
    "description": "Run the reports.",
    "inputSchema": {"type": "object", "properties": {}},
}


# ---------------------------------------------------------------- swaps


async def test_a_swap_is_announced_to_both_eras_and_applies_to_the_next_call() -> None:
    """A handshake session hears `notifications/tools/list_changed`, a
    2026-07-28 `subscriptions/listen` stream a `ToolsListChanged`; the next
    call declaring v3 (refused while retired) is served through the converter."""
    watched = Watched(billing())
    host = App(watched)
    heard: list[Any] = []

    async def keep(message: Any) -> None:
        heard.append(message)

    stale = {"query": "q", "timeout_ms": 5}
    async with (
        host.client(LEGACY, message_handler=keep) as legacy,
        host.client(MODERN) as modern,
        modern.listen(tools_list_changed=True) as events,
    ):
        assert legacy.server_capabilities.tools is not None
        assert legacy.server_capabilities.tools.list_changed is True
        await refused(legacy.call_tool("db.query", stale, meta={"schemaVersion": 3}), -31001)
        await watched.swap(billing(v3_served=True))  # v3 served again, with a converter
        with anyio.fail_after(10):
            event = await anext(aiter(events))
            while not any(isinstance(m, types.ToolListChangedNotification) for m in heard):
                await anyio.sleep(0.01)
        assert type(event).__name__ == "ToolsListChanged"
        result = await modern.call_tool("db.query", stale, meta={"schemaVersion": "v3"})
    assert not result.is_error
    assert host.gated_seen == [{"query": "q", "timeout": 5}]


# ---------------------------------------------------------------- the report


async def test_start_up_reports_tools_on_one_side_only(caplog: pytest.LogCaptureFixture) -> None:
    """The toolset holds db.query and search; the app implements db.query,
    search and admin.reset. A second app lacks search."""
    caplog.set_level(logging.WARNING, logger=REPORT_LOGGER)
    extra = App(billing(), extra_tools=("admin.reset",))
    async with extra.client(LEGACY):
        pass
    (record,) = reports(caplog)
    assert record.levelno == logging.WARNING
    assert record.__dict__["event"] == "fastmcp.gate.tools_not_in_registry"
    assert record.__dict__["tools"] == ["admin.reset"]
    assert "admin.reset" in record.getMessage() and "namespace billing" in record.getMessage()

    caplog.clear()
    lacking = App(billing())
    lacking.app.local_provider.remove_tool("search")
    async with lacking.client(LEGACY):
        pass
    (record,) = reports(caplog)
    assert record.__dict__["event"] == "fastmcp.gate.tools_not_implemented"
    assert record.__dict__["tools"] == ["search"]
    assert "search" in record.getMessage()


async def test_start_up_is_quiet_when_both_sides_agree(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=REPORT_LOGGER)
    host = App(billing())
    async with host.client(LEGACY):
        pass
    assert reports(caplog) == []
    mismatch = await host.gated.report_mismatch()
    assert mismatch.empty
    assert (mismatch.not_implemented, mismatch.not_registered) == ((), ())


async def test_a_swap_bringing_a_tool_the_server_lacks_is_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=REPORT_LOGGER)
    watched = Watched(toolset_of(seed_000()))
    host = App(watched)
    host.app.local_provider.remove_tool("search")
    async with host.client(LEGACY):
        assert reports(caplog) == []
        await watched.swap(billing())  # search (and its alias) published
        with anyio.fail_after(10):
            while not reports(caplog):
                await anyio.sleep(0.01)
    (record,) = reports(caplog)
    assert record.__dict__["tools"] == ["search"]
    mismatch = await host.gated.report_mismatch()
    assert (mismatch.not_implemented, mismatch.not_registered) == (("search",), ())


def test_gate_fastmcp_takes_the_keywords_of_gate_mcpserver() -> None:
    import inspect

    from registry.sdk.mcp_adapter import gate_mcpserver

    ours = inspect.signature(gate_fastmcp).parameters
    theirs = inspect.signature(gate_mcpserver).parameters
    assert [(p.name, p.kind, p.default) for p in list(ours.values())[1:]] == [
        (p.name, p.kind, p.default) for p in list(theirs.values())[1:]
    ]


def test_registry_sdk_does_not_import_fastmcp() -> None:
    code = "import sys, registry.sdk, registry.sdk.mcp_adapter; assert 'fastmcp' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_fastmcp_extra_pins_the_major_the_adapter_is_written_for() -> None:
    """`[fastmcp]` admits the installed (tested) FastMCP and not its next major,
    and pins `mcp` as `[mcp]` does: both adapters run on one `mcp`."""
    from importlib.metadata import version

    from packaging.version import Version

    from tests.test_packaging import _extra

    spec = _extra("fastmcp")["fastmcp"].specifier
    installed = Version(version("fastmcp"))
    assert installed in spec, f"the tested FastMCP {installed} is outside {spec}"
    assert Version(f"{installed.major + 1}.0") not in spec, f"{spec} admits the next major"
    assert _extra("fastmcp")["mcp"].specifier == _extra("mcp")["mcp"].specifier


def test_the_example_writes_only_the_protocol_to_stdout(tmp_path: Path) -> None:
    """examples/fastmcp_server.py over stdio, fed raw JSON-RPC lines: every line
    it writes to stdout is a JSON-RPC message (FastMCP's and the SDK's logs,
    the start-up report among them, go to stderr)."""
    toolset = tmp_path / "billing.json"
    toolset.write_bytes(msgspec.json.encode(billing_payload()))  # search: not implemented
    requests = [
        initialize_request("2025-06-18", "raw"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "db.query", "arguments": {"query": "q", "timeout_ms": 1}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "db.query", "arguments": {"query": "q"}},
        },
    ]
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--toolset", str(toolset)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    try:
        for request in requests:  # one at a time: stdin closes only once all are answered
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            while "id" in request and request["id"] not in answers:
                message = json.loads(process.stdout.readline())  # anything else fails here
                assert message["jsonrpc"] == "2.0"
                if "id" in message:
                    answers[message["id"]] = message
        process.stdin.close()
        rest, stderr = process.stdout.read(), process.stderr.read() if process.stderr else ""
        process.wait(timeout=30)
    finally:
        process.kill()
    assert rest == "", rest
    assert [t["name"] for t in answers[2]["result"]["tools"]] == ["db.query", "search"]
    assert answers[3]["error"]["code"] == -31003
    assert answers[4]["result"]["structuredContent"] == {"rows": [], "received": {"query": "q"}}
    assert "fastmcp.gate.tools_not_implemented" in stderr and "search" in stderr
