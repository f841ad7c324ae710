"""The stdio relay: `registry proxy --namespace NS -- COMMAND [ARGS...]`.

A host launches the proxy in place of the server; the proxy spawns COMMAND
(registry/cli/stdio_server.py: its own process group, stopped on every exit
path) and relays newline-delimited JSON-RPC both ways. Every line passes
through byte for byte and in order, except:

* host `tools/list`: answered from the toolset (registry/proxy/front.py),
  holding only the tools the upstream lists; the proxy asks the upstream for
  its own listing (every page) under ids of its own (`registry-proxy-N`), whose
  answers never reach the host;
* host `tools/call`: gated; an accepted call goes on with the gated arguments
  (an alias's target as `name`), a refusal is answered in the revision's surface;
* the upstream's `initialize` result: `capabilities.tools.listChanged` is
  declared, because the proxy announces every toolset swap;
* a JSON-RPC batch from the host (2025-03-26): its messages are relayed one by one,
  so that no call inside one passes ungated;
* a 2026-07-28 `subscriptions/listen` for tool changes that the upstream does not
  serve (-32601): the proxy serves that stream itself (its ack, its notifications).

A toolset swap sends `notifications/tools/list_changed` to a handshake-era
session and onto every 2026-07-28 `subscriptions/listen` stream that asked for
tool changes (stamped with its subscription id). The upstream's own
list_changed passes through; in pin mode the proxy re-reads the upstream's
listing then and compares it again.

A bad upstream ends the proxy with one line on stderr and exit code 1: a command
that does not start, exits, writes something that is not JSON-RPC on stdout, or
does not answer `initialize` (or `server/discover`) within `init_timeout`.
The calls and listings the host waits on (and every request of a block the
proxy looked into) are answered with an error first; then the proxy's stdout
closes, so the host never hangs. Host EOF on stdin ends the proxy (exit 0), SIGINT or SIGTERM
too (exit 130 or 143), and so does a host that closes the proxy's stdout; the
upstream's process group is stopped every time.

What a pass-through message costs (bench/proxy_bench.py): both pipes of each side
are read by protocol callbacks (no task wakes), a block of whole lines is looked
at with single-byte searches and relayed in one write, and the upstream runs in
the proxy's session (a process group of its own: `StdioServer.spawn_on_pipes`),
where Linux's autogroup schedules the two together.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from asyncio.streams import FlowControlMixin
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, BinaryIO, TypeVar

import anyio
import msgspec

from registry.cli.stdio_server import StdioServer
from registry.proxy.access import Connected, ProxyError
from registry.proxy.front import (
    PROTOCOL_VERSION_META,
    Answer,
    Forward,
    LiveListing,
    ProxyFront,
    request_revision,
)

__all__ = ["MAX_LINE", "StdioRelay", "run_stdio"]

MAX_LINE = 64 * 1024 * 1024
"""The longest message either side may send (bytes)."""
_MAX_PAGES = 1000
_INTERNAL = "registry-proxy-"
_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
_CHUNK = 1 << 16
_HIGH_WATER = 4 * 1024 * 1024
# Without these bytes (and without a backslash, which could spell one of them in
# escapes), no message of a block is one the proxy must see: it passes as it is.
_GATED_MARKERS = (
    b'"tools/',
    b"initialize",
    b"server/discover",
    b"subscriptions/listen",
    b"notifications/cancelled",
    b"\\",
)
_NEWLINE, _BRACKET, _SLASH, _BACKSLASH, _Z, _BRACE = b"\n[/\\z{"
_UPSTREAM_ERROR = -32603
_METHOD_NOT_FOUND = -32601
_LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'

FrontFactory = Callable[[], Awaitable[tuple[ProxyFront, Connected]]]


class _Peek(msgspec.Struct):
    """The two fields that say what a message is; the rest is skipped, not built."""

    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET


_peek = msgspec.json.Decoder(_Peek).decode
_decode = msgspec.json.decode
_encode = msgspec.json.encode


def _envelope(params: Any) -> dict[str, Any]:
    """The 2026-07-28 per-request envelope of a host request (`io.modelcontextprotocol/*`
    keys of its `_meta`), for the proxy's own requests on the same connection."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return {}
    return {k: v for k, v in meta.items() if k.startswith("io.modelcontextprotocol/")}


