"""Long-polls of toolsets (`?wait=`): each one a future, woken without per-waiter work.

    hub = LongPolls(limit=18_000, revocations=..., metrics=...)
    cache.subscribe(hub.changed)                  # every new build wakes its namespace
    waiter = hub.park(ns, answers, seconds, token_id, disconnect)
    await waiter.answer(scope, receive, send)     # what ended the wait, as an ASGI app

A waiter is one future and one timer; nothing runs for it while it waits. It
ends with the first of:

* a new payload of its namespace (`changed`): the payload's pre-built 200,
  the same `Sent` for every waiter of that namespace;
* its deadline: the current 304;
* its client hanging up (the server's `receive()` answers `http.disconnect`;
  with granian that is a future, watched by a callback, without a task): a 304
  sent to nobody, counted in `registry_toolset_longpoll_hangups_total`;
* its token's revocation (`Revocations`): 401;
* shutdown (`drain`): a 304 with the caller's own ETag and `Connection: close`,
  so the SDK polls again, elsewhere.

`limit` bounds the waiters held at once: one more is refused with 503
`not-ready` and `Retry-After`, logged at most once a minute and counted in
`registry_limit_reached_total{limit="waiters"}` (see docs/running.md "Sizing a replica").
`per_token` bounds those of one holder (a token, or an anonymous caller's
address): one more is refused with 429 `too-many-requests` and `Retry-After`
(`limit="waiters_per_token"`), so that one token cannot take every slot from
the other namespaces' watchers. The console's live pages take their slots
here too (`slot`), counted in both.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final

import msgspec

from registry.api.answers import Answers, Sent
from registry.api.limits import LimitLog
from registry.api.metrics import Metrics
from registry.api.problems import ApiError
from registry.api.revocations import Revocations
from registry.policy.toolset import BuiltToolset

__all__ = ["LongPolls", "Waiter"]

RETRY_AFTER_SECONDS: Final = "5"  # a refused long-poll: when to come back (or elsewhere)

Asgi = Callable[[Any, Any, Any], Awaitable[None]]


class _Problem:
    """A problem answer (its `instance` the request's id)."""

    __slots__ = ("error", "status")

    def __init__(self, status: int, error: ApiError) -> None:
        self.status = status
        self.error = error

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        request_id = scope.get("state", {}).get("request_id")
        body = msgspec.json.encode(self.error.problem(request_id))
        headers = [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(body)).encode()),
            *((k.lower().encode(), v.encode()) for k, v in self.error.headers.items()),
        ]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class _Gone:
    """The client hung up: a 304 to nobody (logged and counted as such)."""

    __slots__ = ("answer", "metrics")

    def __init__(self, answer: Sent, metrics: Metrics) -> None:
        self.answer = answer
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.metrics.hangups.inc()
        await self.answer(scope, receive, send)


_REVOKED: Final = _Problem(
    401,
    ApiError(
        "unauthenticated",
        "the bearer token was revoked while this request waited",
        headers={"WWW-Authenticate": 'Bearer realm="registry", error="invalid_token"'},
    ),
)


