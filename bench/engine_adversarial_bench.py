"""The engine's worst cases, timed (a script, not a test: tests assert no time).

    .venv/bin/python bench/engine_adversarial_bench.py [--repeats N]

Each case is one `classify(old, new)` of the library, as a caller (or the
service) makes it, on the schemas of tests/adversarial.py: a recursive
package.json-like schema (24 KB) with four edits, both ways; objects of
30,000 properties (a copy, one change, half of them tightened, all renamed);
two `anyOf`s of 1,000 object branches (every branch changed, and reordered);
two recursions through `$ref` of other periods. Each row gives the median and
the slowest of REPEATS runs, and what the report said: where the work budget
(`registry.compat.Limits`) ran out, the bound it names. The first row is a
baseline measured in the same run (a small real pair of tests/corpus/), so
compare runs by the ratio column, not by absolute times.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from registry.compat import ChangeReport, classify  # noqa: E402
from tests.adversarial import (  # noqa: E402
    package_json_like,
    ref_chain,
    union_of_objects,
    wide_object,
)
from tests.corpus import load_pairs  # noqa: E402

REPEATS = 5


def _tool(schema: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": schema}


def _edited(schema: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    changed = copy.deepcopy(schema)
    edit(changed)
    return changed


def cases() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    pair = next(p for p in load_pairs() if p.new is not None and p.old != p.new)
    found: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("baseline: a corpus pair", pair.old, pair.new)
    ]
    package = package_json_like()
    definitions = "definitions"
    edits: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
        (
            "exports condition narrowed",
            lambda s: s[definitions]["entryObject"]["properties"].__setitem__(
                "types", {"$ref": "#/definitions/entry"}
            ),
        ),
        (
            "overrides branch added",
            lambda s: s[definitions]["overrides"]["additionalProperties"]["anyOf"].append(
                {"type": "null"}
            ),
        ),
        ("fallback minItems 2", lambda s: s[definitions]["fallback"].__setitem__("minItems", 2)),
        ("exports branch removed", lambda s: s[definitions]["exports"]["anyOf"].pop(1)),
    ]
    for name, edit in edits:
        changed = _edited(package, edit)
        found.append((f"package.json-like: {name}", _tool(package), _tool(changed)))
        found.append((f"package.json-like: {name}, reversed", _tool(changed), _tool(package)))
    wide = wide_object(30_000)
    one = {"type": "object", "properties": dict(wide["properties"])}
    one["properties"]["p7"] = {"type": "string", "maxLength": 3}
    half = copy.deepcopy(wide)
    for i in range(0, 30_000, 2):
        half["properties"][f"p{i}"]["maxLength"] = 3
    renamed = {
        "type": "object",
        "properties": {f"q{i}": {"type": "string"} for i in range(30_000)},
    }
    found += [
        ("30,000 properties: a copy", _tool(wide), _tool(copy.deepcopy(wide))),
        ("30,000 properties: one tightened", _tool(wide), _tool(one)),
        ("30,000 properties: half tightened", _tool(wide), _tool(half)),
        ("30,000 properties: all renamed", _tool(wide), _tool(renamed)),
    ]
    reordered = union_of_objects(1000, "string")
    reordered["properties"]["v"]["anyOf"].reverse()
    found += [
        (
            "anyOf of 1,000 vs 1,000, every branch changed",
            _tool(union_of_objects(1000, "string")),
            _tool(union_of_objects(1000, "integer")),
        ),
        (
            "anyOf of 1,000 vs 1,000, reordered",
            _tool(union_of_objects(1000, "string")),
            _tool(reordered),
        ),
        (
            "recursive $ref: period 30 vs 31",
            _tool(ref_chain(30)),
            _tool(ref_chain(31, "integer")),
        ),
    ]
    return found


def _outcome(report: ChangeReport) -> str:
    budget = next((c.message for c in report.changes if "budget ran out" in c.message), "")
    text = f"{report.severity.value}, {len(report.changes):,} changes"
    if budget:
        text += ": " + budget.split("(", 1)[1].removesuffix(", Limits)")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args(argv)
    rows = []
    baseline = 0.0
    for name, old, new in cases():
        times = []
        report = classify(old, new)  # outside the timing: the first call parses nothing twice
        for _ in range(args.repeats):
            start = time.perf_counter()
            report = classify(old, new)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        baseline = baseline or median
        rows.append((name, median, max(times), median / baseline, _outcome(report)))
    width = max(len(row[0]) for row in rows)
    print(f"{'case':<{width}}  {'median':>10}  {'slowest':>10}  {'ratio':>9}  report")
    for name, median, slowest, ratio, outcome in rows:
        print(
            f"{name:<{width}}  {median * 1e3:>8.2f}ms  {slowest * 1e3:>8.2f}ms  "
            f"{ratio:>8,.0f}x  {outcome}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
