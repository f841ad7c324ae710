"""Pre-serialized toolset payloads per namespace, kept current by LISTEN/NOTIFY, built off
the event loop and one tool at a time.

    cache = ToolsetCache(read, build, run=...)  # read(ns, tools) -> rows (on the loop);
                                                # build(parts, rows) -> (parts, built), in `run`
    built = await cache.get("billing")          # built once, then served from memory
    cache.invalidate_tool("billing", "db.query")   # the listener: one tool changed
    cache.invalidate("billing")                    # anything in it may have changed
    cache.invalidate(None)                         # the LISTEN connection was lost
    cache.subscribe(callback, failed)           # callback(ns, built) after each new build,
                                                # failed(ns, error) after a failed one

A namespace, once read, is rebuilt as soon as a change is heard, one build at a
time per namespace: changes heard during a build are taken by the next, which
reads and rebuilds only the tools named (and the alias list), unless something
unnamed changed (`invalidate`), in which case it reads everything. The build
itself (decoding rows, routes, canonical JSON, the digest) runs in `run` (a
worker thread in the service): the event loop only waits for the database and
the thread.

`get` answers from memory while the payload is fresh: built from a read that
began after the last change heard, while LISTEN is connected, before the next
sunset of a served version (when a deprecated version turns retired without
any write). Otherwise it waits for a build that began after it was called.
While LISTEN is not connected nothing is trusted: every `get` waits for a new
read of the whole namespace, and namespaces with long-polls (`watched`) are
read again every `poll_interval` seconds, so that their waiters still wake.
A build that fails (the database is not answering) fails every caller waiting
for it, once; the next `get` tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import structlog

from registry.policy.toolset import BuiltToolset, ToolsetParts

__all__ = ["ToolsetCache"]

_log = structlog.get_logger("registry.api")

Rows = TypeVar("Rows")
Reader = Callable[[str, frozenset[str] | None], Awaitable[Rows | None]]
Builder = Callable[[ToolsetParts | None, Rows], tuple[ToolsetParts, BuiltToolset]]
Runner = Callable[..., Awaitable[Any]]
Subscriber = Callable[[str, BuiltToolset | None], None]
FailureSubscriber = Callable[[str, BaseException], None]


async def _inline(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


class _Namespace:
    __slots__ = ("built", "built_at", "changes", "dirty", "expiry", "fresh_until", "parts", "task")

    def __init__(self) -> None:
        self.parts: ToolsetParts | None = None
        self.built: BuiltToolset | None = None
        self.changes = 0  # changes heard so far
        self.built_at = -1  # `changes` when the read of `built` began
        self.dirty: set[str] | None = None  # tools changed since; None: anything
        self.task: asyncio.Task[None] | None = None
        self.fresh_until: float | None = None  # monotonic: the next sunset
        self.expiry: asyncio.TimerHandle | None = None


class ToolsetCache(Generic[Rows]):
    def __init__(
        self,
        read: Reader[Rows],
        build: Builder[Rows],
        *,
        run: Runner = _inline,
        enabled: Callable[[], bool] = lambda: True,
        watched: Callable[[str], bool] = lambda _ns: False,
        poll_interval: float = 1.0,
    ) -> None:
        self._read = read
        self._build = build
        self._run = run
        self._enabled = enabled
        self._watched = watched
        self._poll_interval = poll_interval
        self._states: dict[str, _Namespace] = {}
        self._subscribers: list[Subscriber] = []
        self._failure_subscribers: list[FailureSubscriber] = []
        self._epoch = 0  # bumped by invalidate(None)

    def subscribe(self, callback: Subscriber, failed: FailureSubscriber | None = None) -> None:
        self._subscribers.append(callback)
        if failed is not None:
            self._failure_subscribers.append(failed)

    # -- reads ------------------------------------------------------------------

    def peek(self, namespace: str) -> BuiltToolset | None:
        """The payload when it is fresh (no waiting), else None."""
        state = self._states.get(namespace)
        if state is None or not self._fresh(state):
            return None
        return state.built

    async def get(self, namespace: str) -> BuiltToolset | None:
        """The namespace's payload; None when the namespace does not exist."""
        found = self._states.get(namespace)
        if found is not None and self._fresh(found):
            return found.built
        state = found if found is not None else self._states.setdefault(namespace, _Namespace())
        if not self._enabled():  # nothing is trusted: read again, everything
            state.changes += 1
            state.dirty = None
        wanted = state.changes
        while state.built_at < wanted:
            await asyncio.shield(self._building(namespace, state))
        return state.built

    def _fresh(self, state: _Namespace) -> bool:
        return (
            state.built_at == state.changes
            and self._enabled()
            and (state.fresh_until is None or time.monotonic() < state.fresh_until)
        )

    async def wait_changed(
        self, namespace: str, etag: str | None, timeout: float
    ) -> BuiltToolset | None:
        """The payload once its digest differs from `etag`, or the current one after
        `timeout` (for the console; the API's long-polls are `registry.api.longpoll`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            built = await self.get(namespace)
            remaining = deadline - loop.time()
            if built is None or built.digest != etag or remaining <= 0:
                return built
            changed: asyncio.Future[None] = loop.create_future()

            def woken(ns: str, _built: BuiltToolset | None, fut: Any = changed) -> None:
                if ns == namespace and not fut.done():
                    fut.set_result(None)

            self._subscribers.append(woken)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed, min(remaining, self._poll_interval))
            finally:
                self._subscribers.remove(woken)

    # -- changes heard ------------------------------------------------------------

    def invalidate_tool(self, namespace: str, tool: str) -> None:
        """One tool of `namespace` changed (and perhaps its aliases)."""
        state = self._states.get(namespace)
        if state is None:
            return  # never read here: the first `get` reads everything
        if state.dirty is not None:
            state.dirty.add(tool)
        self._changed(namespace, state)

    def invalidate(self, namespace: str | None) -> None:
        """Anything in `namespace` may have changed; None: in any namespace (the LISTEN
        connection was lost, or is back: what was heard meanwhile is unknown)."""
        if namespace is None:
            self._epoch += 1
            for name, state in self._states.items():
                state.dirty = None
                self._changed(name, state, eager=self._watched(name))
            return
        found = self._states.get(namespace)
        if found is not None:
            found.dirty = None
            self._changed(namespace, found)

    def _changed(self, namespace: str, state: _Namespace, *, eager: bool = True) -> None:
        state.changes += 1
        if eager:
            self._building(namespace, state)

    # -- building -------------------------------------------------------------------

    def _building(self, namespace: str, state: _Namespace) -> asyncio.Task[None]:
        if state.task is None or state.task.done():
            state.task = asyncio.ensure_future(self._rebuild(namespace, state))
            state.task.add_done_callback(_retrieved)
        return state.task

    async def _rebuild(self, namespace: str, state: _Namespace) -> None:
        """Build until the payload has every change heard so far."""
        while state.built_at < state.changes:
            began, epoch = state.changes, self._epoch
            tools, state.dirty = state.dirty, set()
            if not self._enabled() or state.parts is None:
                tools = None
            try:
                rows = await self._read(namespace, None if tools is None else frozenset(tools))
                result = None
                if rows is not None:
                    parts = None if tools is None else state.parts
                    result = await self._run(self._build, parts, rows)
            except BaseException as exc:
                state.dirty = None if tools is None or state.dirty is None else state.dirty | tools
                if isinstance(exc, Exception):
                    for failed in list(self._failure_subscribers):
                        failed(namespace, exc)
                raise
            if epoch != self._epoch:
                continue  # LISTEN was lost meanwhile: this read may have missed a change
            state.parts, state.built = result if result is not None else (None, None)
            state.built_at = began
            self._expire_later(namespace, state)
            for callback in list(self._subscribers):
                try:
                    callback(namespace, state.built)
                except Exception:
                    _log.exception("toolset_subscriber_failed", namespace=namespace)

    def _expire_later(self, namespace: str, state: _Namespace) -> None:
        """A timer for the next sunset (or, while LISTEN is down, the next poll)."""
        if state.expiry is not None:
            state.expiry.cancel()
            state.expiry = None
        state.fresh_until = None
        loop = asyncio.get_running_loop()
        delay: float | None = None
        expires = state.built.expires if state.built is not None else None
        if expires is not None:
            delay = max((expires - datetime.now(UTC)).total_seconds(), 0.0)
            state.fresh_until = time.monotonic() + delay
        if not self._enabled() and self._watched(namespace):
            delay = min(delay if delay is not None else self._poll_interval, self._poll_interval)
        if delay is not None:
            state.expiry = loop.call_later(delay, self._expired, namespace, state)

    def _expired(self, namespace: str, state: _Namespace) -> None:
        state.expiry = None
        if not self._enabled() or state.parts is None or state.built is None:
            state.dirty = None
        elif state.dirty is not None and state.built.expires is not None:
            # the tools whose sunset has come (their versions turned retired)
            due = max(state.built.expires, datetime.now(UTC))
            state.dirty.update(
                name
                for name, part in state.parts.tools.items()
                if part.next_sunset is not None and part.next_sunset <= due
            )
        self._changed(namespace, state, eager=self._watched(namespace) or self._enabled())


def _retrieved(task: asyncio.Task[None]) -> None:
    """A build nobody waited for may fail (the database is away): said once, here."""
    if not task.cancelled() and task.exception() is not None:
        _log.info("toolset_build_failed", error=type(task.exception()).__name__)
