"""`registry serve`: the API on granian (default) or uvicorn, on an embedded PostgreSQL by default.

    run_server(Settings.from_env())               # blocks until SIGINT or SIGTERM
    run_server(settings, server="uvicorn")

Start-up, in order, each failure a `ServeError` with one line for the user
(`registry serve` prints it and exits 2):

1. the listening address is checked first (port in use, address not
   available), so a taken port costs no database start;
2. without `database_url`: the data directory (default `./.registry`) is
   created and probed for writing, the embedded PostgreSQL starts under it
   (`registry.store.embedded`), and the database `registry` is created in it
   on first start. The registry's data lives in that database rather than in
   `postgres`, the maintenance database every cluster has, so that
   `psql ... registry` shows the registry alone and the database can be
   dropped and recreated without touching the cluster;
3. one connection checks that the database answers and applies pending
   migrations (a changed checksum of an applied file stops here with the
   `MigrationError` message); the app's lifespan then finds nothing left to do;
4. the app (`registry.api.app`) is served on `host:port`; a line
   `{"event": "serving", "url": ...}` is logged once the lifespan has started
   (pool, LISTEN connection).

Connections: at most `Settings.max_connections` are held open at once (by
default what the file-descriptor limit leaves, `registry.api.limits`); with
granian a connection past it waits in the listen backlog until one closes.
Each second the listening socket's accept queue is read: connections still
waiting on two checks in a row mean the limit is reached (counted in
`registry_limit_reached_total{limit="connections"}`, a warning at most once a
minute). uvicorn answers 503 past its limit instead.

Shutdown, on SIGINT or SIGTERM: long-polls of the toolset (`?wait=`) end at
once (`registry.api.longpoll`: a request still waiting is answered 304 with the
caller's own ETag, so
SDK watchers re-poll, on another replica if there is one; a long-poll that
arrives while draining gets 503 `not-ready` with `Retry-After: 1`); the
server stops accepting connections and lets requests in flight finish (up to
`GRACE_SECONDS`); the app's lifespan stops the LISTEN connection and closes
the pool; then the embedded PostgreSQL, if any, is stopped (fast mode). The
process exits 0.

The ASGI server: granian (Rust HTTP stack, one worker in this process,
embedded in our event loop) was measured against uvicorn by
`bench/asgi_bench.py`; see docs/figures.md for the figures. uvicorn stays
available (`--server uvicorn`). Both run one worker: the app is asynchronous
and holds a connection pool and a LISTEN connection, so a deployment scales
by replicas, which the LISTEN/NOTIFY design supports.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import urlsplit, urlunsplit

import msgspec
import structlog

from registry.api.settings import HEADER_READ_TIMEOUT, Settings

if TYPE_CHECKING:
    from registry.api.limits import LimitLog
    from registry.store.embedded import EmbeddedPostgres

__all__ = [
    "DEFAULT_SERVER",
    "EMBEDDED_DATABASE",
    "SERVERS",
    "ServeError",
    "build_app",
    "check_listen_address",
    "connect",
    "open_database",
    "prepare_database",
    "redact",
    "run_server",
    "serve_app",
]

SERVERS: Final = ("granian", "uvicorn")
DEFAULT_SERVER: Final = "granian"
EMBEDDED_DATABASE: Final = "registry"
GRACE_SECONDS: Final = 10.0  # requests in flight at shutdown get this long to finish
CONNECT_TIMEOUT: Final = 10.0
BACKLOG: Final = 2048
# Open connections held at once (granian's backpressure: a connection past it waits in
# the listen backlog until one closes; uvicorn's limit_concurrency answers 503) when the
# app says nothing (`ServedApp.bare`). The registry's own is `Settings.max_connections`,
# by default what the file-descriptor limit leaves (registry.api.limits).
MAX_CONNECTIONS: Final = 10_000
ACCEPT_CHECK_SECONDS: Final = 1.0
_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)

_log = structlog.get_logger("registry.server")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ServeError(Exception):
    """`serve` (or a verb that needs the database) cannot go on: one line for the user."""


class _Stopped(BaseException):
    """SIGINT or SIGTERM arrived while starting or stopping outside the event loop."""


# -- checks -----------------------------------------------------------------------


def check_listen_address(host: str, port: int) -> None:
    """ServeError unless `host:port` can be listened on now."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(f"cannot listen on {where}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServeError(
                    f"cannot listen on {where}: the port is in use "
                    "(choose another with --port or REGISTRY_PORT)"
                ) from None
            raise ServeError(f"cannot listen on {where}: {exc.strerror or exc}") from None


