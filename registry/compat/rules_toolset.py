"""Changes to a namespace's set of tools: the tools a new set no longer holds.

    toolset_changes({"add": old_add}, {"get-sum": new_sum})   # [Change(kind=tool-renamed, ...)]

A release pipeline knows a namespace's tools as a set: the tools it serves
(the registry), the manifests of a directory, the tools a live server lists.
Each definition pair is `classify`'s business; what only the set shows is a
tool that is gone, and that is the worst break there is for its callers: every
call fails. `tool-renamed` where the engine pairs the lost tool with one tool
the new set adds (the two differ in nothing breaking but the name, and neither
has another such partner), `tool-removed` otherwise. Pairs whose schemas are
equal are made first, so that a tool without arguments, which anything
additive may replace, does not make a plain rename ambiguous.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from registry.compat.classifier import LIMITS, change_of, classify
from registry.compat.jsonvalues import json_equal
from registry.compat.kinds import Kind, Side
from registry.compat.report import Change, ClassificationError
from registry.compat.schema import Limits
from registry.compat.walk import Finding

__all__ = ["toolset_changes"]


def toolset_changes(
    old: Mapping[str, Mapping[str, Any]],
    new: Mapping[str, Mapping[str, Any]],
    *,
    limits: Limits = LIMITS,
) -> list[Change]:
    """`tool-removed` / `tool-renamed` for each tool of `old` (name -> definition)
    that `new` no longer holds, in name order.

    Example: `{"add": {"name": "add", "inputSchema": S}}` ->
    `{"get-sum": {"name": "get-sum", "inputSchema": S}}` is `tool-renamed`
    (`add` -> `get-sum`, calls to `add` fail); a tool gone with no partner, or
    with two candidates, is `tool-removed`. Pairing tries every lost tool against
    every added one; past `limits.max_branch_pairs` pairs, none is paired.
    """
    gone = sorted(name for name in old if name not in new)
    added = sorted(name for name in new if name not in old)
    pairs: dict[str, str] = {}
    if len(gone) * len(added) <= limits.max_branch_pairs:
        for alike in (_same_schemas, _renamed):
            left = [name for name in added if name not in pairs.values()]
            pairs.update(
                _unique(
                    {
                        lost: [name for name in left if alike(old[lost], new[name], limits)]
                        for lost in gone
                        if lost not in pairs
                    }
                )
            )
    changes = []
    for lost in gone:
        if lost in pairs:
            finding = Finding(
                kind=Kind.TOOL_RENAMED, pointer="/name", name="name", old=lost, new=pairs[lost]
            )
        else:
            finding = Finding(kind=Kind.TOOL_REMOVED, pointer="", name="name", old=lost)
        changes.append(change_of(Side.TOOL, finding))
    return changes


def _unique(partners: dict[str, list[str]]) -> dict[str, str]:
    """The pairs in which each side has exactly one partner."""
    claimed = Counter(name for names in partners.values() for name in names)
    return {
        lost: names[0]
        for lost, names in partners.items()
        if len(names) == 1 and claimed[names[0]] == 1
    }


def _same_schemas(old: Mapping[str, Any], new: Mapping[str, Any], limits: Limits) -> bool:
    return all(json_equal(old.get(key), new.get(key)) for key in ("inputSchema", "outputSchema"))


def _renamed(old: Mapping[str, Any], new: Mapping[str, Any], limits: Limits) -> bool:
    """Whether `new` is `old` under another name: nothing else breaks."""
    try:
        report = classify(old, new, limits=limits)
    except ClassificationError:
        return False
    return all(change.kind is Kind.TOOL_RENAMED for change in report.breaking)
