"""Fixtures of the fault tests: two replicas of the served app on one fresh database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest_asyncio

from tests.api.conftest import ADMIN_TOKEN, ServedApp, serve


@dataclass
class Replicas:
    database_url: str
    apps: list[ServedApp]
    client: httpx.AsyncClient  # admin, on the first replica

    @property
    def urls(self) -> list[str]:
        return [app.url for app in self.apps]


@pytest_asyncio.fixture
async def replicas(database_url: str) -> AsyncIterator[Replicas]:
    """Two uvicorn-served apps (each its own pool and LISTEN connection), one database."""
    apps = [await serve(database_url)]
    apps.append(await serve(database_url))
    client = httpx.AsyncClient(
        base_url=apps[0].url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        yield Replicas(database_url, apps, client)
    finally:
        await client.aclose()
        for app in apps:
            await app.stop()
