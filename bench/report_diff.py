"""The engine's reports at two revisions, compared byte for byte (a script, not a test).

    .venv/bin/python bench/report_diff.py [--base REV] [--corpus FILE.jsonl ...]
                                          [--generated N] [--show N] [--out FILE]

A refactoring of the engine must leave every report as it was, except where a
change says otherwise (a kind split, a message made true): this lists every
pair whose report differs between REV (default `main`, exported with
`git archive` into a temporary folder) and this working tree, with what
differs in it. The pairs, the same bytes for both sides:

- tests/corpus/ (every history; pairs whose new version is present);
- each `--corpus` JSONL file (records with `id`, `old`, `new`, as the team's
  shared corpus holds them);
- the fixtures of tests/cases/ as this tree holds them (a set of tools is
  compared with `toolset_changes`);
- `--generated` pairs from each generator of the property tests
  (tests/test_soundness.py, tests/test_soundness_keywords.py,
  tests/test_soundness_unions.py, tests/test_surface.py), drawn by hypothesis
  derandomized (the same pairs on every run of this tree), and the 2,000-property
  synthetic pair of bench/classify_bench.py.

Each side classifies them in its own process, importing `registry` from its
own tree, and writes per pair: the report as `registry diff --format json`
prints it (`msgspec.json.encode(classify(old, new))`, or the
ClassificationError's message), and the converter a publish suggests for its
breaking changes (`repair(report, old, new).ops` where the revision has it,
else `suggested_converter` of the report's `suggested_op`s). A pair is
`changed` when either differs; its line says where: `kinds` (a change's kind
at a path, old -> new), `severity`, `message`, `witness`, `suggested_op` (in
the report), `suggestion` (the publish's converter), `values`, `error`.
Exit 0 when no report changed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GENERATORS = ("soundness", "keywords", "unions", "surface")

# -- the pairs (drawn in this tree) --------------------------------------------


def corpus_pairs() -> Iterator[dict[str, Any]]:
    from tests.corpus import load_pairs

    for pair in load_pairs():
        if pair.new is not None:
            yield {"id": f"corpus/{pair.id}", "old": pair.old, "new": pair.new}


def shared_pairs(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else None
        if record and record.get("new") is not None:
            yield {"id": f"{path.stem}/{record['id']}", "old": record["old"], "new": record["new"]}


def case_pairs() -> Iterator[dict[str, Any]]:
    from tests.cases import load_cases

    for case in load_cases():
        yield {"id": f"cases/{case.id}", "old": case.old, "new": case.new, "set": case.toolset}


def generated_pairs(count: int) -> Iterator[dict[str, Any]]:
    """`count` pairs from each property test's generator, derandomized."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from tests import test_soundness, test_soundness_keywords, test_soundness_unions, test_surface

    def soundness(data: Any) -> tuple[Any, Any]:
        old = data.draw(test_soundness.object_schemas())
        return old, data.draw(test_soundness.mutated(old))

    def keywords(data: Any) -> tuple[Any, Any]:
        module = test_soundness_keywords
        old_body = {"$defs": {"shared": data.draw(module.leaves)}, **data.draw(module.schemas())}
        new_body = data.draw(module.mutated(old_body))
        dialect = data.draw(st.sampled_from([module.DRAFT_2020, module.DRAFT_07]))
        other = data.draw(st.sampled_from([dialect, module.DRAFT_2020, module.DRAFT_07]))
        return module.in_dialect(old_body, dialect), module.in_dialect(new_body, other)

    def unions(data: Any) -> tuple[Any, Any]:
        old = data.draw(test_soundness_unions.arguments())
        return old, data.draw(test_soundness_unions.edited(old))

    def surface(data: Any) -> tuple[Any, Any]:
        old = data.draw(st.one_of(test_soundness.object_schemas(), test_surface.ITEMS_OF_OBJECTS))
        if data.draw(st.booleans()):
            old = {**old, "$defs": {"d": {"type": "string", "default": "x"}}}
        new = data.draw(test_surface.surface_edits(old))
        if "$defs" in new and "$defs" not in old:
            old = {**old, "$defs": new["$defs"]}
        return old, new

    def drawn_by(draw: Any) -> list[tuple[Any, Any]]:
        drawn: list[tuple[Any, Any]] = []

        @settings(
            max_examples=count,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(st.data())
        def collect(data: Any) -> None:
            drawn.append(json.loads(json.dumps(draw(data))))  # a copy: drawn schemas are edited

        collect()
        return drawn

    for name, draw in zip(GENERATORS, (soundness, keywords, unions, surface), strict=True):
        for number, (old, new) in enumerate(drawn_by(draw)):
            yield {
                "id": f"generated/{name}#{number}",
                "old": {"name": "t", "inputSchema": old},
                "new": {"name": "t", "inputSchema": new},
            }
    sys.path.insert(0, str(REPO / "bench"))
    from classify_bench import mutate, synthetic_schema

    schema = synthetic_schema()
    yield {
        "id": "generated/classify_bench-synthetic",
        "old": {"name": "t", "inputSchema": schema},
        "new": {"name": "t", "inputSchema": mutate(schema)},
    }


# -- one side: classify every pair with the registry of one tree ----------------


def worker(tree: Path, pairs: Path, out: Path) -> None:
    """Run in a process of its own: `registry` comes from `tree`."""
    sys.path.insert(0, str(tree))
    import msgspec

    from registry import compat

    if Path(compat.__file__).resolve().parents[2] != tree.resolve():
        raise SystemExit(f"registry imported from {compat.__file__}, not {tree}")
    with pairs.open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as sink:
        for line in source:
            pair = json.loads(line)
            sink.write(json.dumps({"id": pair["id"], **_answer(compat, msgspec, pair)}) + "\n")


def _answer(compat: Any, msgspec: Any, pair: dict[str, Any]) -> dict[str, Any]:
    old, new = pair["old"], pair["new"]
    if pair.get("set"):
        return {"report": msgspec.json.encode(compat.toolset_changes(old, new)).decode()}
    try:
        report = compat.classify(old, new)
    except compat.ClassificationError as error:
        return {"error": f"{error.pointer}: {error.message}"}
    if hasattr(compat, "repair"):
        ops = compat.repair(report, old, new).ops
    else:
        ops = compat.suggested_converter(c.suggested_op for c in report.breaking if c.suggested_op)
    return {"report": msgspec.json.encode(report).decode(), "suggestion": ops}


# -- comparing ---------------------------------------------------------------------


def differences(base: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """What differs between two answers for one pair, in short words."""
    if "error" in base or "error" in head:
        return [] if base.get("error") == head.get("error") else ["error"]
    found: list[str] = []
    if base["report"] != head["report"]:
        found += _report_differences(json.loads(base["report"]), json.loads(head["report"]))
    if base.get("suggestion") != head.get("suggestion"):
        found.append("suggestion")
    return found


def _report_differences(base: Any, head: Any) -> list[str]:
    if isinstance(base, list):  # a set of tools
        return ["toolset"]
    found = []
    if base["severity"] != head["severity"]:
        found.append(f"severity {base['severity']} -> {head['severity']}")
    paths_base = collections.defaultdict(list)
    for change in base["changes"]:
        paths_base[change["path"]].append(change)
    paths_head = collections.defaultdict(list)
    for change in head["changes"]:
        paths_head[change["path"]].append(change)
    for path in sorted(paths_base.keys() | paths_head.keys()):
        was, now = paths_base.get(path, []), paths_head.get(path, [])
        kinds_was = sorted(c["kind"] for c in was)
        kinds_now = sorted(c["kind"] for c in now)
        if kinds_was != kinds_now:
            found.append(f"kinds at {path or '/'}: {kinds_was} -> {kinds_now}")
            continue
        for field in ("severity", "message", "witness", "suggested_op"):
            if [c[field] for c in was] != [c[field] for c in now]:
                found.append(f"{field} at {path or '/'}")
        if [(c.get("old"), c.get("new")) for c in was] != [
            (c.get("old"), c.get("new")) for c in now
        ]:
            found.append(f"values at {path or '/'}")
    return found or ["order"]


# -- running both sides --------------------------------------------------------------


def export(revision: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision],
        check=True,
        capture_output=True,
    ).stdout
    tar_path = into / "tree.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def run_side(tree: Path, pairs: Path, out: Path) -> dict[str, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run(
        [sys.executable, __file__, "--worker", str(tree), str(pairs), str(out)],
        check=True,
        env=env,
        cwd=tree,
    )
    answers = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        answers[record.pop("id")] = record
    return answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="main", help="the revision to compare with")
    parser.add_argument("--corpus", type=Path, action="append", default=[])
    parser.add_argument("--generated", type=int, default=300, help="pairs per generator")
    parser.add_argument("--show", type=int, default=0, help="print N changed reports whole")
    parser.add_argument("--out", type=Path, help="write every changed pair's answers (JSONL)")
    parser.add_argument(
        "--worker", nargs=3, metavar=("TREE", "PAIRS", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        worker(*(Path(p) for p in args.worker))
        return 0
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory(prefix="report-diff-") as scratch:
        folder = Path(scratch)
        pairs_path = folder / "pairs.jsonl"
        counts: collections.Counter[str] = collections.Counter()
        with pairs_path.open("w", encoding="utf-8") as sink:
            sources = [corpus_pairs(), *(shared_pairs(p) for p in args.corpus), case_pairs()]
            sources.append(generated_pairs(args.generated))
            for source in sources:
                for pair in source:
                    counts[pair["id"].split("/")[0]] += 1
                    sink.write(json.dumps(pair) + "\n")
        base = run_side(export(args.base, folder), pairs_path, folder / "base.jsonl")
        head = run_side(REPO, pairs_path, folder / "head.jsonl")
    print("pairs: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
    changed = {pair: found for pair in base if (found := differences(base[pair], head[pair]))}
    by_source = collections.Counter(pair.split("/")[0] for pair in changed)
    print(f"changed: {len(changed)} of {len(base)} ({dict(by_source)}) against {args.base}")
    for pair, found in changed.items():
        print(f"{pair}: " + "; ".join(found))
    for pair in list(changed)[: args.show]:
        print(f"\n== {pair}\n-- {args.base}\n{base[pair]}\n-- this tree\n{head[pair]}")
    if args.out:
        with args.out.open("w", encoding="utf-8") as sink:
            for pair in changed:
                sink.write(json.dumps({"id": pair, "base": base[pair], "head": head[pair]}) + "\n")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
