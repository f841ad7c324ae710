"""`registry capture` of a 150-tool stdio server, against that server's own start.

    .venv/bin/python bench/capture_bench.py [--tools 150] [--page-size 50] [--rounds 5]

The server is tests/fixtures/servers/listing_server.py (the official SDK's low-level
Server) listing generated tools (each with a few typed properties, a description and
an enum), `--page-size` per tools/list page. Each round, interleaved:

* start: spawn the server, write one `initialize` request on its stdin, time until
  its answer line arrives (the server's own start: interpreter, imports, first
  answer), then stop it;
* capture: `registry capture --namespace bench --output DIR -- <the server>` as a
  subprocess, timed end to end (the CLI's own start, the server's start, initialize,
  every page, validation, writing the files, stopping the server).

It prints the medians and capture minus start: the time capture adds beyond the
server's own start (target: < 2 s for 150 tools).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "fixtures" / "servers" / "listing_server.py"
REGISTRY = Path(sys.executable).with_name("registry")


def generated_tools(count: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"tool_{index:03d}",
            "title": f"Tool {index}",
            "description": f"Generated tool number {index}: looks things up.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                    "mode": {"type": "string", "enum": ["fast", "exact"]},
                    "filters": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "required": ["query"],
            },
        }
        for index in range(count)
    ]


def server_start(command: list[str]) -> float:
    """Seconds from spawning the server to its answer to `initialize`."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    began = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(request) + "\n").encode())
    process.stdin.flush()
    answer = process.stdout.readline()
    elapsed = time.perf_counter() - began
    process.stdin.close()
    process.wait(timeout=30)
    if b'"result"' not in answer:
        raise SystemExit(f"the server did not answer initialize: {answer[:200]!r}")
    return elapsed


def capture(command: list[str], output: Path) -> float:
    shutil.rmtree(output, ignore_errors=True)
    began = time.perf_counter()
    done = subprocess.run(
        [str(REGISTRY), "capture", "--namespace", "bench", "--output", str(output), "--", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"capture failed: {done.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=150)
    parser.add_argument("--page-size", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="capture-bench-") as scratch:
        tools = Path(scratch) / "tools.json"
        tools.write_text(json.dumps(generated_tools(args.tools)))
        command = [sys.executable, str(SERVER), str(tools), "--page-size", str(args.page_size)]
        output = Path(scratch) / "out"
        server_start(command)  # warm the file cache, untimed
        starts, captures = [], []
        for _ in range(args.rounds):
            starts.append(server_start(command))
            captures.append(capture(command, output))
        files = len(list(output.glob("*.yaml")))
    start, whole = statistics.median(starts), statistics.median(captures)
    pages = -(-args.tools // args.page_size)
    print(f"{args.tools} tools in {pages} pages, {files} manifests written, {args.rounds} rounds")
    print(f"server start (spawn -> initialize answer): median {start:.3f} s")
    print(f"registry capture (end to end):            median {whole:.3f} s")
    print(
        f"capture beyond the server's start:          {whole - start:.3f} s "
        f"(ratio {whole / start:.2f}x; target < 2 s)"
    )


if __name__ == "__main__":
    main()
