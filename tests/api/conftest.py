"""A real registry per test: the app served by uvicorn on a loopback port, a fresh database.

async def test_x(registry):      # registry.client: httpx.AsyncClient with the admin token
    r = await registry.client.get("/v1/namespaces")

Namespaces are explicit (a publish to a missing one is 404), so `serve()` starts
with the namespaces the tests publish to, created as an admin would
(`TEST_NAMESPACES`); `serve(url, namespaces=())` starts with none.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx
import pytest_asyncio
import uvicorn

from registry.api.app import asgi
from registry.api.settings import Settings
from tests.ports import free_port

ADMIN_TOKEN = "test-bootstrap-token"
TEST_NAMESPACES = ("billing", "search", "docs", "ledger", "cold", "files", "other", "payments")


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

    async def token(self, *scopes: str) -> str:
        """A new token with these scopes (stored as `registry token create` stores one)."""
        import secrets

        import asyncpg

        from registry import store

        secret = "mtr_test_" + secrets.token_urlsafe(12)
        conn = await asyncpg.connect(self.database_url)
        try:
            await store.create_token(
                conn, store.hash_token(secret), scopes, actor=None, request_id=None
            )
        finally:
            await conn.close()
        return secret


class ServedApp:
    """uvicorn running the app in this event loop until `stop()`; `clock` (a callable
    answering an aware datetime) replaces the app's clock for usage counts."""

    def __init__(self, settings: Settings, clock: Callable[[], datetime] | None = None) -> None:
        self.settings = settings
        config = uvicorn.Config(
            asgi(settings, clock=clock),
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


async def create_namespaces(database_url: str, names: Sequence[str]) -> None:
    """Create namespaces through the store, as `PUT /v1/namespaces/{ns}` does."""
    import asyncpg

    from registry import store

    conn = await asyncpg.connect(database_url)
    try:
        for name in names:
            await store.create_namespace(conn, name, actor="test-setup", request_id=None)
    finally:
        await conn.close()


async def serve(
    database_url: str,
    namespaces: Sequence[str] = TEST_NAMESPACES,
    clock: Callable[[], datetime] | None = None,
    **overrides: object,
) -> ServedApp:
    settings = Settings(
        database_url=database_url,
        port=free_port(),
        bootstrap_token=ADMIN_TOKEN,
        pool_min=1,
        pool_max=20,
        **overrides,  # type: ignore[arg-type]
    )
    app = ServedApp(settings, clock)
    await app.start()  # migrates a new database first
    await create_namespaces(database_url, namespaces)
    return app


@contextlib.asynccontextmanager
async def served_registry(
    database_url: str, namespaces: Sequence[str] = TEST_NAMESPACES
) -> AsyncIterator[Registry]:
    app = await serve(database_url, namespaces)
    client = httpx.AsyncClient(
        base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        yield Registry(app.url, database_url, client)
    finally:
        await client.aclose()
        await app.stop()


@pytest_asyncio.fixture
async def registry(database_url: str) -> AsyncIterator[Registry]:
    async with served_registry(database_url) as served:
        yield served


@pytest_asyncio.fixture
async def bare_registry(database_url: str) -> AsyncIterator[Registry]:
    """`registry` with no namespace created yet."""
    async with served_registry(database_url, namespaces=()) as served:
        yield served
