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
Requests the host is still waiting on are answered with an error first, so the
host never hangs. Host EOF on stdin ends the proxy (exit 0), SIGINT or SIGTERM
too (exit 130 or 143); the upstream's process group is stopped every time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

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


def _hashable(value: Any) -> bool:
    return isinstance(value, int | str)


class StdioRelay:
    """One host connection relayed to one upstream process (see the module docstring)."""

    def __init__(
        self,
        upstream: StdioServer,
        host_in: asyncio.StreamReader,
        host_out: asyncio.StreamWriter,
        make_front: FrontFactory,
        *,
        init_timeout: float = 30.0,
        request_timeout: float = 30.0,
    ) -> None:
        process = upstream.process
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._upstream_in = process.stdin
        self._upstream_stdout = process.stdout
        self._host_in = host_in
        self._host_out = host_out
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

    async def run(self) -> int:
        """Relay until the host leaves, the upstream fails or a signal comes; the exit code."""
        loop = asyncio.get_running_loop()
        self._front_task = loop.create_task(self._boot())
        pumps = [
            loop.create_task(self._guard(self._from_host())),
            loop.create_task(self._guard(self._from_upstream())),
        ]
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
            for task in [*pumps, *self._tasks]:
                task.cancel()
            await asyncio.gather(*pumps, *self._tasks, return_exceptions=True)
            if self.failure is not None:
                await self._answer_pending(self.failure)
            if self._unsubscribe is not None:
                self._unsubscribe()
            await self._close_front()
        if self.failure is not None:
            print(f"registry proxy: {self.failure}", file=sys.stderr, flush=True)
            return 1
        if self.signal is not None:
            return 128 + self.signal
        return 0

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
        except ProxyError as exc:
            self._fail(str(exc))
        except (BrokenPipeError, ConnectionResetError):
            self._done.set()  # the host is gone: nobody left to tell
        except Exception as exc:  # a bug must end the proxy loudly, never hang the host
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

    async def _to_upstream(self, line: bytes) -> None:
        try:
            await self._upstream_in.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ProxyError(self._exit_text("stopped reading its stdin")) from exc

    def _to_host(self, error: dict[str, Any] | None, request_id: Any, result: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        self._host_out.write(_encode(message) + b"\n")

    def _answer(self, request_id: Any, answer: Answer) -> None:
        self._to_host(answer.error, request_id, answer.result)

    # ------------------------------------------------------------ host -> upstream

    async def _from_host(self) -> None:
        """Lines from the host, relayed in order; what a read brings is written upstream
        in one write (pass-through costs a peek per message, not a write and a drain)."""
        reader = self._host_in
        buffer = b""
        while True:
            chunk = await reader.read(_CHUNK)
            if not chunk:
                if buffer.strip():
                    await self._host_lines([buffer + b"\n"])
                self._done.set()  # host EOF: the host is done with the server
                return
            buffer += chunk
            if b"\n" not in chunk:
                if len(buffer) > MAX_LINE:
                    raise ProxyError(f"the host sent a message longer than {MAX_LINE} bytes")
                continue
            *lines, buffer = buffer.split(b"\n")
            await self._host_lines([line + b"\n" for line in lines if line.strip()])

    async def _host_lines(self, lines: list[bytes]) -> None:
        out: list[bytes] = []
        for line in lines:
            forward = self._host_message(line)
            if forward is None:  # it has to wait (boot, a live listing): what came first goes first
                if out:
                    await self._to_upstream(b"".join(out))
                    out.clear()
                forward = await self._host_message_later(line)
            if forward:
                out.append(forward)
        if out:
            await self._to_upstream(b"".join(out))
        await self._host_out.drain()

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
        forward = await self._host_message_later(line)
        if forward:
            await self._to_upstream(forward)

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
        try:
            await self._to_upstream(_encode(body) + b"\n")
            return await asyncio.wait_for(future, self._request_timeout)
        except TimeoutError:
            return {
                "error": {
                    "code": _UPSTREAM_ERROR,
                    "message": f"registry proxy: the upstream did not answer {method} "
                    f"within {self._request_timeout:g} s",
                }
            }
        finally:
            self._internal.pop(request_id, None)

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

    async def _from_upstream(self) -> None:
        """Lines from the upstream, relayed in order, what a read brings in one write."""
        stream = self._upstream_stdout
        out = self._host_out
        buffer = b""
        while True:
            try:
                chunk = await stream.receive(_CHUNK)
            except (
                anyio.EndOfStream,
                anyio.BrokenResourceError,
                anyio.ClosedResourceError,
                ConnectionError,
                OSError,
            ):
                await self._upstream_gone()
                return
            buffer += chunk
            if b"\n" not in chunk:
                if len(buffer) > MAX_LINE:
                    raise ProxyError(
                        f"the upstream wrote a line longer than {MAX_LINE} bytes on stdout"
                    )
                continue
            *lines, buffer = buffer.split(b"\n")
            relayed = [self._upstream_line(line) for line in lines if line.strip()]
            out.write(b"".join(relayed))
            await out.drain()

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
            future = self._internal.get(request_id)
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
            self._host_out.write(_LIST_CHANGED)
        for subscription, wants_tools in self._listens.items():
            if wants_tools:
                notification = {
                    "jsonrpc": "2.0",
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": {_SUBSCRIPTION_ID: subscription}},
                }
                self._host_out.write(_encode(notification) + b"\n")


# ---------------------------------------------------------------- the process around it


async def _host_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """This process's stdin and stdout as asyncio streams (a thread reads a stdin that
    is a plain file, which an event loop cannot watch)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
    try:
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(0, "rb", 0, closefd=False),
        )
    except ValueError:
        _read_in_thread(reader, loop)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", 0, closefd=False)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


def _read_in_thread(reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    def pump() -> None:
        stdin = os.fdopen(0, "rb", 0, closefd=False)
        while chunk := stdin.read(65536):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="registry-proxy-stdin", daemon=True).start()


async def run_stdio(
    command: Sequence[str],
    make_front: FrontFactory,
    *,
    init_timeout: float = 30.0,
    request_timeout: float = 30.0,
) -> int:
    """Spawn the upstream and relay this process's stdio to it; the exit code."""
    try:
        upstream = await StdioServer.spawn(command, sys.stderr)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(
            f"registry proxy: the upstream {command[0]!r} does not start: {reason}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    async with upstream:
        host_in, host_out = await _host_streams()
        relay = StdioRelay(
            upstream,
            host_in,
            host_out,
            make_front,
            init_timeout=init_timeout,
            request_timeout=request_timeout,
        )
        code = await relay.run()
    with contextlib.suppress(Exception):
        await host_out.drain()
    return code
