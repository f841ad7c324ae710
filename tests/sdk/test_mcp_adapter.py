"""The MCP adapters end to end, with the official MCP SDK's client.

Both servers of the SDK (the low-level `Server` and the high-level
`MCPServer`), both protocol eras (the 2025 handshake and the 2026-07-28
per-request envelope), in memory; and the example server over stdio.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

pytest.importorskip("mcp")

from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams

from registry.canonical import digest
from registry.sdk import Toolset, strict_schema
from registry.sdk.mcp_adapter import GatedTools, gate_mcpserver, gate_server
from registry.sdk.refusals import STRUCTURED_FIELDS
from tests.e2e.harness import handshake
from tests.fixtures.seeds import DB_QUERY_V4, SEARCH_V2
from tests.sdk import payload, seed_000, seed_002

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gated_server.py"

LEGACY, MODERN = "legacy", "2026-07-28"
KINDS = ["lowlevel", "mcpserver"]
MODES = [LEGACY, MODERN]

V3_CALL = {"query": "SELECT 1", "timeout_ms": 5000, "mode": "write"}


def toolset_of(body: dict[str, Any]) -> Toolset:
    return Toolset.from_json(msgspec.json.encode(body))


def billing(*, v3_served: bool = False, alias_route: bool = True) -> Toolset:
    """db.query (seed 000) and search with its alias search_v1 (seed 002)."""
    s000, s002 = seed_000(v3_served=v3_served), seed_002(with_route=alias_route)
    return toolset_of(payload(s000["tools"] + s002["tools"], s002["aliases"]))


class Watched:
    """A stand-in for the sync watcher: `.current`, `.wait_seconds`, `subscribe`."""

    def __init__(self, toolset: Toolset, wait_seconds: int = 30) -> None:
        self.current = toolset
        self.wait_seconds = wait_seconds
        self.callbacks: list[Callable[[Toolset], Any]] = []

    def subscribe(self, callback: Callable[[Toolset], Any]) -> Callable[[], None]:
        self.callbacks.append(callback)
        return lambda: self.callbacks.remove(callback)

    async def swap(self, toolset: Toolset) -> None:
        self.current = toolset
        for callback in self.callbacks:
            result = callback(toolset)
            if isinstance(result, Awaitable):
                await result


class Host:
    """A gated server and what its handlers received."""

    def __init__(self, kind: str, source: Any, **options: Any) -> None:
        self.kind = kind
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.server: Server[Any] | MCPServer
        if kind == "lowlevel":
            self.server, self.gated = self._lowlevel(source, **options)
        else:
            self.server, self.gated = self._mcpserver(source, **options)

    def _lowlevel(self, source: Any, **options: Any) -> tuple[Server[Any], GatedTools]:
        server: Server[Any] = Server("billing")

        async def db_query(arguments: dict[str, Any]) -> dict[str, Any]:
            if arguments.get("query") == "boom":
                raise RuntimeError("secret internals")
            self.received.append(("db.query", arguments))
            return {"rows": []}

        async def search(arguments: dict[str, Any]) -> dict[str, Any]:
            self.received.append(("search", arguments))
            return {"hits": []}

        handlers = {"db.query": db_query, "search": search}
        return server, gate_server(server, source, handlers=handlers, **options)

    def _mcpserver(self, source: Any, **options: Any) -> tuple[MCPServer, GatedTools]:
        app = MCPServer("billing")

        @app.tool(name="db.query")
        async def db_query(
            query: str, timeout: int | None = None, mode: str | None = None
        ) -> dict[str, Any]:
            self.received.append(("db.query", {"query": query, "timeout": timeout, "mode": mode}))
            return {"rows": []}

        # no Python default but None (a default other than v2's 20 refuses to start,
        # test_handler_check): the value the handler sees through the alias is the converter's
        @app.tool(name="search")
        async def search(
            query: str, filters: dict[str, Any], limit: int | None = None
        ) -> dict[str, Any]:
            self.received.append(("search", {"query": query, "filters": filters, "limit": limit}))
            return {"hits": []}

        return app, gate_mcpserver(app, source, **options)

    @asynccontextmanager
    async def client(self, mode: str, **kwargs: Any) -> AsyncIterator[Client]:
        async with Client(self.server, mode=mode, **kwargs) as client:
            yield client


async def refused(call: Awaitable[Any], code: int) -> dict[str, Any]:
    """The call fails with a JSON-RPC error (never an isError result) of `code`."""
    with pytest.raises(MCPError) as caught:
        await call
    assert caught.value.code == code, caught.value.error
    data = caught.value.data
    assert isinstance(data, dict)
    return data


async def refused_as_result(call: Awaitable[Any], code: int) -> tuple[str, dict[str, Any]]:
    """The call is answered with an `isError` result (never a JSON-RPC error)
    whose structuredContent carries `code`: (its text, its structuredContent)."""
    result = await call
    assert isinstance(result, types.CallToolResult), result
    assert result.is_error
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    structured = result.structured_content
    assert isinstance(structured, dict)
    assert set(structured) == set(STRUCTURED_FIELDS)
    assert structured["code"] == code, structured
    return block.text, structured


@asynccontextmanager
async def session_at(server: Server[Any] | MCPServer, version: str) -> AsyncIterator[ClientSession]:
    """An in-memory handshake-era session that negotiated `version` (the SDK's
    `Client` always offers the newest handshake revision)."""
    lowlevel = server._lowlevel_server if isinstance(server, MCPServer) else server
    async with (
        create_client_server_memory_streams() as (client_streams, server_streams),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(
            lambda: lowlevel.run(
                server_streams[0], server_streams[1], lowlevel.create_initialization_options()
            )
        )
        async with ClientSession(client_streams[0], client_streams[1]) as session:
            assert (await handshake(session, version)).protocol_version == version
            yield session
        tasks.cancel_scope.cancel()


# ---------------------------------------------------------------- tools/list


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
async def test_list_answers_from_the_toolset_stamped_and_deterministic(
    kind: str, mode: str
) -> None:
    host = Host(kind, billing())
    async with host.client(mode) as client:
        first = await client.list_tools(cache_mode="refresh")
        second = await client.list_tools(cache_mode="refresh")
    assert [t.name for t in first.tools] == ["db.query", "search"]  # by name; no alias
    assert first.next_cursor is None
    assert first.tools == second.tools
    expected = {"db.query": (DB_QUERY_V4, "v4"), "search": (SEARCH_V2, "v2")}
    for tool in first.tools:
        definition, version = expected[tool.name]
        assert tool.meta == {"schemaVersion": version, "schemaHash": digest(definition)}
        # the registry's definition, not one the framework derived from a signature
        assert tool.input_schema == definition["inputSchema"]
        listed = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        assert digest({k: v for k, v in listed.items() if k != "_meta"}) == digest(definition)


@pytest.mark.parametrize("kind", KINDS)
async def test_ttl_ms_on_2026_sessions_is_0_so_a_relist_reaches_the_server(kind: str) -> None:
    """The default: a client following a refusal re-lists from the server, never
    from a cache holding the contract it was just refused under. With a TTL
    the same client (default cache mode) is served its cached listing."""
    for ttl_ms, fresh in ((None, True), (30_000, False)):
        watched = Watched(billing(), wait_seconds=30)
        host = Host(kind, watched, ttl_ms=ttl_ms)
        async with host.client(MODERN) as client:
            listing = await client.list_tools()
            assert listing.ttl_ms == (ttl_ms or 0)
            assert listing.cache_scope == "private"
            assert [t.name for t in listing.tools] == ["db.query", "search"]
            watched.current = toolset_of(seed_000())  # search is gone; nobody was told
            again = await client.list_tools()  # the default cache mode: "use"
        assert [t.name for t in again.tools] == (["db.query"] if fresh else ["db.query", "search"])


@pytest.mark.parametrize("kind", KINDS)
async def test_ttl_ms_given_is_sent_and_bounded_by_the_watch_interval(kind: str) -> None:
    host = Host(kind, Watched(billing(), wait_seconds=30), ttl_ms=5_000)
    async with host.client(MODERN) as client:
        listing = await client.list_tools(cache_mode="refresh")
    assert listing.ttl_ms == 5_000


def test_ttl_ms_never_exceeds_the_watch_interval() -> None:
    assert GatedTools(Watched(billing(), wait_seconds=30), ttl_ms=5_000).ttl_ms == 5_000
    assert GatedTools(Watched(billing(), wait_seconds=2), ttl_ms=5_000).ttl_ms == 2_000
    assert GatedTools(billing(), ttl_ms=5_000).ttl_ms == 5_000
    assert GatedTools(Watched(billing(), wait_seconds=30)).ttl_ms == 0
    assert GatedTools(billing()).ttl_ms == 0


async def test_ttl_ms_is_not_sent_to_handshake_sessions() -> None:
    host = Host("lowlevel", Watched(billing(), wait_seconds=30))
    async with host.client(LEGACY) as client:
        raw = await client.session.send_request(
            types.ListToolsRequest(params=types.PaginatedRequestParams()), types.ListToolsResult
        )
    assert "ttl_ms" not in raw.model_fields_set


@pytest.mark.parametrize("mode", MODES)
async def test_every_page_comes_from_the_snapshot_the_listing_started_on(mode: str) -> None:
    watched = Watched(billing())
    host = Host("lowlevel", watched, page_size=1)
    async with host.client(mode) as client:
        page1 = await client.list_tools(cache_mode="refresh")
        assert [t.name for t in page1.tools] == ["db.query"]
        assert page1.next_cursor is not None
        watched.current = toolset_of(seed_000())  # search is gone from the new toolset
        page2 = await client.list_tools(cursor=page1.next_cursor, cache_mode="refresh")
        assert [t.name for t in page2.tools] == ["search"]
        assert page2.next_cursor is None
        fresh = await client.list_tools(cache_mode="refresh")
        assert [t.name for t in fresh.tools] == ["db.query"]
        assert fresh.next_cursor is None

        data = await refused(client.list_tools(cursor="not a cursor", cache_mode="refresh"), -32602)
        assert data["reason"] == "invalid_cursor"
        gone = json.dumps({"d": "sha256:" + "0" * 64, "o": 1}).encode()
        cursor = base64.urlsafe_b64encode(gone).decode().rstrip("=")
        data = await refused(client.list_tools(cursor=cursor, cache_mode="refresh"), -32602)
        assert data["reason"] == "cursor_expired"
        assert data["action"] == "relist"


# ---------------------------------------------------------------- seed 000


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
async def test_seed_000_retired_v3_is_a_relist_error_carrying_the_current_contract(
    kind: str, mode: str
) -> None:
    """A refusal of the declared version stays a JSON-RPC error on every
    revision (only version-aware clients meet it), and carries what a retry
    needs without a listing: current's version, input schema and the changes."""
    host = Host(kind, billing())
    async with host.client(mode) as client:
        call = client.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": "v3"})
        data = await refused(call, -31001)
        assert data["reason"] == "schema_version_retired"
        assert data["action"] == "relist"
        assert data["declaredVersion"] == "v3"
        assert data["currentVersion"] == "v4"
        assert data["retired"] == ["v3"]
        assert data["inputSchema"] == strict_schema(DB_QUERY_V4["inputSchema"])
        assert "property-renamed" in {c["kind"] for c in data["changes"]}
        retry = await client.call_tool(
            "db.query",
            {"query": "q", "timeout": 5000},
            meta={"schemaVersion": data["currentVersion"]},
        )
    assert not retry.is_error
    assert len(host.received) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_seed_000_v4_call_reaches_the_handler_with_exactly_its_arguments(mode: str) -> None:
    host = Host("lowlevel", billing())
    async with host.client(mode) as client:
        result = await client.call_tool(
            "db.query", {"query": "SELECT 1", "mode": "read"}, meta={"schemaVersion": "v4"}
        )
    assert not result.is_error
    assert result.structured_content == {"rows": []}
    # no `timeout` (v4 has no default, and none may be filled), nothing coerced
    assert host.received == [("db.query", {"query": "SELECT 1", "mode": "read"})]


