"""A real registry per test: the app served by uvicorn on a loopback port, a fresh database.

async def test_x(registry):      # registry.client: httpx.AsyncClient with the admin token
    r = await registry.client.get("/v1/namespaces")
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest_asyncio
import uvicorn

from registry.api.app import asgi
from registry.api.settings import Settings

ADMIN_TOKEN = "test-bootstrap-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Registry:
    url: str
    database_url: str
    client: httpx.AsyncClient  # authenticated as *:admin

    def anonymous(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=30)

    def with_token(self, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, timeout=30, headers={"Authorization": f"Bearer {token}"}
        )


class ServedApp:
    """uvicorn running the app in this event loop until `stop()`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        config = uvicorn.Config(
            asgi(settings),
            host="127.0.0.1",
            port=settings.port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        self.server = uvicorn.Server(config)
        self.task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}"

    async def start(self) -> None:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            if self.task.done():
                self.task.result()
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self.server.should_exit = True
        if self.task is not None:
            await self.task


async def serve(database_url: str, **overrides: object) -> ServedApp:
    settings = Settings(
        database_url=database_url,
        port=free_port(),
        bootstrap_token=ADMIN_TOKEN,
        pool_min=1,
        pool_max=20,
        **overrides,  # type: ignore[arg-type]
    )
    app = ServedApp(settings)
    await app.start()
    return app


@pytest_asyncio.fixture
async def registry(database_url: str) -> AsyncIterator[Registry]:
    app = await serve(database_url)
    client = httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        yield Registry(app.url, database_url, client)
    finally:
        await client.aclose()
        await app.stop()
