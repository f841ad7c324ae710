"""The examples end cleanly: the servers over streamable HTTP stop on SIGTERM with exit
0 and no traceback (uvicorn's own signal handling used to cancel the app's lifespan),
and the client says in one line why a server it started ended (its 401 used to hide
behind the client's 40-line ExceptionGroup)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("example", ["gated_server.py", "fastmcp_server.py"])
def test_sigterm_stops_the_http_example_cleanly(example: str) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / example), "--demo", "--http", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "Traceback" not in err and "CancelledError" not in err, err


def test_the_client_names_why_its_server_ended() -> None:
    failing = (
        "import sys; print('gated_server: HTTP 401: not a token', file=sys.stderr); sys.exit(1)"
    )
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "call_tool.py"), "t", "{}", "--", sys.executable,
         "-c", failing],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "call_tool: the server ended before answering: gated_server: HTTP 401: not a token\n"
    )
