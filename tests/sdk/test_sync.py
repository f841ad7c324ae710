"""Boot sync, the cache and the watcher, against a real HTTP server.

The registry here is a small Litestar app served by uvicorn on 127.0.0.1, in
the test's event loop; the test controls what it answers (payload and ETag,
If-None-Match and a real `?wait=` long poll, 401/404/429/503, garbage, a
truncated body, a wrong ETag, a tampered payload) and can stop and restart it
on the same port. No part of httpx is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import msgspec
import pytest
import pytest_asyncio
import uvicorn
from litestar import Litestar, asgi
from litestar.types import HTTPResponseStartEvent, Receive, Scope, Send

from registry.sdk import (
    Backoff,
    SyncError,
    Toolset,
    ToolsetWatcher,
    read_cache,
    write_cache,
)
from registry.sdk.sync import CACHE_FORMAT
from tests.ports import free_port
from tests.sdk import captured_events, seed_000, seed_002

FAST = Backoff(base=0.01, cap=0.05, retry_after_cap=0.05)
NS = "billing"
WRONG = "sha256:" + "0" * 64


def encode(body: dict[str, Any]) -> bytes:
    return msgspec.json.encode(body)


V1 = encode(seed_000())
V2 = encode(seed_000(v3_served=True))
V3 = encode({**seed_002(with_route=True)})
assert V3 != V2


def tampered(body: bytes) -> bytes:
    """The payload with one description changed and its digest left as it was."""
    data = json.loads(body)
    data["tools"][0]["versions"][0]["definition"]["description"] = "Run any SQL."
    return encode(data)


@dataclass
class Seen:
    headers: dict[str, str]
    query: dict[str, list[str]]
    at: float


class FakeRegistry:
    """The toolset endpoint of a registry, with behaviour the test sets.

    `mode`: ok | garbage | truncated | wrong_etag | tampered | hang | an HTTP
    status (401, 404, 429, 503, ...) answered as problem+json. `fail_next`
    answers that many requests with `fail_status` before falling back to `mode`.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.body = V1
        self.digest = Toolset.from_json(V1).digest
        self.mode: str | int = "ok"
        self.retry_after: str | None = None
        self.detail = "detail from the registry"
        self.fail_next = 0
        self.fail_status = 503
        self.requests: list[Seen] = []
        self._changed = asyncio.Event()
        self._closed = asyncio.Event()
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

        @asgi(f"/v1/namespaces/{NS}/toolset", copy_scope=False)
        async def toolset(scope: Scope, receive: Receive, send: Send) -> None:
            await self._handle(scope, send)

        self.app = Litestar([toolset], logging_config=None)

    # ------------------------------------------------------------- control

    def publish(self, body: bytes) -> None:
        self.body = body
        self.digest = Toolset.from_json(body).digest
        self.mode = "ok"
        self._wake()

    def set_mode(self, mode: str | int, *, retry_after: str | None = None) -> None:
        self.mode = mode
        self.retry_after = retry_after
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def waiting(self) -> int:
        """Requests seen that long-poll (carry `wait`)."""
        return sum(1 for r in self.requests if "wait" in r.query)

    async def start(self) -> None:
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            lifespan="off",
            log_level="critical",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._closed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._server.serve())
        deadline = time.monotonic() + 5
        while not self._server.started:
            if self._task.done():
                self._task.result()
            assert time.monotonic() < deadline, "the test registry did not start"
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """A crash: every open connection is reset, the listener closed."""
        server, task = self._server, self._task
        if server is None or task is None:
            return
        self._server = self._task = None
        for listener in server.servers:
            listener.close()
        for connection in list(server.server_state.connections):
            connection.transport.abort()
        server.should_exit = True
        server.force_exit = True
        self._closed.set()
        self._wake()
        await asyncio.wait_for(task, 5)

    # ------------------------------------------------------------ handling

    async def _handle(self, scope: Scope, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qs(scope["query_string"].decode("latin-1"))
        self.requests.append(Seen(headers, query, time.monotonic()))
        if self.fail_next > 0:
            self.fail_next -= 1
            await self._problem(send, self.fail_status)
            return
        if self.mode == "hang":
            await self._closed.wait()  # until the server stops
            return
        if isinstance(self.mode, int):
            await self._problem(send, self.mode)
            return
        if self.mode == "ok" and headers.get("if-none-match") == f'"{self.digest}"':
            wait = float(query.get("wait", ["0"])[0])
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(wait, 60))
            if self.mode == "ok" and headers.get("if-none-match") == f'"{self.digest}"':
                await self._send(send, 304, b"", etag=self.digest)
                return
        await self._answer(send)

    async def _answer(self, send: Send) -> None:
        body, etag = self.body, self.digest
        if self.mode == "garbage":
            await self._send(send, 200, b"<html>502 Bad Gateway</html>", etag=etag)
        elif self.mode == "wrong_etag":
            await self._send(send, 200, body, etag=WRONG)
        elif self.mode == "tampered":
            await self._send(send, 200, tampered(body), etag=etag)
        elif self.mode == "truncated":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"etag", f'"{etag}"'.encode()),
                    ],
                }
            )
            await send(
                {"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True}
            )
            raise RuntimeError("the test registry dies mid-body")
        else:
            await self._send(send, 200, body, etag=etag)

    async def _problem(self, send: Send, status: int) -> None:
        problem = {
            "type": "about:blank",
            "title": {401: "Unauthorized", 404: "Not Found"}.get(status, "Unavailable"),
            "status": status,
            "detail": self.detail,
        }
        extra = [(b"retry-after", self.retry_after.encode())] if self.retry_after else []
        await self._send(
            send, status, encode(problem), ctype=b"application/problem+json", extra=extra
        )

    @staticmethod
    async def _send(
        send: Send,
        status: int,
        body: bytes,
        *,
        etag: str | None = None,
        ctype: bytes = b"application/json",
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
        if etag is not None:
            headers.append((b"etag", f'"{etag}"'.encode()))
        headers.extend(extra or [])
        start: HTTPResponseStartEvent = {
            "type": "http.response.start",
            "status": status,
            "headers": headers,
        }
        await send(start)
        await send({"type": "http.response.body", "body": body, "more_body": False})


@pytest_asyncio.fixture
async def registry() -> AsyncIterator[FakeRegistry]:
    fake = FakeRegistry(free_port())
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
def dead_url() -> str:
    """A registry URL where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}"


async def eventually(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def events(logs: Sequence[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


# ------------------------------------------------------------------ boot sync


async def test_boot_sync_writes_the_cache_atomically(
    registry: FakeRegistry, tmp_path: Path
) -> None:
    cache = tmp_path / "state" / "billing.toolset.json"
    before = datetime.now(UTC).replace(microsecond=0)
    toolset = await Toolset.sync(registry.url, NS, cache=cache, token="s3cret")

    assert toolset.digest == Toolset.from_json(V1).digest
    assert toolset.to_json() == V1
    assert registry.requests[0].headers["authorization"] == "Bearer s3cret"
    assert "if-none-match" not in registry.requests[0].headers

    raw = cache.read_bytes()
    assert raw.endswith(b',"payload":' + V1 + b"}\n")  # the served bytes, exactly
    envelope = json.loads(raw)
    assert envelope["format"] == CACHE_FORMAT
    assert envelope["digest"] == toolset.digest
    assert envelope["namespace"] == NS
    assert envelope["url"] == registry.url
    assert datetime.fromisoformat(envelope["fetchedAt"]) >= before
    assert sorted(p.name for p in cache.parent.iterdir()) == [cache.name]  # no temp left
    assert (cache.stat().st_mode & 0o777) == 0o600
    loaded = read_cache(cache)
    assert loaded.toolset.digest == toolset.digest
    assert loaded.url == registry.url

    # a second boot asks with the cached ETag; the 304 confirms the cache, which
    # is replaced (a new file renamed over it), never rewritten in place
    inode = cache.stat().st_ino
    again = await Toolset.sync(registry.url, NS, cache=cache)
    assert registry.requests[1].headers["if-none-match"] == toolset.etag
    assert again.digest == toolset.digest
    assert cache.stat().st_ino != inode
    assert sorted(p.name for p in cache.parent.iterdir()) == [cache.name]


async def test_boot_sync_without_cache_and_a_new_payload(
    registry: FakeRegistry, tmp_path: Path
) -> None:
    cache = tmp_path / "billing.json"
    write_cache(cache, Toolset.from_json(V1), url=registry.url)
    registry.publish(V2)
    toolset = await Toolset.sync(registry.url, NS, cache=cache)
    assert toolset.digest == Toolset.from_json(V2).digest
    assert read_cache(cache).toolset.digest == toolset.digest
    plain = await Toolset.sync(registry.url + "/", NS)
    assert plain.to_json() == V2


async def test_outage_at_boot_runs_from_a_good_cache_and_says_so(
    dead_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "billing.json"
    fetched = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    write_cache(cache, Toolset.from_json(V1), url="http://old", fetched_at=fetched)

    with captured_events() as logs:
        toolset = await Toolset.sync(dead_url, NS, cache=cache, retries=2, backoff=FAST)

    assert toolset.digest == Toolset.from_json(V1).digest
    (entry,) = events(logs, "toolset.sync.from_cache")
    assert entry["log_level"] == "error"
    assert entry["url"] == dead_url
    assert "ConnectError" in entry["cause"]
    assert entry["fetched_at"] == fetched.isoformat().replace("+00:00", "Z")
    assert 7100 < entry["age_seconds"] < 7300
    assert entry["digest"] == toolset.digest
    assert "RUNNING FROM CACHE" in entry["message"]
    assert dead_url in entry["message"]
    assert "2h0m ago" in entry["message"]
    assert len(events(logs, "toolset.sync.retry")) == 2


@pytest.mark.parametrize("damage", ["payload", "digest_record", "not_json", "empty"])
async def test_outage_with_a_corrupted_cache_raises(
    dead_url: str, tmp_path: Path, damage: str
) -> None:
    cache = tmp_path / "billing.json"
    write_cache(cache, Toolset.from_json(V1))
    raw = cache.read_bytes()
    if damage == "payload":
        raw = raw.replace(b"Run a SQL query.", b"Run any SQL!!!!")
        assert raw != cache.read_bytes()
    elif damage == "digest_record":
        raw = raw.replace(Toolset.from_json(V1).digest.encode(), WRONG.encode(), 1)
    elif damage == "not_json":
        raw = raw[: len(raw) // 2]
    else:
        raw = b""
    cache.write_bytes(raw)

    with pytest.raises(SyncError) as caught:
        await Toolset.sync(dead_url, NS, cache=cache, retries=1, backoff=FAST)
    message = str(caught.value)
    assert dead_url in message
    assert "ConnectError" in message
    assert f"the cache file {cache} is unusable" in message
    assert caught.value.cache_problem is not None


async def test_outage_without_cache_names_the_url_and_the_cause(dead_url: str) -> None:
    with pytest.raises(SyncError) as caught:
        await Toolset.sync(dead_url, NS, retries=1, backoff=FAST)
    message = str(caught.value)
    assert dead_url in message
    assert "ConnectError" in message
    assert "no cache configured" in message
    assert caught.value.url == dead_url
    assert "ConnectError" in caught.value.cause


async def test_outage_with_a_missing_cache_file_says_so(dead_url: str, tmp_path: Path) -> None:
    cache = tmp_path / "nowhere.json"
    with pytest.raises(SyncError, match="no cache file at"):
        await Toolset.sync(dead_url, NS, cache=cache, retries=0)


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_client_errors_are_not_retried_and_skip_the_cache(
    registry: FakeRegistry, tmp_path: Path, status: int
) -> None:
    cache = tmp_path / "billing.json"
    write_cache(cache, Toolset.from_json(V1))
    registry.detail = "token billing-ci expired at 2026-01-01"
    registry.set_mode(status)
    with pytest.raises(SyncError) as caught:
        await Toolset.sync(registry.url, NS, cache=cache, token="t", retries=5, backoff=FAST)
    assert len(registry.requests) == 1
    assert caught.value.status == status
    assert registry.url in str(caught.value)
    assert "token billing-ci expired at 2026-01-01" in str(caught.value)
    assert f"HTTP {status}" in str(caught.value)


async def test_retries_are_bounded_and_counted(registry: FakeRegistry) -> None:
    registry.set_mode(503, retry_after="0")
    with pytest.raises(SyncError) as caught:
        await Toolset.sync(registry.url, NS, retries=2, backoff=FAST)
    assert len(registry.requests) == 3
    assert "HTTP 503" in str(caught.value)
    assert "after 3 attempts" in str(caught.value)


async def test_a_hanging_registry_is_bounded_by_the_timeout(registry: FakeRegistry) -> None:
    registry.set_mode("hang")
    with pytest.raises(SyncError) as caught:
        await Toolset.sync(registry.url, NS, timeout=0.3, retries=1, backoff=FAST)
    assert len(registry.requests) == 2
    assert "Timeout" in caught.value.cause or "no complete answer" in caught.value.cause


async def test_transient_errors_are_retried_then_succeed(registry: FakeRegistry) -> None:
    registry.fail_next, registry.fail_status = 2, 503
    toolset = await Toolset.sync(registry.url, NS, retries=3, backoff=FAST)
    assert toolset.to_json() == V1
    assert len(registry.requests) == 3

    registry.requests.clear()
    registry.fail_next, registry.fail_status = 1, 429
    await Toolset.sync(registry.url, NS, retries=1, backoff=FAST)
    assert len(registry.requests) == 2


async def test_retry_after_is_honoured_and_capped(registry: FakeRegistry) -> None:
    registry.set_mode(503, retry_after="1")
    honoured = RecordingBackoff(0.001, 0.001, retry_after_cap=5)
    with pytest.raises(SyncError):
        await Toolset.sync(registry.url, NS, retries=1, backoff=honoured)
    assert len(registry.requests) == 2
    assert honoured.waits == [1.0], "the wait before the retry is the server's Retry-After"

    registry.requests.clear()
    registry.set_mode(429, retry_after="3600")
    capped = RecordingBackoff(FAST.base, FAST.cap, FAST.retry_after_cap)
    with pytest.raises(SyncError, match="HTTP 429"):
        await Toolset.sync(registry.url, NS, retries=2, backoff=capped)
    assert len(registry.requests) == 3
    assert capped.waits == [FAST.retry_after_cap] * 2, "an hour's Retry-After is capped"


@dataclass(frozen=True)
class RecordingBackoff(Backoff):
    """`Backoff` that keeps the waits it chose: which wait was asked for is the
    behaviour under test, not how long the event loop took to serve it."""

    waits: list[float] = field(default_factory=list)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        chosen = super().delay(attempt, retry_after)
        self.waits.append(chosen)
        return chosen


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("garbage", "invalid toolset payload"),
        ("tampered", "digest mismatch"),
        ("wrong_etag", "does not name the payload digest"),
        ("truncated", "RemoteProtocolError"),
    ],
)
async def test_invalid_answers_at_boot_are_refused(
    registry: FakeRegistry, tmp_path: Path, mode: str, cause: str
) -> None:
    registry.set_mode(mode)
    with pytest.raises(SyncError) as caught:
        await Toolset.sync(registry.url, NS, retries=1, backoff=FAST)
    assert cause in str(caught.value)
    assert len(registry.requests) == 2  # retried like an outage

    # ... and with a good cache, the SDK boots from it
    cache = tmp_path / "billing.json"
    write_cache(cache, Toolset.from_json(V1))
    with captured_events() as logs:
        toolset = await Toolset.sync(registry.url, NS, cache=cache, retries=0)
    assert toolset.to_json() == V1
    assert cause in events(logs, "toolset.sync.from_cache")[0]["cause"]


async def test_sync_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="invalid namespace"):
        await Toolset.sync("http://127.0.0.1:1", "Billing")
    with pytest.raises(ValueError, match="retries"):
        await Toolset.sync("http://127.0.0.1:1", NS, retries=-1)


def test_backoff_is_full_jitter_and_bounded() -> None:
    backoff = Backoff(base=1.0, cap=8.0, retry_after_cap=3.0)
    delays = [backoff.delay(attempt) for attempt in range(100) for _ in range(5)]
    assert all(0 <= d <= 8.0 for d in delays)
    assert min(delays) < 1.0
    assert all(0 <= backoff.delay(0) <= 1.0 for _ in range(50))
    assert all(backoff.delay(0, retry_after=100) == 3.0 for _ in range(20))
    assert all(2.0 <= backoff.delay(0, retry_after=2) <= 2.0 for _ in range(20))


# ---------------------------------------------------------------------- watch


async def synced(registry: FakeRegistry, cache: Path | None = None) -> Toolset:
    return await Toolset.sync(registry.url, NS, cache=cache, token="tok", backoff=FAST)


async def test_watch_wakes_on_change_and_swaps_atomically(
    registry: FakeRegistry, tmp_path: Path
) -> None:
    cache = tmp_path / "billing.json"
    toolset = await synced(registry, cache)
    changes: list[Toolset] = []

    async def on_change(new: Toolset) -> None:
        changes.append(new)

    watcher = toolset.watch(on_change, wait=20, backoff=FAST, min_interval=0.01)
    try:
        assert isinstance(watcher, ToolsetWatcher)
        assert watcher.wait_seconds == 20
        snapshot = watcher.current  # what a call in flight holds
        await eventually(lambda: registry.waiting() == 1)
        parked = registry.requests[-1]
        assert parked.headers["if-none-match"] == toolset.etag
        assert parked.headers["authorization"] == "Bearer tok"
        assert parked.query["wait"] == ["20"]

        registry.publish(V2)
        await eventually(lambda: changes)  # woken by the change: `wait` is 20 s, longer
        new_digest = Toolset.from_json(V2).digest
        assert changes[0].digest == new_digest
        assert watcher.current is changes[0]
        assert snapshot is toolset
        assert snapshot.digest == Toolset.from_json(V1).digest
        assert snapshot.to_json() == V1
        assert read_cache(cache).toolset.digest == new_digest
        # the next poll asks with the new ETag
        await eventually(lambda: registry.waiting() == 2)
        assert registry.requests[-1].headers["if-none-match"] == f'"{new_digest}"'
    finally:
        await watcher.stop()
    assert not watcher.running


async def test_watch_sync_callback_and_a_failing_callback(registry: FakeRegistry) -> None:
    toolset = await synced(registry)
    seen: list[str] = []

    def broken(new: Toolset) -> None:
        raise RuntimeError("callback bug")

    watcher = ToolsetWatcher(
        registry.url,
        NS,
        toolset,
        on_change=broken,
        wait=20,
        backoff=FAST,
        min_interval=0.01,
    )
    watcher.subscribe(lambda new: seen.append(new.digest))
    with captured_events() as logs:
        async with watcher:
            await eventually(lambda: registry.waiting() == 1)
            registry.publish(V2)
            await eventually(lambda: seen)
            await eventually(lambda: registry.waiting() == 2)
            registry.publish(V3)
            await eventually(lambda: len(seen) == 2)
    assert seen == [Toolset.from_json(V2).digest, Toolset.from_json(V3).digest]
    assert len(events(logs, "toolset.watch.callback_failed")) == 2
    assert watcher.current.digest == Toolset.from_json(V3).digest


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("garbage", "invalid toolset payload"),
        ("tampered", "digest mismatch"),
        ("truncated", "RemoteProtocolError"),
        ("wrong_etag", "does not name the payload digest"),
        (503, "HTTP 503"),
    ],
)
async def test_watch_keeps_the_last_good_toolset_on_bad_answers(
    registry: FakeRegistry, mode: str | int, cause: str
) -> None:
    toolset = await synced(registry)
    registry.body, registry.digest = V2, Toolset.from_json(V2).digest  # served wrongly below
    changes: list[Toolset] = []
    with captured_events() as logs:
        watcher = toolset.watch(changes.append, wait=20, backoff=FAST, min_interval=0.01)
        try:
            registry.set_mode(mode)
            failed = await eventually(lambda: events(logs, "toolset.watch.failed")[2:])
            assert cause in failed[0]["cause"]
            assert failed[0]["url"] == registry.url
            assert failed[0]["digest"] == toolset.digest
            assert watcher.current is toolset
            assert changes == []
            assert watcher.last_error is not None
            assert cause in watcher.last_error

            registry.publish(V2)
            await eventually(lambda: changes)
            assert watcher.current.digest == Toolset.from_json(V2).digest
            assert events(logs, "toolset.watch.recovered")
            assert watcher.last_error is None
        finally:
            await watcher.stop()


async def test_watch_survives_a_registry_restart(registry: FakeRegistry, tmp_path: Path) -> None:
    cache = tmp_path / "billing.json"
    toolset = await synced(registry, cache)
    changes: list[Toolset] = []
    with captured_events() as logs:
        watcher = toolset.watch(changes.append, wait=20, backoff=FAST, min_interval=0.01)
        try:
            await eventually(lambda: registry.waiting() == 1)
            await registry.stop()
            failed = await eventually(lambda: events(logs, "toolset.watch.failed")[3:])
            assert any("Error" in entry["cause"] for entry in failed)
            assert watcher.current is toolset

            registry.publish(V2)  # published while it was down
            await registry.start()  # same port
            await eventually(lambda: changes)
            assert watcher.current.digest == Toolset.from_json(V2).digest
            assert read_cache(cache).toolset.digest == watcher.current.digest
            assert events(logs, "toolset.watch.recovered")
        finally:
            await watcher.stop()


async def test_stop_is_prompt_during_a_long_poll(registry: FakeRegistry) -> None:
    toolset = await synced(registry)
    watcher = toolset.watch(wait=60, backoff=FAST)
    await eventually(lambda: registry.waiting() == 1)
    await asyncio.wait_for(watcher.stop(), timeout=10)  # `wait` is 60 s: stop cut it short
    assert not watcher.running


async def test_watch_needs_a_url_unless_synced(registry: FakeRegistry) -> None:
    loaded = Toolset.from_json(V1)
    with pytest.raises(ValueError, match="pass url="):
        loaded.watch()
    watcher = loaded.watch(url=registry.url, wait=5, backoff=FAST)
    try:
        await eventually(lambda: registry.waiting() == 1)
        assert "authorization" not in registry.requests[-1].headers
    finally:
        await watcher.stop()
    with pytest.raises(ValueError, match="wait"):
        ToolsetWatcher(registry.url, NS, loaded, wait=61)
    with pytest.raises(ValueError, match="namespace"):
        ToolsetWatcher(registry.url, "search", loaded)


def test_the_sdk_does_not_import_the_service() -> None:
    source = (Path(__file__).parents[2] / "registry" / "sdk" / "sync.py").read_text("utf-8")
    assert "registry.api" not in source
    assert "registry.store" not in source
