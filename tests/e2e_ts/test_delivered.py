"""What reaches a tool's handler, through every real adapter, in both languages.

The golden table's `delivered` rows (tests/golden/gate_decisions.json) are
called through the Python adapters (the low-level `Server` with handlers,
`MCPServer` and FastMCP, each tool's signature declaring current's every
property) with the official Python client on every revision it speaks (the
four handshake revisions and 2026-07-28), and through the TypeScript adapters
(`McpServer` with a zod shape, the low-level `Server`) with the official
TypeScript client on the four it speaks (sdk-ts/e2e/delivered.ts). Each
handler answers with what it received. Checked: every adapter delivers the
golden arguments (seed 000's v1 caller reaches the handler with `timeout:
5000`; a property the gate accepted is never dropped, one the contract refuses
never slips through), and on each revision every adapter, in both languages,
answers each row with the same result fields and the same words.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import msgspec
import pytest

pytest.importorskip("fastmcp")

from fastmcp import FastMCP
from mcp import Client, types
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError

from registry.sdk import Toolset
from registry.sdk.fastmcp_adapter import gate_fastmcp
from registry.sdk.mcp_adapter import gate_mcpserver, gate_server
from tests.e2e_ts.nodes import run
from tests.e2e_ts.test_ts_gate import SDK_TS, node
from tests.sdk.test_golden import DOCUMENT, GOLDEN
from tests.sdk.test_mcp_adapter import session_at

ROWS: list[dict[str, Any]] = DOCUMENT["delivered"]
HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN = "2026-07-28"
PYTHON_ADAPTERS = ["py-lowlevel", "py-mcpserver", "py-fastmcp"]
TS_ADAPTERS = ["ts-mcpserver", "ts-lowlevel"]
SCRIPT = SDK_TS / "dist" / "e2e" / "delivered.js"

Outcomes = dict[str, dict[str, dict[str, Any]]]
"""adapter -> revision -> row name -> outcome."""


def toolset(name: str) -> Toolset:
    return Toolset.from_json(msgspec.json.encode(DOCUMENT["toolsets"][name]))


def echoed(**bound: Any) -> dict[str, Any]:
    """What a function bound, its optional parameters the caller did not send left out."""
    return {"received": {k: v for k, v in bound.items() if v is not None}}


def lowlevel(source: Toolset) -> Server[Any]:
    server: Server[Any] = Server("billing")

    async def echo(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"received": arguments}

    gate_server(server, source, handlers={"db.query": echo, "search": echo})
    return server


async def db_query(
    query: str, timeout: int | None = None, mode: Literal["read"] | None = None
) -> dict[str, Any]:
    """db.query v4 as a signature: every property, optional ones None."""
    return echoed(query=query, timeout=timeout, mode=mode)


async def search(query: str, filters: dict[str, Any], limit: int | None = None) -> dict[str, Any]:
    """search v2 as a signature: every property, optional ones None."""
    return echoed(query=query, filters=filters, limit=limit)


def mcpserver(source: Toolset) -> Server[Any]:
    app = MCPServer("billing")
    app.tool(name="db.query")(db_query)
    app.tool(name="search")(search)
    gate_mcpserver(app, source)
    lowlevel_server: Server[Any] = app._lowlevel_server
    return lowlevel_server


def fastmcp(source: Toolset) -> Server[Any]:
    app: FastMCP[Any] = FastMCP("billing")
    app.tool(name="db.query")(db_query)
    app.tool(name="search")(search)
    gate_fastmcp(app, source)
    server: Server[Any] = app._mcp_server
    return server


BUILD: dict[str, Callable[[Toolset], Server[Any]]] = {
    "py-lowlevel": lowlevel,
    "py-mcpserver": mcpserver,
    "py-fastmcp": fastmcp,
}

Call = Callable[[str, dict[str, Any], dict[str, Any] | None], Awaitable[types.CallToolResult]]


@asynccontextmanager
async def caller(server: Server[Any], revision: str) -> AsyncIterator[Call]:
    """The official Python client on `revision`: a handshake session offering it,
    or `Client` in its 2026-07-28 mode."""
    if revision == MODERN:
        async with Client(server, mode=MODERN) as client:
            assert client.protocol_version == MODERN

            async def modern(
                name: str, arguments: dict[str, Any], meta: dict[str, Any] | None
            ) -> types.CallToolResult:
                result = await client.call_tool(name, arguments, meta=meta)
                assert isinstance(result, types.CallToolResult)
                return result

            yield modern
        return
    async with session_at(server, revision) as session:

        async def handshake(
            name: str, arguments: dict[str, Any], meta: dict[str, Any] | None
        ) -> types.CallToolResult:
            return await session.call_tool(name, arguments, meta=meta)

        yield handshake


def outcome(result: types.CallToolResult | None, error: MCPError | None) -> dict[str, Any]:
    """A result or an error in the terms both languages compare (sdk-ts/e2e/delivered.ts)."""
    if error is not None:
        return {"error": {"code": error.code, "message": error.error.message, "data": error.data}}
    assert result is not None
    fields = ["content"]
    if result.structured_content is not None:
        fields.append("structuredContent")
    if result.is_error:
        fields.append("isError")
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    if result.is_error:
        return {
            "fields": sorted(fields),
            "text": block.text,
            "structuredContent": result.structured_content,
        }
    return {
        "fields": sorted(fields),
        "received": json.loads(block.text)["received"],
        "structuredContent": result.structured_content,
    }


async def python_outcomes() -> Outcomes:
    out: Outcomes = {}
    for adapter, build in BUILD.items():
        out[adapter] = {}
        for revision in [*HANDSHAKE, MODERN]:
            found: dict[str, Any] = {}
            for name in dict.fromkeys(row["toolset"] for row in ROWS):
                async with caller(build(toolset(name)), revision) as call:
                    for row in (r for r in ROWS if r["toolset"] == name):
                        arguments = copy.deepcopy(row["arguments"])
                        try:
                            found[row["name"]] = outcome(
                                await call(row["tool"], arguments, row["meta"]), None
                            )
                        except MCPError as exc:
                            found[row["name"]] = outcome(None, exc)
            out[adapter][revision] = found
    return out


def ts_outcomes() -> Outcomes:
    stdout = run([node(), str(SCRIPT), str(GOLDEN)], cwd=SDK_TS, timeout=120)
    report: Outcomes = json.loads(stdout)
    return report


@pytest.fixture(scope="module")
async def outcomes() -> Outcomes:
    return {**(await python_outcomes()), **ts_outcomes()}


def reason_of(found: dict[str, Any]) -> tuple[int, str] | None:
    if "error" in found:
        return found["error"]["code"], found["error"]["data"]["reason"]
    if "text" in found:  # an isError result: its structuredContent, or the text alone
        structured = found["structuredContent"]
        return (structured["code"], structured["reason"]) if structured else (0, "")
    return None


@pytest.mark.parametrize("adapter", PYTHON_ADAPTERS + TS_ADAPTERS)
async def test_every_adapter_delivers_the_golden_arguments(
    outcomes: Outcomes, adapter: str
) -> None:
    for revision, found in outcomes[adapter].items():
        assert set(found) == {row["name"] for row in ROWS}
        for row in ROWS:
            got, expect = found[row["name"]], row["expect"]
            where = (adapter, revision, row["name"])
            if "received" in expect:
                assert got.get("received") == expect["received"], (where, got)
            elif revision >= "2025-11-25" or "error" in got:
                refused = expect["refused"]
                assert reason_of(got) == (refused["code"], refused["reason"]), (where, got)
            else:  # an arguments refusal before 2025-11-25 is a JSON-RPC error
                pytest.fail(f"{where}: {got}")


async def test_seed_000_reaches_every_handler_with_timeout_5000(outcomes: Outcomes) -> None:
    """Seed 000's story, the v1 caller's `timeout_ms: 5000` read as `timeout`, in every gate."""
    (row,) = [r for r in ROWS if r["name"].startswith("seed 000: a v1 caller")]
    assert row["arguments"]["timeout_ms"] == 5000 and row["meta"] == {"schemaVersion": "v3"}
    assert set(outcomes) == set(PYTHON_ADAPTERS + TS_ADAPTERS)
    for adapter, by_revision in outcomes.items():
        for revision, found in by_revision.items():
            assert found[row["name"]]["received"]["timeout"] == 5000, (adapter, revision)


@pytest.mark.parametrize("revision", [*HANDSHAKE, MODERN])
async def test_every_adapter_answers_alike_on_each_revision(
    outcomes: Outcomes, revision: str
) -> None:
    """Same result fields (no structuredContent before 2025-06-18, FastMCP's
    included), same refusal surface, same words: Python and TypeScript."""
    speaking = {a: o[revision] for a, o in outcomes.items() if revision in o}
    assert len(speaking) == (3 if revision == MODERN else 5)
    reference = speaking["py-lowlevel"]
    for adapter, found in speaking.items():
        for row in ROWS:
            assert found[row["name"]] == reference[row["name"]], (adapter, row["name"])
    structured = revision >= "2025-06-18"
    for got in reference.values():
        if "fields" in got:
            assert ("structuredContent" in got["fields"]) is structured, got
