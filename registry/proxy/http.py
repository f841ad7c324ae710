"""The streamable-HTTP relay: `registry proxy --namespace NS --upstream URL [--host H] [--port P]`.

The proxy serves MCP's streamable HTTP on H:P (any path) and relays every
request to URL, its headers and body unchanged, the answer streamed back as the
upstream sent it (JSON, or SSE events byte for byte), except:

* `tools/list`: answered from the toolset, holding only the tools the upstream
  lists to that session (the proxy asks it under an id of its own, with the
  session's headers);
* `tools/call`: gated; an accepted call goes on with the gated arguments (on
  2026-07-28 its `Mcp-Name` and `Mcp-Param-*` headers follow: the alias's target,
  the converted values), a refusal is answered in the revision's surface;
* `initialize`: the result declares `tools.listChanged`;
* a toolset swap puts `notifications/tools/list_changed` on each session's open
  GET stream and on every 2026-07-28 `subscriptions/listen` stream that asked for
  tool changes; a listen stream the upstream does not serve (-32601) is served by
  the proxy itself;
* a batch holding `tools/list` or `tools/call` is refused (400): they go one per request.

Sessions are the upstream's (`Mcp-Session-Id` passes both ways); requests
without one (2026-07-28 stateless mode) share one view of the upstream's tools.
`GET /healthz` is the proxy's own: 200 with the toolset digest it gates with.
An upstream that cannot be reached within the init timeout at start is one
line and exit code 1; later, a request it cannot take is answered 502.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, mcp_param_headers, x_mcp_header_map

from registry.proxy.access import Connected, ProxyError
from registry.proxy.front import (
    PROTOCOL_VERSION_META,
    Answer,
    Forward,
    LiveListing,
    ProxyFront,
    request_revision,
)
from registry.proxy.sse import EventSplitter, encode_event, json_message

__all__ = ["HttpRelay", "run_http"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_BODY = 64 * 1024 * 1024
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_SESSION = "mcp-session-id"
_METHOD = "mcp-method"
_NAME = "mcp-name"
_PARAM = "mcp-param-"
_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
_INTERNAL = "registry-proxy-"
_LIST_CHANGED = "notifications/tools/list_changed"
_METHOD_NOT_FOUND = -32601
_MAX_SESSIONS = 10_000
_UPSTREAM_ERROR = -32603
_GATED = frozenset({"tools/list", "tools/call"})


@dataclass
class _Session:
    """What the relay knows of one upstream session (or of the stateless requests)."""

    live: LiveListing = field(default_factory=LiveListing)
    revision: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # the last request's, for our own
    streams: set[asyncio.Queue[bytes | None]] = field(default_factory=set)  # GET streams
    refresh: asyncio.Task[dict[str, Any] | None] | None = None
    sse: bool = False  # the upstream answers this session's POSTs as event streams


@dataclass
class _Listen:
    queue: asyncio.Queue[bytes | None]
    subscription: Any
    wants_tools: bool


def _session_key(headers: dict[str, str]) -> tuple[str | None, str | None]:
    session = headers.get(_SESSION)
    return (session, None) if session else (None, headers.get("authorization"))


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _forwarded(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k not in _HOP}


def _response_headers(response: httpx.Response, *, raw: bool) -> list[tuple[bytes, bytes]]:
    out = []
    for key, value in response.headers.multi_items():
        lower = key.lower()
        if lower in _HOP and not (raw and lower == "content-length"):
            continue
        out.append((lower.encode("latin-1"), value.encode("latin-1")))
    return out


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    out = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    out += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": data})


def _rpc(request_id: Any, answer: Answer) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if answer.error is not None:
        out["error"] = answer.error
    else:
        out["result"] = answer.result
    return out


def _upstream_failed(request_id: Any, exc: Exception) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": _UPSTREAM_ERROR,
            "message": f"registry proxy: the upstream cannot be reached: {type(exc).__name__}: "
            f"{exc}",
        },
    }


class HttpRelay:
    """The ASGI application (see the module docstring)."""

    def __init__(self, upstream: str, front: ProxyFront, connected: Connected) -> None:
        self.upstream = upstream
        self.front = front
        self.connected = connected
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=10.0, read=None, write=30.0, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )
        self.sessions: dict[tuple[str | None, str | None], _Session] = {}
        self.listens: dict[int, _Listen] = {}
        self._seq = 0
        self._unsubscribe: Callable[[], None] | None = None
        subscribe = getattr(connected.source, "subscribe", None)
        if callable(subscribe):
            self._unsubscribe = subscribe(self._toolset_swapped)

    async def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        for session in self.sessions.values():
            for queue in session.streams:
                queue.put_nowait(None)
        for listen in self.listens.values():
            listen.queue.put_nowait(None)
        await self.client.aclose()
        await self.connected.close()

    def _session(self, headers: dict[str, str]) -> _Session:
        """The relay's view of the upstream session a request belongs to: its
        `Mcp-Session-Id`, or (stateless) its credentials, since an upstream may list
        other tools to other callers. The oldest views go past `_MAX_SESSIONS`."""
        key = _session_key(headers)
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = _Session()
            while len(self.sessions) > _MAX_SESSIONS:
                self.sessions.pop(next(iter(self.sessions)))
        return session

    # ------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = _headers(scope)
        if scope["path"] == "/healthz" and scope["method"] == "GET":
            await _json(send, 200, {"status": "ok", "toolset": self.front.toolset.digest})
            return
        if scope["method"] == "POST":
            await self._post(scope, headers, receive, send)
            return
        if scope["method"] == "DELETE":
            self.sessions.pop(_session_key(headers), None)
        await self._relay(
            scope["method"], headers, None, receive, send, watch=scope["method"] == "GET"
        )

    async def _post(
        self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        body = await _read_body(receive)
        if body is None:
            await _json(
                send,
                413,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32600,
                        "message": f"registry proxy: a request body over {MAX_BODY} bytes",
                    },
                },
            )
            return
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        if isinstance(message, list) and any(
            isinstance(m, dict) and m.get("method") in _GATED for m in message
        ):
            await _json(
                send,
                400,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32600,
                        "message": "registry proxy: send tools/list and tools/call one per "
                        "request, not in a batch",
                    },
                },
            )
            return
        if not isinstance(message, dict) or "id" not in message:
            await self._relay("POST", headers, body, receive, send)
            return
        method = message.get("method")
        session = self._session(headers)
        if method in _GATED or method == "subscriptions/listen":
            session.headers = _forwarded(headers)  # for a re-read the upstream asks for
        if method == "tools/call":
            await self._call(message, headers, session, receive, send)
        elif method == "tools/list":
            await self._list(message, headers, session, send)
        elif method == "initialize":
            await self._initialize(message, headers, body, send)
        elif method == "subscriptions/listen":
            await self._listen(message, headers, body, receive, send)
        else:
            await self._relay("POST", headers, body, receive, send)

    # ------------------------------------------------------------ relaying

    async def _relay(
        self,
        method: str,
        headers: dict[str, str],
        body: bytes | None,
        receive: Receive,
        send: Send,
        *,
        watch: bool = False,
        queue: asyncio.Queue[bytes | None] | None = None,
    ) -> None:
        """One request to the upstream, its answer streamed back unchanged. `watch`:
        a GET stream of the session (list_changed injected; the upstream's noticed)."""
        request = self.client.build_request(
            method, self.upstream, headers=_forwarded(headers), content=body
        )
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            await _json(send, 502, _upstream_failed(None, exc))
            return
        try:
            sse = response.headers.get("content-type", "").startswith("text/event-stream")
            raw = not (sse and (watch or queue is not None))
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": _response_headers(response, raw=raw),
                }
            )
            if raw:
                await self._stream_raw(response, receive, send)
                return
            session = self._session(headers)
            if queue is None:
                queue = asyncio.Queue()
                session.streams.add(queue)
            try:
                await self._stream_events(response, receive, send, queue, session)
            finally:
                session.streams.discard(queue)
        finally:
            await response.aclose()

    async def _stream_raw(self, response: httpx.Response, receive: Receive, send: Send) -> None:
        async def pump() -> None:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

        await _until_disconnect(pump(), receive)

    async def _stream_events(
        self,
        response: httpx.Response,
        receive: Receive,
        send: Send,
        queue: asyncio.Queue[bytes | None],
        session: _Session,
    ) -> None:
        """The upstream's events and the proxy's own, whole events interleaved."""

        async def read() -> None:
            splitter = EventSplitter()
            try:
                async for chunk in response.aiter_raw():
                    for event in splitter.feed(chunk):
                        message = json_message(event)
                        if isinstance(message, dict) and message.get("method") == _LIST_CHANGED:
                            self._upstream_list_changed(session)
                        await queue.put(event)
                rest = splitter.rest()
                if rest:
                    await queue.put(rest)
            except httpx.HTTPError:
                pass
            await queue.put(None)

        async def write() -> None:
            reader = asyncio.create_task(read())
            try:
                while (event := await queue.get()) is not None:
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader

        await _until_disconnect(write(), receive)

    # ------------------------------------------------------------ the gated methods

    async def _call(
        self,
        message: dict[str, Any],
        headers: dict[str, str],
        session: _Session,
        receive: Receive,
        send: Send,
    ) -> None:
        request_id = message.get("id")
        params = message.get("params")
        revision = request_revision(params, session.revision)
        if self.front.pin and session.live.tools is None:
            error = await self._fetch_live(session, params, headers)
            if error is not None:
                await self._answer(send, request_id, Answer(error=error), headers, session)
                return
        outcome = self.front.call(params, revision, session.live)
        if not isinstance(outcome, Forward):
            await self._answer(send, request_id, outcome, headers, session)
            return
        message = dict(message)
        message["params"] = outcome.params
        headers = dict(headers)
        if _METHOD in headers:  # 2026-07-28: the routing headers follow the gated call
            headers[_NAME] = outcome.params["name"]
            for key in [k for k in headers if k.startswith(_PARAM)]:
                del headers[key]
            schema = self.front.gated.input_schema(outcome.params["name"]) or {}
            arguments = outcome.params.get("arguments") or {}
            mirrored = mcp_param_headers(x_mcp_header_map(schema), arguments)
            headers.update({k.lower(): v for k, v in mirrored.items()})
        body = json.dumps(message, separators=(",", ":")).encode()
        await self._relay("POST", headers, body, receive, send)

    async def _list(
        self, message: dict[str, Any], headers: dict[str, str], session: _Session, send: Send
    ) -> None:
        request_id = message.get("id")
        params = message.get("params")
        cursor = params.get("cursor") if isinstance(params, dict) else None
        if cursor is None or session.live.tools is None:
            error = await self._fetch_live(session, params, headers)
            if error is not None:
                await self._answer(send, request_id, Answer(error=error), headers, session)
                return
        revision = request_revision(params, session.revision)
        answer = self.front.list_tools(params, revision, session.live)
        await self._answer(send, request_id, answer, headers, session)

    async def _answer(
        self,
        send: Send,
        request_id: Any,
        answer: Answer,
        headers: dict[str, str],
        session: _Session,
    ) -> None:
        """The proxy's own answer, framed as the upstream frames its answers (one SSE
        event where it streams and the client takes streams, else JSON)."""
        message = _rpc(request_id, answer)
        if session.sse and "text/event-stream" in headers.get("accept", ""):
            data = encode_event(message)
            start = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
            await send({"type": "http.response.start", "status": 200, "headers": start})
            await send({"type": "http.response.body", "body": data})
            return
        status = 200
        if answer.error is not None and _METHOD in headers:  # 2026-07-28 maps codes to statuses
            status = ERROR_CODE_HTTP_STATUS.get(int(answer.error.get("code", 0)), 200)
        await _json(send, status, message)

    async def _fetch_live(
        self, session: _Session, params: Any, request_headers: dict[str, str]
    ) -> dict[str, Any] | None:
        """The upstream's own tools/list for this session (every page); an error object
        if it answered one."""
        envelope = {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict):
            envelope = {k: v for k, v in meta.items() if k.startswith("io.modelcontextprotocol/")}
        # the caller's own headers (its credentials, its session), never another's
        forwarded = _forwarded(request_headers)
        headers = {k: v for k, v in forwarded.items() if not k.startswith(_PARAM)}
        headers.pop(_NAME, None)
        if _METHOD in headers:
            headers[_METHOD] = "tools/list"
        headers["accept"] = "application/json, text/event-stream"
        headers["content-type"] = "application/json"
        tools: list[Any] = []
        cursor: Any = None
        for _ in range(1000):
            self._seq += 1
            request_id = f"{_INTERNAL}{self._seq}"
            body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
            page_params: dict[str, Any] = {"_meta": envelope} if envelope else {}
            if cursor is not None:
                page_params["cursor"] = cursor
            body["params"] = page_params
            try:
                reply, session.sse = await self._ask(headers, body, request_id)
            except (httpx.HTTPError, ValueError) as exc:
                return {
                    "code": _UPSTREAM_ERROR,
                    "message": f"registry proxy: the upstream's "
                    f"tools/list failed: {type(exc).__name__}: {exc}",
                }
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
        revision = envelope.get(PROTOCOL_VERSION_META, session.revision)
        self.front.set_live(session.live, tools, revision if isinstance(revision, str) else None)
        return None

    async def _ask(
        self, headers: dict[str, str], body: dict[str, Any], request_id: str
    ) -> tuple[dict[str, Any], bool]:
        """One request of the proxy's own; the JSON-RPC answer with its id (JSON or SSE)."""
        data = json.dumps(body).encode()
        async with self.client.stream(
            "POST", self.upstream, headers=headers, content=data
        ) as response:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                splitter = EventSplitter()
                async for chunk in response.aiter_bytes():
                    for event in splitter.feed(chunk):
                        message = json_message(event)
                        if isinstance(message, dict) and message.get("id") == request_id:
                            return message, True
                raise ValueError("the event stream ended without an answer")
            content = await response.aread()
            message = json.loads(content) if content else None
            if not isinstance(message, dict):
                raise ValueError(f"HTTP {response.status_code} without a JSON-RPC answer")
            return message, False

    # ------------------------------------------------------------ initialize, listen

    async def _initialize(
        self, message: dict[str, Any], headers: dict[str, str], body: bytes, send: Send
    ) -> None:
        """Read the upstream's whole answer, declare `tools.listChanged`, answer as it did."""
        request_id = message.get("id")
        try:
            async with self.client.stream(
                "POST", self.upstream, headers=_forwarded(headers), content=body
            ) as response:
                content = await response.aread()
        except httpx.HTTPError as exc:
            await _json(send, 502, _upstream_failed(request_id, exc))
            return
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        events = EventSplitter().feed(content + b"\n\n") if sse else [content]
        out = b""
        for event in events:
            value = json_message(event) if sse else _loads(event)
            if isinstance(value, dict) and value.get("id") == request_id and "result" in value:
                result = value["result"]
                created = {**headers, _SESSION: response.headers.get(_SESSION, "")}
                session = self._session(created if created[_SESSION] else headers)
                if isinstance(result, dict):
                    version = result.get("protocolVersion")
                    session.revision = version if isinstance(version, str) else None
                    tools = (result.get("capabilities") or {}).get("tools")
                    if isinstance(tools, dict):
                        tools["listChanged"] = True
                out += encode_event(value) if sse else json.dumps(value).encode()
                continue
            out += event
        headers_out = [
            (k, v) for k, v in _response_headers(response, raw=False) if k != b"content-length"
        ]
        headers_out.append((b"content-length", str(len(out)).encode()))
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers_out}
        )
        await send({"type": "http.response.body", "body": out})

    async def _listen(
        self,
        message: dict[str, Any],
        headers: dict[str, str],
        body: bytes,
        receive: Receive,
        send: Send,
    ) -> None:
        """A 2026-07-28 listen stream: relayed with the proxy's list_changed put in;
        served by the proxy when the upstream answers -32601 (it serves none)."""
        request_id = message.get("id")
        params = message.get("params")
        wanted = params.get("notifications") if isinstance(params, dict) else None
        wants_tools = bool(isinstance(wanted, dict) and wanted.get("toolsListChanged"))
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        listen = _Listen(queue, request_id, wants_tools)
        self.listens[id(listen)] = listen
        try:
            request = self.client.build_request(
                "POST", self.upstream, headers=_forwarded(headers), content=body
            )
            try:
                response = await self.client.send(request, stream=True)
            except httpx.HTTPError as exc:
                await _json(send, 502, _upstream_failed(request_id, exc))
                return
            try:
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    await send(
                        {
                            "type": "http.response.start",
                            "status": response.status_code,
                            "headers": _response_headers(response, raw=False),
                        }
                    )
                    session = self._session(headers)
                    await self._stream_events(response, receive, send, queue, session)
                    return
                content = await response.aread()
            finally:
                await response.aclose()
            answer = _loads(content)
            error = answer.get("error") if isinstance(answer, dict) else None
            if wants_tools and isinstance(error, dict) and error.get("code") == _METHOD_NOT_FOUND:
                await self._serve_listen(request_id, queue, receive, send)
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": _response_headers(response, raw=True),
                }
            )
            await send({"type": "http.response.body", "body": content})
        finally:
            self.listens.pop(id(listen), None)

    async def _serve_listen(
        self,
        subscription: Any,
        queue: asyncio.Queue[bytes | None],
        receive: Receive,
        send: Send,
    ) -> None:
        """The proxy's own listen stream of tool changes: its ack, then each swap."""
        ack = {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "notifications": {"toolsListChanged": True},
                "_meta": {_SUBSCRIPTION_ID: subscription},
            },
        }
        start = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": start})

        async def serve() -> None:
            await send({"type": "http.response.body", "body": encode_event(ack), "more_body": True})
            while (event := await queue.get()) is not None:
                await send({"type": "http.response.body", "body": event, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

        await _until_disconnect(serve(), receive)

    # ------------------------------------------------------------ changes

    def _upstream_list_changed(self, session: _Session) -> None:
        """The upstream said its tools changed: pin mode compares its listing again."""
        if not self.front.pin or session.live.tools is None:
            return
        if session.refresh is not None and not session.refresh.done():
            return
        session.refresh = asyncio.get_running_loop().create_task(
            self._fetch_live(session, {}, session.headers)
        )

    def _toolset_swapped(self, _toolset: Any) -> None:
        event = encode_event({"jsonrpc": "2.0", "method": _LIST_CHANGED})
        for session in self.sessions.values():
            self.front.recompare(session.live)
            if session.revision is not None:
                for queue in session.streams:
                    queue.put_nowait(event)
        for listen in self.listens.values():
            if listen.wants_tools:
                stamped = {
                    "jsonrpc": "2.0",
                    "method": _LIST_CHANGED,
                    "params": {"_meta": {_SUBSCRIPTION_ID: listen.subscription}},
                }
                listen.queue.put_nowait(encode_event(stamped))


def _loads(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


async def _until_disconnect(work: Awaitable[None], receive: Receive) -> None:
    """Run `work` (a response being streamed) until it ends or the client goes away."""
    task = asyncio.ensure_future(work)

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, watcher):
            pending.cancel()
        await asyncio.gather(task, watcher, return_exceptions=True)
    if task.done() and not task.cancelled() and task.exception() is not None:
        exc = task.exception()
        if not isinstance(exc, OSError | httpx.HTTPError):
            raise exc  # type: ignore[misc]


# ---------------------------------------------------------------- the server around it


async def _reachable(upstream: str, timeout: float) -> None:
    """Wait for the upstream to answer HTTP at all (a sidecar starts beside its server)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with httpx.AsyncClient(timeout=5.0) as client:
        while True:
            try:
                await client.get(
                    upstream,
                    headers={"accept": "text/event-stream"},
                    extensions={"timeout": {"read": 1.0}},
                )
                return
            except httpx.ReadTimeout:
                return  # it answered the connection; a stream that holds is a live server
            except httpx.HTTPError as exc:
                if loop.time() >= deadline:
                    raise ProxyError(
                        f"the upstream {upstream} is unreachable: {type(exc).__name__}: {exc}"
                    ) from exc
            await asyncio.sleep(0.2)


def _listen_socket(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family = infos[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(512)
    except OSError as exc:
        raise ProxyError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.setblocking(False)
    return sock


async def run_http(upstream: str, host: str, port: int, options: Any) -> int:
    """Serve until SIGINT or SIGTERM; the exit code."""
    import uvicorn

    from registry.proxy.serve import make_front

    sock = _listen_socket(host, port)
    try:
        await _reachable(upstream, options.init_timeout)
        front, connected = await make_front(options)
    except ProxyError:
        sock.close()
        raise
    relay = HttpRelay(upstream, front, connected)
    config = uvicorn.Config(
        relay, log_level="warning", lifespan="off", timeout_graceful_shutdown=2, access_log=False
    )
    server = uvicorn.Server(config)
    print(
        f"registry proxy: serving {front.toolset.namespace} on http://{host}:{port} "
        f"in front of {upstream}",
        file=sys.stderr,
        flush=True,
    )
    try:
        await server.serve(sockets=[sock])
    finally:
        await relay.close()
    return 0
