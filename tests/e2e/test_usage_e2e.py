"""Retire with evidence, end to end (issue 16).

Two copies of `examples/gated_server.py` (stdio subprocesses, reporting every
second: REGISTRY_USAGE_INTERVAL=1) serve db.query from a live registry: v1
(seed 000's v3) deprecated with a converter, v2 (its v4) current. The official
MCP client calls `billing-a` as a stale caller (declaring v1, and once
version-less with v1's arguments) and as a current one, `billing-b` as a
current one only. `registry usage` (the CLI, a subprocess) then shows v1's
calls, its last-seen time and `billing-a`; retiring v1 with `require_idle: 7d`
is refused naming `billing-a`, and accepted once the registry's clock has moved
past the window (the test moves the clock; nothing sleeps through a window).
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.clock import Clock
from tests.e2e.harness import ROOT, gated_server, publish, refused, run_to_exit
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import V3_TO_V4_OPS

V1_CALL = {"query": "SELECT * FROM orders", "timeout_ms": 5000, "mode": "read"}
V2_CALL = {"query": "SELECT * FROM orders", "timeout": 5000, "mode": "read"}
TOOL = "/v1/namespaces/billing/tools/db.query"
FASTMCP_EXAMPLE = ROOT / "examples" / "fastmcp_server.py"


def reporting(name: str) -> dict[str, str]:
    return {"REGISTRY_USAGE_INTERVAL": "1", "REGISTRY_SERVER_NAME": name}


async def until(check: Any, timeout: float = 60.0) -> Any:
    """Poll `check()` (async) until it answers something true; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, "the reports did not arrive in time"
        await asyncio.sleep(0.2)


