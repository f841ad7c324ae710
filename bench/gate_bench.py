"""Gate overhead per call (decision plus validation, no handler), p50/p99 in us.

Run with no logging configured, as an application embedding the SDK runs it.

    .venv/bin/python bench/gate_bench.py [--calls N] [--chunk N]

Tools: seed 000's db.query v4 (declared current; version-less, i.e. strict;
declared v3, converted to v4) and a 200-property tool declared current. For
each, in the same run and on the same instance:

- `Gate.check` with the validators the gate picks (jsonschema-rs where
  registry/sdk/validators.py allows it) and with python-jsonschema forced
  (`Gate(..., fast_validation=False)`: the validation the gate did before this
  change, the rest of the path being the same code);
- the bare validators on the schema object the gate compiled (the strict form
  of the version the call speaks: declared, or current for the version-less call):
  python-jsonschema, jsonschema-rs and fastjsonschema (each if installed), and
  the gate's own wrapper (`SchemaValidator.is_valid`: jsonschema-rs plus the
  python-jsonschema re-check of a refusal).

The machine is shared and noisy: contenders are timed in interleaved chunks of
`--chunk` calls (every contender's chunk k runs before any contender's chunk
k+1), so a change of load reaches them alike, and each figure is also given as
a ratio to python-jsonschema's in the same run (validators: to bare
python-jsonschema; Gate.check: to the python-jsonschema gate). Every call is
timed alone with perf_counter_ns; the clock's own cost (an empty call) is
printed, not subtracted. The load average is printed before and after.

A second table measures inference (issue 11) on a tool with 10 older
versions (v1..v10 retired, each naming one property differently) against the
same current schema with no older version, interleaved: accepted calls
(declared and version-less) on both, so the ratio shows what inference costs
an accepted call; refused version-less calls whose arguments match v1 (all 10
older strict validators tried, then the report v1 -> v11 and the text) or no
version at all; seed 000's stale call (v3 inferred).

Targets: seed tool declared current, Gate.check p50 <= 3 us and p99 <= 30 us;
accepted calls on the 10-older tool cost what they cost on the bare one; a
refused call with 10 older versions p50 <= 50 us.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
from jsonschema import Draft202012Validator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from registry.sdk import Gate, Toolset, strict_schema
from registry.sdk.validators import compile_validator
from tests.sdk import payload, retired, seed_000, served

TARGET_P50_US = 3.0
TARGET_P99_US = 30.0
TARGET_REFUSED_P50_US = 50.0
OLDER = 10


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


def bare_validators(schema: dict[str, Any]) -> dict[str, Callable[[Any], bool]]:
    """The bare validators on `schema`, python-jsonschema first."""
    found: dict[str, Callable[[Any], bool]] = {
        "python-jsonschema": Draft202012Validator(schema).is_valid
    }
    if importlib.util.find_spec("jsonschema_rs") is not None:
        import jsonschema_rs

        found["jsonschema-rs"] = jsonschema_rs.Draft202012Validator(
            schema, validate_formats=False
        ).is_valid
    if importlib.util.find_spec("fastjsonschema") is not None:
        import fastjsonschema

        compiled = fastjsonschema.compile(schema)
        error = fastjsonschema.JsonSchemaException

        def fast(instance: Any) -> bool:
            try:
                compiled(instance)
            except error:
                return False
            return True

        found["fastjsonschema"] = fast
    gate_own = compile_validator(schema, Draft202012Validator(schema))
    found[f"gate wrapper ({gate_own.engine})"] = gate_own.is_valid
    return found


@dataclass
class Contender:
    label: str
    call: Callable[[], object]
    samples: list[int] = field(default_factory=list)

    def percentiles(self) -> tuple[float, float]:
        ordered = sorted(self.samples)
        return (
            ordered[len(ordered) // 2] / 1000,
            ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1000,
        )


def time_interleaved(contenders: list[Contender], calls: int, chunk: int) -> None:
    clock = time.perf_counter_ns
    for contender in contenders:  # warm-up, untimed
        for _ in range(min(1000, calls)):
            contender.call()
    done = 0
    while done < calls:
        size = min(chunk, calls - done)
        for contender in contenders:
            fn, samples = contender.call, contender.samples
            for _ in range(size):
                start = clock()
                fn()
                samples.append(clock() - start)
        done += size


@dataclass
class Case:
    label: str
    schema: dict[str, Any]  # the schema the gate validates against
    fast_gate: Gate
    python_gate: Gate
    name: str
    arguments: dict[str, Any]
    meta: dict[str, Any] | None


def gates(body: dict[str, Any]) -> tuple[Gate, Gate]:
    toolset = Toolset.from_json(msgspec.json.encode(body))
    return Gate(toolset), Gate(toolset, fast_validation=False)


def served_schema(gate: Gate, name: str, version: int) -> dict[str, Any]:
    """The schema the gate compiled: the strict form of the version's inputSchema
    (every call meets the strict form of the version it speaks)."""
    entry = gate.toolset.tool(name)
    assert entry is not None
    (found,) = (v for v in entry.versions if v.version == version)
    schema: dict[str, Any] = strict_schema(found.definition["inputSchema"])
    return schema


def cases() -> list[Case]:
    seed = gates(seed_000(v3_served=True))
    wide_def = wide_tool()
    wide = gates(payload([{"name": "wide", "current": 1, "versions": [served(wide_def, 1)]}]))
    v4_schema = served_schema(seed[0], "db.query", 4)
    v4 = {"query": "SELECT 1", "timeout": 1000, "mode": "read"}
    v3 = {"query": "SELECT 1", "timeout_ms": 1000, "mode": "read"}
    return [
        Case("db.query v4 declared", v4_schema, *seed, "db.query", v4, {"schemaVersion": "v4"}),
        Case("db.query undeclared", v4_schema, *seed, "db.query", v4, None),
        Case(
            "db.query v3 -> v4",
            served_schema(seed[0], "db.query", 3),
            *seed,
            "db.query",
            v3,
            {"schemaVersion": "v3"},
        ),
        Case(
            "wide (200 props) v1",
            served_schema(wide[0], "wide", 1),
            *wide,
            "wide",
            wide_arguments(),
            {"schemaVersion": "v1"},
        ),
    ]


def evolving(version: int) -> dict[str, Any]:
    """Version `version` of a tool whose every version renamed its second property."""
    return {
        "name": "evolving",
        "description": "A tool renamed its option at every version.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, f"option_{version}": {"type": "integer"}},
            "required": ["query"],
        },
    }


def evolving_gate(older: int) -> Gate:
    current = older + 1
    tool = {
        "name": "evolving",
        "current": current,
        "versions": [served(evolving(current), current)],
        "retired": [retired(evolving(v), v) for v in range(1, current)],
    }
    return Gate(Toolset.from_json(msgspec.json.encode(payload([tool]))))


def inference_contenders() -> list[tuple[Contender, bool]]:
    """(contender, expected acceptance); the first two pairs are bare/10-older."""
    bare, rich = evolving_gate(0), evolving_gate(OLDER)
    seed = Gate(Toolset.from_json(msgspec.json.encode(seed_000())))
    current = f"v{OLDER + 1}"
    ok = {"query": "q", f"option_{OLDER + 1}": 1}
    declared = {"schemaVersion": current}
    return [
        (
            Contender(
                "accepted declared, 0 older",
                # its v1's own property: a declared call meets the strict form of its version
                partial(
                    bare.check, "evolving", {"query": "q", "option_1": 1}, {"schemaVersion": "v1"}
                ),
            ),
            True,
        ),
        (
            Contender(
                f"accepted declared, {OLDER} older", partial(rich.check, "evolving", ok, declared)
            ),
            True,
        ),
        (
            Contender(
                "accepted version-less, 0 older",
                partial(bare.check, "evolving", {"query": "q", "option_1": 1}, None),
            ),
            True,
        ),
        (
            Contender(
                f"accepted version-less, {OLDER} older", partial(rich.check, "evolving", ok, None)
            ),
            True,
        ),
        (
            Contender(
                f"refused, {OLDER} older, v1 inferred",
                partial(rich.check, "evolving", {"query": "q", "option_1": 1}, None),
            ),
            False,
        ),
        (
            Contender(
                f"refused, {OLDER} older, none matches",
                partial(rich.check, "evolving", {"query": "q", "other": 1}, None),
            ),
            False,
        ),
        (
            Contender(
                "refused, seed 000, v3 inferred",
                partial(seed.check, "db.query", {"query": "q", "timeout_ms": 1}, None),
            ),
            False,
        ),
    ]


def _load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "n/a"
    return f"{one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000, help="timed calls per contender")
    parser.add_argument("--chunk", type=int, default=500, help="calls per interleaved chunk")
    args = parser.parse_args(argv)
    # no logging configured, as an embedding application leaves it
    assert not logging.getLogger().handlers

    print(f"load average before: {_load()}")
    empty = Contender("empty call", lambda: None)
    time_interleaved([empty], args.calls, args.chunk)
    p50, p99 = empty.percentiles()
    print(f"clock overhead (empty call) p50/p99: {p50:.2f} / {p99:.2f} us, in every figure")

    header = f"{'case':<22}{'what':<36}{'p50 us':>9}{'p99 us':>9}{'p50 x':>8}{'p99 x':>8}"
    print(header)
    print("-" * len(header))
    verdict, target = False, "target not measured"
    for case in cases():
        check = (case.name, case.arguments, case.meta)
        contenders = [
            Contender("Gate.check, python-jsonschema", partial(case.python_gate.check, *check)),
            Contender("Gate.check, gate's choice", partial(case.fast_gate.check, *check)),
        ]
        for label, is_valid in bare_validators(case.schema).items():
            contenders.append(Contender(label, partial(is_valid, case.arguments)))
        for contender in contenders:
            result = contender.call()
            assert getattr(result, "accepted", result) is True, (case.label, contender.label)
        time_interleaved(contenders, args.calls, args.chunk)
        gate_base = contenders[0].percentiles()
        bare_base = contenders[2].percentiles()
        for index, contender in enumerate(contenders):
            p50, p99 = contender.percentiles()
            base = gate_base if index < 2 else bare_base
            print(
                f"{case.label if index == 0 else '':<22}{contender.label:<36}"
                f"{p50:>9.2f}{p99:>9.2f}{p50 / base[0]:>8.3f}{p99 / base[1]:>8.3f}"
            )
        if case.label == "db.query v4 declared":
            p50, p99 = contenders[1].percentiles()
            verdict = p50 <= TARGET_P50_US and p99 <= TARGET_P99_US
            target = (
                f"target for the seed tool declared current: p50 <= {TARGET_P50_US} us and "
                f"p99 <= {TARGET_P99_US} us: {'met' if verdict else 'MISSED'} "
                f"({p50:.2f} / {p99:.2f} us)"
            )
        print()
    print(target)
    print(
        "ratios (x): to the python-jsonschema gate for Gate.check rows, to bare "
        "python-jsonschema for validator rows; same run, interleaved"
    )
    print()
    verdict = inference_table(args.calls, args.chunk) and verdict
    print(f"load average after: {_load()}")
    return 0 if verdict else 1


def inference_table(calls: int, chunk: int) -> bool:
    pairs = inference_contenders()
    for contender, accepted in pairs:
        decision = contender.call()
        assert getattr(decision, "accepted", None) is accepted, contender.label
    contenders = [c for c, _ in pairs]
    time_interleaved(contenders, calls, chunk)
    figures = {c.label: c.percentiles() for c in contenders}
    header = f"{'inference: Gate.check':<44}{'p50 us':>9}{'p99 us':>9}{'p50 x':>8}{'p99 x':>8}"
    print(header)
    print("-" * len(header))
    bases = [
        contenders[0],
        contenders[0],
        contenders[2],
        contenders[2],
        contenders[3],
        contenders[3],
        contenders[3],
    ]
    for contender, base in zip(contenders, bases, strict=True):
        p50, p99 = figures[contender.label]
        b50, b99 = figures[base.label]
        print(f"{contender.label:<44}{p50:>9.2f}{p99:>9.2f}{p50 / b50:>8.3f}{p99 / b99:>8.3f}")
    print(
        "ratios (x): accepted rows to the same call on the tool with no older "
        "version; refused rows to the accepted version-less call on the 10-older tool"
    )
    refused = max(figures[c.label][0] for c in contenders[4:6])
    met = refused <= TARGET_REFUSED_P50_US
    print(
        f"target for a refused call with {OLDER} older versions: p50 <= "
        f"{TARGET_REFUSED_P50_US} us: {'met' if met else 'MISSED'} (slowest p50 {refused:.2f} us)"
    )
    return met


if __name__ == "__main__":
    sys.exit(main())
