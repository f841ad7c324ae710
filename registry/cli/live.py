"""A live MCP server's surface: its `initialize` result and every `tools/list` page.

    server = LiveServer.stdio(["python", "server.py"])     # or LiveServer.http(url)
    surface = read_surface(server, timeout=30)             # raises ServerFailure
    written = read_surface_then(server, 30, write)         # write(surface) as it exits
    surface.initialize                                     # as the registry stores it
    surface.tools                                          # definitions, by name

Spoken with the official `mcp` client (the `[mcp]` extra, imported here only):
`initialize` on the newest handshake revision the client offers, the
`initialized` notification, then `tools/list` page after page until no
`nextCursor`. Results are taken as the server sent them (the SDK still validates
them against the negotiated revision), not rebuilt from its models, so that a
definition keeps every field it was listed with. The gate's own `_meta` keys
(`schemaVersion`, `schemaHash`, added by a gated server's listing) are removed:
a gated server's capture is the definitions as they were registered, with equal
digests.

Every failure is one `ServerFailure` line naming the cause: the command cannot be
started, the server exits (or closes the connection) before answering, writes a
line on stdout that is not JSON-RPC, answers with an error or a malformed result,
declares no tools, lists a tool the registry cannot hold, or takes longer than the
timeout (one deadline over the whole conversation, from the server's spawn). A
stdio server's stderr is kept aside and its last line quoted when it fails.

A stdio server runs with this process's environment and working directory. It is
spawned before the SDK is imported (`registry.cli.stdio_server`), so that its start
and the import overlap, and `read_surface_then` hands the surface on while the
server exits.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shlex
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

import msgspec

from registry import __version__
from registry.definitions import DefinitionError, validate_definition
from registry.policy.capabilities import CapabilityError, parse_initialize

__all__ = [
    "GATE_META_KEYS",
    "LiveServer",
    "ServerFailure",
    "Surface",
    "read_surface",
    "read_surface_then",
]

GATE_META_KEYS = ("schemaVersion", "schemaHash")

_T = TypeVar("_T")
# the mcp SDK logs a traceback for every line it cannot parse; the failure line says it
_SDK_LOGGERS = ("mcp", "client", "httpx", "httpx2", "httpcore")


class ServerFailure(Exception):
    """The server could not be read; `str()` is one line naming the cause."""


@dataclass(frozen=True)
class LiveServer:
    """A server spoken to over stdio (`command`) or streamable HTTP (`url`)."""

    command: tuple[str, ...] = ()
    url: str | None = None

    @classmethod
    def stdio(cls, command: list[str]) -> LiveServer:
        return cls(command=tuple(command))

    @classmethod
    def http(cls, url: str) -> LiveServer:
        return cls(url=url)

    @property
    def label(self) -> str:
        return self.url if self.url is not None else shlex.join(self.command)


@dataclass(frozen=True)
class Surface:
    """What a server lists: `initialize` as the registry stores it (seed 004's fixture:
    `protocolVersion`, `capabilities`, `serverInfo`, `instructions`), and each tool's
    definition (gate `_meta` keys removed), sorted by name."""

    initialize: dict[str, Any]
    tools: list[dict[str, Any]]
    pages: int


def read_surface(server: LiveServer, timeout: float) -> Surface:
    """Start (or reach) the server, read its surface, stop it. Raises ServerFailure."""
    return read_surface_then(server, timeout, _itself)


def read_surface_then(server: LiveServer, timeout: float, use: Callable[[Surface], _T]) -> _T:
    """`use(surface)`, called as soon as the surface is read: a stdio server exits
    meanwhile (`registry capture` writes its files while it does). The server is gone
    when this returns. Raises ServerFailure, or what `use` raised."""
    for package in ("anyio", "mcp"):
        if importlib.util.find_spec(package) is None:
            raise ServerFailure(_needs_mcp(package))
    import anyio

    loggers = [logging.getLogger(name) for name in _SDK_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            conversation = _Conversation(server, timeout, errlog)
            try:
                return anyio.run(conversation.run, use)
            except ServerFailure as failure:  # the server is stopped: its stderr is complete
                raise ServerFailure(f"{failure}{conversation.last_words()}") from None
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class _Conversation:
    def __init__(self, server: LiveServer, timeout: float, errlog: TextIO) -> None:
        self.server = server
        self.timeout = timeout
        self.errlog = errlog
        self.step = "initialize"
        self.fault: BaseException | None = None

    async def run(self, use: Callable[[Surface], _T]) -> _T:
        async with AsyncExitStack() as running:  # a server spawned here is stopped on leaving
            surface = await self._read(running)
            return use(surface)

    async def _read(self, running: AsyncExitStack) -> Surface:
        import anyio

        if not self._spawns_server:
            _import_sdk()  # a server already up: the import is not its time
        try:
            with anyio.fail_after(self.timeout):
                outcome = await self._converse(running)
        except TimeoutError:
            raise self._failure(f"no answer to {self.step} within {self.timeout:g} s") from None
        except Exception as error:  # the transports raise their faults in task groups
            raise self._unexpected(error) from None
        if self.fault is not None:
            raise self._fault_failure(self.fault)
        if outcome is None:
            raise self._failure(f"{self.step} was cut short")
        if isinstance(outcome, ServerFailure):
            raise outcome
        return outcome

    async def _converse(self, running: AsyncExitStack) -> Surface | ServerFailure | None:
        """The surface, or the failure met on the way; None when a transport fault
        (`self.fault`) cut the conversation short."""
        import anyio

        transport = await self._transport(running)
        _import_sdk()  # while a stdio server boots: the two overlap
        from mcp.client.session import ClientSession

        async with transport as (read, write):
            scope = anyio.CancelScope()

            async def on_message(message: Any) -> None:
                if isinstance(message, Exception) and self.fault is None:
                    self.fault = message
                    scope.cancel()

            session = ClientSession(
                read, write, message_handler=on_message, client_info=_client_info()
            )
            async with session:
                with scope:
                    try:
                        return await self._surface(session)
                    except ServerFailure as failure:
                        return failure
        return None

    @property
    def _spawns_server(self) -> bool:
        """A stdio server spawned by `StdioServer` (before the SDK is imported)."""
        return self.server.url is None and sys.platform != "win32"

    async def _transport(self, running: AsyncExitStack) -> AbstractAsyncContextManager[Any]:
        if self.server.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.server.url)
        if not self._spawns_server:  # Windows: the SDK's own spawn (a Job object)
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command, *args = self.server.command
            parameters = StdioServerParameters(command=command, args=args, env=dict(os.environ))
            return stdio_client(parameters, errlog=self.errlog)
        from registry.cli.stdio_server import StdioServer

        server = await StdioServer.spawn(self.server.command, self.errlog)
        await running.enter_async_context(server)  # no checkpoint in between: always stopped
        return server.session_streams()

    def _unexpected(self, error: BaseException) -> ServerFailure:
        """One line for an exception the transport raised (in an exception group)."""
        while isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
        if isinstance(error, ServerFailure):
            return error
        if isinstance(error, OSError) and self.server.url is None and self.step == "initialize":
            what = self.server.command[0] if self.server.command else "the server"
            return ServerFailure(f"cannot start {what}: {error.strerror or error}")
        if self.server.url is not None and self.step == "initialize":
            return self._failure(f"cannot reach the server: {_describe(error)}")
        return self._failure(f"{self.step} failed: {_describe(error)}")

    async def _surface(self, session: Any) -> Surface:
        from mcp import types
        from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
        from pydantic import TypeAdapter
        from pydantic import ValidationError as PydanticError

        raw = TypeAdapter(dict[str, Any])
        request = types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocol_version=LATEST_HANDSHAKE_VERSION,
                capabilities=types.ClientCapabilities(),
                client_info=_client_info(),
            )
        )
        answer = await self._ask(session.send_request(request, raw), PydanticError)
        try:
            result = types.InitializeResult.model_validate(answer, by_name=False)
        except PydanticError as error:
            raise self._failure(f"the initialize result is malformed: {_first(error)}") from None
        if result.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise self._failure(
                f"the server answered protocol version {result.protocol_version!r}, "
                "which the mcp client does not speak"
            )
        try:
            captured = parse_initialize(answer)
        except CapabilityError as error:
            raise self._failure(f"the initialize result is malformed: {error}") from None
        if "tools" not in captured.capabilities:
            raise self._failure(
                "the server declares no `tools` capability in its initialize result: "
                "nothing to capture"
            )
        session.adopt(result)
        await session.send_notification(types.InitializedNotification())

        tools: dict[str, dict[str, Any]] = {}
        cursor: str | None = None
        seen: set[str] = set()
        page = 0
        while True:
            page += 1
            self.step = f"tools/list (page {page})"
            params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            listing = await self._ask(
                session.send_request(types.ListToolsRequest(params=params), raw), PydanticError
            )
            for tool in listing.get("tools", []):
                definition = _as_registered(tool)
                self._check(definition)
                name = definition["name"]
                if name in tools:
                    raise self._failure(f"{self.step} lists tool {name!r} a second time")
                tools[name] = definition
            cursor = listing.get("nextCursor")
            if cursor is None:
                break
            if cursor in seen:
                raise self._failure(f"{self.step} answers cursor {cursor!r} a second time")
            seen.add(cursor)
        initialize = msgspec.to_builtins(captured)
        return Surface(initialize, [tools[name] for name in sorted(tools)], page)

    async def _ask(self, call: Awaitable[_T], malformed: type[Exception]) -> _T:
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED

        try:
            return await call
        except MCPError as error:
            if error.code == CONNECTION_CLOSED:
                gone = "exited (or closed its stdout)" if self.server.url is None else "hung up"
                raise self._failure(f"the server {gone} before answering {self.step}") from None
            raise self._failure(
                f"the server answered {self.step} with error {error.code}: "
                f"{_one_line(error.message)}"
            ) from None
        except malformed as error:
            raise self._failure(f"the {self.step} result is malformed: {_first(error)}") from None

    def _check(self, definition: dict[str, Any]) -> None:
        try:
            validate_definition(definition)
        except DefinitionError as error:
            where = f" {error.pointer}:" if error.pointer else ""
            name = _shorten(repr(definition.get("name")))
            raise self._failure(
                f"{self.step}: tool {name} is not a definition the registry can hold:"
                f"{where} {_one_line(error.message)}"
            ) from None

    def _failure(self, message: str) -> ServerFailure:
        return ServerFailure(f"{self.server.label}: {message}")

    def _fault_failure(self, fault: BaseException) -> ServerFailure:
        """A fault the transport reported: a line that is not JSON-RPC, or its own error."""
        from pydantic import ValidationError as PydanticError

        if not isinstance(fault, PydanticError):
            return self._unexpected(fault)
        errors = fault.errors()
        line = errors[0].get("input") if errors else None
        shown = _shorten(line if isinstance(line, str) else repr(line))
        return self._failure(
            f"during {self.step}, the server wrote a line on stdout that is not JSON-RPC: {shown!r}"
        )

    def last_words(self) -> str:
        """` (its stderr ended: '...')`: a stdio server's last line on stderr."""
        if self.server.url is not None:
            return ""
        self.errlog.seek(0)
        lines = [line.strip() for line in self.errlog.read().splitlines() if line.strip()]
        return f" (its stderr ended: {_shorten(lines[-1])!r})" if lines else ""


