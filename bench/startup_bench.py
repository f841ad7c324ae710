"""What starting a process costs: the gate's imports beside the SDKs they adapt, and a
whole `registry diff` beside a bare interpreter.

    .venv/bin/python bench/startup_bench.py [--rounds 7] [--no-bytecode-cache]

Whole processes, interleaved (each round runs every command once, in turn), median of
the rounds; each row is printed with its baseline measured in the same rounds (and,
for the adapters, their own import timed inside a process that has imported the SDK,
a figure that does not drown in the SDK's own start-to-start noise):

    import registry.sdk.mcp_adapter      vs  import mcp.server.lowlevel   (goal: <= +100 ms)
    import registry.sdk.fastmcp_adapter  vs  import fastmcp               (goal: <= +100 ms)
    import registry.sdk.fastmcp_adapter  vs  from fastmcp import FastMCP  (goal: <= +100 ms)
    registry diff OLD NEW (two small files) vs python -c pass             (goal: <= 0.15 s)

`import fastmcp` loads neither FastMCP nor `mcp` (fastmcp 4 imports its server
lazily, PEP 562); the adapter subclasses FastMCP's middleware and provider, so
it loads what `from fastmcp import FastMCP` loads, and any FastMCP server runs
that line: the third row is what the gate adds to a FastMCP server's start.

The processes run as an installed package runs: with its bytecode cached. This
machine's environment sets PYTHONDONTWRITEBYTECODE=1, so every process would
compile the project's modules again (about 75 ms of a `registry diff`); the
commands run without it, their bytecode cached under a temporary
PYTHONPYCACHEPREFIX by the untimed warm-up (`--no-bytecode-cache` keeps the
environment as it is).

A 2026-07-28 server may be stateless and start per request; a pre-commit hook runs
`registry diff` on every commit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PYTHON = sys.executable
REGISTRY = str(Path(PYTHON).parent / "registry")


@dataclass(frozen=True)
class Row:
    measured: str
    baseline: str
    goal: str
    added_ms: float | None = None  # the goal as milliseconds over the baseline
    total_ms: float | None = None  # the goal as the measured command's own milliseconds

    def met(self, median: Mapping[str, float]) -> bool | None:
        a, b = median[self.measured], median[self.baseline]
        if self.added_ms is not None:
            return (a - b) * 1000 <= self.added_ms
        if self.total_ms is not None:
            return a * 1000 <= self.total_ms
        return None


ROWS = (
    Row("registry.sdk.mcp_adapter", "mcp.server.lowlevel", "<= +100 ms", added_ms=100),
    Row("registry.sdk.fastmcp_adapter", "fastmcp", "<= +100 ms", added_ms=100),
    Row(
        "registry.sdk.fastmcp_adapter",
        "from fastmcp import FastMCP",
        "<= +100 ms over what a FastMCP server imports",
        added_ms=100,
    ),
    Row("registry diff", "python -c pass", "<= 0.15 s", total_ms=150),
)


def commands(folder: Path) -> dict[str, list[str]]:
    """Every command of the rows, by name; the diff's two small files are written in `folder`."""
    old, new = folder / "old.json", folder / "new.json"
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    old.write_text(json.dumps({"name": "t", "inputSchema": schema}))
    schema["properties"]["n"] = {"type": "integer"}
    new.write_text(json.dumps({"name": "t", "inputSchema": schema}))
    return {
        "mcp.server.lowlevel": [PYTHON, "-c", "import mcp.server.lowlevel"],
        "registry.sdk.mcp_adapter": [PYTHON, "-c", "import registry.sdk.mcp_adapter"],
        "fastmcp": [PYTHON, "-c", "import fastmcp"],
        "from fastmcp import FastMCP": [PYTHON, "-c", "from fastmcp import FastMCP"],
        "registry.sdk.fastmcp_adapter": [PYTHON, "-c", "import registry.sdk.fastmcp_adapter"],
        "python -c pass": [PYTHON, "-c", "pass"],
        "registry diff": [REGISTRY, "diff", str(old), str(new)],
    }


def environment(pycache: Path | None) -> dict[str, str]:
    """The commands' environment: bytecode written to and read from `pycache`
    (None: this process's environment as it is)."""
    env = dict(os.environ)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _seconds(command: list[str], env: dict[str, str], cwd: Path) -> float:
    began = time.perf_counter()
    subprocess.run(
        command,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    return time.perf_counter() - began


def measure(
    named: Mapping[str, list[str]], rounds: int, env: dict[str, str], cwd: Path
) -> dict[str, list[float]]:
    """Seconds of each command per round, the commands taking turns in every round,
    in the reverse order every other round (what runs just before a command moves it).
    `cwd`: a folder holding no `registry` (`python -c` imports from its folder first)."""
    times: dict[str, list[float]] = {name: [] for name in named}
    for command in named.values():  # warm the file cache (and the bytecode cache), untimed
        subprocess.run(command, check=False, capture_output=True, env=env, cwd=cwd)
    order = list(named)
    for round_ in range(rounds):
        for name in order if round_ % 2 == 0 else reversed(order):
            times[name].append(_seconds(named[name], env, cwd))
    return times


# The gate's own share, timed inside one process after the SDK it adapts is imported:
# the whole processes above differ by less than their own noise (mcp's import alone
# moves by 100 ms from one start to the next on this machine).
INSIDE = {
    "registry.sdk.mcp_adapter": "mcp.server.lowlevel",
    "registry.sdk.fastmcp_adapter": "fastmcp.server.server",
}


def inside(rounds: int, env: dict[str, str], cwd: Path) -> dict[str, list[float]]:
    """Seconds of `import ADAPTER` in a process that has imported its SDK, per round."""
    times: dict[str, list[float]] = {adapter: [] for adapter in INSIDE}
    for round_ in range(rounds + 1):  # the first, untimed, warms the caches
        for adapter, sdk in INSIDE.items():
            code = (
                f"import time, {sdk}\nbegan = time.perf_counter()\nimport {adapter}\n"
                "print(time.perf_counter() - began)"
            )
            done = subprocess.run(
                [PYTHON, "-c", code], check=True, capture_output=True, text=True, env=env, cwd=cwd
            )
            if round_:
                times[adapter].append(float(done.stdout.split()[-1]))
    return times


def lines(times: Mapping[str, list[float]], rows: tuple[Row, ...] = ROWS) -> list[str]:
    median = {name: statistics.median(values) for name, values in times.items()}
    out = []
    for row in rows:
        a, b = median[row.measured], median[row.baseline]
        met = row.met(median)
        verdict = "" if met is None else (": met" if met else ": NOT met")
        out.append(
            f"{row.measured:30} {a * 1000:7.0f} ms  vs {row.baseline:27} {b * 1000:7.0f} ms  "
            f"= {a / b:5.2f}x, {(a - b) * 1000:+.0f} ms  (goal {row.goal}{verdict})"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="run the commands in this environment as it is (PYTHONDONTWRITEBYTECODE kept)",
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="startup-bench-"))
    try:
        env = environment(None if args.no_bytecode_cache else folder / "pycache")
        times = measure(commands(folder), args.rounds, env, folder)
        own = inside(args.rounds, env, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cache = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"whole processes, median of {args.rounds} interleaved rounds ({cache}; load {load})")
    print("\n".join(lines(times)))
    for adapter, sdk in INSIDE.items():
        ms = statistics.median(own[adapter]) * 1000
        print(f"  import {adapter} in a process that imported {sdk}: {ms:.0f} ms")


if __name__ == "__main__":
    main()
