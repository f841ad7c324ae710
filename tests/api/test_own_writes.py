"""An instance's own writes are in its next toolset read (the CI failure of
tests/faults/test_outage.py: three publishes answered 201, then the same instance
served the toolset from before them, its NOTIFY not yet heard).

The listener here hears nothing after the first read: a NOTIFY that has not arrived
yet cannot be held back otherwise, so its callbacks are replaced (a mock, for that
fault only). Other instances still learn of a write by NOTIFY alone.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx

from registry.sdk import Toolset
from tests.api.conftest import ADMIN_TOKEN, serve
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1

BILLING = "/v1/namespaces/billing"


def deaf(app: Any) -> None:
    """The listener still connected (so the cache trusts itself) but hearing nothing."""
    listener = app.server.config.app.app.state.services.listener
    listener._callback = lambda namespace: None
    listener._tools = lambda namespace, tool: None


async def current(client: httpx.AsyncClient, tool: str) -> int | None:
    answer = await client.get(f"{BILLING}/toolset")
    assert answer.status_code == 200, answer.text
    entry = Toolset.from_json(answer.content).tool(tool)
    return None if entry is None else entry.current


async def test_a_publish_then_a_read_on_the_same_instance_sees_it(database_url: str) -> None:
    app = await serve(database_url)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    try:
        async with httpx.AsyncClient(base_url=app.url, timeout=30, headers=headers) as client:
            first = await client.post(
                f"{BILLING}/tools/db.query/versions", json={"definition": DB_QUERY_V3}
            )
            assert first.status_code == 201
            assert await current(client, "db.query") == 1  # read: the namespace is cached
            deaf(app)
            v2 = await client.post(
                f"{BILLING}/tools/db.query/versions",
                json={"definition": DB_QUERY_V4, "retire": [1]},
            )
            assert v2.status_code == 201, v2.text
            assert await current(client, "db.query") == 2, "a publish"
            # a write naming no tool (an alias), and an apply naming no namespace in its path
            alias = await client.put(
                f"{BILLING}/aliases/db_query_v2",
                json={"target": "db.query", "contract": {"tool": "db.query", "version": 2}},
            )
            assert alias.status_code in (200, 201), alias.text
            listed = Toolset.from_json((await client.get(f"{BILLING}/toolset")).content)
            assert listed.alias("db_query_v2") is not None, "an alias"
            search = copy.deepcopy(SEARCH_V1)
            applied = await client.post(
                "/v1/apply", json={"manifests": [{"namespace": "billing", "tool": search}]}
            )
            assert applied.status_code == 200, applied.text
            assert await current(client, "search") == 1, "an apply"
    finally:
        await app.stop()