@pytest.mark.parametrize("mode", MODES)
async def test_seed_000_mcpserver_gets_the_gated_arguments_before_its_binding(mode: str) -> None:
    host = Host("mcpserver", billing())
    async with host.client(mode) as client:
        result = await client.call_tool(
            "db.query", {"query": "SELECT 1", "timeout": 5}, meta={"schemaVersion": "v4"}
        )
        assert not result.is_error
        # the framework would coerce "5" to 5; the gate sees the raw value first
        call = client.call_tool(
            "db.query", {"query": "SELECT 1", "timeout": "5"}, meta={"schemaVersion": "v4"}
        )
        text, data = await refused_as_result(call, -32602)
    assert data["reason"] == "invalid_arguments"
    assert data["errors"][0]["path"] == "/timeout"
    assert "`timeout` must be of type integer" in text
    assert host.received == [("db.query", {"query": "SELECT 1", "timeout": 5, "mode": None})]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
async def test_seed_000_stale_versionless_call_is_a_result_the_model_can_act_on(
    kind: str, mode: str
) -> None:
    """2025-11-25 and later: a version-less call speaking retired v3 gets an
    isError result naming the rename in the engine's words and v4's schema; the
    retry the text implies succeeds."""
    host = Host(kind, billing())
    async with host.client(mode) as client:
        # v4 says additionalProperties: true, and the framework would drop the key
        call = client.call_tool("db.query", {"query": "SELECT 1", "timeout_ms": 5000})
        text, data = await refused_as_result(call, -31003)
        assert data["reason"] == "strict_validation_failed"
        assert (data["inferredVersion"], data["currentVersion"]) == ("v3", "v4")
        assert data["action"] == "relist"
        assert data["errors"][0]["unexpected"] == ["timeout_ms"]
        renamed = next(c for c in data["changes"] if c["kind"] == "property-renamed")
        assert (renamed["old"], renamed["new"]) == ("timeout_ms", "timeout")
        assert renamed["message"] in text
        assert "`timeout_ms` is not part of db.query v4" in text
        assert '"timeout":{"type":"integer"}' in text
        accepted = await client.call_tool("db.query", {"query": "SELECT 1", "timeout": 5000})
    assert not accepted.is_error
    assert len(host.received) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_before_2025_11_25_argument_refusals_stay_json_rpc_errors(kind: str) -> None:
    host = Host(kind, billing())
    async with session_at(host.server, "2025-06-18") as session:
        call = session.call_tool("db.query", {"query": "SELECT 1", "timeout_ms": 5000})
        data = await refused(call, -31003)
        assert (data["inferredVersion"], data["action"]) == ("v3", "relist")
        call = session.call_tool("db.query", {"query": 7}, meta={"schemaVersion": "v4"})
        assert (await refused(call, -32602))["reason"] == "invalid_arguments"
    assert host.received == []


