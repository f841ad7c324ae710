"""Slow clients are cut off (issue 18, item 2).

Real slow clients over sockets against `registry serve` (granian as served,
uvicorn for the body): headers dribbled a line at a time, a connection that
sends nothing, a body sent a byte at a time. The server ends each one while
the client is still dribbling, and counts the bodies it cut off.
Timeouts here are 1 s (headers) and 2 s (body); the clients would take 20 s.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest

from tests.api.conftest import ADMIN_TOKEN

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

DRIBBLE = 0.25  # seconds between two pieces a slow client sends
PIECES = 80  # 20 s of dribbling: far past both timeouts
# The headers' bound from its flag, the body's from its environment variable.
TIMEOUTS = ("--header-read-timeout", "1")


async def _connect(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = url.removeprefix("http://").split(":")
    return await asyncio.open_connection(host, int(port))


async def _dribble(writer: asyncio.StreamWriter, pieces: list[bytes]) -> None:
    with contextlib.suppress(ConnectionError):
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(DRIBBLE)


async def _answer_while_dribbling(url: str, head: bytes, pieces: list[bytes]) -> bytes:
    """What the server sends (b"" when it just closes) while the client is still
    sending `pieces`; AssertionError if the client got to the end first."""
    reader, writer = await _connect(url)
    try:
        writer.write(head)
        await writer.drain()
        sending = asyncio.ensure_future(_dribble(writer, pieces))
        try:
            answer = await asyncio.wait_for(_response(reader), timeout=60)
        except ConnectionResetError:
            answer = b""
        assert not sending.done(), "the server waited for the whole slow request"
        sending.cancel()
        return answer
    finally:
        writer.transport.abort()


async def _response(reader: asyncio.StreamReader) -> bytes:
    """One HTTP response, head and body (they may arrive in separate reads),
    or what came before the server closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as closed:
        return closed.partial
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    try:
        return head + await reader.readexactly(length)
    except asyncio.IncompleteReadError as closed:
        return head + closed.partial


def _spawn(start: Any, database_url: str, server: str) -> Any:
    return start(
        "--database-url",
        database_url,
        "--server",
        server,
        *TIMEOUTS,
        REGISTRY_BODY_READ_TIMEOUT="2",
        REGISTRY_BOOTSTRAP_TOKEN=ADMIN_TOKEN,
    )


def test_slow_and_silent_headers_are_cut_off(database_url: str, spawn: Any) -> None:
    served = _spawn(spawn, database_url, "granian")

    async def clients() -> list[bytes]:
        slow = [
            _answer_while_dribbling(
                served.url,
                b"GET /v1/namespaces HTTP/1.1\r\n",
                [f"X-Slow-{i}: y\r\n".encode() for i in range(PIECES)],
            )
            for _ in range(20)
        ]
        # Connections that never send a byte (granian's HTTP/2 sniffing held these).
        silent = [_answer_while_dribbling(served.url, b"", [b""] * PIECES) for _ in range(20)]
        return await asyncio.gather(*slow, *silent)

    answers = asyncio.run(clients())
    # Closed without an answer: nothing of a request was ever complete.
    assert set(answers) == {b""}
    assert httpx.get(served.url + "/healthz").status_code == 200


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_a_slow_body_is_cut_off_and_counted(
    database_url: str,
    spawn: Any,
    server: str,
) -> None:
    served = _spawn(spawn, database_url, server)
    head = (
        "POST /v1/namespaces/billing/tools/db.query/versions HTTP/1.1\r\n"
        f"Host: x\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {PIECES}\r\n\r\n"
    ).encode()
    answer = asyncio.run(_answer_while_dribbling(served.url, head, [b" "] * PIECES))
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"request-timeout" in answer and b"did not arrive within 2 s" in answer
    metrics = httpx.get(served.url + "/metrics", headers=ADMIN).text
    assert "registry_http_body_timeouts_total 1.0" in metrics
    assert 'status="408"' in metrics
    assert 'status="5' not in metrics


def test_an_anonymous_slow_body_is_refused_at_once(database_url: str, spawn: Any) -> None:
    served = _spawn(spawn, database_url, "granian")
    head = (
        "POST /v1/apply HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/json\r\nContent-Length: {PIECES}\r\n\r\n"
    ).encode()
    answer = asyncio.run(_answer_while_dribbling(served.url, head, [b" "] * PIECES))
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert (
        "registry_http_body_timeouts_total 0.0"
        in httpx.get(served.url + "/metrics", headers=ADMIN).text
    )


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_a_refused_large_body_is_answered_not_reset(
    database_url: str, spawn: Any, server: str
) -> None:
    """A 401 is decided before the body is read; the rest of the body is then read
    and dropped (not parsed), so an ordinary client still sending it gets the 401
    rather than a reset connection."""
    served = _spawn(spawn, database_url, server)
    body = b"[" + b",".join([b'{"a": 1}'] * 450_000) + b"]"  # ~4 MiB

    async def burst() -> list[int]:
        limits = httpx.Limits(max_connections=16)
        async with httpx.AsyncClient(base_url=served.url, timeout=60, limits=limits) as client:
            answers = await asyncio.gather(
                *(
                    client.post(
                        "/v1/apply", content=body, headers={"content-type": "application/json"}
                    )
                    for _ in range(16)
                )
            )
        return [answer.status_code for answer in answers]

    assert asyncio.run(burst()) == [401] * 16
    metrics = httpx.get(served.url + "/metrics", headers=ADMIN).text
    assert "registry_http_body_timeouts_total 0.0" in metrics
