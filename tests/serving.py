"""`registry serve` as a subprocess, as an operator runs it; the `spawn` fixture
(tests/conftest.py) starts one and kills what is left at the end of the test.

    served = spawn("--data-dir", str(tmp_path / "data"), REGISTRY_BOOTSTRAP_TOKEN="t")
    httpx.get(served.url + "/healthz")
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import free_port

_BIN = Path(sys.executable).parent / "registry"
REGISTRY = [str(_BIN)] if _BIN.exists() else [sys.executable, "-m", "registry"]

Spawn = Callable[..., "Served"]


class Served:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc = proc
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    def errors(self) -> str:
        return self.proc.stderr.read().decode() if self.proc.stderr else ""

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self, timeout: float) -> tuple[int, float]:
        """SIGTERM; the exit code and how long the process took to go."""
        began = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        return code, time.monotonic() - began


def env_with(**extra: str) -> dict[str, str]:
    """This environment without the registry's own settings, plus `extra`; the test
    session's mark stays, so that what the child leaves running is found
    (tests/processes.py)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("REGISTRY_") or k == "REGISTRY_TEST_SESSION"
    }
    env.update(extra)
    return env


def spawner(tmp_path: Path) -> Iterator[Spawn]:
    """The body of the `spawn` fixture: `start(*serve_args, ready=20.0, **env)`."""
    started: list[Served] = []

    def start(*argv: str, ready: float = 20.0, **env: str) -> Served:
        port = free_port()
        log = tmp_path / f"serve-{port}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*REGISTRY, "serve", "--port", str(port), *argv],
                stdout=out,
                stderr=subprocess.PIPE,
                env=env_with(**env),
            )
        served = Served(proc, port, log)
        started.append(served)
        deadline = time.monotonic() + ready
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"serve exited {proc.returncode}: {served.errors()}")
            try:
                if httpx.get(served.url + "/healthz", timeout=1).status_code == 200:
                    return served
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"serve did not answer within {ready} s")

    yield start
    for served in started:
        stop(served.proc)


def stop(proc: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """SIGTERM, so that `registry serve` stops its embedded PostgreSQL as an operator's
    stop would; SIGKILL only when it has not gone within `grace` seconds (a killed
    serve leaves its PostgreSQL running, which the next start of that data dir stops)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
