"""The console's tests: a live `registry serve` (a subprocess, as users run it) driven by
Debian's Chromium through Playwright, and the in-process registry of tests/api for the
HTTP-level checks.

    async def test_x(console: Registry, browser: Browser): ...
        watched = await open_page(browser)          # records requests and errors
        await sign_in(watched, console.url, await console.token("billing:read"))

Chromium is `/usr/bin/chromium` (Debian's package; `make test` installs it with apt-get
when it is missing and the run is root on a Debian machine). Browser downloads are not
possible here, so Playwright drives that binary. Without it the browser tests skip and
say why; nothing else does.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.api.conftest import ADMIN_TOKEN, Registry, registry
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

__all__ = ["registry"]

CHROMIUM = Path(os.environ.get("REGISTRY_TEST_CHROMIUM", "/usr/bin/chromium"))
# The flags the probe used: without the background-networking ones the browser tries
# to reach its own services, which are not reachable here.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
BILLING = "/v1/namespaces/billing"
DB_QUERY = f"{BILLING}/tools/db.query"


async def seed_000(client: httpx.AsyncClient) -> None:
    """Seed 000: db.query v1 (the old v3 with timeout_ms), then v2 (the v4) retiring v1."""
    assert (await client.put(BILLING)).status_code in (200, 201)
    first = await client.post(f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V3})
    assert first.status_code == 201, first.text
    second = await client.post(
        f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V4, "retire": [1]}
    )
    assert second.status_code == 201, second.text


@dataclass
class Watched:
    """A page and what it did: every request's URL, console errors, script errors."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def outside(self, origin: str) -> list[str]:
        return [u for u in self.requests if not u.startswith((origin + "/", "data:"))]


async def open_page(browser: Any, *, phone: bool = False) -> Watched:
    """A new page in its own context (no cookies shared), desktop or phone sized."""
    context = await browser.new_context(
        viewport=PHONE if phone else DESKTOP, is_mobile=phone, has_touch=phone
    )
    page = await context.new_page()
    watched = Watched(page)
    page.on("request", lambda request: watched.requests.append(request.url))
    page.on("pageerror", lambda error: watched.errors.append(f"script error: {error}"))
    page.on(
        "console",
        lambda message: (
            watched.errors.append(f"console: {message.text}")
            if message.type == "error" and "Failed to load resource" not in message.text
            else None
        ),
    )
    return watched


async def sign_in(watched: Watched, url: str, secret: str, path: str = "/ui/") -> None:
    """Sign in through the form, as a person does, and land on `path`."""
    page = watched.page
    await page.goto(f"{url}/ui/login?next={path}")
    await page.get_by_label("Token").fill(secret)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(url + path)


@pytest.fixture
def console_server(database_url: str, spawn: Any) -> Iterator[str]:
    # database_url first: the server is stopped (spawn's teardown) before its database goes.
    served = spawn("--database-url", database_url, REGISTRY_BOOTSTRAP_TOKEN=ADMIN_TOKEN)
    yield served.url


@pytest_asyncio.fixture
async def console(console_server: str, database_url: str) -> AsyncIterator[Registry]:
    """The live `registry serve`, with an admin client (no namespace created yet)."""
    async with httpx.AsyncClient(
        base_url=console_server,
        timeout=30,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    ) as admin:
        yield Registry(console_server, database_url, admin)


@pytest_asyncio.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(
            f"Chromium is not installed at {CHROMIUM}: `make test` installs Debian's chromium "
            "package with apt-get when it runs as root on Debian; elsewhere install it"
        )
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        # launch() gives the browser a new, empty --user-data-dir of its own.
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (git ignores it): kept after the run for a person to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