def _import_sdk() -> None:
    try:
        import mcp.client.session  # noqa: F401
    except ImportError as error:
        raise ServerFailure(_needs_mcp(error.name or str(error))) from None


def _needs_mcp(missing: str) -> str:
    return (
        f"reading a live server needs the [mcp] extra ({missing}): "
        "pip install 'mcp-tool-registry[mcp]'"
    )


def _itself(surface: Surface) -> Surface:
    return surface


def _client_info() -> Any:
    from mcp import types

    return types.Implementation(name="mcp-tool-registry", version=__version__)


def _as_registered(tool: dict[str, Any]) -> dict[str, Any]:
    """The definition as it was registered: the gate's `_meta` keys removed (and `_meta`
    itself when nothing else is left in it)."""
    definition = dict(tool)
    meta = definition.get("_meta")
    if isinstance(meta, dict) and any(key in meta for key in GATE_META_KEYS):
        rest = {key: value for key, value in meta.items() if key not in GATE_META_KEYS}
        if rest:
            definition["_meta"] = rest
        else:
            del definition["_meta"]
    return definition


def _describe(error: BaseException) -> str:
    return (
        f"{type(error).__name__}: {_one_line(str(error))}" if str(error) else type(error).__name__
    )


def _first(error: Any) -> str:
    errors = error.errors() if hasattr(error, "errors") else []
    if not errors:
        return _one_line(str(error))
    first = errors[0]
    where = "/" + "/".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {_one_line(first.get('msg', ''))}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _shorten(text: str, width: int = 100) -> str:
    text = _one_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"
