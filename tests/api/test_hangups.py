"""A client that hangs up during a long-poll is normal (issue 10, item 2).

Every MCP server restart drops its watcher's long-poll. Run against `registry
serve` itself (granian, and uvicorn), with its JSON log: 50 clients that hang
up a second into `?wait=30` leave no 5xx in /metrics, no error line in the log,
and no waiter held.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest

from tests.api.conftest import ADMIN_TOKEN
from tests.fixtures.seeds import DB_QUERY_V3

HANGUPS = 50
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TOOLSET = "/v1/namespaces/billing/toolset"


async def _hang_up(url: str, etag: str) -> None:
    """Send a long-poll, wait until it is held, then close the connection."""
    host, port = url.removeprefix("http://").split(":")
    _, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        f"GET {TOOLSET}?wait=30 HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {ADMIN_TOKEN}\r\nIf-None-Match: {etag}\r\n\r\n".encode()
    )
    await writer.drain()
    await asyncio.sleep(1.0)
    writer.transport.abort()  # a killed client: the socket goes, nothing more is sent


def _statuses(metrics: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in metrics.splitlines():
        match = re.match(r'registry_http_requests_total\{.*status="(\d+)"\} (\S+)', line)
        if match:
            found[match.group(1)] = found.get(match.group(1), 0) + float(match.group(2))
    return found


def _serve(spawn: Any, database_url: str, server: str) -> Any:
    return spawn(
        "--database-url", database_url, "--server", server, REGISTRY_BOOTSTRAP_TOKEN=ADMIN_TOKEN
    )


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_clients_hanging_up_mid_long_poll_are_no_error(
    server: str,
    database_url: str,
    spawn: Any,
) -> None:
    served = _serve(spawn, database_url, server)
    assert httpx.put(served.url + "/v1/namespaces/billing", headers=ADMIN).status_code == 201
    published = httpx.post(
        served.url + "/v1/namespaces/billing/tools/db.query/versions",
        json={"definition": DB_QUERY_V3},
        headers=ADMIN,
    )
    assert published.status_code == 201, published.text
    etag = httpx.get(served.url + TOOLSET, headers=ADMIN).headers["etag"]

    async def hang_ups() -> None:
        await asyncio.gather(*(_hang_up(served.url, etag) for _ in range(HANGUPS)))

    asyncio.run(hang_ups())
    # The hang-ups are seen by the server shortly after: wait until no waiter is held.
    for _ in range(200):
        metrics = httpx.get(served.url + "/metrics", headers=ADMIN).text
        if "registry_toolset_longpoll_waiters 0.0" in metrics:
            break
        asyncio.run(asyncio.sleep(0.05))
    assert "registry_toolset_longpoll_waiters 0.0" in metrics
    assert f"registry_toolset_longpoll_hangups_total {HANGUPS}.0" in metrics
    statuses = _statuses(metrics)
    assert not [s for s in statuses if s.startswith("5")], statuses
    code, _ = served.stop(30.0)
    assert code == 0, served.errors()
    lines = served.lines()
    toolset_lines = [line for line in lines if line.get("route", "").endswith("/toolset")]
    assert len(toolset_lines) == HANGUPS + 1  # each hang-up is logged, as a 304
    assert {line["status"] for line in toolset_lines} == {200, 304}
    errors = [line for line in lines if line.get("level") in ("error", "critical", "exception")]
    assert errors == []


async def _hang_up_mid_body(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    _, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        "POST /v1/namespaces/billing/tools/db.query/versions HTTP/1.1\r\n"
        f"Host: {host}\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        '{"definition": '.encode()
    )
    await writer.drain()
    await asyncio.sleep(0.5)
    writer.transport.abort()


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_clients_hanging_up_mid_body_are_no_error(
    server: str,
    database_url: str,
    spawn: Any,
) -> None:
    served = _serve(spawn, database_url, server)

    async def hang_ups() -> None:
        await asyncio.gather(*(_hang_up_mid_body(served.url) for _ in range(10)))

    asyncio.run(hang_ups())
    for _ in range(200):
        statuses = _statuses(httpx.get(served.url + "/metrics", headers=ADMIN).text)
        if statuses.get("499") == 10:
            break
        asyncio.run(asyncio.sleep(0.05))
    assert statuses.get("499") == 10, statuses
    assert not [s for s in statuses if s.startswith("5")], statuses
    code, _ = served.stop(30.0)
    assert code == 0, served.errors()
    errors = [line for line in served.lines() if line.get("level") in ("error", "critical")]
    assert errors == []
