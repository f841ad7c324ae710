"""Gate overhead per call (decision plus validation, no handler), p50/p99 in us.

    .venv/bin/python bench/gate_bench.py [--calls N]

Cases: seed 000's db.query declared current, declared v3 (converted), version-less
(strict); a 200-property tool declared current. Each case also times the bare
validator (python-jsonschema) and, if installed, a compiled validator
(jsonschema-rs, fastjsonschema) on the same schema and instance.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import structlog
from jsonschema import Draft202012Validator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from registry.sdk import Gate, Toolset
from tests.sdk import payload, seed_000, served


def wide_tool(n: int = 200) -> dict[str, Any]:
    kinds = [{"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "boolean"}]
    props = {f"p{i:03d}": kinds[i % 3] for i in range(n)}
    return {
        "name": "wide",
        "description": "A tool with many properties.",
        "inputSchema": {"type": "object", "properties": props, "required": ["p000"]},
    }


def wide_arguments(n: int = 200) -> dict[str, Any]:
    values: list[Any] = ["x", 1, True]
    return {f"p{i:03d}": values[i % 3] for i in range(n)}


def timed(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    for _ in range(min(1000, calls)):
        fn()
    samples = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        start = clock()
        fn()
        samples.append(clock() - start)
    samples.sort()
    return statistics.median(samples) / 1000, samples[int(len(samples) * 0.99)] / 1000


def compiled_validators(schema: dict[str, Any]) -> dict[str, Callable[[Any], bool]]:
    found: dict[str, Callable[[Any], bool]] = {}
    try:
        import jsonschema_rs  # type: ignore[import-not-found]

        found["jsonschema-rs"] = jsonschema_rs.validator_for(schema).is_valid
    except ImportError:
        pass
    try:
        import fastjsonschema  # type: ignore[import-not-found]

        compiled = fastjsonschema.compile(schema)

        def fast(instance: Any) -> bool:
            try:
                compiled(instance)
            except fastjsonschema.JsonSchemaException:
                return False
            return True

        found["fastjsonschema"] = fast
    except ImportError:
        pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    calls = parser.parse_args().calls
    # production level: accept decisions log at debug and are filtered out
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    seed = Gate(Toolset.from_json(msgspec.json.encode(seed_000(v3_served=True))))
    wide_def = wide_tool()
    wide = Gate(
        Toolset.from_json(
            msgspec.json.encode(
                payload([{"name": "wide", "current": 1, "versions": [served(wide_def, 1)]}])
            )
        )
    )
    v4 = {"query": "SELECT 1", "timeout": 1000, "mode": "read"}
    v3 = {"query": "SELECT 1", "timeout_ms": 1000, "mode": "read"}
    wide_args = wide_arguments()
    cases: list[tuple[str, Gate, str, dict[str, Any], dict[str, Any] | None, Any]] = [
        ("db.query v4 declared", seed, "db.query", v4, {"schemaVersion": "v4"}, None),
        ("db.query v3 -> v4", seed, "db.query", v3, {"schemaVersion": "v3"}, None),
        ("db.query undeclared", seed, "db.query", v4, None, None),
        ("wide (200 props) v1", wide, "wide", wide_args, {"schemaVersion": "v1"}, wide_def),
    ]
    print(f"{'case':<28}{'what':<22}{'p50 us':>10}{'p99 us':>10}")
    for label, gate, name, arguments, meta, definition in cases:
        assert gate.check(name, arguments, meta).accepted
        p50, p99 = timed(partial(gate.check, name, arguments, meta), calls)
        print(f"{label:<28}{'Gate.check':<22}{p50:>10.1f}{p99:>10.1f}")
        schema = (definition or seed.toolset.tool("db.query").current_version.definition)[  # type: ignore[union-attr]
            "inputSchema"
        ]
        bare = Draft202012Validator(schema).is_valid
        p50, p99 = timed(partial(bare, arguments), calls)
        print(f"{'':<28}{'python-jsonschema':<22}{p50:>10.1f}{p99:>10.1f}")
        for other, is_valid in compiled_validators(schema).items():
            assert is_valid(arguments)
            p50, p99 = timed(partial(is_valid, arguments), calls)
            print(f"{'':<28}{other:<22}{p50:>10.1f}{p99:>10.1f}")
    if not compiled_validators({"type": "object"}):
        print("\nno compiled validator installed (jsonschema-rs, fastjsonschema): not compared")


if __name__ == "__main__":
    main()
