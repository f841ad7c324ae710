"""Pre-serialized toolset payloads per namespace, invalidated by LISTEN/NOTIFY.

    cache = ToolsetCache(load)          # load(ns) -> (BuiltToolset, expires_at) | None
    built = await cache.get("billing")  # built once, then served from memory
    built = await cache.wait_changed("billing", etag, timeout=30)   # ?wait=

Invalidation comes from `ToolsetListener` (any replica's commit notifies every
replica): `invalidate(ns)` drops one payload and wakes its long-polls,
`invalidate(None)` (the LISTEN connection was lost) drops all of them. While
the listener is not connected nothing is cached, because a change could go
unnoticed. A payload also expires at the namespace's next sunset, when a
deprecated version turns retired without any write.

A build that started before an invalidation is not stored (a generation
counter per namespace), so a stale payload can never outlive the notification
that made it stale.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from registry.policy.toolset import BuiltToolset

__all__ = ["Loaded", "ToolsetCache"]

Loaded = tuple[BuiltToolset, datetime | None]
Loader = Callable[[str], Awaitable[Loaded | None]]


class _Entry:
    __slots__ = ("built", "expires")

    def __init__(self, built: BuiltToolset, expires: float | None) -> None:
        self.built = built
        self.expires = expires  # time.monotonic() deadline, None: until invalidated


class ToolsetCache:
    def __init__(self, load: Loader, *, enabled: Callable[[], bool] = lambda: True) -> None:
        self._load = load
        self._enabled = enabled
        self._entries: dict[str, _Entry] = {}
        self._generation: dict[str, int] = {}
        self._epoch = 0  # bumped by invalidate(None)
        self._changed: dict[str, asyncio.Event] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        # The last failed build per namespace (a fresh tuple each time, compared by identity).
        self._failures: dict[str, tuple[object, Exception]] = {}
        self.waiting = 0

    def invalidate(self, namespace: str | None) -> None:
        if namespace is None:
            self._entries.clear()
            self._epoch += 1
            events, self._changed = list(self._changed.values()), {}
        else:
            self._entries.pop(namespace, None)
            self._generation[namespace] = self._generation.get(namespace, 0) + 1
            event = self._changed.pop(namespace, None)
            events = [event] if event is not None else []
        for event in events:
            event.set()

    async def get(self, namespace: str) -> BuiltToolset | None:
        """The namespace's payload; None when the namespace does not exist."""
        entry = self._fresh(namespace)
        if entry is not None:
            return entry.built
        lock = self._locks.setdefault(namespace, asyncio.Lock())
        failures = self._failures.get(namespace)
        async with lock:  # one build per namespace at a time; the others reuse it
            entry = self._fresh(namespace)
            if entry is not None:
                return entry.built
            failed = self._failures.get(namespace)
            if failed is not None and failed is not failures:
                # A build failed while this call waited: the database is not answering.
                # Trying again one caller after another would add up their timeouts.
                raise failed[1]
            stamp = (self._epoch, self._generation.get(namespace, 0))
            try:
                loaded = await self._load(namespace)
            except Exception as exc:
                self._failures[namespace] = (object(), exc)
                raise
            self._failures.pop(namespace, None)
            if loaded is None:
                return None
            built, next_sunset = loaded
            if self._enabled() and stamp == (self._epoch, self._generation.get(namespace, 0)):
                self._entries[namespace] = _Entry(built, _deadline(next_sunset))
            return built

    def _fresh(self, namespace: str) -> _Entry | None:
        entry = self._entries.get(namespace)
        if entry is None:
            return None
        if entry.expires is not None and time.monotonic() >= entry.expires:
            del self._entries[namespace]
            return None
        return entry

    async def wait_changed(
        self, namespace: str, etag: str | None, timeout: float
    ) -> BuiltToolset | None:
        """The payload once its digest differs from `etag`, or the current one after `timeout`."""
        deadline = time.monotonic() + timeout
        self.waiting += 1
        try:
            while True:
                event = self._changed.setdefault(namespace, asyncio.Event())
                built = await self.get(namespace)
                if built is None or built.digest != etag:
                    return built
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return built
                entry = self._entries.get(namespace)
                if entry is not None and entry.expires is not None:
                    remaining = min(remaining, max(entry.expires - time.monotonic(), 0.0))
                elif entry is None:
                    # Not cached (listener down): poll the database now and then.
                    remaining = min(remaining, 1.0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), timeout=remaining)
        finally:
            self.waiting -= 1


def _deadline(moment: datetime | None) -> float | None:
    if moment is None:
        return None
    seconds = (moment - datetime.now(UTC)).total_seconds()
    return time.monotonic() + max(seconds, 0.0)
