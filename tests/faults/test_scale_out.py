"""Replicas on one PostgreSQL (issue 14): what each serves is what the database holds.

Each replica keeps its toolsets in memory and rebuilds the tools a write names
(LISTEN/NOTIFY `namespace/tool`). Writes land on both replicas; each answers
the payload a replica started afresh builds from the database, byte for byte.
A writer that predates tool notices (it only notifies `namespace`) makes every
replica read the whole namespace again. Many long-polls on one replica are woken
by a write on the other, all with the same bytes and their own request ids.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import asyncpg
import httpx

from registry.canonical import digest
from registry.sdk import Toolset
from tests.api.conftest import ADMIN_TOKEN, serve
from tests.faults.conftest import Replicas
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TOOLSET = "/v1/namespaces/billing/toolset"


def _tool(name: str, note: str = "") -> dict[str, Any]:
    found = copy.deepcopy(SEARCH_V1)
    found["name"] = name
    found["description"] = f"Tool {name}.{note}"
    return found


async def _toolset(url: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, headers=ADMIN, timeout=30) as client:
        answer = await client.get(TOOLSET)
    assert answer.status_code == 200, answer.text
    return answer


async def _settled(replicas: Replicas, digest_wanted: str | None = None) -> list[bytes]:
    """The toolset of every replica, once they all answer the same (notices are
    delivered after the writer's answer: a replica may need a moment)."""
    for _ in range(200):
        bodies = [(await _toolset(url)).content for url in replicas.urls]
        digests = {json.loads(body)["digest"] for body in bodies}
        if len(digests) == 1 and (digest_wanted is None or digest_wanted in digests):
            return bodies
        await asyncio.sleep(0.05)
    raise AssertionError(f"the replicas never agreed: {digests}")


async def _fresh_build(database_url: str) -> bytes:
    """What a replica started now builds from the database."""
    app = await serve(database_url, namespaces=())
    try:
        return (await _toolset(app.url)).content
    finally:
        await app.stop()


async def test_writes_on_both_replicas_give_both_the_payload_of_a_fresh_start(
    replicas: Replicas,
) -> None:
    first, second = (
        httpx.AsyncClient(base_url=url, headers=ADMIN, timeout=30) for url in replicas.urls
    )
    async with first, second:
        versions = "/v1/namespaces/billing/tools/{}/versions"
        # Each replica reads the namespace once: from then on it rebuilds per tool.
        for name in ("alpha", "beta", "db.query"):
            body = {"definition": _tool(name) if name != "db.query" else DB_QUERY_V3}
            assert (await first.post(versions.format(name), json=body)).status_code == 201
        await _settled(replicas)
        v4 = {
            "definition": DB_QUERY_V4,
            "deprecate": [{"version": 1, "sunset": "2099-01-01T00:00:00Z"}],
            "converters": [
                {
                    "from": 1,
                    "ops": [
                        {"op": "fill", "path": "/timeout_ms", "value": 30000},
                        {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
                        {"op": "reject", "path": "/mode", "values": ["write"], "message": "no"},
                    ],
                }
            ],
        }
        published = await second.post(versions.format("db.query"), json=v4)
        assert published.status_code == 201, published.text
        search = {"definition": SEARCH_V1}
        assert (await second.post(versions.format("search"), json=search)).status_code == 201
        v2 = {"definition": SEARCH_V2, "retire": [1]}
        assert (await first.post(versions.format("search"), json=v2)).status_code == 201
        alias = {"target": "db.query", "contract": {"tool": "db.query", "version": 1}}
        aliased = await second.put("/v1/namespaces/billing/aliases/db_query_v1", json=alias)
        assert aliased.is_success, aliased.text
        assert (await first.post(f"{versions.format('beta')}/1/retire")).status_code == 200
        gamma = {"definition": _tool("gamma")}
        assert (await second.post(versions.format("gamma"), json=gamma)).status_code == 201

    bodies = await _settled(replicas)
    assert bodies[0] == bodies[1]
    assert bodies[0] == await _fresh_build(replicas.database_url)
    toolset = Toolset.from_json(bodies[0])
    assert [t.name for t in toolset.tools] == ["alpha", "db.query", "gamma", "search"]
    assert toolset.alias("db_query_v1") is not None
    assert toolset.tool("db.query").current == 2  # type: ignore[union-attr]


async def test_a_writer_that_only_names_the_namespace_is_read_whole(replicas: Replicas) -> None:
    assert (
        await replicas.client.post(
            "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
        )
    ).status_code == 201
    before = (await _settled(replicas))[0]
    # As a replica from before tool notices writes: the row, then `namespace` alone.
    new = _tool("legacy")
    conn = await asyncpg.connect(replicas.database_url)
    try:
        async with conn.transaction():
            await conn.execute("INSERT INTO tools (namespace, name) VALUES ('billing', 'legacy')")
            await conn.execute(
                "INSERT INTO versions (namespace, tool, version, digest, definition) "
                "VALUES ('billing', 'legacy', 1, $1, $2::text::jsonb)",
                digest(new),
                json.dumps(new),
            )
            await conn.execute("SELECT pg_notify('toolset_changed', 'billing')")
    finally:
        await conn.close()
    bodies = await _settled(replicas)
    assert bodies[0] != before
    assert [t.name for t in Toolset.from_json(bodies[0]).tools] == ["db.query", "legacy"]
    assert bodies[0] == await _fresh_build(replicas.database_url)


async def test_many_long_polls_on_one_replica_are_woken_by_a_write_on_the_other(
    replicas: Replicas,
) -> None:
    assert (
        await replicas.client.post(
            "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
        )
    ).status_code == 201
    etag = (await _settled(replicas)) and (await _toolset(replicas.urls[1])).headers["etag"]
    waiters = 40
    async with httpx.AsyncClient(
        base_url=replicas.urls[1],
        headers=ADMIN,
        timeout=60,
        limits=httpx.Limits(max_connections=waiters),
    ) as client:
        polls = [
            asyncio.ensure_future(client.get(f"{TOOLSET}?wait=30", headers={"If-None-Match": etag}))
            for _ in range(waiters)
        ]
        for _ in range(400):
            if replicas.apps[1].server.config.app.app.state.services.longpolls.waiting == waiters:
                break
            await asyncio.sleep(0.025)
        assert not any(poll.done() for poll in polls)
        cosmetic = {**DB_QUERY_V3, "description": "Run a query (reworded)."}
        published = await replicas.client.post(
            "/v1/namespaces/billing/tools/db.query/versions", json={"definition": cosmetic}
        )
        assert published.status_code == 201, published.text
        answers = await asyncio.wait_for(asyncio.gather(*polls), timeout=30)
    assert {a.status_code for a in answers} == {200}
    assert len({a.content for a in answers}) == 1
    assert answers[0].headers["etag"] != etag
    assert Toolset.from_json(answers[0].content).tool("db.query").current == 2  # type: ignore[union-attr]
    assert len({a.headers["x-request-id"] for a in answers}) == waiters
