"""The real tool-definition histories kept with the tests (see README.md here).

    from tests.corpus import load_pairs, load_labels
    for pair in load_pairs():          # every consecutive pair of versions
        pair.old, pair.new             # MCP tool definitions (new is None: removed)

Each history is a directory holding `definitions.jsonl` (every distinct
definition once, by key) and `pairs.jsonl` (version pairs naming two keys).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CORPUS", "Pair", "load_labels", "load_pairs"]

CORPUS = Path(__file__).resolve().parent
HISTORIES = ("github-mcp-server",)


@dataclass(frozen=True, slots=True)
class Pair:
    id: str
    tool: str
    kind: str  # version, rename, replaced, removed, variant, variant_removed
    old: dict[str, Any]
    new: dict[str, Any] | None
    # jsonsubschema 0.0.8, closed world: every old-valid call is new-valid (None: unknown)
    closed_world_old_in_new: bool | None


def load_pairs(history: str | None = None) -> list[Pair]:
    """The pairs of one history, or of all of them, in file order."""
    pairs: list[Pair] = []
    for name in (history,) if history else HISTORIES:
        directory = CORPUS / name
        definitions = {
            record["key"]: record["definition"]
            for record in _lines(directory / "definitions.jsonl")
        }
        for record in _lines(directory / "pairs.jsonl"):
            pairs.append(
                Pair(
                    id=record["id"],
                    tool=record["tool"],
                    kind=record["kind"],
                    old=definitions[record["old"]],
                    new=definitions[record["new"]] if record["new"] is not None else None,
                    closed_world_old_in_new=record["closed_world_old_in_new"],
                )
            )
    return pairs


def load_labels(history: str = "github-mcp-server") -> list[dict[str, str]]:
    """Hand labels: `id`, `label` (what changed), `breaks` (yes / no)."""
    labels: list[dict[str, str]] = json.loads((CORPUS / history / "labels.json").read_text())
    return labels


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
