"""A test session leaves no process behind (a pytest plugin, loaded by tests/conftest.py).

Every process a test starts inherits `REGISTRY_TEST_SESSION` (set when the session
starts; the helpers that build a child's environment start from os.environ). When
the session ends, after every fixture is torn down, any process still alive that
carries this session's mark was left behind: `registry serve`, an embedded
PostgreSQL whose parent was killed, a server a client spawned. Each is named, then
killed, and the session fails. Processes of other sessions (another checkout's
tests running beside this one) carry another mark and are left alone.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid

import pytest

MARK = "REGISTRY_TEST_SESSION"
# a server stopped at teardown may take a moment to go
_GRACE_SECONDS = float(os.environ.get("REGISTRY_TEST_LEFTOVER_GRACE", "10"))


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(MARK, uuid.uuid4().hex)


def leftovers() -> list[tuple[int, str]]:
    """(pid, command line) of the live processes carrying this session's mark."""
    import psutil

    mark, me = os.environ.get(MARK), os.getpid()
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        if process.info["pid"] == me or process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if process.environ().get(MARK) == mark:
                found.append((process.pid, " ".join(process.info["cmdline"] or [])[:200]))
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def _stop_multiprocessing_helpers() -> None:
    """The forkserver and the resource tracker that multiprocessing starts for this very
    process (the analysis workers of the apps served in it, `registry.api.budget`) end
    only when it ends: stopped here, with multiprocessing's own methods for that, so that
    what remains is what the tests left behind (a worker that outlived its app included)."""
    from multiprocessing import forkserver, resource_tracker

    forkserver._forkserver._stop()  # type: ignore[attr-defined]
    resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    try:
        import psutil
    except ImportError:  # the [server] extra is absent: nothing here starts processes
        return
    _stop_multiprocessing_helpers()
    deadline = time.monotonic() + _GRACE_SECONDS
    left = leftovers()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftovers()
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for pid, command in left:
        if reporter is not None:
            reporter.write_line(
                f"FAILED: the tests left process {pid} running: {command}", red=True
            )
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
