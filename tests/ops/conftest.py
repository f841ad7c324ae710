"""Registries served once per module (source and target of a move), on fresh databases.

async def test_x(source, target):   # source holds every kind of record (records.py),
    ...                              # target nothing; each once per test module
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest_asyncio

from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.ops.records import populate


@contextlib.asynccontextmanager
async def module_registry(postgres_server: Any, template: str) -> AsyncIterator[Registry]:
    """`tests/api/conftest.py`'s registry with no namespace, for as long as the block."""
    name = f"test_{uuid.uuid4().hex[:20]}"
    admin = await asyncpg.connect(postgres_server.admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        app = await serve(postgres_server.dsn(name), namespaces=())
        client = httpx.AsyncClient(
            base_url=app.url, timeout=60, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        )
        try:
            yield Registry(app.url, postgres_server.dsn(name), client)
        finally:
            await client.aclose()
            await app.stop()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest_asyncio.fixture(scope="module")
async def source(postgres_server: Any, migrated_template: str) -> AsyncIterator[Registry]:
    async with module_registry(postgres_server, migrated_template) as served:
        await populate(served.client)
        yield served


@pytest_asyncio.fixture(scope="module")
async def target(postgres_server: Any, migrated_template: str) -> AsyncIterator[Registry]:
    async with module_registry(postgres_server, migrated_template) as served:
        yield served