async def registry_cli(url: str, *argv: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "registry",
        *argv,
        "--url",
        url,
        "--token",
        ADMIN_TOKEN,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_stale_callers_are_seen_and_their_version_retired_only_once_idle(
    database_url: str, tmp_path: Path
) -> None:
    clock = Clock()
    app = await serve(database_url, clock=clock)
    client = httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        await publish(client, "billing", "db.query", {"definition": DB_QUERY_V3})
        await publish(
            client,
            "billing",
            "db.query",
            {
                "definition": DB_QUERY_V4,
                "converters": [{"from": 1, "ops": V3_TO_V4_OPS}],
                "deprecate": [{"version": 1}],
            },
        )
        before_calls = clock()
        common = {"url": app.url, "namespace": "billing"}
        async with (
            gated_server(
                tmp_path, **common, cache=tmp_path / "a.json", name="a", env=reporting("billing-a")
            ) as a,
            gated_server(
                tmp_path, **common, cache=tmp_path / "b.json", name="b", env=reporting("billing-b")
            ) as b,
        ):
            for _ in range(3):  # a stale caller that declares the version it knows
                result = await a.session.call_tool(
                    "db.query", V1_CALL, meta={"schemaVersion": "v1"}
                )
                assert not result.is_error
                assert result.structured_content["received"]["timeout"] == 5000
            # a stale caller that declares nothing: refused, v1 inferred from its arguments
            data = await refused(a.session.call_tool("db.query", dict(V1_CALL)), -31003)
            assert data["inferredVersion"] == "v1"
            for server in (a, b):  # current callers
                result = await server.session.call_tool(
                    "db.query", V2_CALL, meta={"schemaVersion": "v2"}
                )
                assert not result.is_error

            async def reported() -> Any:
                usage = (await client.get(f"{TOOL}/usage")).json()
                found = {v["version"]: v for v in usage["versions"]}
                done = found.get(1, {}).get("calls") == 4 and found.get(2, {}).get("calls") == 2
                return found if done else None

            found = await until(reported)
            stale = found[1]
            assert stale["decisions"] == [
                {"decision": "converted", "calls": 3},
                {"decision": "refused", "calls": 1, "reason": "strict_validation_failed"},
            ]
            assert [s["name"] for s in stale["servers"]] == ["billing-a"]
            last_seen = datetime.fromisoformat(stale["last_seen"])
            assert before_calls <= last_seen <= clock()
            assert sorted(s["name"] for s in found[2]["servers"]) == ["billing-a", "billing-b"]

            code, out, err = await registry_cli(app.url, "usage", "billing", "db.query")
            assert code == 0, err
            (v1_line,) = [line for line in out.splitlines() if line.startswith("v1 ")]
            shown = last_seen.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            assert v1_line.split()[:4] == ["v1", "deprecated", "4", shown]
            assert "billing-a (4)" in v1_line
            assert "v1: converted 3, refused strict_validation_failed 1" in out

            code, _, err = await registry_cli(
                app.url, "retire", "billing", "db.query", "1", "--require-idle", "7d"
            )
            assert code == 1, err
            assert "retirement refused" in err and "billing-a" in err
            assert (await client.get(f"{TOOL}/versions/1")).json()["state"] == "deprecated"

            # the stale callers are gone; the servers still report their current calls
            clock.advance(timedelta(days=7, hours=1))
            for server in (a, b):
                await server.session.call_tool("db.query", V2_CALL, meta={"schemaVersion": "v2"})
            code, out, err = await registry_cli(
                app.url, "retire", "billing", "db.query", "v1", "--require-idle", "7d"
            )
            assert code == 0, err
            assert out.strip() == "billing/db.query v1: retired"
            assert (await client.get(f"{TOOL}/versions/1")).json()["state"] == "retired"
            # a stale caller left over is refused from now on, and still counted
            await a.list_changed(timeout=30)
            data = await refused(
                a.session.call_tool("db.query", V1_CALL, meta={"schemaVersion": "v1"}), -31001
            )
            assert data["reason"] == "schema_version_retired"

            async def refusal_reported() -> Any:
                one = (await client.get(f"{TOOL}/versions/1/usage?window=1d")).json()
                return one if one["calls"] else None

            one = await until(refusal_reported)
            assert one["state"] == "retired"
            assert one["decisions"] == [
                {"decision": "refused", "calls": 1, "reason": "schema_version_retired"}
            ]
    finally:
        await client.aclose()
        await app.stop()


async def test_reporting_is_off_at_interval_0_and_a_bad_interval_stops_the_server(
    registry: Registry, tmp_path: Path
) -> None:
    client = registry.client
    await publish(client, "billing", "db.query", {"definition": DB_QUERY_V3})
    common = {"url": registry.url, "namespace": "billing", "cache": tmp_path / "c.json"}
    async with gated_server(tmp_path, **common, env={"REGISTRY_USAGE_INTERVAL": "0"}) as server:
        result = await server.session.call_tool("db.query", V1_CALL, meta={"schemaVersion": "v1"})
        assert not result.is_error
    # the server has exited (it would have flushed on its way out): nothing was reported
    usage = (await client.get(f"{TOOL}/usage")).json()
    assert usage["versions"] == []

    code, said = await run_to_exit(
        registry.url, "billing", tmp_path / "c.json", env={"REGISTRY_USAGE_INTERVAL": "soon"}
    )
    assert code == 1, said
    assert "REGISTRY_USAGE_INTERVAL must be 0..3600 seconds, not 'soon'" in said
    assert "Traceback" not in said


USAGE_REQUESTS = 'registry_http_requests_total{method="POST",route="/v1/namespaces/{ns}/usage",'


async def usage_posts(client: httpx.AsyncClient, status: int) -> float:
    """How many usage reports the registry answered with `status` (its /metrics)."""
    for line in (await client.get("/metrics")).text.splitlines():
        if line.startswith(f'{USAGE_REQUESTS}status="{status}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_counts_of_versions_a_namespace_never_had_are_refused_and_counted(
    registry: Registry,
) -> None:
    """v9 and 2147483647 of db.query, which billing has at v1 only: the report is
    refused whole (422, nothing stored, not even its v1 count) and counted in /metrics."""
    client = registry.client
    await publish(client, "billing", "db.query", {"definition": DB_QUERY_V3})
    counts = [
        {"tool": "db.query", "version": 1, "decision": "accepted", "calls": 3},
        {"tool": "db.query", "version": 9, "decision": "accepted", "calls": 1},
        {"tool": "db.query", "version": 2147483647, "decision": "converted", "calls": 1},
    ]
    before = await usage_posts(client, 422)
    answer = await client.post(
        "/v1/namespaces/billing/usage",
        json={"server": "demo", "toolset": "sha256:" + "0" * 64, "counts": counts},
    )
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["type"].endswith("/version-not-found")
    assert problem["pointer"] == "/counts/1/version"
    assert "db.query v9, db.query v2147483647" in problem["detail"]
    assert (await client.get(f"{TOOL}/usage")).json()["versions"] == []
    assert await usage_posts(client, 422) == before + 1


async def test_the_demo_never_reports_into_the_namespace_of_its_environment(
    registry: Registry, tmp_path: Path
) -> None:
    """`--demo` with the README's environment (REGISTRY_URL, a token, the namespace):
    its built-in seed 000 calls are not billing's, and nothing is sent."""
    client = registry.client
    await publish(client, "billing", "db.query", {"definition": DB_QUERY_V3})
    common = {"url": registry.url, "namespace": "billing", "cache": tmp_path / "c.json"}
    before = await usage_posts(client, 200), await usage_posts(client, 422)
    async with gated_server(
        tmp_path, **common, env=reporting("billing-demo"), args=("--demo",)
    ) as server:
        for _ in range(3):
            result = await server.session.call_tool(
                "db.query", {"query": "SELECT 1"}, meta={"schemaVersion": "v4"}
            )
            assert not result.is_error
        await asyncio.sleep(1.5)  # a reporting server would have reported by now
    assert (await usage_posts(client, 200), await usage_posts(client, 422)) == before
    assert "usage.report" not in server.stderr
    assert (await client.get(f"{TOOL}/usage")).json()["versions"] == []


async def test_the_fastmcp_example_reports_its_calls(registry: Registry, tmp_path: Path) -> None:
    client = registry.client
    await publish(client, "billing", "db.query", {"definition": DB_QUERY_V3})
    common = {"url": registry.url, "namespace": "billing", "cache": tmp_path / "c.json"}
    async with gated_server(
        tmp_path, **common, env=reporting("billing-fm"), example=FASTMCP_EXAMPLE
    ) as server:
        result = await server.session.call_tool("db.query", V1_CALL, meta={"schemaVersion": "v1"})
        assert not result.is_error
        assert result.structured_content["received"] == V1_CALL

    async def reported() -> Any:
        usage = (await client.get(f"{TOOL}/usage")).json()
        return usage["versions"] or None

    (v1,) = await until(reported)
    assert [(s["name"], s["calls"]) for s in v1["servers"]] == [("billing-fm", 1)]
    assert v1["decisions"] == [{"decision": "accepted", "calls": 1}]
