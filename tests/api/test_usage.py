"""Usage counts over HTTP: reports, reads, retention, and retirements judged by them.

The registry runs with a test clock (real time plus an offset the test moves):
a window "passes" when the test moves the clock, never by sleeping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio

from registry.canonical import digest
from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.clock import Clock
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import V3_TO_V4_OPS

TOOLSET = "sha256:" + "ab" * 32
USAGE = "/v1/namespaces/billing/usage"
TOOL = "/v1/namespaces/billing/tools/db.query"


class Clocked(Registry):
    clock: Clock


async def _clocked(database_url: str, **overrides: Any) -> AsyncIterator[Clocked]:
    clock = Clock()
    app = await serve(database_url, clock=clock, **overrides)
    client = httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    served = Clocked(app.url, database_url, client)
    served.clock = clock
    try:
        yield served
    finally:
        await client.aclose()
        await app.stop()


@pytest_asyncio.fixture
async def clocked(database_url: str) -> AsyncIterator[Clocked]:
    async for served in _clocked(database_url):
        yield served


async def seed_v3_deprecated(client: httpx.AsyncClient) -> None:
    """db.query v1 (seed 000's v3) then v2 (its v4) with a converter; v1 deprecated."""
    answer = await client.post(f"{TOOL}/versions", json={"definition": DB_QUERY_V3})
    assert answer.status_code == 201, answer.text
    answer = await client.post(
        f"{TOOL}/versions",
        json={
            "definition": DB_QUERY_V4,
            "converters": [{"from": 1, "ops": V3_TO_V4_OPS}],
            "deprecate": [{"version": 1}],
        },
    )
    assert answer.status_code == 201, answer.text


def report(server: str, *counts: dict[str, Any], toolset: str = TOOLSET) -> dict[str, Any]:
    return {"server": server, "toolset": toolset, "counts": list(counts)}


def count(version: int | None, decision: str, calls: int, reason: str | None = None) -> Any:
    entry: dict[str, Any] = {
        "tool": "db.query",
        "version": version,
        "decision": decision,
        "calls": calls,
    }
    if reason is not None:
        entry["reason"] = reason
    return entry


async def test_reports_add_up_per_version_with_last_seen_and_servers(clocked: Clocked) -> None:
    client = clocked.client
    await seed_v3_deprecated(client)
    first = clocked.clock()
    answer = await client.post(
        USAGE,
        json=report(
            "billing-a",
            count(1, "converted", 5),
            count(2, "accepted", 40),
            count(None, "refused", 2, "strict_validation_failed"),
        ),
    )
    assert answer.status_code == 200, answer.text
    receipt = answer.json()
    assert receipt["recorded"] == 47 and receipt["ignored"] == []
    clocked.clock.advance(timedelta(minutes=5))
    second = clocked.clock()
    other = "sha256:" + "cd" * 32
    answer = await client.post(
        USAGE,
        json=report(
            "billing-b",
            count(1, "converted", 3),
            count(1, "refused", 1, "invalid_arguments"),
            toolset=other,
        ),
    )
    assert answer.status_code == 200, answer.text

    usage = (await client.get(f"{TOOL}/usage")).json()
    by_version = {v["version"]: v for v in usage["versions"]}
    assert [v["version"] for v in usage["versions"]] == [2, 1, None]
    stale = by_version[1]
    assert stale["calls"] == 9 and stale["state"] == "deprecated"
    assert datetime.fromisoformat(stale["last_seen"]) >= second > first
    assert [(s["name"], s["calls"], s["toolset"]) for s in stale["servers"]] == [
        ("billing-a", 5, TOOLSET),
        ("billing-b", 4, other),
    ]
    assert stale["decisions"] == [
        {"decision": "converted", "calls": 8},
        {"decision": "refused", "calls": 1, "reason": "invalid_arguments"},
    ]
    assert by_version[2]["state"] == "active" and by_version[2]["calls"] == 40
    assert by_version[None]["state"] is None

    one = (await client.get(f"{TOOL}/versions/1/usage")).json()
    assert (one["version"], one["calls"], one["state"]) == (1, 9, "deprecated")
    assert one["last_seen"] == stale["last_seen"]
    assert [s["name"] for s in one["servers"]] == ["billing-a", "billing-b"]


async def test_a_window_counts_only_recent_hours(clocked: Clocked) -> None:
    client = clocked.client
    await seed_v3_deprecated(client)
    answer = await client.post(USAGE, json=report("srv", count(1, "converted", 5)))
    assert answer.status_code == 200, answer.text
    clocked.clock.advance(timedelta(hours=3))
    recent = (await client.get(f"{TOOL}/versions/1/usage?window=1h")).json()
    assert (recent["calls"], recent["last_seen"], recent["servers"]) == (0, None, [])
    wide = (await client.get(f"{TOOL}/versions/1/usage?window=1d")).json()
    assert wide["calls"] == 5
    bad = await client.get(f"{TOOL}/usage?window=7days")
    assert bad.status_code == 400 and "window" in bad.json()["detail"]


async def test_counts_past_the_retention_are_deleted(database_url: str) -> None:
    async for registry in _clocked(database_url, usage_retention=7200):
        client = registry.client
        await seed_v3_deprecated(client)
        assert (await client.post(USAGE, json=report("srv", count(1, "converted", 5)))).is_success
        registry.clock.advance(timedelta(hours=5))
        assert (await client.post(USAGE, json=report("srv", count(2, "accepted", 1)))).is_success
        everything = (await client.get(f"{TOOL}/usage?window=52w")).json()
        assert [(v["version"], v["calls"]) for v in everything["versions"]] == [(2, 1)]


async def test_a_tool_the_namespace_lacks_is_named_and_not_stored(clocked: Clocked) -> None:
    client = clocked.client
    await seed_v3_deprecated(client)
    ghost = {"tool": "ghost", "version": 1, "decision": "accepted", "calls": 2}
    answer = await client.post(USAGE, json=report("srv", ghost, count(2, "accepted", 3)))
    assert answer.status_code == 200, answer.text
    assert (answer.json()["recorded"], answer.json()["ignored"]) == (3, ["ghost"])
    missing = await client.post(
        "/v1/namespaces/nowhere/usage", json=report("srv", count(2, "accepted", 3))
    )
    assert missing.status_code == 404
    assert missing.json()["type"].endswith("/namespace-not-found")
    unknown_tool = await client.get("/v1/namespaces/billing/tools/ghost/usage")
    assert unknown_tool.status_code == 404
    unknown_version = await client.get(f"{TOOL}/versions/9/usage")
    assert unknown_version.status_code == 404


@pytest.mark.parametrize(
    ("body", "pointer_or_text"),
    [
        (report("srv", count(1, "refused", 1)), "/counts/0/reason"),
        (report("srv", count(1, "accepted", 1, "invalid_arguments")), "/counts/0/reason"),
        (report("srv", count(None, "accepted", 1)), "/counts/0/version"),
        (report("srv", count(1, "accepted", 0)), ">= 1"),
        (report("srv", count(1, "maybe", 1)), "decision"),
        (report("srv", count(1, "accepted", 1), toolset="sha256:nope"), "toolset"),
        (report("bad name with spaces", count(1, "accepted", 1)), "server"),
        (
            report("srv", {**count(1, "accepted", 1), "arguments": {"query": "SELECT"}}),
            "arguments",
        ),
        (
            {"server": "srv", "toolset": TOOLSET, "counts": [count(1, "accepted", 1)] * 10_001},
            "10000",
        ),
    ],
)
async def test_a_bad_report_is_refused_naming_the_problem(
    clocked: Clocked, body: dict[str, Any], pointer_or_text: str
) -> None:
    await seed_v3_deprecated(clocked.client)
    answer = await clocked.client.post(USAGE, json=body)
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert pointer_or_text in (problem.get("pointer") or "") + problem["detail"]
    usage = (await clocked.client.get(f"{TOOL}/usage")).json()
    assert usage["versions"] == []


async def test_a_report_scope_reports_and_reads_but_never_publishes(clocked: Clocked) -> None:
    await seed_v3_deprecated(clocked.client)
    reporter = clocked.with_token(await clocked.token("billing:report"))
    reader = clocked.with_token(await clocked.token("billing:read"))
    elsewhere = clocked.with_token(await clocked.token("docs:report"))
    body = report("srv", count(2, "accepted", 1))
    try:
        assert (await reporter.post(USAGE, json=body)).status_code == 200
        assert (await reporter.get("/v1/namespaces/billing/toolset")).status_code == 200
        published = await reporter.post(f"{TOOL}/versions", json={"definition": DB_QUERY_V3})
        assert published.status_code == 403
        assert (await reader.post(USAGE, json=body)).status_code == 403
        assert (await elsewhere.post(USAGE, json=body)).status_code == 403
        assert (await clocked.anonymous().post(USAGE, json=body)).status_code == 401
        assert (await reader.get(f"{TOOL}/usage")).status_code == 200
    finally:
        for client in (reporter, reader, elsewhere):
            await client.aclose()


# -- retirements ---------------------------------------------------------------------


async def test_require_idle_refuses_a_called_version_until_the_window_passes(
    clocked: Clocked,
) -> None:
    client = clocked.client
    await seed_v3_deprecated(client)
    assert (await client.post(USAGE, json=report("billing-a", count(1, "converted", 7)))).is_success

    refused = await client.post(f"{TOOL}/versions/1/retire", json={"require_idle": "7d"})
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["type"].endswith("/version-in-use")
    assert "db.query v1 is still called: 7 calls" in problem["detail"]
    assert "billing-a" in problem["detail"]
    assert [(u["version"], u["calls"]) for u in problem["usage"]] == [(1, 7)]
    version = (await client.get(f"{TOOL}/versions/1")).json()
    assert version["state"] == "deprecated"

    clocked.clock.advance(timedelta(days=6, hours=23))
    again = await client.post(f"{TOOL}/versions/1/retire", json={"require_idle": "7d"})
    assert again.status_code == 409

    clocked.clock.advance(timedelta(hours=2))
    landed = await client.post(f"{TOOL}/versions/1/retire", json={"require_idle": "7d"})
    assert landed.status_code == 200, landed.text
    answer = landed.json()
    assert answer["state"] == "retired"
    assert answer["warnings"] == []  # idle for more than the warning window (7d) too


async def test_retiring_a_recently_called_version_lands_with_a_warning(clocked: Clocked) -> None:
    client = clocked.client
    await seed_v3_deprecated(client)
    assert (await client.post(USAGE, json=report("billing-a", count(1, "converted", 3)))).is_success
    clocked.clock.advance(timedelta(seconds=30))
    landed = await client.post(f"{TOOL}/versions/1/retire", json={"require_idle": "10s"})
    assert landed.status_code == 200, landed.text
    answer = landed.json()
    assert answer["state"] == "retired"
    (warning,) = answer["warnings"]
    assert "called 3 times in the last 7d" in warning and "billing-a" in warning
    assert answer["usage"]["calls"] == 3


async def test_the_registry_setting_is_a_floor_for_require_idle(database_url: str) -> None:
    async for registry in _clocked(database_url, require_idle=86400):
        client = registry.client
        await seed_v3_deprecated(client)
        assert (await client.post(USAGE, json=report("srv", count(1, "converted", 1)))).is_success
        registry.clock.advance(timedelta(hours=2))
        for body in (None, {"require_idle": "1h"}):
            refused = await client.post(f"{TOOL}/versions/1/retire", json=body)
            assert refused.status_code == 409, refused.text
            assert "require_idle 1d" in refused.json()["detail"]


async def test_require_idle_must_be_a_duration(clocked: Clocked) -> None:
    await seed_v3_deprecated(clocked.client)
    for bad in ("7 days", "0d", "-1h", "1y", 7):
        answer = await clocked.client.post(f"{TOOL}/versions/1/retire", json={"require_idle": bad})
        assert answer.status_code == 422, (bad, answer.text)
        assert "require_idle" in answer.json()["detail"]


async def test_a_publish_retiring_a_called_version_is_refused_and_stores_nothing(
    clocked: Clocked,
) -> None:
    client = clocked.client
    await seed_v3_deprecated(client)
    assert (await client.post(USAGE, json=report("srv", count(1, "converted", 2)))).is_success
    v3 = dict(DB_QUERY_V4, description="Run a SQL query (v3 of the registry).")
    refused = await client.post(
        f"{TOOL}/versions", json={"definition": v3, "retire": [1], "require_idle": "1d"}
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["type"].endswith("/version-in-use")
    history = (await client.get(f"{TOOL}/versions")).json()["versions"]
    assert [(v["version"], v["state"]) for v in history] == [(1, "deprecated"), (2, "active")]
    landed = await client.post(f"{TOOL}/versions", json={"definition": v3, "retire": [1]})
    assert landed.status_code == 201, landed.text
    assert landed.json()["retired"] == [1]
    assert "called 2 times" in landed.json()["warnings"][0]
    assert digest(v3) == landed.json()["digest"]


async def test_plan_and_apply_show_and_honour_usage(clocked: Clocked) -> None:
    client = clocked.client
    await seed_v3_deprecated(client)
    assert (await client.post(USAGE, json=report("srv-1", count(1, "converted", 4)))).is_success
    manifest = {"namespace": "billing", "tool": DB_QUERY_V4, "retire": [1], "require_idle": "7d"}
    plan = await client.post("/v1/apply?plan=true", json={"manifests": [manifest]})
    assert plan.status_code == 200, plan.text
    (tool,) = plan.json()["tools"]
    assert tool["accepted"] is False and plan.json()["accepted"] is False
    assert "db.query v1 is still called" in tool["in_use"][0]
    assert [(c["version"], c["state"], c["calls"]) for c in tool["callers"]] == [
        (1, "deprecated", 4)
    ]
    applied = await client.post("/v1/apply", json={"manifests": [manifest]})
    assert applied.status_code == 409, applied.text
    assert applied.json()["type"].endswith("/version-in-use")
    assert (await client.get(f"{TOOL}/versions/1")).json()["state"] == "deprecated"

    without = {"namespace": "billing", "tool": DB_QUERY_V4}
    plan = (await client.post("/v1/apply?plan=true", json={"manifests": [without]})).json()
    (tool,) = plan["tools"]
    assert tool["accepted"] is True and tool["in_use"] == []
    assert [c["version"] for c in tool["callers"]] == [1]  # deprecated, still called


def test_usage_settings_are_durations_from_the_environment() -> None:
    from registry.api.settings import Settings

    found = Settings.from_env(
        {
            "REGISTRY_USAGE_RETENTION": "2d",
            "REGISTRY_RETIRE_WARN_WINDOW": "36h",
            "REGISTRY_REQUIRE_IDLE": "1w",
        }
    )
    assert (found.usage_retention, found.retire_warn_window, found.require_idle) == (
        2 * 86400,
        36 * 3600,
        7 * 86400,
    )
    assert Settings.from_env({}).require_idle is None
    for bad in ("7 days", "0d", "12", "-1h"):
        with pytest.raises(ValueError, match="REGISTRY_REQUIRE_IDLE"):
            Settings.from_env({"REGISTRY_REQUIRE_IDLE": bad})