def _usable_data_dir(data_dir: str) -> Path:
    path = Path(data_dir).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)  # others may not list it
        with tempfile.TemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as exc:
        raise ServeError(
            f"data directory {path} is not writable: {exc.strerror or exc}"
            " (choose another with --data-dir or REGISTRY_DATA_DIR)"
        ) from None
    return path


def redact(dsn: str) -> str:
    """The URL without its password, for messages and logs."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return dsn
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- the database -------------------------------------------------------------------


async def connect(dsn: str, *, timeout: float = CONNECT_TIMEOUT) -> Any:
    """An asyncpg connection; ServeError naming the (redacted) URL when it cannot be had."""
    import asyncpg  # type: ignore[import-untyped, unused-ignore]

    try:
        return await asyncpg.connect(dsn, timeout=timeout)
    except TimeoutError:
        reason = f"no answer within {timeout:g} s"
    except ValueError as exc:  # a malformed URL
        reason = f"invalid URL: {exc}"
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        reason = str(exc) or type(exc).__name__
    raise ServeError(f"cannot connect to the database at {redact(dsn)}: {_one_line(reason)}")


async def prepare_database(dsn: str) -> list[str]:
    """Check the database answers and apply pending migrations; the names applied."""
    from registry.store.migrations import MigrationError, migrate

    conn = await connect(dsn)
    try:
        return await migrate(conn)
    except MigrationError as exc:
        raise ServeError(_one_line(str(exc))) from None
    finally:
        await conn.close()


async def _ensure_database(admin_dsn: str, name: str) -> None:
    conn = await connect(admin_dsn)
    try:
        exists = await conn.fetchval("SELECT true FROM pg_database WHERE datname = $1", name)
        if not exists:
            await conn.execute(f'CREATE DATABASE "{name}"')
            _log.info("database_created", database=name)
    finally:
        await conn.close()


def start_embedded(data_dir: str) -> tuple[EmbeddedPostgres, str]:
    """Start the embedded PostgreSQL under `data_dir`; returns it and the registry DSN."""
    from registry.store.embedded import EmbeddedPostgres, EmbeddedPostgresError
    from registry.store.roles import provision_app_role

    path = _usable_data_dir(data_dir)
    try:
        server = EmbeddedPostgres(path)
        server.start()
    except EmbeddedPostgresError as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]
        # A multi-line message carries the server log's tail: point at the log instead.
        where = f" (see {path / 'pgdata' / 'postgresql.log'})" if len(lines) > 1 else ""
        raise ServeError(
            f"the embedded PostgreSQL under {path} did not start: {lines[0]}{where}"
        ) from None
    try:
        asyncio.run(_ensure_database(server.dsn(), EMBEDDED_DATABASE))
        # The registry works as its own role, owner of its tables and nothing more.
        asyncio.run(
            provision_app_role(
                server.dsn(EMBEDDED_DATABASE), EMBEDDED_DATABASE, server.app_password()
            )
        )
    except BaseException:
        server.stop()
        raise
    _log.info("embedded_postgres_started", data_dir=str(path), port=server.port)
    return server, server.app_dsn(EMBEDDED_DATABASE)


def running_embedded_dsn(data_dir: str) -> str | None:
    """The registry DSN of an embedded PostgreSQL already running under `data_dir`
    (started by `registry serve`), from its `postmaster.pid` (line 4 is the port)
    and the registry role's password file; None when none is running."""
    from registry.store.embedded import APP_PASSWORD_FILE
    from registry.store.roles import APP_ROLE

    base = Path(data_dir)
    try:
        lines = (base / "pgdata" / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
        password = (base / APP_PASSWORD_FILE).read_text().strip()
        os.kill(pid, 0)
    except (OSError, IndexError, ValueError):
        return None
    return f"postgresql://{APP_ROLE}:{password}@127.0.0.1:{port}/{EMBEDDED_DATABASE}"


def require_embedded_data(data_dir: str) -> None:
    """Refuse, in one line, a data directory that holds no registry: only `serve`
    creates one, so that a verb run in the wrong directory never builds a second,
    empty registry beside the real one."""
    path = Path(data_dir).expanduser()
    if not (path / "pgdata" / "PG_VERSION").is_file():
        raise ServeError(
            f"no registry data directory at {path.resolve()} (no pgdata/ there): "
            "pass --data-dir (REGISTRY_DATA_DIR) where `registry serve` keeps its data, "
            "or --database-url; only `registry serve` creates a new one"
        )


@contextlib.contextmanager
def open_database(settings: Settings) -> Iterator[str]:
    """The database URL to work on: `settings.database_url`, or the embedded
    PostgreSQL under `settings.data_dir`, started for the block and stopped after."""
    if settings.database_url is not None:
        yield settings.database_url
        return
    running = running_embedded_dsn(settings.data_dir)
    if running is not None:  # `registry serve` has it up: work on that server
        yield running
        return
    require_embedded_data(settings.data_dir)
    with _signals_raise():
        server = None
        try:
            server, dsn = start_embedded(settings.data_dir)
            yield dsn
        finally:
            _ignore_signals()
            if server is not None:
                server.stop()


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGINT/SIGTERM raise `_Stopped` in the block (so `finally` stops PostgreSQL)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Stopped(signum)

    previous = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    for sig in _SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _ignore_signals() -> None:
    # Already stopping: a second signal must not cut the embedded server's shutdown short.
    for sig in _SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


# -- the app as served -----------------------------------------------------------------


class _Lifecycle:
    """The innermost ASGI layer: reports the lifespan start-up, ends long-polls at shutdown."""

    def __init__(self, app: Any, on_drain: Callable[[], None] | None = None) -> None:
        self.app = app
        self.startup_error: str | None = None
        self._started = asyncio.Event()
        self._failed = asyncio.Event()
        self._on_drain = on_drain

    def __getattr__(self, name: str) -> Any:  # the wrapped Litestar app's attributes
        return getattr(self.app, name)

    def drain(self) -> None:
        """Shutdown begins: long-polls end now (`registry.api.longpoll.LongPolls.drain`)."""
        if self._on_drain is not None:
            self._on_drain()

    async def wait_started(self) -> bool:
        """True once the lifespan has started, False when it failed."""
        started = asyncio.ensure_future(self._started.wait())
        failed = asyncio.ensure_future(self._failed.wait())
        try:
            await asyncio.wait((started, failed), return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
            failed.cancel()
        return self._started.is_set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, self._lifespan_send(send))
        else:
            await self.app(scope, receive, send)

    def _lifespan_send(self, send: Send) -> Send:
        async def watched(message: dict[str, Any]) -> None:
            kind = message.get("type")
            if kind == "lifespan.startup.complete":
                self._started.set()
            elif kind == "lifespan.startup.failed":
                lines = str(message.get("message") or "").strip().splitlines()
                self.startup_error = lines[-1] if lines else "the app did not start"
                self._failed.set()
            await send(message)

        return watched


class ServedApp:
    """What `serve_app` runs: `asgi` (the outermost layer) and its `_Lifecycle` layer;
    `max_connections` and, to hear of connections left waiting, `limit_log`."""

    def __init__(
        self,
        asgi: Any,
        lifecycle: _Lifecycle,
        *,
        max_connections: int = MAX_CONNECTIONS,
        limit_log: LimitLog | None = None,
    ) -> None:
        self.asgi = asgi
        self.lifecycle = lifecycle
        self.max_connections = max_connections
        self.limit_log = limit_log

    @classmethod
    def bare(cls, app: Any) -> ServedApp:
        """Any ASGI app, with only the lifecycle layer (benchmarks)."""
        lifecycle = _Lifecycle(app)
        return cls(lifecycle, lifecycle)


def build_app(settings: Settings, *, extra_routes: Sequence[Any] = ()) -> ServedApp:
    """The registry API as served: `registry.api.app.asgi()` with `_Lifecycle` inside
    `Observed`, so that a long-poll ended by shutdown is logged and counted with its
    real status."""
    from registry.api.app import create_app
    from registry.api.hot_routes import HotRoutes
    from registry.api.observe import Observed

    litestar = create_app(settings)
    for route in extra_routes:  # benchmarks: a bare route beside the API, served alike
        litestar.register(route)
    services = litestar.state.services
    lifecycle = _Lifecycle(litestar, on_drain=services.longpolls.drain)
    return ServedApp(
        Observed(lifecycle, services.metrics, hot=HotRoutes(litestar)),
        lifecycle,
        max_connections=services.limits.connections,
        limit_log=services.limit_log,
    )


# -- the servers ------------------------------------------------------------------------


class _Runner(Protocol):
    async def serve(self) -> None: ...

    def stop(self) -> None: ...

    def accept_queue(self) -> int | None: ...


class _UvicornRunner:
    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        header_read_timeout: float = HEADER_READ_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        # uvicorn has no bound on the time to receive headers (`header_read_timeout`
        # applies with granian only); its keep-alive idle timeout stays its default.
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield  # serve_app handles the signals

        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            lifespan="on",
            log_config=None,
            access_log=False,
            server_header=False,
            backlog=BACKLOG,
            limit_concurrency=max_connections,
            timeout_graceful_shutdown=int(GRACE_SECONDS),
        )
        self._server = Server(config)

    async def serve(self) -> None:
        try:
            await self._server.serve()
        except SystemExit as exc:  # uvicorn exits on a bind or lifespan failure
            raise RuntimeError(f"uvicorn exited ({exc.code})") from None

    def stop(self) -> None:
        self._server.should_exit = True

    def accept_queue(self) -> int | None:
        return None  # uvicorn answers 503 past its limit instead of leaving connections waiting


