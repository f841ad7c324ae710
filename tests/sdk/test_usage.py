"""The SDK's usage counter (a Gate `on_decision` hook) and its reporter.

The counter is driven by real gates on the seed toolsets; the reporter talks
to a real registry (tests/api's, a fresh database), to a port where nothing
listens (an outage), and to a TCP server that takes the request and never
answers (a report whose fate is unknown).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from registry.sdk import Gate, Toolset
from registry.sdk.sync import read_cache
from registry.sdk.usage import MAX_KEYS, UsageCounter, UsageReporter, report_of
from tests.api.conftest import ADMIN_TOKEN, ServedApp, free_port, serve
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.readme_transcripts import python_block
from tests.sdk import V3_TO_V4_OPS, captured_events, seed_000, seed_002

V4_CALL = {"query": "SELECT 1", "timeout": 1000, "mode": "read"}
V3_CALL = {"query": "SELECT 1", "timeout_ms": 1000, "mode": "read"}


def gate(body: dict[str, Any], counter: UsageCounter) -> Gate:
    return Gate(Toolset.from_json(msgspec.json.encode(body)), on_decision=counter.record)


def counts(counter: UsageCounter) -> dict[Any, int]:
    taken, dropped = counter.take()
    assert dropped == 0
    return taken


def test_each_decision_is_counted_under_the_version_the_caller_speaks() -> None:
    counter = UsageCounter()
    served = gate(seed_000(v3_served=True), counter)
    assert served.check("db.query", V4_CALL, {"schemaVersion": "v4"}).accepted
    assert served.check("db.query", V4_CALL, {"schemaVersion": 4}).accepted
    assert served.check("db.query", V3_CALL, {"schemaVersion": "v3"}).accepted  # converted
    assert served.check("db.query", V4_CALL, None).accepted  # version-less: current
    refusals = [
        ("db.query", V3_CALL, None),  # version-less, v3 inferred
        ("db.query", {"query": "q", "nope": 1}, None),  # version-less, nothing matches
        ("db.query", {**V3_CALL, "mode": "write"}, {"schemaVersion": "v3"}),  # reject op
        ("db.query", V4_CALL, {"schemaVersion": "v9"}),  # never served
        ("no.such.tool", V4_CALL, {"schemaVersion": "v4"}),  # not counted
    ]
    for name, arguments, meta in refusals:
        assert not served.check(name, arguments, meta).accepted
    retired = gate(seed_000(), counter)
    assert not retired.check("db.query", V3_CALL, {"schemaVersion": "v3"}).accepted
    assert counts(counter) == {
        ("db.query", 4, "accepted", None): 3,
        ("db.query", 3, "converted", None): 1,
        ("db.query", 3, "refused", "strict_validation_failed"): 1,
        ("db.query", None, "refused", "strict_validation_failed"): 1,
        ("db.query", 3, "refused", "conversion_rejected"): 1,
        # v9 was never served: counted as no version, which the registry accepts
        ("db.query", None, "refused", "schema_version_unknown"): 1,
        ("db.query", 3, "refused", "schema_version_retired"): 1,
    }


def test_an_alias_call_counts_as_its_contract_of_the_target() -> None:
    counter = UsageCounter()
    aliased = gate(seed_002(with_route=True), counter)
    assert aliased.check("search_v1", {"query": "q"}, None).accepted
    unrouted = gate(seed_002(with_route=False), counter)
    assert not unrouted.check("search_v1", {"query": "q"}, None).accepted
    assert counts(counter) == {
        ("search", 1, "converted", None): 1,
        ("search", 1, "refused", "schema_version_mismatch"): 1,
    }


def test_the_counter_is_bounded_and_counts_what_it_drops() -> None:
    counter = UsageCounter(max_keys=2)
    served = gate(seed_000(v3_served=True), counter)
    assert served.check("db.query", V4_CALL, {"schemaVersion": "v4"}).accepted
    assert served.check("db.query", V3_CALL, {"schemaVersion": "v3"}).accepted  # converted
    for meta in ({"schemaVersion": "v9"}, {"schemaVersion": "v10"}, None):  # new keys: dropped
        served.check("db.query", {"query": "q", "nope": 1}, meta)
    served.check("db.query", V4_CALL, {"schemaVersion": "v4"})  # a known key still counts
    taken, dropped = counter.take()
    assert taken == {
        ("db.query", 4, "accepted", None): 2,
        ("db.query", 3, "converted", None): 1,
    }
    assert dropped == 3
    assert counter.take() == ({}, 0)
    assert UsageCounter().pending == 0 and MAX_KEYS == 10_000
    with pytest.raises(ValueError):
        UsageCounter(max_keys=0)


def test_a_report_carries_counts_and_never_an_argument_value() -> None:
    counter = UsageCounter()
    served = gate(seed_000(v3_served=True), counter)
    secret = "SELECT card_number FROM payments -- 4111111111111111"
    served.check("db.query", {**V4_CALL, "query": secret}, {"schemaVersion": "v4"})
    served.check("db.query", {"query": secret, "timeout_ms": 77}, None)
    taken, dropped = counter.take()
    body = msgspec.json.encode(report_of("srv", "sha256:" + "0" * 64, taken, dropped))
    assert b"4111" not in body and b"card_number" not in body and b"77" not in body
    assert msgspec.json.decode(body) == {
        "server": "srv",
        "toolset": "sha256:" + "0" * 64,
        "counts": [
            {"tool": "db.query", "version": 3, "decision": "refused", "calls": 1,
             "reason": "strict_validation_failed"},
            {"tool": "db.query", "version": 4, "decision": "accepted", "calls": 1},
        ],
        "dropped": 0,
    }  # fmt: skip


# -- the reporter and a real registry ------------------------------------------------------


async def published_toolset(client: httpx.AsyncClient) -> Toolset:
    """db.query v1 (seed 000's v3) deprecated, v2 (its v4) current, via a converter."""
    tool = "/v1/namespaces/billing/tools/db.query/versions"
    assert (await client.post(tool, json={"definition": DB_QUERY_V3})).status_code == 201
    body = {"definition": DB_QUERY_V4, "converters": [{"from": 1, "ops": V3_TO_V4_OPS}]}
    assert (await client.post(tool, json=body)).status_code == 201
    answer = await client.get("/v1/namespaces/billing/toolset")
    return Toolset.from_json(answer.content)


@contextlib.asynccontextmanager
async def registry_client(app: ServedApp) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as client:
        yield client


async def eventually(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)
    return value


async def test_the_reporter_flushes_in_the_background_and_the_registry_shows_it(
    database_url: str,
) -> None:
    app = await serve(database_url)
    try:
        async with registry_client(app) as client:
            toolset = await published_toolset(client)
            reporter = UsageReporter(
                app.url, "billing", server="srv-1", source=toolset, token=ADMIN_TOKEN, interval=0.05
            )
            served = Gate(toolset, on_decision=reporter.record)
            async with reporter:
                for _ in range(3):
                    assert served.check("db.query", V3_CALL, {"schemaVersion": "v1"}).accepted
                assert served.check("db.query", V4_CALL, {"schemaVersion": "v2"}).accepted
                await eventually(lambda: reporter.sent >= 1 and reporter.counter.pending == 0)
                served.check("db.query", V4_CALL, {"schemaVersion": "v2"})  # flushed by stop()
            usage = (await client.get("/v1/namespaces/billing/tools/db.query/usage")).json()
    finally:
        await app.stop()
    by_version = {v["version"]: v for v in usage["versions"]}
    assert by_version[1]["decisions"] == [{"decision": "converted", "calls": 3}]
    assert by_version[2]["calls"] == 2
    assert by_version[1]["servers"][0]["name"] == "srv-1"
    assert by_version[1]["servers"][0]["toolset"] == toolset.digest
    assert reporter.lost_calls == 0


def guide_python(guide: str, heading: str) -> str:
    """The first python block after `heading` in docs/<guide>."""
    text = (Path(__file__).resolve().parents[2] / "docs" / guide).read_text(encoding="utf-8")
    return python_block(text, heading)


async def run_snippet(snippet: str, scope: dict[str, Any]) -> None:
    """Run a guide's text as the body of a coroutine (it awaits at its top level)."""
    code = compile(snippet, "docs", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, scope)  # the guide's own text
    if result is not None:
        await result


async def test_the_readme_sdk_and_usage_snippets_run_as_written(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/sdk.md "The Python SDK" and docs/publishing.md "Retire with evidence", their
    placeholders (TOKEN, on_change, arguments, meta, url, server, HANDLERS) given, in order."""
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp.server import Server

    monkeypatch.chdir(tmp_path)  # the snippet's cache file
    seen: list[dict[str, Any]] = []

    async def db_query(arguments: dict[str, Any]) -> dict[str, Any]:
        seen.append(arguments)
        return {"rows": []}

    scope: dict[str, Any] = {
        "TOKEN": ADMIN_TOKEN,
        "on_change": lambda toolset: None,
        "arguments": V3_CALL,
        "meta": {"schemaVersion": "v1"},
    }
    app = await serve(database_url)
    try:
        async with registry_client(app) as client:
            await published_toolset(client)
            sdk = guide_python("sdk.md", "## The Python SDK")
            await run_snippet(sdk.replace("http://registry:8080", app.url), scope)
            watcher, decision = scope["watcher"], scope["decision"]
            assert watcher.running
            assert decision.accepted and decision.arguments == V4_CALL
            cached = read_cache(tmp_path / "billing.toolset.json").toolset
            assert cached.digest == watcher.current.digest

            server: Server[Any] = Server("billing")
            scope |= {"url": app.url, "server": server, "HANDLERS": {"db.query": db_query}}
            await run_snippet(guide_python("publishing.md", "## Retire with evidence"), scope)
            async with Client(server) as mcp_client:
                call = mcp_client.call_tool("db.query", V3_CALL, meta={"schemaVersion": "v1"})
                assert not (await call).is_error
            await scope.pop("reporter").stop()  # flushes the call's count
            usage = (await client.get("/v1/namespaces/billing/tools/db.query/usage")).json()
    finally:
        for started in ("reporter", "watcher"):
            if started in scope:
                await scope[started].stop()
        await app.stop()
    assert seen == [V4_CALL]
    by_version = {v["version"]: v for v in usage["versions"]}
    assert by_version[1]["decisions"] == [{"decision": "converted", "calls": 1}]
    assert by_version[1]["servers"][0]["name"] == "billing-eu-1"


async def test_an_outage_keeps_the_counts_and_says_so_once(database_url: str) -> None:
    app = await serve(database_url)
    async with registry_client(app) as client:
        toolset = await published_toolset(client)
    reporter = UsageReporter(
        app.url, "billing", server="srv-1", source=toolset, token=ADMIN_TOKEN, interval=3600
    )
    served = Gate(toolset, on_decision=reporter.record)
    await app.stop()  # the registry is down: connection refused
    with captured_events(logging.INFO) as events:
        served.check("db.query", V3_CALL, {"schemaVersion": "v1"})
        assert await reporter.flush() is False
        served.check("db.query", V3_CALL, {"schemaVersion": "v1"})
        assert await reporter.flush() is False
        assert reporter.counter.pending == 2  # nothing lost: kept for the next report
        back = ServedApp(app.settings)
        await back.start()
        try:
            assert await reporter.flush() is True
            async with registry_client(back) as client:
                usage = (await client.get("/v1/namespaces/billing/tools/db.query/usage")).json()
        finally:
            await reporter.stop()
            await back.stop()
    failed = [e for e in events if e.get("event") == "usage.report.failed"]
    assert [e["log_level"] for e in failed] == ["warning", "info"]
    assert "2 calls kept for the next report" in failed[1]["message"]
    assert [e["event"] for e in events if e.get("event") == "usage.report.recovered"] == [
        "usage.report.recovered"
    ]
    assert usage["versions"][0]["calls"] == 2 and reporter.lost_calls == 0


async def test_a_refused_report_is_dropped_with_an_error(database_url: str) -> None:
    app = await serve(database_url)
    try:
        async with registry_client(app) as client:
            toolset = await published_toolset(client)
        reader = await _token(database_url, "billing:read")
        reporter = UsageReporter(
            app.url, "billing", server="srv-1", source=toolset, token=reader, interval=3600
        )
        with captured_events(logging.INFO) as events:
            Gate(toolset, on_decision=reporter.record).check("db.query", V4_CALL, None)
            assert await reporter.flush() is False
            await reporter.stop(flush=False)
    finally:
        await app.stop()
    (refused,) = [e for e in events if e.get("event") == "usage.report.refused"]
    assert refused["log_level"] == "error" and refused["status"] == 403
    assert "billing:report" in refused["message"] or "report" in refused["message"]
    assert reporter.lost_calls == 1 and reporter.counter.pending == 0


async def _token(database_url: str, *scopes: str) -> str:
    from tests.api.conftest import Registry

    registry = Registry("", database_url, httpx.AsyncClient())
    try:
        return await registry.token(*scopes)
    finally:
        await registry.client.aclose()


class SilentServer:
    """A TCP server that reads what it is sent and answers nothing until `hang_up()`,
    which closes every connection without a response."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self._writers: list[asyncio.StreamWriter] = []
        self._released = asyncio.Event()

    async def hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        with contextlib.suppress(ConnectionError):
            self.received.append(await reader.read(65536))
            await self._released.wait()
        writer.close()

    def hang_up(self) -> None:
        self._released.set()


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[tuple[str, SilentServer]]:
    silent = SilentServer()
    server = await asyncio.start_server(silent.hold, "127.0.0.1", free_port())
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", silent
    finally:
        silent.hang_up()
        server.close()


async def test_calls_never_wait_for_a_report_and_an_unknown_fate_loses_one_batch() -> None:
    toolset = Toolset.from_json(msgspec.json.encode(seed_000(v3_served=True)))
    async with silent_server() as (url, silent):
        # a timeout far beyond the test: the report's fate is settled by the hang-up below
        reporter = UsageReporter(
            url, "billing", server="srv-1", source=toolset, interval=3600, timeout=120
        )
        served = Gate(toolset, on_decision=reporter.record)
        served.check("db.query", V4_CALL, {"schemaVersion": "v4"})
        with captured_events(logging.INFO) as events:
            flushing = asyncio.create_task(reporter.flush())
            await eventually(lambda: silent.received)  # the report arrived, unanswered
            # while it waits, calls are decided and counted for the next report
            for _ in range(5):
                assert served.check("db.query", V4_CALL, {"schemaVersion": "v4"}).accepted
            assert not flushing.done()
            silent.hang_up()  # the connection ends without an answer: stored or not?
            assert await flushing is False
        await reporter.stop(flush=False)
    (lost,) = [e for e in events if e.get("event") == "usage.report.lost"]
    assert lost["log_level"] == "warning" and "dropped rather than counted twice" in lost["message"]
    assert reporter.lost_calls == 1
    assert reporter.counter.take() == ({("db.query", 4, "accepted", None): 5}, 0)


def test_a_reporter_refuses_a_name_or_interval_the_registry_would_not_take() -> None:
    toolset = Toolset.from_json(msgspec.json.encode(seed_000()))
    with pytest.raises(ValueError, match="interval"):
        UsageReporter("http://x", "billing", server="srv", source=toolset, interval=0)
    with pytest.raises(msgspec.ValidationError):
        UsageReporter("http://x", "billing", server="a name with spaces", source=toolset)
