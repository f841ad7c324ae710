"""Bearer tokens looked up together: the requests that arrive during one lookup share the next.

    tokens = TokenLookups()
    token = await tokens.lookup(db, token_hash)   # store.lookup_token, one query per batch

Every request's token is looked up by a query sent after the request arrived,
so a token revoked before it (by `registry token revoke`, straight in the
database, on any replica) is refused, as when each request made its own
query. What changes is the count of queries: while one is under way, the
requests that arrive wait for the next one, which looks all their tokens up at
once (`store.lookup_tokens`). Under load that is one query for tens of
requests (bench/fixed_cost_bench.py); a lone request costs what it did. A
failed query fails every request of its batch the same way (503 when the
database is down). Nothing is remembered between queries: a cache would have
to trust `token_revoked` notices, which reach a replica a moment after the
revocation commits, and a revoked token must fail on its next request.
"""

from __future__ import annotations

import asyncio

from registry import store
from registry.store import Connection, Db, connection
from registry.store.records import Token

__all__ = ["TokenLookups"]

_Waiting = list[tuple[str, "asyncio.Future[Token | None]"]]


class TokenLookups:
    def __init__(self) -> None:
        self._next: _Waiting | None = None  # the batch whose query is not sent yet
        self._running: asyncio.Task[None] | None = None
        self.queries = 0  # sent so far (tests, benches)

    async def lookup(self, db: Db, token_hash: str) -> Token | None:
        """The unrevoked token with this hash, or None (`store.lookup_token`)."""
        waiter: asyncio.Future[Token | None] = asyncio.get_running_loop().create_future()
        if self._next is None:
            self._next = []
        self._next.append((token_hash, waiter))
        if self._running is None:
            self._running = asyncio.ensure_future(self._run(db))
        return await waiter

    async def _run(self, db: Db) -> None:
        try:
            while self._next is not None:
                batch: _Waiting = []
                try:
                    # One connection while batches keep coming: the pool resets a
                    # connection it gets back, a second round trip per release.
                    async with connection(db) as conn:
                        while batch := self._next or []:
                            self._next = None
                            self.queries += 1
                            found = await _look_up(conn, {h for h, _ in batch})
                            for token_hash, waiter in batch:
                                if not waiter.done():
                                    waiter.set_result(found.get(token_hash))
                except Exception as exc:  # every request of the batch answers it
                    if not batch:  # no connection: the waiting batch fails
                        batch, self._next = self._next or [], None
                    for _, waiter in batch:
                        if not waiter.done():
                            waiter.set_exception(exc)
        finally:
            self._running = None
            if self._next is not None:  # cancelled (shutdown): nobody answers these
                for _, waiter in self._next:
                    waiter.cancel()
                self._next = None


async def _look_up(conn: Connection, token_hashes: set[str]) -> dict[str, Token]:
    if len(token_hashes) == 1:  # a lone request: the plain query
        (token_hash,) = token_hashes
        token = await store.lookup_token(conn, token_hash)
        return {} if token is None else {token_hash: token}
    return await store.lookup_tokens(conn, token_hashes)
