"""What counting usage adds to a gated call: Gate.check with and without the usage counter.

    .venv/bin/python bench/usage_counter_bench.py [--calls N] [--chunk N]

For seed 000's db.query (v4 current, v3 served through a converter) and three
accepted calls (declared current, version-less, declared v3 converted), in the
same run and interleaved in chunks of `--chunk` calls (every contender's chunk
k before any contender's chunk k+1, the order reversed every other chunk, an
untimed warm-up first, each call timed alone with perf_counter_ns):

- `Gate(toolset)`: no hook (the baseline);
- `Gate(toolset, on_decision=noop)`: the gate's hook call alone;
- `Gate(toolset, on_decision=UsageCounter().record)`: what `UsageReporter`
  installs (registry/sdk/usage.py).

Printed: p50/p99 per contender, the ratio to the baseline, and the p50 added
by the counter: the median over chunks of (the counter's chunk p50 minus the
baseline's chunk p50), a paired figure the shared machine's load drift
cancels out of. Target: the counter adds <= 0.5 us p50 to an accepted call.
Run with no logging configured, as an application embedding the SDK runs it.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gate_bench import Contender, _load
from registry.sdk import Gate, Toolset
from registry.sdk.usage import UsageCounter
from tests.sdk import seed_000

TARGET_ADDED_P50_US = 0.5

V4 = {"query": "SELECT 1", "timeout": 1000, "mode": "read"}
V3 = {"query": "SELECT 1", "timeout_ms": 1000, "mode": "read"}
CALLS: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = [
    ("declared current (v4)", V4, {"schemaVersion": "v4"}),
    ("version-less, current", V4, None),
    ("declared v3, converted", V3, {"schemaVersion": "v3"}),
]


def _noop(_decision: Any, _declared: Any) -> None:
    return None


def time_paired(contenders: list[Contender], calls: int, chunk: int) -> list[float]:
    """Interleaved chunks, the order reversed every other chunk (A B C, C B A, ...) so
    that neither side always runs first; each call timed alone. Answers, per chunk,
    the last contender's p50 minus the first's (us): a paired difference, so a change
    of load between chunks cancels out."""
    clock = time.perf_counter_ns
    for contender in contenders:  # warm-up, untimed
        for _ in range(min(2000, calls)):
            contender.call()
    deltas: list[float] = []
    for index in range(max(1, calls // chunk)):
        order = contenders if index % 2 == 0 else contenders[::-1]
        medians: dict[str, float] = {}
        for contender in order:
            fn, samples = contender.call, []
            for _ in range(chunk):
                start = clock()
                fn()
                samples.append(clock() - start)
            contender.samples += samples
            medians[contender.label] = statistics.median(samples) / 1000
        deltas.append(medians[contenders[-1].label] - medians[contenders[0].label])
    return deltas


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50_000, help="timed calls per contender")
    parser.add_argument("--chunk", type=int, default=500, help="calls per interleaved chunk")
    args = parser.parse_args(argv)
    assert not logging.getLogger().handlers  # no logging configured

    toolset = Toolset.from_json(msgspec.json.encode(seed_000(v3_served=True)))
    counter = UsageCounter()
    bare = Gate(toolset)
    hooked = Gate(toolset, on_decision=_noop)
    counted = Gate(toolset, on_decision=counter.record)
    print(f"load average before: {_load()}")
    header = f"{'call':<26}{'gate':<22}{'p50 us':>9}{'p99 us':>9}{'p50 x':>8}{'p99 x':>8}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for label, arguments, meta in CALLS:
        contenders = [
            Contender("no hook", partial(bare.check, "db.query", arguments, meta)),
            Contender("no-op hook", partial(hooked.check, "db.query", arguments, meta)),
            Contender("usage counter", partial(counted.check, "db.query", arguments, meta)),
        ]
        for contender in contenders:
            assert contender.call().accepted, (label, contender.label)  # type: ignore[attr-defined]
        deltas = time_paired(contenders, args.calls, args.chunk)
        base50, base99 = contenders[0].percentiles()
        for index, contender in enumerate(contenders):
            p50, p99 = contender.percentiles()
            print(
                f"{label if index == 0 else '':<26}{contender.label:<22}{p50:>9.2f}{p99:>9.2f}"
                f"{p50 / base50:>8.3f}{p99 / base99:>8.3f}"
            )
        added = statistics.median(deltas)
        worst = max(worst, added)
        print(
            f"{'':<26}{'added by the counter':<22}{added:>9.2f} us p50 (median of "
            f"{len(deltas)} paired chunks; p50 difference overall "
            f"{contenders[2].percentiles()[0] - base50:.2f} us)"
        )
        print()
    taken, dropped = counter.take()
    assert dropped == 0 and sum(taken.values()) > 0
    met = worst <= TARGET_ADDED_P50_US
    print(
        f"target: the counter adds <= {TARGET_ADDED_P50_US} us p50 to an accepted call: "
        f"{'met' if met else 'MISSED'} (most added: {worst:.2f} us)"
    )
    print("ratios (x): to the gate without a hook, same run, interleaved")
    print(f"load average after: {_load()}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