class _DropExperimentalWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "experimental" not in record.getMessage()


class _GranianRunner:
    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        header_read_timeout: float = HEADER_READ_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        from granian.constants import HTTPModes, Interfaces
        from granian.http import HTTP1Settings
        from granian.log import LogLevels
        from granian.server.embed import Server

        # Leave the root handler alone (granian applies dictConfig): its loggers propagate.
        log_config = {
            "version": 1,
            "incremental": True,
            "disable_existing_loggers": False,
            "formatters": {},
            "handlers": {},
            "loggers": {"_granian": {"propagate": True}, "granian.access": {"propagate": True}},
        }
        self._server = Server(
            app,
            address=host,
            port=port,
            interface=Interfaces.ASGI,
            log_level=LogLevels.warning,
            log_dictconfig=log_config,
            websockets=False,
            backlog=BACKLOG,
            # Connections held at once (idle keep-alives included): granian takes a permit
            # before each accept and gives it back when the connection closes, so past it
            # new connections wait, unanswered, in the listen backlog. Its default (the
            # backlog) is far below what SDK watchers, each holding a long-poll, need.
            backpressure=max_connections,
            # HTTP/1.1 only: in `auto` mode granian first waits, unbounded, for the bytes
            # that tell HTTP/2 from 1.1, so a connection that sends nothing was held for
            # ever; hyper's header timeout covers an HTTP/1.1 connection from its start
            # (and the idle time between requests on a kept-alive one).
            http=HTTPModes.http1,
            http1_settings=HTTP1Settings(header_read_timeout=int(header_read_timeout * 1000)),
        )
        self._port = port
        self._listening: int | None = None
        # The embedded server (one worker in this event loop) says it is experimental.
        logging.getLogger("_granian").addFilter(_DropExperimentalWarning())

    async def serve(self) -> None:
        await self._server.serve()

    def stop(self) -> None:
        self._server.stop()  # type: ignore[no-untyped-call]

    def accept_queue(self) -> int | None:
        """Connections waiting to be accepted (Linux; None when unknown). granian
        accepts at once unless it holds `max_connections` already."""
        if self._listening is None:
            self._listening = listening_fd(self._port)
        return listen_queue(self._listening) if self._listening is not None else None