@pytest.mark.parametrize("kind", KINDS)
async def test_one_extra_property_under_an_open_schema_names_it_and_asks_no_relist(
    kind: str,
) -> None:
    """v4 lists `additionalProperties: true`; re-listing would show the same
    schema, so a relist instruction would loop an obedient client."""
    host = Host(kind, billing())
    async with host.client(LEGACY) as client:
        call = client.call_tool("db.query", {"query": "SELECT 1", "verbose": True})
        text, data = await refused_as_result(call, -31003)
    assert (data["inferredVersion"], data["action"], data["changes"]) == (None, None, [])
    assert "`verbose` is not part of db.query v4" in text
    assert "relist" not in text and "tools/list" not in text


@pytest.mark.parametrize(
    ("refusals", "version", "as_result"),
    [
        ("jsonrpc", "2025-11-25", False),
        ("result", "2025-06-18", True),
        ("result", "2025-03-26", True),
        ("auto", "2025-11-25", True),
        ("auto", "2025-06-18", False),
    ],
)
async def test_refusals_option(refusals: str, version: str, as_result: bool) -> None:
    host = Host("lowlevel", billing(), refusals=refusals)
    async with session_at(host.server, version) as session:
        call = session.call_tool("db.query", {"query": "SELECT 1", "timeout_ms": 5000})
        if as_result:
            result = await call
            assert result.is_error
            assert "timeout_ms" in str(result.content[0])
            # structuredContent exists from 2025-06-18 on only
            assert (result.structured_content is not None) is (version >= "2025-06-18")
        else:
            await refused(call, -31003)
        # a declared version's refusal is a JSON-RPC error whatever the option
        call = session.call_tool("db.query", {"query": "q"}, meta={"schemaVersion": "v3"})
        await refused(call, -31001)


