"""A revoked token's long-polls end when the revocation lands, on every replica.

    revocations = Revocations(is_revoked)       # is_revoked(token_id) -> bool, from the store
    release = revocations.hold(principal.token_id, waiter)   # waiter.revoked() on revocation
    ...
    release()                                   # the wait is over

Every request checks its token afresh, but a long-poll holds its answer for up
to a minute after that check. Each replica's LISTEN connection hears
`token_revoked` (migrations/0002's trigger) and calls `revoked(token_id)`,
which calls `revoked()` on what that token's waiting requests hold; they
answer 401. A LISTEN connection that was lost may have missed a revocation:
once it is back it calls `revoked(None)`, and every token still waiting is
looked up again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol

from registry.api.auth import BOOTSTRAP_ID

__all__ = ["Revocable", "Revocations"]


class Revocable(Protocol):
    def revoked(self) -> None: ...


class _Event:
    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def revoked(self) -> None:
        self.event.set()


def _nothing() -> None:
    pass


class Revocations:
    def __init__(self, is_revoked: Callable[[str], Awaitable[bool]]) -> None:
        self._is_revoked = is_revoked
        self._waiting: dict[str, set[Revocable]] = {}

    def hold(self, token_id: str | None, holder: Revocable) -> Callable[[], None]:
        """Call `holder.revoked()` if `token_id` is revoked before the returned function
        is called (never for an anonymous caller or the bootstrap token, which cannot
        be revoked)."""
        if token_id is None or token_id == BOOTSTRAP_ID:
            return _nothing
        held = self._waiting.setdefault(token_id, set())
        held.add(holder)

        def release() -> None:
            held.discard(holder)
            if not held and self._waiting.get(token_id) is held:
                del self._waiting[token_id]

        return release

    @contextlib.contextmanager
    def watch(self, token_id: str | None) -> Iterator[asyncio.Event]:
        """An event set when `token_id` is revoked while the block runs."""
        holder = _Event()
        release = self.hold(token_id, holder)
        try:
            yield holder.event
        finally:
            release()

    def revoked(self, token_id: str | None) -> Awaitable[None] | None:
        """The listener's callback: one token revoked, or None: look them all up again."""
        if token_id is None:
            return self._recheck()
        for holder in list(self._waiting.get(token_id, ())):
            holder.revoked()
        return None

    async def _recheck(self) -> None:
        for token_id in list(self._waiting):
            if await self._is_revoked(token_id):
                self.revoked(token_id)