def _plain(block: bytes) -> bool:
    """Whether a block of whole lines from the host holds nothing the proxy acts on."""
    if _BRACKET in block and (block[0] == _BRACKET or b"\n[" in block):
        return False  # a batch
    if _SLASH not in block and _BACKSLASH not in block:
        # every gated method but initialize has a "/"; a byte is found by memchr, many
        # times faster than a longer marker (and an int, without the buffer protocol)
        return _Z not in block or b"initialize" not in block
    return not any(marker in block for marker in _GATED_MARKERS)


class _Lines:
    """Newline-delimited messages out of a pipe's reads: the whole lines each read
    completes, as one block; the rest waits for the next read."""

    __slots__ = ("rest",)

    def __init__(self) -> None:
        self.rest = b""

    def feed(self, chunk: bytes) -> bytes:
        """The whole lines this read completes, b"" when it completes none."""
        buffer = self.rest + chunk
        if _NEWLINE not in chunk:
            self.rest = buffer
            return b""
        cut = buffer.rindex(b"\n") + 1
        self.rest = buffer[cut:]
        return buffer[:cut]

    def too_long(self) -> bool:
        return len(self.rest) > MAX_LINE


def _hashable(value: Any) -> bool:
    return isinstance(value, int | str)


class StdioRelay:
    """One host connection relayed to one upstream process (see the module docstring)."""

    def __init__(
        self,
        upstream: StdioServer,
        upstream_stdin: BinaryIO,
        upstream_stdout: BinaryIO,
        host_out: asyncio.StreamWriter,
        make_front: FrontFactory,
        *,
        init_timeout: float = 30.0,
        request_timeout: float = 30.0,
    ) -> None:
        self._process = upstream.process
        self._upstream_stdin = upstream_stdin
        self._upstream_in: asyncio.StreamWriter  # once run() connected upstream_stdin
        self._upstream_stdout = upstream_stdout
        self._upstream_transport: asyncio.ReadTransport | None = None
        self._upstream_lines = _Lines()
        self._upstream_ended = False
        self._host_out = host_out
        self._host_transport: asyncio.ReadTransport | None = None
        self._host_lines = _Lines()
        self._host_queue: deque[bytes] | None = None  # lines waiting behind one that waits
        self._host_ended = False
        self._make_front = make_front
        self._init_timeout = init_timeout
        self._request_timeout = request_timeout
        self._front_task: asyncio.Task[tuple[ProxyFront, Connected]] | None = None
        self._front_now: ProxyFront | None = None  # once the boot is done
        self.connected: Connected | None = None
        self._pending: dict[Any, str] = {}  # host request id -> method, forwarded upstream
        self._internal: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._seq = 0
        self._session_revision: str | None = None  # handshake era: the initialize result's
        self._initialized = False  # handshake era: the host sent notifications/initialized
        self._listens: dict[Any, bool] = {}  # 2026-07-28 listen request id -> wants tools
        self._modern_envelope: dict[str, Any] = {}
        self._init_timer: asyncio.TimerHandle | None = None
        self.live = LiveListing()
        self._pin_refresh: asyncio.Task[dict[str, Any] | None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._done = asyncio.Event()
        self.failure: str | None = None
        self.signal: int | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # ------------------------------------------------------------ running

    async def run(
        self, connect_host: Callable[[StdioRelay], Awaitable[asyncio.ReadTransport]]
    ) -> int:
        """Relay until the host leaves, the upstream fails or a signal comes; the exit code.
        `connect_host` starts feeding the host's input to `host_data` / `host_eof`."""
        loop = asyncio.get_running_loop()
        self._upstream_in, _ = await _pipe_writer(self._upstream_stdin, FlowControlMixin)
        self._front_task = loop.create_task(self._boot())
        self._upstream_transport, _ = await loop.connect_read_pipe(
            lambda: _Feed(self.upstream_data, self.upstream_eof), self._upstream_stdout
        )
        self._host_transport = await connect_host(self)
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, self._on_signal, signum)
        try:
            await self._done.wait()
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(signum)
            if self._init_timer is not None:
                self._init_timer.cancel()
            if self._host_transport is not None:
                self._host_transport.close()
            upstream_out = self._upstream_transport
            if not upstream_out.is_closing() and not upstream_out.is_reading():
                upstream_out.resume_reading()  # drained while the upstream is stopped
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.failure is not None:
                await self._answer_pending(self.failure)
            if self._unsubscribe is not None:
                self._unsubscribe()
            await self._close_front()
            self._upstream_in.close()  # its EOF: the upstream's signal to exit
        if self.failure is not None:
            print(f"registry proxy: {self.failure}", file=sys.stderr, flush=True)
            return 1
        if self.signal is not None:
            return 128 + self.signal
        return 0

    def close(self) -> None:
        """Close the upstream's pipes (once the upstream is stopped: its stdout is
        drained until then)."""
        if self._upstream_transport is not None:
            self._upstream_transport.close()
        else:
            self._upstream_stdout.close()
        if hasattr(self, "_upstream_in"):
            self._upstream_in.close()
        else:
            self._upstream_stdin.close()

    def host_gone(self) -> None:
        """The host closed this process's stdout: nobody left to answer."""
        self._done.set()

    def _on_signal(self, signum: int) -> None:
        self.signal = signum
        self._done.set()

    def _fail(self, message: str) -> None:
        if not self._done.is_set():
            self.failure = message
            self._done.set()

    async def _guard(self, work: Awaitable[None]) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._crashed(exc)

    def _crashed(self, exc: Exception) -> None:
        if isinstance(exc, ProxyError):
            self._fail(str(exc))
        elif isinstance(exc, BrokenPipeError | ConnectionResetError):
            self._done.set()  # the host is gone: nobody left to tell
        else:  # a bug must end the proxy loudly, never hang the host
            self._fail(f"internal error: {type(exc).__name__}: {exc}")

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.get_running_loop().create_task(self._guard(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _boot(self) -> tuple[ProxyFront, Connected]:
        front, connected = await self._make_front()
        self.connected = connected
        self._front_now = front
        subscribe = getattr(connected.source, "subscribe", None)
        if callable(subscribe):
            self._unsubscribe = subscribe(self._toolset_swapped)
        return front, connected

    async def _front(self) -> ProxyFront:
        assert self._front_task is not None
        try:
            front, _ = await asyncio.shield(self._front_task)
        except ProxyError:
            raise
        except Exception as exc:
            raise ProxyError(f"internal error at boot: {type(exc).__name__}: {exc}") from exc
        return front

    async def _close_front(self) -> None:
        task = self._front_task
        if task is None:
            return
        if not task.done():
            task.cancel()
        with contextlib.suppress(BaseException):
            await task
        if self.connected is not None:
            with contextlib.suppress(Exception):
                await self.connected.close()

    async def _answer_pending(self, reason: str) -> None:
        """Every request the host still waits on gets an error (never a hang)."""
        pending, self._pending = self._pending, {}
        for request_id in pending:
            self._to_host(
                {"code": _UPSTREAM_ERROR, "message": f"registry proxy: {reason}"}, request_id
            )
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._host_out.drain(), 2.0)

    # ------------------------------------------------------------ writing

    def _to_upstream(self, data: bytes) -> None:
        """Write to the upstream's stdin now; past `_HIGH_WATER` buffered bytes the host's
        input pauses until the upstream has read them."""
        if not data:
            return
        writer = self._upstream_in
        if writer.is_closing():
            raise ProxyError(self._exit_text("stopped reading its stdin"))
        writer.write(data)
        transport = self._host_transport
        if (
            transport is not None
            and writer.transport.get_write_buffer_size() > _HIGH_WATER
            and transport.is_reading()
        ):
            transport.pause_reading()
            self._spawn(self._resume_host_when_drained())

    async def _resume_host_when_drained(self) -> None:
        try:
            await self._upstream_in.drain()
        except (ConnectionError, OSError) as exc:
            raise ProxyError(self._exit_text("stopped reading its stdin")) from exc
        if self._host_transport is not None and not self._host_transport.is_closing():
            self._host_transport.resume_reading()

    def _to_host_raw(self, data: bytes) -> None:
        """Write to the host now; past `_HIGH_WATER` buffered bytes the upstream's output
        pauses until the host has read them."""
        if not data:
            return
        self._host_out.write(data)
        transport = self._upstream_transport
        if (
            transport is not None
            and self._host_out.transport.get_write_buffer_size() > _HIGH_WATER
            and transport.is_reading()
        ):
            transport.pause_reading()
            self._spawn(self._resume_upstream_when_drained())

    async def _resume_upstream_when_drained(self) -> None:
        await self._host_out.drain()  # BrokenPipeError: the host is gone (see _guard)
        if self._upstream_transport is not None and not self._upstream_transport.is_closing():
            self._upstream_transport.resume_reading()

    def _to_host(self, error: dict[str, Any] | None, request_id: Any, result: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        self._to_host_raw(_encode(message) + b"\n")

    def _answer(self, request_id: Any, answer: Answer) -> None:
        self._to_host(answer.error, request_id, answer.result)

    # ------------------------------------------------------------ host -> upstream

    def host_data(self, chunk: bytes) -> None:
        """What the host wrote, as it arrives (called by the event loop, no task wakes):
        whole lines go upstream in order, in one write per read."""
        block = self._host_lines.feed(chunk)
        if not block:
            if self._host_lines.too_long():
                self._fail(f"the host sent a message longer than {MAX_LINE} bytes")
            return
        if self._host_queue is not None:  # something waits: what follows waits behind it
            self._host_queue.append(block)
            return
        try:
            self._host_block(block)
        except Exception as exc:
            self._crashed(exc)

    def host_eof(self) -> None:
        """The host closed its end: done once what it sent is relayed."""
        if self._host_ended:
            return
        self._host_ended = True
        if self._host_lines.rest.strip():
            self.host_data(b"\n")
        if self._host_queue is None:
            self._done.set()

    def _host_block(self, block: bytes) -> None:
        if _plain(block):  # no gated method can be in it: relayed as it is
            self._to_upstream(block)
            return
        if block.index(_NEWLINE) + 1 == len(block):  # one line, as a gated call comes
            lines = [block] if block.strip() else []
        else:
            lines = [line + b"\n" for line in block.split(b"\n") if line.strip()]
        out: list[bytes] = []
        for index, line in enumerate(lines):
            forward = self._host_message(line)
            if forward is None:  # it has to wait (boot, a live listing): the rest behind it
                self._to_upstream(b"".join(out))
                self._host_queue = deque([b"".join(lines[index:])])
                self._spawn(self._host_waiting())
                return
            out.append(forward)
        self._to_upstream(b"".join(out))

    async def _host_waiting(self) -> None:
        """Relay what waits, in order, until nothing does."""
        queue = self._host_queue
        assert queue is not None
        while queue:
            block = queue.popleft()
            for line in block.split(b"\n"):
                if not line.strip():
                    continue
                forward = self._host_message(line + b"\n")
                if forward is None:
                    forward = await self._host_message_later(line + b"\n")
                self._to_upstream(forward)
        self._host_queue = None
        if self._host_ended:
            self._done.set()

    def _host_message(self, line: bytes) -> bytes | None:
        """What to send upstream for one host message (b"": nothing, answered here);
        None when it must wait for something first (`_host_message_later`)."""
        try:
            peek = _peek(line)
        except msgspec.DecodeError:
            if line.lstrip().startswith(b"["):
                return self._batch(line)
            return line  # the upstream answers the parse error
        method, request_id = peek.method, peek.id
        if method is msgspec.UNSET or request_id is msgspec.UNSET:
            if method == "notifications/initialized":
                self._initialized = True
            elif method == "notifications/cancelled" and self._listens:
                params = _decode(line).get("params")
                cancelled = params.get("requestId") if isinstance(params, dict) else None
                if _hashable(cancelled) and self._listens.pop(cancelled, None) is not None:
                    self._pending.pop(cancelled, None)
            return line  # a notification, or an answer to the upstream
        if method == "tools/call":
            front = self._front_now
            if front is None or (front.pin and not self._pin_settled()):
                return None
            return self._call(front, _decode(line))
        if method == "tools/list":
            self._spawn(self._list(_decode(line)))
            return b""
        if _hashable(request_id):
            self._pending[request_id] = method if isinstance(method, str) else ""
            if method in ("initialize", "server/discover"):
                self._watch_init(method)
            elif method == "subscriptions/listen":
                self._listen(request_id, _decode(line))
        return line

    async def _host_message_later(self, line: bytes) -> bytes:
        """A call that waits for the boot or for pin mode's live listing."""
        message = _decode(line)
        request_id = message.get("id")
        params = message.get("params")
        if _hashable(request_id):
            self._pending[request_id] = "tools/call"  # answered with an error on a failure
        front = await self._front()
        if front.pin:
            error = await self._pin_ready(front, params)
            if error is not None:  # no live listing to compare with: never trust blindly
                self._pending.pop(request_id, None)
                self._to_host(error, request_id)
                return b""
        return self._call(front, message)

    def _batch(self, line: bytes) -> bytes:
        try:
            messages = _decode(line)
        except msgspec.DecodeError:
            return line
        if not isinstance(messages, list):
            return line
        out = []
        for message in messages:  # relayed one by one: a call in a batch is gated too
            forward = self._host_message(_encode(message) + b"\n")
            if forward is None:
                self._spawn(self._forward_later(_encode(message) + b"\n"))
            elif forward:
                out.append(forward)
        return b"".join(out)

    async def _forward_later(self, line: bytes) -> None:
        self._to_upstream(await self._host_message_later(line))

    def _listen(self, request_id: Any, message: dict[str, Any]) -> None:
        params = message.get("params")
        wanted = params.get("notifications") if isinstance(params, dict) else None
        self._listens[request_id] = bool(
            isinstance(wanted, dict) and wanted.get("toolsListChanged")
        )
        self._remember_envelope(params)

    def _remember_envelope(self, params: Any) -> None:
        envelope = _envelope(params)
        if PROTOCOL_VERSION_META in envelope:
            self._modern_envelope = envelope

    def _watch_init(self, method: str) -> None:
        if self._init_timer is None and self._session_revision is None:
            self._init_timer = asyncio.get_running_loop().call_later(
                self._init_timeout,
                self._fail,
                f"the upstream did not answer {method} within {self._init_timeout:g} s",
            )

    def _call(self, front: ProxyFront, message: dict[str, Any]) -> bytes:
        """Gate one call: the line to forward (gated arguments), or b"" (answered here)."""
        request_id = message.get("id")
        params = message.get("params")
        if self._listens or self._session_revision is None:
            self._remember_envelope(params)
        outcome = front.call(params, request_revision(params, self._session_revision), self.live)
        if isinstance(outcome, Forward):
            message["params"] = outcome.params
            if _hashable(request_id):
                self._pending[request_id] = "tools/call"
            return _encode(message) + b"\n"
        if _hashable(request_id):
            self._pending.pop(request_id, None)
        self._answer(request_id, outcome)
        return b""

    def _pin_settled(self) -> bool:
        """Pin mode can judge a call now: a live listing, no re-read in flight."""
        refresh = self._pin_refresh
        return self.live.tools is not None and (refresh is None or refresh.done())

    async def _list(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        params = message.get("params")
        self._remember_envelope(params)
        if _hashable(request_id):
            self._pending[request_id] = "tools/list"  # answered here, or on a failure
        front = await self._front()
        cursor = params.get("cursor") if isinstance(params, dict) else None
        answer: Answer | None = None
        if cursor is None or self.live.tools is None:
            error = await self._fetch_live(front, _envelope(params))
            if error is not None:
                answer = Answer(error=error)
        if answer is None:
            revision = request_revision(params, self._session_revision)
            answer = front.list_tools(params, revision, self.live)
        if not _hashable(request_id) or self._pending.pop(request_id, None) is not None:
            self._answer(request_id, answer)
            await self._host_out.drain()

    # ------------------------------------------------------------ the upstream's own listing

    async def _ask_upstream(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request of the proxy's own to the upstream; its answer (result or error)."""
        self._seq += 1
        request_id = f"{_INTERNAL}{self._seq}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._internal[request_id] = future
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        # its entry stays until its answer comes (consumed then, however late): until
        # then every upstream line is looked at
        try:
            self._to_upstream(_encode(body) + b"\n")
            return await asyncio.wait_for(future, self._request_timeout)
        except TimeoutError:
            return {
                "error": {
                    "code": _UPSTREAM_ERROR,
                    "message": f"registry proxy: the upstream did not answer {method} "
                    f"within {self._request_timeout:g} s",
                }
            }

    async def _fetch_live(
        self, front: ProxyFront, envelope: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The upstream's `tools/list`, every page, into `front`; an error object if it
        answered one."""
        tools: list[Any] = []
        cursor: Any = None
        for _ in range(_MAX_PAGES):
            params: dict[str, Any] = {"_meta": envelope} if envelope else {}
            if cursor is not None:
                params["cursor"] = cursor
            reply = await self._ask_upstream("tools/list", params)
            error = reply.get("error")
            if error is not None:
                return (
                    error
                    if isinstance(error, dict)
                    else {"code": _UPSTREAM_ERROR, "message": str(error)}
                )
            result = reply.get("result")
            page = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(page, list):
                return {
                    "code": _UPSTREAM_ERROR,
                    "message": "registry proxy: the upstream's tools/list answer has no tools",
                }
            tools.extend(page)
            cursor = result.get("nextCursor") if isinstance(result, dict) else None
            if not cursor:
                break
        revision = envelope.get(PROTOCOL_VERSION_META, self._session_revision)
        front.set_live(self.live, tools, revision if isinstance(revision, str) else None)
        return None

    async def _pin_ready(self, front: ProxyFront, params: Any) -> dict[str, Any] | None:
        """In pin mode a call is judged on a live listing: fetched once, re-read after
        the upstream said its tools changed. An error object when there is none."""
        refresh = self._pin_refresh
        if refresh is not None and not refresh.done():
            error = await asyncio.shield(refresh)
            if error is None:
                return None
        elif self.live.tools is not None:
            return None
        return await self._fetch_live(front, _envelope(params))

    def _upstream_list_changed(self) -> None:
        task = self._front_task
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return
        front, _ = task.result()
        if not front.pin or self.live.tools is None:
            return  # nothing compared yet; the first call or listing reads it
        envelope = self._modern_envelope if self._session_revision is None else {}

        async def refresh() -> dict[str, Any] | None:
            return await self._fetch_live(front, envelope)

        self._pin_refresh = asyncio.get_running_loop().create_task(refresh())
        self._tasks.add(self._pin_refresh)
        self._pin_refresh.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------ upstream -> host

    def upstream_data(self, chunk: bytes) -> None:
        """What the upstream wrote, as it arrives (called by the event loop, no task
        wakes): whole lines go to the host in order, in one write per read."""
        if self._done.is_set():
            return  # drained, not relayed, while the upstream is stopped
        block = self._upstream_lines.feed(chunk)
        if not block:
            if self._upstream_lines.too_long():
                self._fail(f"the upstream wrote a line longer than {MAX_LINE} bytes on stdout")
            return
        try:
            if self._upstream_plain(block):
                pass
            elif block.index(_NEWLINE) + 1 == len(block):  # one line, as an answer comes
                block = self._upstream_line(block[:-1]) if block.strip() else b""
            else:
                lines = block.split(b"\n")
                block = b"".join([self._upstream_line(line) for line in lines if line.strip()])
            self._to_host_raw(block)
        except Exception as exc:
            self._crashed(exc)

    def upstream_eof(self) -> None:
        if not self._upstream_ended and not self._done.is_set():
            self._upstream_ended = True
            self._spawn(self._upstream_gone())

    def _upstream_plain(self, block: bytes) -> bool:
        """Whether a block of whole lines from the upstream passes as it is: nothing
        awaited by id (a gated call, the proxy's own request, initialize, a listen), no
        list_changed, and a JSON object on every line (anything else is looked at)."""
        if self._pending or self._internal or self._listens:
            return False
        front = self._front_now  # only pin mode acts on the upstream's list_changed
        if front is not None and front.pin and b"list_changed" in block:
            return False
        # every line starts with "{": one more newline than newlines followed by "{"
        return block[0] == _BRACE and block.count(b"\n{") + 1 == block.count(_NEWLINE)

    def _upstream_line(self, line: bytes) -> bytes:
        """What the host gets of one upstream line (b"": nothing, the proxy's own answer)."""
        try:
            peek = _peek(line)
        except msgspec.DecodeError as exc:
            if line.lstrip().startswith(b"["):  # a batch of answers: relayed as it is
                return line + b"\n"
            shown = line[:120].decode("utf-8", "replace")
            raise ProxyError(
                f"the upstream wrote something that is not JSON-RPC on stdout: {shown!r}"
            ) from exc
        method = peek.method
        if method is msgspec.UNSET:
            line = self._upstream_answer(line, peek.id)
            if not line:
                return b""
        elif method == "notifications/tools/list_changed":
            self._upstream_list_changed()
        return line + b"\n"

    def _upstream_answer(self, line: bytes, request_id: Any) -> bytes:
        """An answer from the upstream: the proxy's own (consumed, b"" returned), or the
        host's, passed on (an `initialize` result declaring `tools.listChanged`)."""
        if not _hashable(request_id):
            return line
        if isinstance(request_id, str) and request_id.startswith(_INTERNAL):
            future = self._internal.pop(request_id, None)
            if future is not None and not future.done():
                future.set_result(_decode(line))
            return b""
        method = self._pending.pop(request_id, None)
        if method == "initialize":
            return self._initialize_answered(line)
        if method == "server/discover":
            self._cancel_init_timer()
        elif method == "subscriptions/listen":
            return self._listen_answered(line, request_id)
        return line

    def _listen_answered(self, line: bytes, request_id: Any) -> bytes:
        """The end of a listen stream, or the upstream serves none: then the proxy
        serves the host's stream of tool changes itself (its ack, then one
        notification per toolset swap, until the host cancels it)."""
        message = _decode(line)
        error = message.get("error")
        if (
            self._listens.get(request_id)
            and isinstance(error, dict)
            and error.get("code") == _METHOD_NOT_FOUND
        ):
            self._pending[request_id] = "subscriptions/listen"
            ack = {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {
                    "notifications": {"toolsListChanged": True},
                    "_meta": {_SUBSCRIPTION_ID: request_id},
                },
            }
            return _encode(ack)
        self._listens.pop(request_id, None)
        return line

    def _cancel_init_timer(self) -> None:
        if self._init_timer is not None:
            self._init_timer.cancel()
            self._init_timer = None

    def _initialize_answered(self, line: bytes) -> bytes:
        self._cancel_init_timer()
        message = _decode(line)
        result = message.get("result")
        if not isinstance(result, dict):
            return line
        version = result.get("protocolVersion")
        self._session_revision = version if isinstance(version, str) else None
        capabilities = result.get("capabilities")
        tools = capabilities.get("tools") if isinstance(capabilities, dict) else None
        if not isinstance(tools, dict) or tools.get("listChanged") is True:
            return line
        tools["listChanged"] = True  # the proxy announces every toolset swap
        return _encode(message)

    async def _upstream_gone(self) -> None:
        if self._done.is_set():
            return
        with anyio.move_on_after(1.0):
            await self._process.wait()
        self._fail(self._exit_text("closed its stdout"))

    def _exit_text(self, otherwise: str) -> str:
        code = self._process.returncode
        if code is None:
            return f"the upstream {otherwise}"
        if code < 0:
            return f"the upstream was killed by signal {-code}"
        return f"the upstream exited with code {code}"

    # ------------------------------------------------------------ toolset swaps

    def _toolset_swapped(self, _toolset: Any) -> None:
        """The watcher swapped the toolset: compare again (pin) and tell the host."""
        task = self._front_task
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return
        front, _ = task.result()
        front.recompare(self.live)
        if self._session_revision is not None and self._initialized:
            self._to_host_raw(_LIST_CHANGED)
        for subscription, wants_tools in self._listens.items():
            if wants_tools:
                notification = {
                    "jsonrpc": "2.0",
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": {_SUBSCRIPTION_ID: subscription}},
                }
                self._to_host_raw(_encode(notification) + b"\n")


# ---------------------------------------------------------------- the process around it


class _Feed(asyncio.Protocol):
    """A pipe (the host's stdin, the upstream's stdout) handed to the relay as it
    arrives: `data` for each read, `eof` when it ends."""

    def __init__(self, data: Callable[[bytes], None], eof: Callable[[], None]) -> None:
        self._data = data
        self._eof = eof

    def data_received(self, data: bytes) -> None:
        self._data(data)

    def eof_received(self) -> bool:
        self._eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof()


class _HostOutput(FlowControlMixin):
    """This process's stdout; its loss (the host closed it) ends the relay."""

    on_lost: Callable[[], None] | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.on_lost is not None:
            self.on_lost()


class _ThreadInput(asyncio.ReadTransport):
    """A stdin an event loop cannot watch (a plain file), read by a thread."""

    def __init__(self, relay: StdioRelay, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._reading = threading.Event()
        self._reading.set()
        self._closed = False

        def pump() -> None:
            stdin = os.fdopen(0, "rb", 0, closefd=False)
            while not self._closed and (chunk := stdin.read(_CHUNK)):
                loop.call_soon_threadsafe(relay.host_data, chunk)
                self._reading.wait()
            loop.call_soon_threadsafe(relay.host_eof)

        threading.Thread(target=pump, name="registry-proxy-stdin", daemon=True).start()

    def is_reading(self) -> bool:
        return self._reading.is_set()

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def close(self) -> None:
        self._closed = True
        self._reading.set()

    def is_closing(self) -> bool:
        return self._closed


async def _connect_host(relay: StdioRelay) -> asyncio.ReadTransport:
    loop = asyncio.get_running_loop()
    stdin = os.fdopen(0, "rb", 0, closefd=False)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: _Feed(relay.host_data, relay.host_eof), stdin
        )
    except ValueError:
        return _ThreadInput(relay, loop)
    return transport


_Flow = TypeVar("_Flow", bound=FlowControlMixin)


async def _pipe_writer(pipe: BinaryIO, protocol: type[_Flow]) -> tuple[asyncio.StreamWriter, _Flow]:
    loop = asyncio.get_running_loop()
    transport, flow = await loop.connect_write_pipe(protocol, pipe)
    return asyncio.StreamWriter(transport, flow, None, loop), flow


async def run_stdio(
    command: Sequence[str],
    make_front: FrontFactory,
    *,
    init_timeout: float = 30.0,
    request_timeout: float = 30.0,
) -> int:
    """Spawn the upstream and relay this process's stdio to it; the exit code."""
    host_out, host_protocol = await _pipe_writer(os.fdopen(1, "wb", 0, closefd=False), _HostOutput)
    # the upstream's stdin and stdout are pipes of the relay's own, each end read or
    # written by a protocol callback: no stream and no task wake per read in between
    child_stdin, upstream_stdin = os.pipe()
    upstream_stdout, child_stdout = os.pipe()
    try:
        upstream = StdioServer.spawn_on_pipes(
            command, sys.stderr, stdin=child_stdin, stdout=child_stdout
        )
    except (OSError, ValueError) as exc:
        os.close(upstream_stdin)
        os.close(upstream_stdout)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(
            f"registry proxy: the upstream {command[0]!r} does not start: {reason}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    relay = StdioRelay(
        upstream,
        os.fdopen(upstream_stdin, "wb", 0),
        os.fdopen(upstream_stdout, "rb", 0),
        host_out,
        make_front,
        init_timeout=init_timeout,
        request_timeout=request_timeout,
    )
    host_protocol.on_lost = relay.host_gone
    try:
        async with upstream:  # stopped on leaving, its stdout drained by the relay meanwhile
            code = await relay.run(_connect_host)
    finally:
        relay.close()
    with contextlib.suppress(Exception):
        await host_out.drain()
    return code
