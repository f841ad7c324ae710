"""The TypeScript usage reporter speaks the Python SDK's wire format, byte for byte.

Every decision row of tests/golden/gate_decisions.json goes through a gate of
each SDK whose `on_decision` is that SDK's usage reporter (one reporter per
toolset of the file); each flushes one report to a local HTTP server that
records what it receives. The two SDKs' bodies for a toolset must be the same
bytes, and read as the registry's own `UsageReport`. The TypeScript reporter
against a live registry, from a running server: test_package.py.
"""

from __future__ import annotations

import copy
import http.server
import threading
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from registry.sdk import Gate, Toolset
from registry.sdk.usage import UsageReport, UsageReporter
from tests.e2e_ts.nodes import run
from tests.e2e_ts.test_ts_gate import SDK_TS, node
from tests.sdk.test_golden import DOCUMENT, GOLDEN

SCRIPT = SDK_TS / "dist" / "e2e" / "usage_report.js"


class _Capture(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    received: list[tuple[str, bytes]] = []
    handler = type("Capture", (_Capture,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


async def python_reports(url: str) -> None:
    for name, body in DOCUMENT["toolsets"].items():
        toolset = Toolset.from_json(msgspec.json.encode(body))
        reporter = UsageReporter(url, name.replace("_", "-"), server="wire-test", source=toolset)
        gate = Gate(toolset, on_decision=reporter.record)
        for row in (c for c in DOCUMENT["cases"] if c["toolset"] == name):
            gate.check(row["tool"], copy.deepcopy(row["arguments"]), copy.deepcopy(row["meta"]))
        assert await reporter.flush()
        await reporter.stop(flush=False)


def ts_reports(url: str) -> None:
    run([node(), str(SCRIPT), str(GOLDEN), url], cwd=SDK_TS, timeout=120)


async def test_both_sdks_report_the_same_bytes(
    capture: tuple[str, list[tuple[str, bytes]]],
) -> None:
    url, received = capture
    await python_reports(url)
    python = dict(received)
    received.clear()
    ts_reports(url)
    typescript = dict(received)
    assert set(python) == {
        f"/v1/namespaces/{name.replace('_', '-')}/usage" for name in DOCUMENT["toolsets"]
    }
    for path, body in python.items():
        assert typescript[path] == body, path
        report = msgspec.json.decode(body, type=UsageReport)  # the registry's own type
        assert report.counts  # every toolset's rows were counted
    # refusals carry their reason, conversions the declared version
    seen = {
        (c.decision, c.reason)
        for body in python.values()
        for c in msgspec.json.decode(body, type=UsageReport).counts
    }
    assert {
        ("converted", None),
        ("accepted", None),
        ("refused", "strict_validation_failed"),
    } <= seen