class Waiter:
    """One held long-poll (see the module docstring)."""

    __slots__ = (
        "_detached",
        "_disconnect",
        "_holder",
        "_hub",
        "_receive",
        "_release",
        "_timer",
        "etag",
        "future",
        "namespace",
        "scope",
        "send",
    )

    def __init__(self, hub: LongPolls, namespace: str, etag: str, loop: Any, holder: str) -> None:
        self._hub = hub
        self._holder = holder
        self.namespace = namespace
        self.etag = etag  # the digest the caller has
        self.future: asyncio.Future[Asgi] = loop.create_future()
        self._timer: asyncio.TimerHandle | None = None
        self._disconnect: Any = None
        self._receive: Callable[[], Awaitable[Any]] | None = None
        self._release: Callable[[], None] | None = None
        self._detached = False
        self.send: Callable[[Any], Awaitable[None]] | None = None
        self.scope: Any = None

    async def answer(self, scope: Any, receive: Any, send: Any) -> None:
        """Wait, then send what ended the wait (unless `LongPolls` sent it already)."""
        self.scope = scope
        self.send = send
        try:
            outcome = await self.future
        except asyncio.CancelledError:  # the server cancelled the request
            self.finish(None)
            raise
        await outcome(scope, receive, send)

    def revoked(self) -> None:
        self.finish(_REVOKED)

    def _timed_out(self) -> None:
        self.finish(self._hub.answers(self.namespace).not_modified)

    def _received(self, done: Any) -> None:
        try:
            message = None if done.cancelled() else done.result()
        except Exception:  # the server could not read: as good as gone
            message = None
        if message is not None and message.get("type") != "http.disconnect":
            self._watch()  # more of a body: still waiting for the hang-up
            return
        self.finish(_Gone(self._hub.answers(self.namespace).not_modified, self._hub.metrics))

    def _watch(self) -> None:
        assert self._receive is not None
        pending = self._receive()
        if not asyncio.isfuture(pending):  # uvicorn: a coroutine, which needs a task
            pending = asyncio.ensure_future(pending)
        self._disconnect = pending
        pending.add_done_callback(self._received)

    def finish(self, outcome: Asgi | None) -> None:
        """End the wait with `outcome` (None: nothing will be sent)."""
        if self._detached:
            return
        self._detach()
        if outcome is not None:
            self.future.set_result(outcome)
        else:
            self.future.cancel()

    def _detach(self) -> None:
        """Out of the hub: no deadline, no watch on the client, no revocation."""
        self._detached = True
        self._hub._forget(self)
        if self._timer is not None:
            self._timer.cancel()
        if self._release is not None:
            self._release()
        pending = self._disconnect
        if pending is not None and not pending.done():
            pending.remove_done_callback(self._received)
            if isinstance(pending, asyncio.Task):
                pending.cancel()