def test_refusals_option_is_checked() -> None:
    with pytest.raises(ValueError, match="refusals"):
        GatedTools(billing(), refusals="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
async def test_unknown_tool_is_invalid_params(kind: str, mode: str) -> None:
    host = Host(kind, billing())
    async with host.client(mode) as client:
        data = await refused(client.call_tool("db.drop", {}), -32602)
    assert data["reason"] == "unknown_tool"


@pytest.mark.parametrize("mode", MODES)
async def test_never_served_version_is_unknown(mode: str) -> None:
    host = Host("lowlevel", billing())
    async with host.client(mode) as client:
        call = client.call_tool("db.query", {"query": "q"}, meta={"schemaVersion": "v9"})
        data = await refused(call, -31002)
    assert data["reason"] == "schema_version_unknown"
    assert "action" not in data


async def test_a_failing_handler_is_an_is_error_result_without_its_internals() -> None:
    host = Host("lowlevel", billing())
    async with host.client(LEGACY) as client:
        result = await client.call_tool("db.query", {"query": "boom"}, meta={"schemaVersion": 4})
    assert result.is_error
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert "secret" not in text.text


# ---------------------------------------------------------------- seed 002


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
async def test_seed_002_alias_call_is_converted_along_the_route(kind: str, mode: str) -> None:
    host = Host(kind, billing())
    async with host.client(mode) as client:
        result = await client.call_tool("search_v1", {"query": "foo"})
    assert not result.is_error
    assert host.received == [("search", {"query": "foo", "filters": {}, "limit": 20})]


@pytest.mark.parametrize("kind", KINDS)
async def test_seed_002_alias_without_route_is_a_mismatch(kind: str) -> None:
    host = Host(kind, billing(alias_route=False))
    async with host.client(LEGACY) as client:
        data = await refused(client.call_tool("search_v1", {"query": "foo"}), -31004)
    assert data["reason"] == "schema_version_mismatch"
    assert data["tool"] == "search_v1"
    assert host.received == []


async def test_lowlevel_server_own_call_handler_gets_target_and_converted_arguments() -> None:
    seen: list[tuple[str, dict[str, Any] | None]] = []

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        seen.append((params.name, params.arguments))
        assert ctx.params["arguments"] == params.arguments
        return types.CallToolResult(content=[])

    server: Server[Any] = Server("billing", on_call_tool=call_tool)
    gate_server(server, billing())
    async with Client(server, mode=LEGACY) as client:
        await client.call_tool("search_v1", {"query": "foo"})
        await refused(
            client.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": 3}), -31001
        )
    assert seen == [("search", {"query": "foo", "filters": {}, "limit": 20})]


def test_gate_server_needs_handlers_or_a_call_handler() -> None:
    with pytest.raises(ValueError, match="handlers"):
        gate_server(Server("billing"), billing())


# ---------------------------------------------------------------- toolset swaps


@pytest.mark.parametrize("kind", KINDS)
async def test_swap_sends_list_changed_to_handshake_sessions(kind: str) -> None:
    watched = Watched(billing())
    host = Host(kind, watched)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with host.client(LEGACY, message_handler=on_message) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        call = client.call_tool(
            "db.query", {"query": "q", "timeout_ms": 5}, meta={"schemaVersion": 3}
        )
        await refused(call, -31001)
        # the registry serves v3 again, with a converter: the watcher reports the swap
        await watched.swap(billing(v3_served=True))
        with anyio.fail_after(5):
            await changed.wait()
        result = await client.call_tool(
            "db.query", {"query": "q", "timeout_ms": 5}, meta={"schemaVersion": 3}
        )
    assert not result.is_error
    if kind == "lowlevel":
        assert host.received == [("db.query", {"query": "q", "timeout": 5})]


@pytest.mark.parametrize("kind", KINDS)
async def test_swap_reaches_2026_listen_streams(kind: str) -> None:
    host = Host(kind, billing())
    async with host.client(MODERN) as client, client.listen(tools_list_changed=True) as events:
        assert await host.gated.update(billing(v3_served=True)) is True
        assert await host.gated.update(billing(v3_served=True)) is False  # nothing new
        with anyio.fail_after(5):
            async for event in events:
                assert type(event).__name__ == "ToolsListChanged"
                break


async def test_list_changed_off_declares_nothing() -> None:
    host = Host("lowlevel", billing(), list_changed=False)
    async with host.client(LEGACY) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is False


async def test_a_swap_applies_to_the_next_call_without_any_announcement() -> None:
    watched = Watched(billing())
    host = Host("lowlevel", watched)
    async with host.client(LEGACY) as client:
        watched.current = billing(v3_served=True)  # no callback: read on the next call
        await client.call_tool("db.query", {"query": "q"}, meta={"schemaVersion": "v3"})
    assert host.received == [("db.query", {"query": "q", "timeout": 30000})]


def test_a_toolset_the_sdk_cannot_list_keeps_the_last_good_one() -> None:
    watched = Watched(billing())
    gated = GatedTools(watched)
    broken = seed_000()
    broken["tools"][0]["versions"][0]["definition"] = {**DB_QUERY_V4, "inputSchema": {"type": 7}}
    broken["tools"][0]["versions"][0]["digest"] = digest(
        broken["tools"][0]["versions"][0]["definition"]
    )
    watched.current = toolset_of(payload(broken["tools"]))
    assert gated.toolset.digest == billing().digest


# ---------------------------------------------------------------- packaging, stdio


def test_registry_sdk_does_not_import_mcp() -> None:
    code = "import sys, registry.sdk; assert 'mcp' not in sys.modules, 'mcp imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


async def test_example_server_over_stdio(tmp_path: Path) -> None:
    toolset = tmp_path / "billing.json"
    toolset.write_bytes(msgspec.json.encode(seed_000()))
    params = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLE), "--toolset", str(toolset)], cwd=str(ROOT)
    )
    with anyio.fail_after(20):
        async with Client(params, mode=LEGACY) as client:
            listing = await client.list_tools()
            assert [t.name for t in listing.tools] == ["db.query"]
            assert listing.tools[0].meta == {
                "schemaVersion": "v4",
                "schemaHash": digest(DB_QUERY_V4),
            }
            call = client.call_tool("db.query", dict(V3_CALL), meta={"schemaVersion": "v3"})
            data = await refused(call, -31001)
            assert data["action"] == "relist"
            call = client.call_tool("db.query", {"query": "q", "timeout_ms": 1})
            text, _ = await refused_as_result(call, -31003)
            assert "timeout_ms" in text
            result = await client.call_tool(
                "db.query", {"query": "SELECT 1", "mode": "read"}, meta={"schemaVersion": "v4"}
            )
    assert result.structured_content == {
        "rows": [],
        "received": {"query": "SELECT 1", "mode": "read"},
    }
