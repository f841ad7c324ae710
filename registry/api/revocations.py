"""A revoked token's long-polls end when the revocation lands, on every replica.

    revocations = Revocations(is_revoked)       # is_revoked(token_id) -> bool, from the store
    with revocations.watch(principal.token_id) as revoked:
        ...  # wait for the toolset or for `revoked` (an asyncio.Event), whichever first

Every request checks its token afresh, but a long-poll holds its answer for up
to a minute after that check. Each replica's LISTEN connection hears
`token_revoked` (migrations/0002's trigger) and calls `revoked(token_id)`,
which sets the events of that token's waiting requests; they answer 401. A
LISTEN connection that was lost may have missed a revocation: once it is back
it calls `revoked(None)`, and every token still waiting is looked up again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator

from registry.api.auth import BOOTSTRAP_ID

__all__ = ["Revocations"]


class Revocations:
    def __init__(self, is_revoked: Callable[[str], Awaitable[bool]]) -> None:
        self._is_revoked = is_revoked
        self._waiting: dict[str, set[asyncio.Event]] = {}

    @contextlib.contextmanager
    def watch(self, token_id: str | None) -> Iterator[asyncio.Event]:
        """An event set when `token_id` is revoked while the block runs (never for an
        anonymous caller or the bootstrap token, which cannot be revoked)."""
        event = asyncio.Event()
        if token_id is None or token_id == BOOTSTRAP_ID:
            yield event
            return
        held = self._waiting.setdefault(token_id, set())
        held.add(event)
        try:
            yield event
        finally:
            held.discard(event)
            if not held:
                self._waiting.pop(token_id, None)

    def revoked(self, token_id: str | None) -> Awaitable[None] | None:
        """The listener's callback: one token revoked, or None: look them all up again."""
        if token_id is None:
            return self._recheck()
        for event in self._waiting.get(token_id, ()):
            event.set()
        return None

    async def _recheck(self) -> None:
        for token_id in list(self._waiting):
            if await self._is_revoked(token_id):
                self.revoked(token_id)
