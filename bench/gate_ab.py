"""An accepted call's cost through `Gate.check` in two checkouts, measured in one run.

    .venv/bin/python bench/gate_ab.py --before /path/to/other/checkout [--chunks 200] [--chunk 500]

Two worker processes, one per checkout (this script's own copy runs in each,
`registry` and `tests` imported from that checkout), each with its gates built
once. The driver asks them in turn, chunk after chunk (every contender's chunk
k before any chunk k+1, the order swapped each chunk), to time `--chunk` calls
of each case, one `perf_counter_ns` pair per call; so a change of load on the
shared machine reaches both alike. Prints p50 and p99 per case and side, and
the ratio after / before of each. Cases: seed 000's db.query v4 declared
current, version-less (strictly valid), declared v3 and converted (v3 still
served), and a 200-property tool declared current. Nothing is logged (no
logging configured, as an application embedding the SDK runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
CASES = ("declared current", "version-less", "declared v3, converted", "wide, declared current")


def worker() -> None:
    """Build the gates of this checkout (sys.path[0]), then answer `chunk N` lines."""
    import msgspec

    from registry.canonical import digest
    from registry.sdk import Gate, Toolset
    from tests.sdk import payload, seed_000, served

    def gate(body: dict[str, Any]) -> Any:
        return Gate(Toolset.from_json(msgspec.json.encode(body)))

    kinds = [{"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "boolean"}]
    wide = {
        "name": "wide",
        "description": "A tool with many properties.",
        "inputSchema": {
            "type": "object",
            "properties": {f"p{i:03d}": kinds[i % 3] for i in range(200)},
            "required": ["p000"],
        },
    }
    assert digest(wide)
    wide_gate = gate(
        payload([{"name": "wide", "current": 1, "versions": [served(wide, 1)], "retired": []}])
    )
    current, converted = gate(seed_000()), gate(seed_000(v3_served=True))
    calls: dict[str, tuple[Any, str, dict[str, Any], Any]] = {
        "declared current": (
            current,
            "db.query",
            {"query": "q", "mode": "read"},
            {"schemaVersion": "v4"},
        ),
        "version-less": (current, "db.query", {"query": "q", "timeout": 10}, None),
        "declared v3, converted": (
            converted,
            "db.query",
            {"query": "q", "timeout_ms": 5},
            {"schemaVersion": "v3"},
        ),
        "wide, declared current": (
            wide_gate,
            "wide",
            {f"p{i:03d}": ("x" if i % 3 == 0 else i if i % 3 == 1 else True) for i in range(40)},
            {"schemaVersion": "v1"},
        ),
    }
    for name, (g, tool, arguments, meta) in calls.items():
        assert g.check(tool, arguments, meta).accepted, name
    print(
        json.dumps({"ready": str(Path(sys.modules["registry"].__file__ or "").parent)}), flush=True
    )
    clock = time.perf_counter_ns
    for line in sys.stdin:
        n = int(line.split()[1])
        out: dict[str, list[int]] = {}
        for name, (g, tool, arguments, meta) in calls.items():
            check = g.check
            samples = []
            for _ in range(n):
                started = clock()
                check(tool, arguments, meta)
                samples.append(clock() - started)
            out[name] = samples
        print(json.dumps(out), flush=True)


def spawn(checkout: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    process = subprocess.Popen(
        [sys.executable, "-u", str(HERE), "--worker"],
        cwd=str(checkout),
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    where = Path(ready["ready"]).resolve()
    if where != (checkout / "registry").resolve():
        raise SystemExit(f"{checkout}: its worker imported registry from {where}")
    return process


def percentile(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="the baseline checkout (required)")
    parser.add_argument("--after", type=Path, default=HERE.parents[1], help="default: this one")
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    if args.before is None:
        parser.error("--before is required")
    sides = {"before": spawn(args.before.resolve()), "after": spawn(args.after.resolve())}
    samples: dict[str, dict[str, list[int]]] = {s: {c: [] for c in CASES} for s in sides}
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    for k in range(args.chunks):
        order = list(sides) if k % 2 == 0 else list(reversed(sides))
        for side in order:
            process = sides[side]
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(f"chunk {args.chunk}\n")
            process.stdin.flush()
            for case, got in json.loads(process.stdout.readline()).items():
                samples[side][case].extend(got)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for process in sides.values():
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    header = ("case", "before p50", "after p50", "ratio", "before p99", "after p99", "ratio")
    print("{:26} {:>10} {:>10} {:>6} {:>11} {:>10} {:>6}".format(*header))
    for case in CASES:
        b50, a50 = percentile(samples["before"][case], 0.5), percentile(samples["after"][case], 0.5)
        b99, a99 = (
            percentile(samples["before"][case], 0.99),
            percentile(samples["after"][case], 0.99),
        )
        print(
            f"{case:26} {b50:9.2f}us {a50:9.2f}us {a50 / b50:5.2f}x "
            f"{b99:10.2f}us {a99:9.2f}us {a99 / b99:5.2f}x"
        )


if __name__ == "__main__":
    main()