class LongPolls:
    def __init__(
        self,
        *,
        limit: int,
        revocations: Revocations,
        metrics: Metrics,
        limits: LimitLog,
        per_token: int | None = None,
    ) -> None:
        self.limit = limit
        self.per_token = per_token if per_token is not None else max(1, limit // 4)
        self._held: dict[str, int] = {}  # slots by holder
        self.metrics = metrics
        self._revocations = revocations
        self._limits = limits
        self._by_namespace: dict[str, set[Waiter]] = {}
        self._answers: dict[str, Answers] = {}
        self._draining = False
        self._sending: set[asyncio.Task[None]] = set()
        self.waiting = 0

    def answers(self, namespace: str, built: BuiltToolset | None = None) -> Answers:
        """The answers of `built` (built once per payload); without `built`, the last ones."""
        found = self._answers.get(namespace)
        if built is not None and (found is None or found.built is not built):
            found = self._answers[namespace] = Answers(built)
        if found is None:
            raise KeyError(namespace)
        return found

    def _take(self, holder: str) -> None:
        """One slot for `holder`, or the refusal (see the module docstring)."""
        if self._draining:
            raise ApiError(
                "not-ready", "the registry is shutting down; retry shortly", headers=_RETRY_SOON
            )
        if self.waiting >= self.limit:
            self._limits.reached("waiters", self.limit)
            raise ApiError(
                "not-ready",
                f"this replica holds as many long-polls as it may ({self.limit}); "
                "retry later or on another replica",
                headers={"Retry-After": RETRY_AFTER_SECONDS},
                limit={"name": "max_waiters", "maximum": self.limit},
            )
        if self._held.get(holder, 0) >= self.per_token:
            self._limits.reached("waiters_per_token", self.per_token)
            raise ApiError(
                "too-many-requests",
                f"this token already holds {self.per_token} long-polls on this replica "
                "(REGISTRY_MAX_WAITERS_PER_TOKEN); retry when one has ended",
                headers={"Retry-After": RETRY_AFTER_SECONDS},
                limit={"name": "max_waiters_per_token", "maximum": self.per_token},
            )
        self._held[holder] = self._held.get(holder, 0) + 1
        self.waiting += 1

    def _give_back(self, holder: str) -> None:
        self.waiting -= 1
        left = self._held.get(holder, 1) - 1
        if left > 0:
            self._held[holder] = left
        else:
            self._held.pop(holder, None)

    @contextlib.contextmanager
    def slot(self, holder: str) -> Iterator[None]:
        """A slot held for the block (a console live page's wait), refused like `park`."""
        self._take(holder)
        self.metrics.console_waiters.inc()
        try:
            yield
        finally:
            self.metrics.console_waiters.dec()
            self._give_back(holder)

    def park(
        self,
        namespace: str,
        answers: Answers,
        seconds: float,
        token_id: str | None,
        receive: Callable[[], Awaitable[Any]],
        holder: str | None = None,
    ) -> Waiter:
        """Hold a long-poll of a caller that has `answers`' payload; `receive` is the
        request's, its body read already (its next message is the hang-up). `holder`:
        whose share the slot counts against (default: the token)."""
        holder = holder or token_id or "anonymous"
        self._take(holder)
        loop = asyncio.get_running_loop()
        waiter = Waiter(self, namespace, answers.built.digest, loop, holder)
        self._by_namespace.setdefault(namespace, set()).add(waiter)
        waiter._timer = loop.call_later(seconds, waiter._timed_out)
        waiter._release = self._revocations.hold(token_id, waiter)
        waiter._receive = receive
        waiter._watch()
        current = self._answers.get(namespace)
        if current is not None and current.built.digest != waiter.etag:
            # A new payload came while the request was on its way here (its body was
            # read after the payload it has was looked up): it gets that one now.
            waiter.finish(current.ok)
        return waiter

    def _forget(self, waiter: Waiter) -> None:
        held = self._by_namespace.get(waiter.namespace)
        if held is not None and waiter in held:
            held.discard(waiter)
            self._give_back(waiter._holder)
            if not held:
                del self._by_namespace[waiter.namespace]

    def watched(self, namespace: str) -> bool:
        return namespace in self._by_namespace

    def changed(self, namespace: str, built: BuiltToolset | None) -> None:
        """A new build of `namespace`: its waiters with another digest get it."""
        if built is None:
            return
        answers = self.answers(namespace, built)
        held = self._by_namespace.get(namespace)
        if not held:
            return
        woken = [w for w in held if w.etag != built.digest]
        for waiter in woken:
            waiter._detach()
        task = asyncio.ensure_future(_send_all(woken, answers.ok))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def failed(self, namespace: str, error: BaseException) -> None:
        """A build of `namespace` failed (the database is not answering): its waiters
        answer 503 now, rather than wait on what cannot be checked."""
        held = self._by_namespace.get(namespace)
        if not held:
            return
        answer = _Problem(
            503,
            ApiError(
                "database-unavailable",
                "the database is unavailable; retry shortly",
                headers={"Retry-After": RETRY_AFTER_SECONDS},
            ),
        )
        for waiter in list(held):
            waiter.finish(answer)

    def drain(self) -> None:
        """Shutdown: every waiter answers now, and no new one is held."""
        self._draining = True
        for held in list(self._by_namespace.values()):
            for waiter in list(held):
                waiter.finish(_drained(waiter.etag))


_RETRY_SOON: Final = {"Retry-After": "1"}
SEND_BATCH: Final = 1_000  # answers sent between two turns of the event loop


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    """What a woken request has left to do: its answer was sent by `_send_all`."""


async def _send_all(waiters: list[Waiter], answer: Sent) -> None:
    """The same answer to every waiter, from one task, through the server's own `send`
    (`registry.api.observe` put it on the scope): each waiter's request only finishes
    afterwards (its log line, its metrics), so the last answer does not wait for the
    bookkeeping of all the others."""
    body = {"type": "http.response.body", "body": answer.body, "more_body": False}
    sent: list[Waiter] = []
    for index, waiter in enumerate(waiters):
        if index and not index % SEND_BATCH:
            await asyncio.sleep(0)  # other requests get a turn
        if waiter.future.done():
            continue  # its request was cancelled meanwhile (shutdown)
        state = waiter.scope.get("state", {}) if waiter.scope is not None else {}
        raw = state.get("asgi_send")
        if waiter.send is None or raw is None:  # it answers itself, the usual way
            waiter.future.set_result(answer)
            continue
        headers = [*answer.headers, (b"x-request-id", state["request_id"].encode())]
        with contextlib.suppress(Exception):  # the client left: nothing to answer
            await raw({"type": "http.response.start", "status": answer.status, "headers": headers})
            await raw(body)
        state["answered"] = answer.status
        sent.append(waiter)
    for waiter in sent:
        if not waiter.future.done():
            waiter.future.set_result(_nothing)


def _drained(digest: str) -> Sent:
    # Not modified, as far as this replica knows: the caller polls again
    # (elsewhere) with the ETag it has. Echoing its own ETag tells it nothing new.
    headers = [
        (b"cache-control", b"no-cache"),
        (b"connection", b"close"),
        (b"etag", f'"{digest}"'.encode("latin-1")),
    ]
    return Sent(304, headers, b"")
