"""The toolset endpoint: ETag and 304, long-polls woken across replicas by LISTEN/NOTIFY."""

from __future__ import annotations

import asyncio
import copy

import httpx
import pytest

from registry.sdk import Toolset
from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.fixtures.seeds import DB_QUERY_V4

TOOLSET = "/v1/namespaces/billing/toolset"
VERSIONS = "/v1/namespaces/billing/tools/db.query/versions"


def _changed(comment: str) -> dict[str, object]:
    definition = copy.deepcopy(DB_QUERY_V4)
    definition["inputSchema"]["properties"][comment] = {"type": "string"}
    return definition


async def test_etag_and_304(registry: Registry) -> None:
    assert (await registry.client.post(VERSIONS, json={"definition": DB_QUERY_V4})).is_success
    first = await registry.client.get(TOOLSET)
    etag = first.headers["etag"]
    assert etag == f'"{Toolset.from_json(first.content).digest}"'
    unchanged = await registry.client.get(TOOLSET, headers={"If-None-Match": etag})
    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged.headers["etag"] == etag
    other = await registry.client.get(
        TOOLSET, headers={"If-None-Match": '"sha256:' + "0" * 64 + '"'}
    )
    assert other.status_code == 200
    missing = await registry.client.get("/v1/namespaces/nowhere/toolset")
    assert missing.status_code == 404


async def test_long_poll_times_out_with_304(registry: Registry) -> None:
    assert (await registry.client.post(VERSIONS, json={"definition": DB_QUERY_V4})).is_success
    etag = (await registry.client.get(TOOLSET)).headers["etag"]
    poll = asyncio.create_task(
        registry.client.get(TOOLSET, params={"wait": 1}, headers={"If-None-Match": etag})
    )
    await asyncio.sleep(0.3)
    assert not poll.done(), "the long-poll holds the request while nothing changes"
    answer = await asyncio.wait_for(poll, timeout=30)
    assert answer.status_code == 304


async def test_long_poll_is_woken_by_a_publish_on_another_replica(registry: Registry) -> None:
    assert (await registry.client.post(VERSIONS, json={"definition": DB_QUERY_V4})).is_success
    etag = (await registry.client.get(TOOLSET)).headers["etag"]
    second = await serve(registry.database_url)
    try:
        async with httpx.AsyncClient(
            base_url=second.url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30
        ) as other:
            poll = asyncio.create_task(
                registry.client.get(TOOLSET, params={"wait": 30}, headers={"If-None-Match": etag})
            )
            await asyncio.sleep(0.3)
            assert not poll.done(), "the long-poll must wait for a change"
            published = await other.post(VERSIONS, json={"definition": _changed("note")})
            assert published.status_code == 201
            # `wait` is 30 s: a 200 with the new payload is the publish's doing
            answer = await asyncio.wait_for(poll, timeout=25)
            assert answer.status_code == 200
            assert answer.headers["etag"] != etag
            woken = Toolset.from_json(answer.content)
            tool = woken.tool("db.query")
            assert tool is not None and tool.current == 2
    finally:
        await second.stop()


async def test_cached_payload_is_invalidated_by_every_write(registry: Registry) -> None:
    assert (await registry.client.post(VERSIONS, json={"definition": DB_QUERY_V4})).is_success
    before = await registry.client.get(TOOLSET)
    assert (await registry.client.post(f"{VERSIONS}/1/deprecate", json={})).is_success
    for _ in range(50):  # the notification arrives asynchronously
        after = await registry.client.get(TOOLSET)
        if after.headers["etag"] != before.headers["etag"]:
            break
        await asyncio.sleep(0.05)
    tool = Toolset.from_json(after.content).tool("db.query")
    assert tool is not None and tool.versions[0].state == "deprecated"


async def test_wait_is_bounded(registry: Registry) -> None:
    answer = await registry.client.get(TOOLSET, params={"wait": 61})
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("application/problem+json")


async def test_long_poll_ends_when_its_client_disconnects(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (await registry.client.post(VERSIONS, json={"definition": DB_QUERY_V4})).is_success
    etag = (await registry.client.get(TOOLSET)).headers["etag"]

    async def waiters() -> float:
        metrics = (await registry.client.get("/metrics")).text
        line = next(
            x for x in metrics.splitlines() if x.startswith("registry_toolset_longpoll_waiters ")
        )
        return float(line.split()[1])

    async with registry.with_token(ADMIN_TOKEN) as poller:
        poll = asyncio.create_task(
            poller.get(TOOLSET, params={"wait": 30}, headers={"If-None-Match": etag})
        )
        for _ in range(100):
            if await waiters() == 1:
                break
            await asyncio.sleep(0.02)
        assert await waiters() == 1
        poll.cancel()
    for _ in range(100):  # the connection is closed: the server lets the waiter go
        if await waiters() == 0:
            break
        await asyncio.sleep(0.02)
    assert await waiters() == 0
    assert "unhandled_error" not in capsys.readouterr().out  # answered nobody, quietly
