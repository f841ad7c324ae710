"""Races over HTTP, against two served replicas of the app on one database.

1. Concurrent publishers (`bench/race_bench.py` at a small size): versions
   contiguous per tool, no number duplicated or lost, one digest -> one version,
   one `version.publish` audit event per stored version.

2. A retirement racing a publish on the same tool. Both take the tool's row
   lock first (`registry.store.locks.lock_tool`), and each decides only once it holds
   it, so there are exactly two interleavings: the publish first, or the
   retirement first. For each scenario the test runs both serially, then both
   again concurrently with the order forced (a side transaction holds the row
   lock while the two requests queue on it: PostgreSQL grants it in arrival
   order), then ~20 times with varied delays. Every concurrent run must end
   exactly like one of the two serial runs (answers, stored versions and
   states, converters, audit events), and in every final state each served
   version has a route to the current one, in the database and in the toolset
   that both replicas serve.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from bench.race_bench import check_invariants, run_race, tool_names
from registry import store
from registry.policy.routes import RouteFinder
from registry.sdk import Toolset
from tests.api.conftest import ADMIN_TOKEN
from tests.faults.conftest import Replicas
from tests.fixtures.seeds import SEARCH_V1, SEARCH_V2

PUBLISHERS, PUBLISHES, TOOLS = 8, 25, 4
RANDOM_RUNS = 20

FILL_BOTH = [
    {"op": "fill", "path": "/filters", "value": {}},
    {"op": "fill", "path": "/limit", "value": 20},
]
SEARCH_V3 = copy.deepcopy(SEARCH_V2)  # SEARCH_V2 and an optional property: not breaking
SEARCH_V3["inputSchema"]["properties"]["page"] = {"type": "integer"}


# -- 1. concurrent publishers --------------------------------------------------------


async def test_concurrent_publishers_keep_versions_contiguous_and_audited(
    replicas: Replicas,
) -> None:
    tools = tool_names(TOOLS)
    report = await run_race(
        replicas.urls,
        publishers=PUBLISHERS,
        publishes=PUBLISHES,
        tools=tools,
        token=ADMIN_TOKEN,
    )
    checks = await check_invariants(replicas.client, report, tools)
    failures = [f"{c.name}: {c.detail}" for c in checks if not c.ok]
    assert not failures, failures
    statuses = {o.status for o in report.outcomes}
    assert statuses == {200, 201}, "the workload races identical definitions, so both occur"
    assert len(report.outcomes) == PUBLISHERS * PUBLISHES


# -- 2. retirement racing a publish ----------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: list[dict[str, Any]]  # publish bodies of the tool `search`, in order
    publish: dict[str, Any]  # the racing publish
    retire: int  # the version the racing retirement retires
    # What each serial order must answer: (publish status, retire status).
    publish_first: tuple[int, int]
    retire_first: tuple[int, int]


SCENARIOS = [
    # v2 breaks v1 and brings a verified converter from it; retiring v1 needs nothing.
    # Publish first: v1 is served with a route (the converter) until it is retired.
    # Retire first: nothing is served; the converter from the retired v1 is still
    # accepted (it keeps alias contracts on v1 working). Same final state.
    Scenario(
        "converter",
        [{"definition": SEARCH_V1}],
        {"definition": SEARCH_V2, "converters": [{"from": 1, "ops": FILL_BOTH}]},
        1,
        (201, 200),
        (201, 200),
    ),
    # v2 breaks v1 and relies on v1 being retired: it names no decision. Retire
    # first: accepted. Publish first: 409 breaking-change naming v1 (the publisher
    # owes a decision), and the retirement then succeeds.
    Scenario(
        "needs-retired",
        [{"definition": SEARCH_V1}],
        {"definition": SEARCH_V2},
        1,
        (409, 200),
        (201, 200),
    ),
    # v2 converts v1 and deprecates it with a sunset. Publish first: v1 deprecated,
    # then retired. Retire first: a retired version cannot be deprecated: 409
    # illegal-transition, nothing stored.
    Scenario(
        "deprecate-retired",
        [{"definition": SEARCH_V1}],
        {
            "definition": SEARCH_V2,
            "converters": [{"from": 1, "ops": FILL_BOTH}],
            "deprecate": [{"version": 1, "sunset": "2099-01-01T00:00:00Z"}],
        },
        1,
        (201, 200),
        (409, 200),
    ),
    # Retiring the current v2 races v3, a compatible change of v2 (it relies on v2
    # as its step). Publish first: v3 current, v2 retired, v1 reaches v3 through
    # the retired v2. Retire first: v1 becomes current, and v3 (breaking against
    # v1) is accepted because v1 -> v2 (converter) -> v3 (identity) is a route.
    Scenario(
        "retire-current",
        [
            {"definition": SEARCH_V1},
            {"definition": SEARCH_V2, "converters": [{"from": 1, "ops": FILL_BOTH}]},
        ],
        {"definition": SEARCH_V3},
        2,
        (201, 200),
        (201, 200),
    ),
]


def _tool_path(ns: str) -> str:
    return f"/v1/namespaces/{ns}/tools/search"


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any

    @property
    def problem(self) -> str | None:
        return self.body["type"].rsplit("/", 1)[-1] if self.status >= 400 else None


async def _answer(call: Awaitable[httpx.Response]) -> Answer:
    response = await call
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/problem+json")
    return Answer(response.status_code, response.json())


async def _final_state(conn: asyncpg.Connection, ns: str) -> tuple[Any, ...]:
    """What must not depend on anything but the order: versions, states, converters, audit."""
    versions = await conn.fetch(
        "SELECT version, state::text AS state, stored_state::text AS stored FROM "
        "versions_effective WHERE namespace = $1 AND tool = 'search' ORDER BY version",
        ns,
    )
    converters = await conn.fetch(
        "SELECT from_version, to_version, ops::text AS ops FROM converters "
        "WHERE namespace = $1 ORDER BY 1, 2",
        ns,
    )
    audit = await conn.fetch(
        "SELECT action, version, count(*) AS n FROM audit_events WHERE namespace = $1 "
        "GROUP BY 1, 2 ORDER BY 1, 2",
        ns,
    )
    return (
        tuple((r["version"], r["state"], r["stored"]) for r in versions),
        tuple((r["from_version"], r["to_version"], r["ops"]) for r in converters),
        tuple((r["action"], r["version"], r["n"]) for r in audit),
    )


async def _assert_coherent(replicas: Replicas, conn: asyncpg.Connection, ns: str) -> None:
    """Every served version has a route to current, in the database and in both toolsets."""
    snapshot = await store.load_namespace(conn, ns)
    assert snapshot is not None
    served = [v for v in snapshot.versions if v.state != "retired"]
    finder = RouteFinder()
    current = served[-1].version if served else None
    for version in served:
        route = finder.route(
            snapshot.versions, snapshot.converters, start=version.version, target=current or 0
        )
        assert route is not None, f"{ns}: served version {version.version} has no route"
    digests = set()
    for url in replicas.urls:
        async with httpx.AsyncClient(
            base_url=url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        ) as client:
            answer = await client.get(f"/v1/namespaces/{ns}/toolset")
        assert answer.status_code == 200, answer.text
        toolset = Toolset.from_json(answer.content)  # checks each route ends at current
        digests.add(toolset.digest)
        entry = toolset.tool("search")
        if current is None:
            assert entry is None
            continue
        assert entry is not None and entry.current == current
        assert sorted(v.version for v in entry.versions) == [v.version for v in served]
    assert len(digests) == 1, f"{ns}: the replicas serve different toolsets"


async def _lock_waiters(conn: asyncpg.Connection, count: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        waiting = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        if waiting >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{count} requests never queued on the tool's row lock")


Call = Callable[[], Awaitable[Answer]]


async def _in_lock_order(conn: asyncpg.Connection, ns: str, first: Call, second: Call) -> Any:
    """Run both so that they take the tool's row lock in this order."""
    async with conn.transaction():
        await conn.execute(
            "SELECT 1 FROM tools WHERE namespace = $1 AND name = 'search' FOR NO KEY UPDATE", ns
        )
        one = asyncio.ensure_future(first())
        await _lock_waiters(conn, 1)
        two = asyncio.ensure_future(second())
        await _lock_waiters(conn, 2)
    return await one, await two


