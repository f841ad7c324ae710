"""The engine's kinds as fixtures: one folder per kind, one folder per case.

    tests/cases/<kind>/<case>/old.json       a tool definition (or, for a
    tests/cases/<kind>/<case>/new.json       case about a set of tools, name -> definition)
    tests/cases/<kind>/<case>/expected.json  the exact report: `classify(old, new)` as
                                             JSON (for a set: `toolset_changes`' list)

    from tests.cases import load_cases, report_text
    for case in load_cases():
        assert report_text(case) == case.expected_text

A case's report names its folder's kind and may hold others (a property added
with a default is `default-added` too). After a change to the engine that
changes reports on purpose (a kind split, a message reworded),
`.venv/bin/python -m tests.cases` writes every `expected.json` anew from the
engine, for review in the diff.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from registry.compat import classify, toolset_changes

__all__ = ["CASES", "Case", "load_cases", "report_text"]

CASES = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class Case:
    kind: str  # the folder: the kind this case is about
    name: str
    old: Any
    new: Any
    expected_text: str  # expected.json as written

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def toolset(self) -> bool:
        """A case about a set of tools: old and new map names to definitions."""
        return "name" not in self.old


def load_cases() -> list[Case]:
    """Every case, by kind then name."""
    found = []
    for folder in sorted(CASES.glob("*/*/")):
        if not (folder / "old.json").is_file():
            continue
        found.append(
            Case(
                kind=folder.parent.name,
                name=folder.name,
                old=_read(folder / "old.json"),
                new=_read(folder / "new.json"),
                expected_text=(folder / "expected.json").read_text(encoding="utf-8"),
            )
        )
    return found


def report_text(case: Case) -> str:
    """What the engine reports for `case`, written as `expected.json` is."""
    if case.toolset:
        found: Any = toolset_changes(case.old, case.new)
    else:
        found = classify(case.old, case.new)
    return written(msgspec.to_builtins(found))


def written(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
