"""Every row of issue 28's table, each as a ratio against its baseline measured in the same run.

    make bench-table                                  # all rows, short settings (~3 min)
    .venv/bin/python bench/issue28_table.py [--rows fixed,read,start,classify,diff]

Each row reuses the bench that measures it in full (the full benches, their
settings and their caveats are in their docstrings and in docs/figures.md):

* `fixed`: the fixed cost of a request, `registry serve` vs a bare Litestar app
  answering the same bytes on the same granian, wrk 32 connections, req/s
  (bench/fixed_cost_bench.py; needs Debian's `wrk`, the row is skipped without it);
* `read`: `Toolset.from_json` of a 2,001-tool payload vs `msgspec.json.decode` of
  the same bytes (bench/toolset_read_bench.py);
* `start`: `import registry.sdk.mcp_adapter` vs `import mcp.server.lowlevel`,
  `import registry.sdk.fastmcp_adapter` vs `import fastmcp` (and vs `from fastmcp
  import FastMCP`, what a FastMCP server loads), whole processes
  (bench/startup_bench.py, bytecode cached as an installed package has it);
* `classify`: `classify` on the pairs of every history of tests/corpus/, first
  calls, median and p99, vs mcp-diff 0.1.0 on the same pairs, interleaved
  (bench/classify_bench.py; needs `pip install -e '.[bench]'`);
* `diff`: a whole `registry diff` of two small files vs `python -c pass` (measured
  in the same interleaved rounds as `start` when both run).

Ratios are against baselines measured in the same run, interleaved: the machine
is shared and its absolute figures move by up to 2x between runs. The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

ROWS = ("fixed", "read", "start", "classify", "diff")


@dataclass(frozen=True)
class Line:
    what: str
    measured: str
    baseline: str
    ratio: str
    goal: str
    met: bool | None  # None: no goal, or not measured

    def render(self) -> str:
        verdict = {True: "met", False: "NOT met", None: ""}[self.met]
        cells = (self.what, self.measured, self.baseline, self.ratio, self.goal, verdict)
        return "| " + " | ".join(cells) + " |"


def skipped(what: str, why: str) -> Line:
    return Line(what, "skipped", "", "", why, None)


# -- the rows -----------------------------------------------------------------------------


def fixed_rows(rounds: int, seconds: float) -> list[Line]:
    if shutil.which("wrk") is None:
        why = "wrk is not installed (apt-get install wrk, or `make bench-fixed-cost`)"
        return [skipped("fixed cost of a request", why)]
    import fixed_cost_bench as fixed

    rows = list(fixed.ROWS)
    results = fixed.measure(rows, rounds, seconds, pin=True)
    lines = []
    for row in rows:
        ours, bare = results[row.name]["ours"], results[row.name]["bare"]
        ratio = statistics.median(o.rps / b.rps for o, b in zip(ours, bare, strict=True))
        lines.append(
            Line(
                f"fixed cost: `{row.path}`{' 304' if row.status == 304 else ''}, req/s",
                f"{statistics.median(r.rps for r in ours):,.0f}",
                f"bare Litestar {statistics.median(r.rps for r in bare):,.0f}",
                f"{ratio:.2f}x",
                f">= {fixed.GOAL}x" if row.goal else "(no goal)",
                ratio >= fixed.GOAL if row.goal else None,
            )
        )
    return lines


def read_rows(rounds: int) -> list[Line]:
    import toolset_read_bench as read

    data = read.small(2001)
    ours, plain = read.measure(data, rounds)
    return [
        Line(
            f"`Toolset.from_json`, 2,001 tools ({len(data) / 1024:.0f} KiB), median of {rounds}",
            f"{ours * 1000:.1f} ms",
            f"`msgspec.json.decode` {plain * 1000:.1f} ms",
            f"{ours / plain:.2f}x",
            "<= 2x, digests exact",
            ours / plain <= 2,
        )
    ]


def process_rows(rounds: int, start: bool, diff: bool) -> list[Line]:
    import startup_bench as startup

    wanted = [r for r in startup.ROWS if (diff if r.measured == "registry diff" else start)]
    folder = Path(tempfile.mkdtemp(prefix="issue28-table-"))
    try:
        every = startup.commands(folder)
        names = {name for row in wanted for name in (row.measured, row.baseline)}
        env = startup.environment(folder / "pycache")
        chosen = {n: c for n, c in every.items() if n in names}
        times = startup.measure(chosen, rounds, env, folder)
        own = startup.inside(rounds, env, folder) if start else {}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    lines = []
    for row in wanted:
        a, b = median[row.measured], median[row.baseline]
        diffing = row.measured == "registry diff"
        what = "`registry diff` of two small files" if diffing else f"`import {row.measured}`"
        baseline = row.baseline if " " in row.baseline else f"import {row.baseline}"
        measured = f"{a * 1000:.0f} ms"
        if row.measured in own:  # the gate's own imports, timed inside a process
            measured += f" (its own import {statistics.median(own[row.measured]) * 1000:.0f} ms)"
        lines.append(
            Line(
                f"{what}, whole process, median of {rounds}",
                measured,
                f"`{baseline}` {b * 1000:.0f} ms",
                f"{a / b:.2f}x, {(a - b) * 1000:+.0f} ms",
                row.goal,
                row.met(median),
            )
        )
    return lines


def classify_rows(rounds: int) -> list[Line]:
    import classify_bench as engine

    from tests.corpus import HISTORIES

    peer = engine._mcp_diff()
    if peer is None:
        why = "mcp-diff is not installed (pip install -e '.[bench]')"
        return [skipped("`classify` vs mcp-diff", why)]
    lines = []
    for history in HISTORIES:
        pairs, _ = engine.load_pairs(engine.REPO / "tests" / "corpus" / history, None)
        ours, _warm, theirs = engine.time_pairs(pairs, None, peer, 10.0)
        for _ in range(rounds - 1):  # each pair keeps its smaller first call, as the bench does
            again, _warm, theirs_again = engine.time_pairs(pairs, None, peer, 10.0)
            ours = [min(a, b) for a, b in zip(ours, again, strict=True)]
            theirs = [min(a, b) for a, b in zip(theirs, theirs_again, strict=True)]
        median, median_peer = statistics.median(ours), statistics.median(theirs)
        p99, p99_peer = engine.percentile(ours, 0.99), engine.percentile(theirs, 0.99)
        what = f"`classify`, {history} ({len(pairs)} pairs), first call"
        lines.append(
            Line(
                f"{what}, median",
                f"{median * 1e6:.1f} us",
                f"mcp-diff {median_peer * 1e6:.1f} us",
                f"{median / median_peer:.2f}x",
                "<= 0.8x mcp-diff",
                median / median_peer <= 0.8,
            )
        )
        lines.append(
            Line(
                f"{what}, p99",
                f"{p99 * 1e6:.0f} us",
                f"mcp-diff {p99_peer * 1e6:.0f} us",
                f"{p99 / p99_peer:.2f}x",
                "p99 <= 300 us",
                p99 <= 300e-6,
            )
        )
    return lines


# -- the table ----------------------------------------------------------------------------


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"some of {','.join(ROWS)}")
    parser.add_argument("--fixed-rounds", type=int, default=2)
    parser.add_argument("--fixed-seconds", type=float, default=2.0)
    parser.add_argument("--read-rounds", type=int, default=15)
    parser.add_argument("--process-rounds", type=int, default=7)
    parser.add_argument("--classify-rounds", type=int, default=2)
    args = parser.parse_args()
    chosen = set(args.rows.split(","))
    unknown = chosen - set(ROWS)
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))} (rows: {', '.join(ROWS)})")
    steps: list[tuple[str, Callable[[], list[Line]]]] = []
    if "fixed" in chosen:
        steps.append(("fixed", lambda: fixed_rows(args.fixed_rounds, args.fixed_seconds)))
    if "read" in chosen:
        steps.append(("read", lambda: read_rows(args.read_rounds)))
    if chosen & {"start", "diff"}:
        start, diff = "start" in chosen, "diff" in chosen
        steps.append(("start/diff", lambda: process_rows(args.process_rounds, start, diff)))
    if "classify" in chosen:
        steps.append(("classify", lambda: classify_rows(args.classify_rounds)))
    before = _load()
    lines: list[Line] = []
    for name, step in steps:
        began = time.monotonic()
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        lines += step()
        print(f"  {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    print(f"\nissue 28's table, each row against its baseline in the same run; load {before}")
    print("| what | measured | baseline (same run) | ratio | goal | |")
    print("|---|---|---|---|---|---|")
    for line in lines:
        print(line.render())
    print(f"load average after: {_load()} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