async def _delayed(seconds: float, call: Call) -> Answer:
    await asyncio.sleep(seconds)
    return await call()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_retire_racing_a_publish_ends_as_one_serial_order(
    replicas: Replicas, scenario: Scenario
) -> None:
    publisher = httpx.AsyncClient(
        base_url=replicas.urls[0], timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    retirer = httpx.AsyncClient(
        base_url=replicas.urls[1], timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    conn = await asyncpg.connect(replicas.database_url)
    try:

        async def fresh(label: str) -> tuple[str, Call, Call]:
            ns = f"race-{scenario.name}-{label}"
            assert (await publisher.put(f"/v1/namespaces/{ns}")).status_code == 201
            for body in scenario.setup:
                setup = await publisher.post(f"{_tool_path(ns)}/versions", json=body)
                assert setup.status_code == 201, setup.text

            def publish() -> Awaitable[Answer]:
                return _answer(publisher.post(f"{_tool_path(ns)}/versions", json=scenario.publish))

            def retire() -> Awaitable[Answer]:
                return _answer(retirer.post(f"{_tool_path(ns)}/versions/{scenario.retire}/retire"))

            return ns, publish, retire

        async def outcome(ns: str, publish: Answer, retire: Answer) -> tuple[Any, ...]:
            for answer in (publish, retire):
                assert answer.status in (200, 201, 409), answer.body
            await _assert_coherent(replicas, conn, ns)
            return (publish.status, publish.problem, retire.status, retire.problem) + (
                await _final_state(conn, ns)
            )

        # The two serial orders.
        ns, publish, retire = await fresh("pf")
        p, r = await publish(), await retire()
        assert (p.status, r.status) == scenario.publish_first, (p.body, r.body)
        publish_first = await outcome(ns, p, r)
        ns, publish, retire = await fresh("rf")
        r = await retire()
        p = await publish()
        assert (p.status, r.status) == scenario.retire_first, (p.body, r.body)
        retire_first = await outcome(ns, p, r)
        for answer in (p, r):
            if answer.status == 409:
                _assert_says_why(scenario, answer)
        serial = {publish_first: "publish first", retire_first: "retire first"}
        if publish_first == retire_first:
            serial = {publish_first: "either order (same end)"}

        # Both orders again, concurrent, forced through the row lock's queue.
        ns, publish, retire = await fresh("lock-pf")
        p, r = await _in_lock_order(conn, ns, publish, retire)
        assert await outcome(ns, p, r) == publish_first
        ns, publish, retire = await fresh("lock-rf")
        r, p = await _in_lock_order(conn, ns, retire, publish)
        assert await outcome(ns, p, r) == retire_first

        # Free races with varied delays: each must end as one of the serial orders.
        seen: dict[str, int] = {}
        for run in range(RANDOM_RUNS):
            ns, publish, retire = await fresh(str(run))
            offset = ((run % 7) - 3) * 0.004  # -12 ms .. +12 ms
            p, r = await asyncio.gather(
                _delayed(max(offset, 0.0), publish), _delayed(max(-offset, 0.0), retire)
            )
            result = await outcome(ns, p, r)
            assert result in serial, f"run {run}: {result} is neither serial order"
            for answer in (p, r):
                if answer.status == 409:
                    _assert_says_why(scenario, answer)
            seen[serial[result]] = seen.get(serial[result], 0) + 1
        print(f"{scenario.name}: {seen}")
    finally:
        await conn.close()
        await publisher.aclose()
        await retirer.aclose()


def _assert_says_why(scenario: Scenario, answer: Answer) -> None:
    problem = answer.body
    assert problem["status"] == 409
    if scenario.name == "needs-retired":
        assert answer.problem == "breaking-change", problem
        assert "breaks served versions (1)" in problem["detail"], problem["detail"]
        assert "retired or given a verified converter" in problem["detail"]
        assert [d["version"] for d in problem["decisions"]] == [1]
        # `filters` is now required and nothing gives it a value: a converter must
        # fill one the publisher chooses, or the change is accepted (issue 27)
        decision = problem["decisions"][0]
        assert decision["options"] == ["retire", "converter", "accept"]
        assert [u["kind"] for u in decision["unrepairable"]] == ["required-added"]
    elif scenario.name == "deprecate-retired":
        assert answer.problem == "illegal-transition", problem
        assert "version 1 of search is retired" in problem["detail"], problem["detail"]
    else:
        raise AssertionError(f"{scenario.name}: unexpected 409 {problem}")
