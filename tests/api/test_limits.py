"""Connection and long-poll limits (issue 14): settings with defaults from the descriptor
limit; reaching one is answered (503 + Retry-After for a long-poll), counted in /metrics
and said in the log at most once a minute.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from typing import Any

import httpx
import pytest

from registry.api.limits import RESERVED_FDS, LimitLog, Limits, raise_fd_limit
from registry.api.metrics import Metrics
from registry.api.settings import Settings
from tests.api.conftest import ADMIN_TOKEN, serve
from tests.fixtures.seeds import DB_QUERY_V3

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TOOLSET = "/v1/namespaces/billing/toolset"


def _counted(text: str, limit: str) -> float:
    match = re.search(rf'registry_limit_reached_total\{{limit="{limit}"\}} (\S+)', text)
    return float(match.group(1)) if match else 0.0


def test_limits_follow_the_descriptor_limit_unless_set() -> None:
    derived = Limits.of(20_000, pool_fds=11)
    assert derived.connections == 20_000 - RESERVED_FDS - 11
    assert derived.waiters == derived.connections - derived.connections // 10
    assert derived.warnings() == []
    small = Limits.of(300, pool_fds=11)
    assert small.waiters == small.connections - 64  # at least 64 left for other requests
    set_ = Limits.of(1024, pool_fds=11, max_connections=5000, max_waiters=6000)
    assert (set_.connections, set_.waiters) == (5000, 6000)
    found = " ".join(set_.warnings())
    assert "file descriptors" in found and "above max_connections" in found


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one() -> None:
    import resource

    soft = raise_fd_limit()
    now, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft == now
    assert hard in (resource.RLIM_INFINITY, now)


def test_a_limit_reached_is_counted_each_time_and_logged_once_a_minute(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from registry.logging_setup import configure_logging

    configure_logging(json=False)
    metrics = Metrics()
    clock = [1000.0]
    log = LimitLog(metrics, clock=lambda: clock[0])
    for _ in range(5):
        log.reached("waiters", 10)
        clock[0] += 1.0
    clock[0] += 60.0
    log.reached("waiters", 10)
    lines = [x for x in capsys.readouterr().err.splitlines() if "limit_reached" in x]
    assert len(lines) == 2
    assert "times=1" in lines[0] and "times=5" in lines[1]  # the second counts the quiet ones
    assert _counted(metrics.render().decode(), "waiters") == 6


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("REGISTRY_MAX_WAITERS", "0"),
        ("REGISTRY_MAX_CONNECTIONS", "lots"),
        ("REGISTRY_POOL_MAX", "-1"),
    ],
)
def test_bad_limit_settings_are_refused_by_name(variable: str, value: str) -> None:
    with pytest.raises(ValueError, match=variable):
        Settings.from_env({variable: value})


def test_limit_settings_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "REGISTRY_MAX_WAITERS": "900",
            "REGISTRY_MAX_CONNECTIONS": "1000",
            "REGISTRY_POOL_MAX": "25",
            "REGISTRY_READ_DATABASE_URL": "postgresql://replica/registry",
        }
    )
    assert (settings.max_waiters, settings.max_connections, settings.pool_max) == (900, 1000, 25)
    assert settings.read_database_url == "postgresql://replica/registry"


async def test_a_long_poll_past_the_waiter_limit_is_refused_and_counted(
    database_url: str,
) -> None:
    app = await serve(database_url, max_waiters=2, max_waiters_per_token=2)
    try:
        async with httpx.AsyncClient(base_url=app.url, headers=ADMIN, timeout=30) as client:
            published = await client.post(
                "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
            )
            assert published.status_code == 201
            etag = (await client.get(TOOLSET)).headers["etag"]
            wait = {"If-None-Match": etag}
            held = [
                asyncio.ensure_future(client.get(f"{TOOLSET}?wait=20", headers=wait))
                for _ in range(2)
            ]
            for _ in range(200):
                if app.server.config.app.app.state.services.longpolls.waiting == 2:
                    break
                await asyncio.sleep(0.02)
            refused = await client.get(f"{TOOLSET}?wait=20", headers=wait)
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "5"
            assert "as many long-polls as it may (2)" in refused.json()["detail"]
            # A plain conditional GET is no long-poll: still answered.
            assert (await client.get(TOOLSET, headers=wait)).status_code == 304
            assert _counted((await client.get("/metrics")).text, "waiters") == 1
            changed = {**DB_QUERY_V3, "description": "Run a query (reworded)."}
            await client.post(
                "/v1/namespaces/billing/tools/db.query/versions", json={"definition": changed}
            )
            answers = await asyncio.gather(*held)
            assert [a.status_code for a in answers] == [200, 200]
    finally:
        await app.stop()


def _long_poll(url: str, etag: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(
        f"GET {TOOLSET}?wait=30 HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
        f"{ADMIN_TOKEN}\r\nIf-None-Match: {etag}\r\n\r\n".encode()
    )
    return sock


def test_connections_past_the_limit_wait_and_the_replica_says_so(
    database_url: str, spawn: Any
) -> None:
    """`registry serve` (granian) with room for 12 connections and 8 long-polls: one
    kept connection and 16 long-polls; 11 of those are accepted (8 held, 3 answered 503
    and kept alive) and 5 are left waiting to be accepted: counted, and logged once."""
    served = spawn(
        "--database-url",
        database_url,
        "--max-connections",
        "12",
        "--max-waiters",
        "8",
        REGISTRY_BOOTSTRAP_TOKEN=ADMIN_TOKEN,
        REGISTRY_MAX_WAITERS_PER_TOKEN="16",  # one token here: the replica's limit is met
    )
    with httpx.Client(base_url=served.url, headers=ADMIN, timeout=30) as kept:  # 1 connection
        assert kept.put("/v1/namespaces/billing").status_code in (200, 201)
        kept.post(
            "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
        )
        etag = kept.get(TOOLSET).headers["etag"]
        sockets = [_long_poll(served.url, etag) for _ in range(16)]
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                text = kept.get("/metrics").text
                if _counted(text, "connections") >= 1:
                    break
                time.sleep(0.2)
            assert _counted(text, "connections") >= 1
            assert _counted(text, "waiters") >= 1
        finally:
            for sock in sockets:
                sock.close()
    warnings = [
        line
        for line in served.lines()
        if line.get("event") == "limit_reached" and line.get("limit") == "connections"
    ]
    assert len(warnings) == 1, warnings
    assert warnings[0]["level"] == "warning" and warnings[0]["value"] == 12
    assert json.dumps(warnings[0])  # one JSON line, as every line of `serve`
