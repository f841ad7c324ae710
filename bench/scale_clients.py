"""Load clients of bench/scale_bench.py, each run as its own process (its own descriptors,
its own event loop): raw HTTP/1.1 over asyncio protocols, a few microseconds of client
CPU per request, so that on a shared 2-core machine the clients take little from the
server they measure.

    python bench/scale_clients.py hold URL PATH COUNT [--header K:V ...]
        opens COUNT connections, sends PATH on each (a long-poll), prints
        {"held": n, "errors": [...]} once all are sent and none has been answered
        within a second, then, after the answers (or stdin closing), one line
        {"answers": [[status, monotonic seconds], ...]}
    python bench/scale_clients.py storm URL PATH COUNT [--header K:V ...]
        opens COUNT new connections at once, one request each; prints
        {"answers": [[status, seconds from start], ...], "seconds": total}

Times are `time.monotonic()` (system-wide on Linux, comparable across processes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

CONNECT_BATCH = 250  # connections opened per loop turn while holding (listen backlog 2048)


def request_bytes(host: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class OneRequest(asyncio.Protocol):
    """Sends one request; notes when the whole answer has arrived."""

    def __init__(self, request: bytes, done: asyncio.Future[None] | None = None) -> None:
        self.request = request
        self.buffer = bytearray()
        self.status = 0
        self.at: float | None = None
        self.error: str | None = None
        self.transport: asyncio.Transport | None = None
        self.done = done

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buffer[:end]).split(b"\r\n")
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(self.buffer) >= end + 4 + length:
            self.status = int(head[0].split(b" ", 2)[1])
            self.at = time.monotonic()
            self.buffer = bytearray()
            self._finish()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.at is None and self.error is None:
            self.error = f"connection lost: {exc}"
            self._finish()

    def _finish(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(None)


def _split(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").partition(":")
    return host, int(port)


async def hold(url: str, path: str, count: int, headers: dict[str, str]) -> None:
    host, port = _split(url)
    loop = asyncio.get_running_loop()
    request = request_bytes(host, path, headers)
    polls: list[OneRequest] = []
    errors: list[str] = []
    for start in range(0, count, CONNECT_BATCH):
        batch = [OneRequest(request) for _ in range(min(CONNECT_BATCH, count - start))]
        opened = await asyncio.gather(
            *(loop.create_connection(lambda p=p: p, host, port) for p in batch),
            return_exceptions=True,
        )
        for poll, result in zip(batch, opened, strict=True):
            if isinstance(result, BaseException):
                errors.append(f"{type(result).__name__}: {result}")
            else:
                polls.append(poll)
        await asyncio.sleep(0)
    await asyncio.sleep(1.0)
    early = [p.status for p in polls if p.at is not None or p.error is not None]
    print(json.dumps({"held": len(polls) - len(early), "errors": errors[:5], "early": early[:5]}))
    sys.stdout.flush()
    # Then until every poll has its answer, or stdin closes (the bench is done).
    closed = asyncio.ensure_future(loop.run_in_executor(None, sys.stdin.read))
    while not closed.done() and any(p.at is None and p.error is None for p in polls):
        await asyncio.wait({closed}, timeout=0.05)
    answers = [[p.status, p.at] for p in polls if p.at is not None]
    lost = [p.error for p in polls if p.error is not None]
    print(json.dumps({"answers": answers, "lost": lost[:5], "lost_count": len(lost)}))
    sys.stdout.flush()
    for poll in polls:
        if poll.transport is not None:
            poll.transport.abort()


async def storm(url: str, path: str, count: int, headers: dict[str, str]) -> None:
    host, port = _split(url)
    loop = asyncio.get_running_loop()
    request = request_bytes(host, path, {**headers, "Connection": "close"})
    started = time.monotonic()

    async def one() -> OneRequest:
        done: asyncio.Future[None] = loop.create_future()
        proto = OneRequest(request, done)
        try:
            transport, _ = await loop.create_connection(lambda: proto, host, port)
        except OSError as exc:
            proto.error = str(exc)
            return proto
        await done
        transport.close()
        return proto

    results = await asyncio.gather(*(one() for _ in range(count)))
    seconds = time.monotonic() - started
    answers = [[p.status, (p.at or started) - started] for p in results if p.at is not None]
    errors = [p.error for p in results if p.error is not None]
    print(json.dumps({"answers": answers, "errors": errors[:5], "seconds": seconds}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["hold", "storm"])
    parser.add_argument("url")
    parser.add_argument("path")
    parser.add_argument("count", type=int)
    parser.add_argument("--header", action="append", default=[])
    args = parser.parse_args()
    headers = dict(h.split(":", 1) for h in args.header)
    run: Any = hold if args.mode == "hold" else storm
    asyncio.run(run(args.url, args.path, args.count, headers))


if __name__ == "__main__":
    main()


class KeptAlive:
    """One keep-alive HTTP/1.1 connection sending pre-encoded JSON POSTs (publishers)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.host, self.port = _split(url)
        self.headers = "".join(f"{key}: {value}\r\n" for key, value in headers.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post_json(self, path: str, body: bytes) -> tuple[int, bytes]:
        assert self.reader is not None and self.writer is not None
        self.writer.write(
            (
                f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.headers}"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return int(head.split(b" ", 2)[1]), await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()