_RUNNERS: Final[dict[str, Callable[..., _Runner]]] = {
    "granian": _GranianRunner,
    "uvicorn": _UvicornRunner,
}


async def serve_app(
    app: ServedApp,
    host: str,
    port: int,
    *,
    server: str = DEFAULT_SERVER,
    stop: asyncio.Event | None = None,
    header_read_timeout: float = HEADER_READ_TIMEOUT,
) -> None:
    """Serve `app` until `stop` is set (default: SIGINT or SIGTERM), then shut down gracefully.
    `header_read_timeout`: seconds a connection may take to send a request's headers."""
    if server not in _RUNNERS:
        raise ValueError(f"unknown server {server!r}; choose one of {', '.join(SERVERS)}")
    loop = asyncio.get_running_loop()
    if stop is None:
        stop = asyncio.Event()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, stop.set)
    where = f"{host}:{port}"
    runner = _RUNNERS[server](app.asgi, host, port, header_read_timeout, app.max_connections)
    serving = asyncio.ensure_future(runner.serve())
    watching = asyncio.ensure_future(_watch_accepts(runner, app))
    started = asyncio.ensure_future(app.lifecycle.wait_started())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait((serving, started, stopping), return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    if not serving.done() and not stopping.done() and app.lifecycle.startup_error is None:
        _freeze_what_start_made()
        url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        _log.info("serving", url=url, server=server)
        await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if serving.done():  # the server ended on its own: a failure
        watching.cancel()
        try:
            serving.result()
        except Exception as exc:
            detail = app.lifecycle.startup_error or _one_line(str(exc)) or type(exc).__name__
            raise ServeError(f"the server on {where} stopped: {detail}") from None
        if app.lifecycle.startup_error is not None:
            raise ServeError(f"the app did not start: {app.lifecycle.startup_error}")
        if not stop.is_set():
            raise ServeError(f"the server on {where} stopped unexpectedly (see the log)")
        return
    watching.cancel()
    _log.info("stopping", server=server)
    began = time.monotonic()
    app.lifecycle.drain()
    runner.stop()
    try:
        await asyncio.wait_for(asyncio.shield(serving), GRACE_SECONDS + 5.0)
    except TimeoutError:
        _log.warning("shutdown_timeout", seconds=GRACE_SECONDS + 5.0)
        serving.cancel()
        return
    if app.lifecycle.startup_error is not None:
        raise ServeError(f"the app did not start: {app.lifecycle.startup_error}")
    _log.info("stopped", server=server, seconds=round(time.monotonic() - began, 3))


def _freeze_what_start_made() -> None:
    """What the start allocated (modules, the app, its pools) lives as long as the
    process: moved out of the cyclic collector's reach, so that a full collection walks
    only what requests allocate. Otherwise one took 95-125 ms, holding every request
    (`bench/adversarial_bench.py`: requests decoding 30,000-entry objects set them off).
    No collection first: that would hold the loop as long, as the replica starts serving
    (the start's garbage, kept for good, is small)."""
    gc.freeze()


async def _watch_accepts(runner: _Runner, app: ServedApp) -> None:
    """Each second: connections left waiting to be accepted on two checks in a row mean
    the connection limit is reached (said once a minute, counted in /metrics)."""
    if app.limit_log is None:
        return
    waited = False
    while True:
        await asyncio.sleep(ACCEPT_CHECK_SECONDS)
        queued = runner.accept_queue()
        if queued is None:
            return
        if queued and waited:
            app.limit_log.reached("connections", app.max_connections)
        waited = queued > 0


def listening_fd(port: int) -> int | None:
    """The descriptor of this process's TCP socket listening on `port` (Linux), found
    among its open descriptors (granian opens it, and does not say which it is)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for name in names:
        fd = int(name)
        try:
            found = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if (
                found.type == socket.SOCK_STREAM
                and found.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                and found.getsockname()[1] == port
            ):
                return fd
        except (OSError, IndexError, TypeError):
            pass
        finally:
            found.close()
    return None


def listen_queue(fd: int) -> int | None:
    """The accept queue of a listening TCP socket (`tcpi_unacked` of TCP_INFO on Linux)."""
    if not hasattr(socket, "TCP_INFO"):
        return None
    try:
        info = socket.socket(fileno=os.dup(fd))
    except OSError:
        return None
    try:
        raw = info.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 32)
    except OSError:
        return None
    finally:
        info.close()
    # struct tcp_info: 8 one-byte fields, then rto, ato, snd_mss, rcv_mss, unacked (u32)
    return int.from_bytes(raw[24:28], sys.byteorder) if len(raw) >= 28 else None


async def _serve(settings: Settings, server: str) -> None:
    assert settings.database_url is not None
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in _SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    applied = await prepare_database(settings.database_url)
    if applied:
        _log.info("migrations_applied", migrations=applied)
    if stop.is_set():
        return
    await serve_app(
        build_app(settings),
        settings.host,
        settings.port,
        server=server,
        stop=stop,
        header_read_timeout=settings.header_read_timeout,
    )


def run_server(settings: Settings, *, server: str = DEFAULT_SERVER) -> None:
    """Serve until SIGINT or SIGTERM (see the module docstring). Raises `ServeError`."""
    if server not in _RUNNERS:
        raise ServeError(f"unknown server {server!r}; choose one of {', '.join(SERVERS)}")
    check_listen_address(settings.host, settings.port)
    try:
        with _signals_raise():
            embedded = None
            try:
                if settings.database_url is None:
                    embedded, dsn = start_embedded(settings.data_dir)
                    settings = msgspec.structs.replace(settings, database_url=dsn)
                asyncio.run(_serve(settings, server))
            finally:
                _ignore_signals()
                if embedded is not None:
                    embedded.stop()
                    _log.info("embedded_postgres_stopped")
    except _Stopped:
        _log.info("stopped_during_startup")
