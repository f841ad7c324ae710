"""LISTEN on `toolset_changed` (and `token_revoked`) from a dedicated connection,
reconnecting on loss.

    async with ToolsetListener(dsn, on_change, tools=on_tool, revocations=on_revoked):
        ...   # on_tool("billing", "db.query") after each committed change to one tool,
              # on_change("billing") after other committed toolset changes,
              # on_revoked("tok_...") after each committed token revocation

A write to one tool notifies `namespace/tool` and then `namespace` in the same
transaction (delivered together, in that order, at commit); replicas that
predate tool notices only understand the second. With a `tools` callback, a
`namespace` notice that comes right after tool notices of the same namespace
from the same server process says nothing new and is dropped; one that comes
alone (a namespace created, a writer that predates tool notices) reaches
`callback(namespace)`: anything in it may have changed. Without `tools`, tool
notices are ignored and every `namespace` notice reaches `callback`.

`callback(namespace)` runs for each such notification. `callback(None)` means
"drop everything": the connection was lost, so notifications may have been
missed; it is called when the loss is noticed and again once reconnected
(what was cached during the outage may already be stale). `revocations(id)`
runs for each revoked token (migration 0002's trigger notifies), and
`revocations(None)` once reconnected after a loss: a revocation may have been
missed, so whoever holds tokens should look them up again. A silent network
failure is noticed by a periodic health query. The callbacks may be plain
functions or coroutine functions; they must not block.

Start the listener before filling a cache from the database, so that no
change can slip between the read and the LISTEN.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

import asyncpg  # type: ignore[import-untyped, unused-ignore]

from registry.store._db import Connection
from registry.store.channel import CHANNEL

__all__ = ["REVOKED_CHANNEL", "ToolsetListener"]

REVOKED_CHANNEL = "token_revoked"  # migrations/0002_token_revoked_notify.sql

_log = logging.getLogger(__name__)

Callback = Callable[[str | None], Awaitable[None] | None]
ToolCallback = Callable[[str, str], None]


class ToolsetListener:
    def __init__(
        self,
        dsn: str,
        callback: Callback,
        *,
        channel: str = CHANNEL,
        revocations: Callback | None = None,
        tools: ToolCallback | None = None,
        health_interval: float = 10.0,
        health_timeout: float = 5.0,
        connect_timeout: float = 10.0,
        min_backoff: float = 0.1,
        max_backoff: float = 10.0,
    ) -> None:
        self._dsn = dsn
        self._callback = callback
        self._channel = channel
        self._revocations = revocations
        self._tools = tools
        self._told: tuple[int, str] | None = None  # (pid, namespace) of the last tool notice
        self._health_interval = health_interval
        self._health_timeout = health_timeout
        self._connect_timeout = connect_timeout
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._connected = asyncio.Event()
        self._conn: Connection | None = None
        self._pending: set[asyncio.Task[Any]] = set()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def server_pid(self) -> int | None:
        """The PostgreSQL backend pid of the listening connection, while connected."""
        conn = self._conn
        return conn.get_server_pid() if conn is not None and not conn.is_closed() else None

    async def start(self, *, wait: float | None = 30.0) -> None:
        """Start listening; with `wait`, wait up to that many seconds for the first connection.

        Raises TimeoutError if it is not connected by then (it keeps trying in
        the background until stopped).
        """
        if self._task is None:
            self._stopping.clear()
            self._task = asyncio.create_task(self._run(), name="toolset-listener")
        if wait is not None:
            await asyncio.wait_for(self._connected.wait(), wait)

    async def wait_connected(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None
        for task in list(self._pending):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- internals ------------------------------------------------------------

    def _emit(self, namespace: str | None, callback: Callback | None = None) -> None:
        try:
            result = (callback or self._callback)(namespace)
        except Exception:
            _log.exception("toolset listener callback failed")
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._pending.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("toolset listener callback failed", exc_info=task.exception())

    def _on_notify(self, _conn: Any, pid: int, _channel: str, payload: object) -> None:
        namespace, slash, tool = str(payload).partition("/")
        if slash:
            if self._tools is not None:
                self._told = (pid, namespace)
                try:
                    self._tools(namespace, tool)
                except Exception:
                    _log.exception("toolset listener callback failed")
            return
        told, self._told = self._told, None
        if told == (pid, namespace) and self._tools is not None:
            return  # the same change, said again for replicas that predate tool notices
        self._emit(namespace)

    def _on_revoked(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        self._emit(str(payload), self._revocations)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _run(self) -> None:
        backoff = self._min_backoff
        had_connection = False
        while not self._stopping.is_set():
            try:
                conn = await asyncpg.connect(self._dsn, timeout=self._connect_timeout)
            except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
                _log.warning(
                    "toolset listener cannot connect (%s); retrying in %.1fs", exc, backoff
                )
                await self._sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            lost = asyncio.Event()
            conn.add_termination_listener(lambda _c, event=lost: event.set())
            try:
                await conn.add_listener(self._channel, self._on_notify)
                if self._revocations is not None:
                    await conn.add_listener(REVOKED_CHANNEL, self._on_revoked)
            except (OSError, asyncpg.PostgresError) as exc:
                _log.warning("toolset listener cannot LISTEN (%s)", exc)
                conn.terminate()
                await self._sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            self._conn = conn
            backoff = self._min_backoff
            self._told = None
            if had_connection:
                self._emit(None)
                if self._revocations is not None:
                    self._emit(None, self._revocations)
            had_connection = True
            self._connected.set()
            _log.info("toolset listener connected")
            try:
                await self._watch(conn, lost)
            finally:
                self._connected.clear()
                self._conn = None
                if self._stopping.is_set():
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(conn.close(), self._health_timeout)
                if not conn.is_closed():
                    conn.terminate()
            if not self._stopping.is_set():
                _log.warning("toolset listener lost its connection; reconnecting")
                self._emit(None)
                await self._sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)

    async def _watch(self, conn: Connection, lost: asyncio.Event) -> None:
        """Return when the connection is lost or the listener stops."""
        stop = asyncio.ensure_future(self._stopping.wait())
        gone = asyncio.ensure_future(lost.wait())
        try:
            while True:
                await asyncio.wait(
                    {stop, gone},
                    timeout=self._health_interval,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if stop.done() or gone.done() or conn.is_closed():
                    return
                try:
                    await asyncio.wait_for(conn.execute("SELECT 1"), self._health_timeout)
                except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                    return
        finally:
            stop.cancel()
            gone.cancel()
