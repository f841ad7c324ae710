"""Verified bearer tokens, remembered until revoked: one database lookup per token, not per request.

    tokens = TokenCache(listening=lambda: listener.connected)
    token = await tokens.lookup(db, token_hash)   # repository.lookup_token, remembered
    tokens.revoked("tok_...")                      # the LISTEN connection heard `token_revoked`
    tokens.revoked(None)                           # it is back after a loss: forget everything

A token is stored by its hash and is only ever revoked, never changed, so what
a lookup answered stays true until its revocation. Every replica's LISTEN
connection hears `token_revoked` (migrations/0002's trigger) when the
revocation commits, and the token is forgotten: its next request is looked up
again, and refused. While that connection is down nothing is remembered or
used (every request looks its token up, as before), and once it is back
everything is forgotten (a revocation may have been missed meanwhile). A
lookup under way when a revocation arrives is not remembered: it may have read
the token before the revocation committed. Unknown tokens are never
remembered: a token created a moment ago works at once, and guesses cannot
fill the memory. At most `MAX_TOKENS` are held, the oldest forgotten first,
each for at most `MAX_AGE_SECONDS`: a bound should a connection fail silently
(the listener notices within its health interval, `registry.store.listen`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from registry.store import Db, repository
from registry.store.records import Token

__all__ = ["MAX_AGE_SECONDS", "MAX_TOKENS", "TokenCache"]

MAX_TOKENS: Final = 10_000
MAX_AGE_SECONDS: Final = 60.0


class TokenCache:
    def __init__(
        self,
        listening: Callable[[], bool],
        *,
        max_tokens: int = MAX_TOKENS,
        max_age: float = MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._listening = listening
        self._max_tokens = max_tokens
        self._max_age = max_age
        self._clock = clock
        self._known: dict[str, tuple[Token, float]] = {}  # hash -> (token, when looked up)
        self._revocations = 0  # lookups that began before the last revocation are not kept

    def __len__(self) -> int:
        return len(self._known)

    async def lookup(self, db: Db, token_hash: str) -> Token | None:
        """The unrevoked token with this hash, or None (`repository.lookup_token`)."""
        if self._listening():
            known = self._known.get(token_hash)
            if known is not None:
                token, since = known
                if self._clock() - since < self._max_age:
                    return token
                del self._known[token_hash]
        revocations = self._revocations
        found = await repository.lookup_token(db, token_hash)
        if found is not None and revocations == self._revocations and self._listening():
            if len(self._known) >= self._max_tokens:
                del self._known[next(iter(self._known))]
            self._known[token_hash] = (found, self._clock())
        return found

    def revoked(self, token_id: str | None) -> None:
        """Forget `token_id` (None: every token)."""
        self._revocations += 1
        if token_id is None:
            self._known.clear()
            return
        for token_hash, (token, _) in list(self._known.items()):
            if token.id == token_id:
                del self._known[token_hash]
