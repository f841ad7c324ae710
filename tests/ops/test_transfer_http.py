"""`GET /v1/export` and `POST /v1/import` between two live registries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from tests.api.conftest import Registry
from tests.ops.conftest import module_registry
from tests.ops.records import NAMESPACES, populate, table_rows, toolset_tags


@pytest_asyncio.fixture(scope="module")
async def source(postgres_server: Any, migrated_template: str) -> AsyncIterator[Registry]:
    async with module_registry(postgres_server, migrated_template) as served:
        await populate(served.client)
        yield served


@pytest_asyncio.fixture(scope="module")
async def target(postgres_server: Any, migrated_template: str) -> AsyncIterator[Registry]:
    async with module_registry(postgres_server, migrated_template) as served:
        yield served


async def test_a_round_trip_keeps_every_record_and_every_toolset(
    source: Registry, target: Registry
) -> None:
    exported = await source.client.get("/v1/export", params={"usage": "true"})
    assert exported.status_code == 200, exported.text
    assert exported.headers["content-type"].startswith("application/jsonl")
    imported = await target.client.post(
        "/v1/import", content=exported.content, headers={"Content-Type": "application/jsonl"}
    )
    assert imported.status_code == 201, imported.text
    assert imported.json()["namespaces"] == list(NAMESPACES)
    assert await toolset_tags(target.client) == await toolset_tags(source.client)
    assert await table_rows(target.database_url) == await table_rows(source.database_url)
