"""The SDK writes nothing to stdout: on a stdio MCP server stdout is the protocol.

Each test runs a fresh interpreter that embeds the SDK the way an application
does, configuring no logging, and drives every branch that logs: accepted calls
declared and not, refusals of every kind, a broken converter (an error), a boot
sync from a dead registry that falls back to the cache (retries, then an error),
the MCP adapter, a usage report to the dead registry (a warning). Whatever it
prints is captured; stdout must stay empty.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import payload, seed_000, seed_002, served

ROOT = Path(__file__).resolve().parents[2]

EMBED = """
import asyncio, json, socket, sys
from pathlib import Path
{setup}
from registry.sdk import Gate, Toolset, write_cache
from registry.sdk.mcp_adapter import GatedTools

toolsets = [Toolset.from_json(Path(p).read_bytes()) for p in sys.argv[1:4]]
for toolset in toolsets:
    gate = Gate(toolset)
    gated = GatedTools(toolset)
    for name, arguments, meta in [
        ("db.query", {{"query": "q"}}, {{"schemaVersion": "v4"}}),
        ("db.query", {{"query": "q"}}, None),
        ("db.query", {{"query": "q", "timeout_ms": 1, "mode": "write"}}, None),
        ("db.query", {{"query": "q", "extra": 1}}, None),
        ("db.query", {{"query": "q", "timeout_ms": 1}}, {{"schemaVersion": "v3"}}),
        ("db.query", {{"query": 1}}, {{"schemaVersion": "v4"}}),
        ("db.query", {{"query": "q"}}, {{"schemaVersion": "v9"}}),
        ("db.query", {{"query": "q"}}, {{"schemaVersion": "nonsense"}}),
        ("search_v1", {{"query": "q"}}, None),
        ("nope", {{}}, None),
    ]:
        gate.check(name, arguments, meta)
        gated.check(name, arguments, meta)

# a boot sync from a registry that is not there: retries, then the cache, loudly
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{{s.getsockname()[1]}}"
cache = Path(sys.argv[4])
write_cache(cache, toolsets[0], url=dead)
from registry.sdk.sync import Backoff
synced = asyncio.run(
    Toolset.sync(dead, "billing", cache=cache, retries=1, backoff=Backoff(base=0.01, cap=0.01))
)
assert synced.digest == toolsets[0].digest

# usage counted on every call, and a report to the registry that is not there
from registry.sdk.usage import UsageReporter
reporter = UsageReporter(dead, "billing", server="silent", source=toolsets[0])
Gate(toolsets[0], on_decision=reporter.record).check("db.query", {{"query": "q"}}, None)
assert asyncio.run(reporter.flush()) is False
print("done", file=sys.stderr)
"""

NOTHING = ""
STRUCTLOG_TO_STDOUT = """
import structlog
# an application that logs with structlog to stdout (structlog's own default)
structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stdout))
structlog.get_logger("app").info("the application's own line")
"""


def broken_converter() -> dict[str, object]:
    """db.query v3 served with a converter whose output v4 refuses."""
    ops = [{"op": "rename", "from": "/query", "to": "/sql"}]
    versions = [
        served(DB_QUERY_V4, 4),
        served(DB_QUERY_V3, 3, route=[{"from": 3, "to": 4, "ops": ops}]),
    ]
    return payload([{"name": "db.query", "current": 4, "versions": versions, "retired": []}])


@pytest.mark.parametrize(
    "setup", [NOTHING, STRUCTLOG_TO_STDOUT], ids=["no-logging", "app-structlog"]
)
def test_embedding_the_sdk_with_no_logging_configured_writes_nothing_to_stdout(
    tmp_path: Path, setup: str
) -> None:
    files = []
    for n, body in enumerate([seed_000(), seed_002(with_route=False), broken_converter()]):
        path = tmp_path / f"toolset{n}.json"
        path.write_bytes(msgspec.json.encode(body))
        files.append(str(path))
    code = EMBED.format(setup=textwrap.dedent(setup))
    ran = subprocess.run(
        [sys.executable, "-c", code, *files, str(tmp_path / "cache.json")],
        check=False,
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    stderr = ran.stderr.decode()
    assert ran.returncode == 0, stderr
    assert stderr.rstrip().endswith("done"), stderr
    lines = ran.stdout.decode().splitlines()
    if setup:  # the application's own line, and nothing else
        assert len(lines) == 1 and "the application's own line" in lines[0], lines
    else:
        assert lines == []
    # warnings and errors still reach stderr through logging's last resort
    assert "toolset.sync.from_cache: RUNNING FROM CACHE" in stderr, stderr
    assert "gate.converter_broken" in stderr, stderr
    assert "usage.report.failed: usage not reported" in stderr, stderr
    # nothing below WARNING was formatted: no line per call
    assert "gate.decision" not in stderr, stderr
