"""What starting a process costs: the gate's imports beside the SDKs they adapt, and a
whole `registry diff` beside a bare interpreter.

    .venv/bin/python bench/startup_bench.py [--rounds 7]

Whole processes, interleaved (each round runs every command once, in turn), median of
the rounds; each row is printed with its baseline measured in the same rounds:

    import registry.sdk.mcp_adapter      vs  import mcp.server.lowlevel   (goal: <= +100 ms)
    import registry.sdk.fastmcp_adapter  vs  import fastmcp               (goal: <= +100 ms)
    registry diff OLD NEW (two small files) vs python -c pass             (goal: <= 0.15 s)

A 2026-07-28 server may be stateless and start per request; a pre-commit hook runs
`registry diff` on every commit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
REGISTRY = str(Path(PYTHON).parent / "registry")


def _seconds(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="startup-bench-"))
    old, new = folder / "old.json", folder / "new.json"
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    old.write_text(json.dumps({"name": "t", "inputSchema": schema}))
    schema["properties"]["n"] = {"type": "integer"}
    new.write_text(json.dumps({"name": "t", "inputSchema": schema}))
    commands = {
        "mcp.server.lowlevel": [PYTHON, "-c", "import mcp.server.lowlevel"],
        "registry.sdk.mcp_adapter": [PYTHON, "-c", "import registry.sdk.mcp_adapter"],
        "fastmcp": [PYTHON, "-c", "import fastmcp"],
        "registry.sdk.fastmcp_adapter": [PYTHON, "-c", "import registry.sdk.fastmcp_adapter"],
        "python -c pass": [PYTHON, "-c", "pass"],
        "registry diff": [REGISTRY, "diff", str(old), str(new)],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for command in commands.values():  # warm the file cache once, untimed
        subprocess.run(command, check=False, capture_output=True)
    for _ in range(args.rounds):
        for name, command in commands.items():
            times[name].append(_seconds(command))
    median = {name: statistics.median(values) for name, values in times.items()}
    rows = [
        ("registry.sdk.mcp_adapter", "mcp.server.lowlevel", "<= +100 ms"),
        ("registry.sdk.fastmcp_adapter", "fastmcp", "<= +100 ms"),
        ("registry diff", "python -c pass", "<= 0.15 s"),
    ]
    print(f"whole processes, median of {args.rounds} interleaved rounds")
    for measured, baseline, goal in rows:
        a, b = median[measured], median[baseline]
        print(
            f"{measured:30} {a * 1000:7.0f} ms  vs {baseline:22} {b * 1000:7.0f} ms  "
            f"= {a / b:5.2f}x, +{(a - b) * 1000:.0f} ms  (goal {goal})"
        )


if __name__ == "__main__":
    main()
