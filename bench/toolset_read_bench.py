"""The SDK reading a large toolset payload beside a plain JSON decode of the same bytes.

    .venv/bin/python bench/toolset_read_bench.py [--tools 2001] [--rounds 9]

The payload is built as the registry serves it (RFC 8785 canonical JSON, the
`digest` member in its sorted place), in two shapes: N small tools of one version
each (seed 000's db.query renamed, as bench/scale_bench.py's namespaces hold them:
the issue's 2,001 tools in 767 KiB), and N tools of two versions each made of the
real definitions of tests/corpus. Interleaved rounds; medians.
`Toolset.from_json` checks every digest on the bytes (goal: <= 2x the plain decode,
`msgspec.json.decode(data)`, digests still exact).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec

from registry.canonical import canonical_json, digest
from registry.sdk import Toolset, payload_digest
from tests.corpus import load_pairs
from tests.fixtures.seeds import DB_QUERY_V4


def small(count: int) -> bytes:
    tools: list[dict[str, Any]] = []
    for index in range(count):
        name = f"tool-{index:05d}"
        definition = {**DB_QUERY_V4, "name": name, "description": f"Tool {name}."}
        entry = {
            "version": 1,
            "digest": digest(definition),
            "state": "active",
            "sunset": None,
            "definition": definition,
            "route": [],
        }
        tools.append({"name": name, "current": 1, "versions": [entry], "retired": []})
    return _served({"namespace": "big", "tools": tools, "aliases": []})


def _served(body: dict[str, Any]) -> bytes:
    return canonical_json({**body, "digest": payload_digest(body)})


def corpus(count: int) -> bytes:
    pairs = [p for p in load_pairs() if p.old is not None and p.new is not None]
    tools: list[dict[str, Any]] = []
    for index in range(count):
        pair = pairs[index % len(pairs)]
        name = f"tool_{index:05d}"
        old, new = ({**d, "name": name} for d in (pair.old, pair.new))
        entries = []
        for version, definition in ((2, new), (1, old)):  # current first
            entries.append(
                {
                    "version": version,
                    "digest": digest(definition),
                    "state": "active",
                    "sunset": None,
                    "definition": definition,
                    "route": [] if version == 2 else [{"from": 1, "to": 2, "ops": []}],
                }
            )
        tools.append({"name": name, "current": 2, "versions": entries, "retired": []})
    return _served({"namespace": "big", "tools": tools, "aliases": []})


def measure(data: bytes, rounds: int) -> tuple[float, float]:
    """Medians, in seconds, of `Toolset.from_json(data)` and of a plain decode of the
    same bytes, in interleaved rounds after one untimed read."""
    Toolset.from_json(data)  # warm: imports, caches
    ours: list[float] = []
    plain: list[float] = []
    for _ in range(rounds):
        for runs, read in ((plain, msgspec.json.decode), (ours, Toolset.from_json)):
            began = time.perf_counter()
            found = read(data)
            runs.append(time.perf_counter() - began)
            del found
    return statistics.median(ours), statistics.median(plain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=2001)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    for shape, build in (("small tools", small), ("corpus tools", corpus)):
        data = build(args.tools)
        a, b = measure(data, args.rounds)
        print(
            f"{args.tools} {shape}, {len(data) / 1024:.0f} KiB: Toolset.from_json "
            f"{a * 1000:.1f} ms, plain decode {b * 1000:.1f} ms = {a / b:.2f}x (goal <= 2x), "
            f"medians of {args.rounds}"
        )


if __name__ == "__main__":
    main()
