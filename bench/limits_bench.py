"""How long refusing bad input takes (a script, not a test: tests assert no time).

    .venv/bin/python bench/limits_bench.py

Times, in the same run, what the bad-input tests check for correctness:
documents nested 10,000 deep (JSON and YAML), an unterminated string of
escaped quotes, a YAML alias bomb, `registry diff` against a 10,000-level
document, a pattern that backtracks catastrophically under Python's `re`
(RE2 here) on 100,001 characters, and a pattern-laden schema validated by
the engine's linear validator. Each row is the median of REPEATS runs and
the slowest; the line on top is a baseline measured in the same run
(parsing a small valid document), so compare runs by the ratio column.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jsonschema import Draft202012Validator  # noqa: E402

from registry.cli import main as cli  # noqa: E402
from registry.documents import DocumentError, parse_document  # noqa: E402
from registry.patterns import linear_validator, search  # noqa: E402

REPEATS = 5


def refuse(text: str, name: str) -> Callable[[], None]:
    def run() -> None:
        with contextlib.suppress(DocumentError):
            parse_document(text, name)

    return run


def diff_against(deep: str) -> Callable[[], None]:
    directory = Path(tempfile.mkdtemp())
    old, bad = directory / "old.json", directory / "deep.json"
    old.write_text('{"type": "object", "properties": {"a": {"type": "string"}}}')
    bad.write_text(deep)

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            cli(["diff", str(old), str(bad)])

    return run


def linear_patterns() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(x+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    validator = linear_validator(Draft202012Validator)(schema)
    validator.is_valid({"a": "a" * 50 + "!"})
    validator.is_valid({"x" * 50 + "!": "s"})


def alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        name, previous = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def main() -> int:
    deep_json = '{"type": "object", "properties": {"x": ' + "[" * 10_000 + "]" * 10_000 + "}}"
    cases: list[tuple[str, Callable[[], None]]] = [
        ("baseline: a small valid document", refuse('{"type": "object"}', "x.json")),
        ("JSON nested 10,000 deep", refuse("[" * 10_000 + "]" * 10_000, "deep.json")),
        ("YAML nested 10,000 deep", refuse("{a: " * 10_000 + "1" + "}" * 10_000, "deep.yaml")),
        ("unterminated string, 300,000 quotes", refuse('"\\"' * 300_000, "x.json")),
        ("YAML alias bomb", refuse(alias_bomb(), "lol.yaml")),
        ("registry diff vs 10,000 deep", diff_against(deep_json)),
        ("^(a+)+$ on 100,001 chars (RE2)", lambda: search("^(a+)+$", "a" * 100_000 + "!")),
        ("linear validator, backtracking patterns", linear_patterns),
    ]
    rows = []
    for label, run in cases:
        times = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        rows.append((label, statistics.median(times), max(times)))
    baseline = rows[0][1]
    print(f"{'case':<42} {'median':>11} {'slowest':>11} {'x baseline':>11}")
    for label, median, slowest in rows:
        ratio = median / baseline if baseline else float("nan")
        print(f"{label:<42} {median * 1e3:>8.2f} ms {slowest * 1e3:>8.2f} ms {ratio:>10.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
