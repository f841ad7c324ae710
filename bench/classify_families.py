"""Generated tool-definition pairs by shape, timed against mcp-diff (a script, not a test).

    .venv/bin/python bench/classify_families.py [--per 30] [--seed 28]
    .venv/bin/python bench/classify_bench.py ...      # runs these after the corpus

The corpus is one history; a shape it lacks could make the engine slower than
mcp-diff 0.1.0 unseen. Each family is one shape of definition, drawn with a
seeded `random.Random` (the same pairs on every run of one tree):

- `long-descriptions`: a tool and its properties described in 0.5-4 KB each;
- `many-optional`: 40-160 properties, a few of them required;
- `nullable-unions`: properties written `anyOf: [X, {"type": "null"}]` or
  `type: [X, "null"]`, objects among them;
- `nested-arrays`: arrays of objects holding arrays of objects, 2-4 levels;
- `large-enums`: enums of 40-400 strings beside the usual properties;
- `deep-nesting`: objects 6-14 levels deep, a few properties on each.

Each definition is then edited as tools are between releases, one edit per
pair, at a place drawn from the whole schema (a nested property as likely as a
top-level one): `unchanged` (the same definition, another copy), `description`
(a tool's or a property's description rewritten), `optional-added`,
`enum-widened`, `enum-narrowed`, `type-changed` and `required-added` (an
optional property made required).

For every pair, `classify(old, new)` and mcp-diff's `classify_changes([old],
[new])` run back to back in alternating order, ROUNDS passes, each pair keeping
its smaller first call (as bench/classify_bench.py times the corpus). The
table gives per family (and per edit, all families together) classify's
median and p99, mcp-diff's median, and their ratio; the goal (issue 28) is
p99 <= 300 us and a ratio <= 0.8x on every family. `--matrix` adds the ratio
per family and edit.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from registry.compat import classify  # noqa: E402

__all__ = [
    "EDITS",
    "FAMILIES",
    "family_pairs",
    "load_average",
    "main",
    "mcp_diff",
    "percentile",
    "print_families",
    "time_families",
]

TARGET_P99_US = 300.0
TARGET_RATIO = 0.8
ROUNDS = 2

_TEXT = """
the repository issue branch commit number of results page owner name file path query filter
sort order state open closed label user team project pull request review comment body title
limit offset cursor token scope workspace folder document record entry value format date time
zone include exclude deleted archived visible default maximum minimum return only when set to
true false use this to list get create update remove search
"""
_WORDS = tuple(_TEXT.split())


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _text(rng: random.Random, size: int) -> str:
    """About `size` characters of prose, in sentences."""
    parts: list[str] = []
    length = 0
    while length < size:
        sentence = _sentence(rng, rng.randint(6, 18))
        parts.append(sentence)
        length += len(sentence) + 1
    return " ".join(parts)


def _name(rng: random.Random, taken: dict[str, Any] | set[str]) -> str:
    while True:
        name = "_".join(rng.sample(_WORDS, rng.randint(1, 3)))
        if name not in taken and name.isidentifier():
            return name


# -- the leaves and objects of each shape ------------------------------------------------


class _Shape:
    """How one family writes descriptions, leaves and objects."""

    description = (20, 120)  # characters of a property's description
    tool_description = (60, 400)
    properties = (3, 10)
    required = 0.4  # the share of properties required
    enum_size = (2, 8)
    nullable = 0.0  # the share of leaves that also accept null
    depth = 0  # objects nested below the root
    arrays = 0.0  # the share of object-holding properties that are arrays of objects

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def describe(self) -> str:
        return _text(self.rng, self.rng.randint(*self.description))

    def leaf(self) -> dict[str, Any]:
        rng = self.rng
        pick = rng.randrange(6)
        schema: dict[str, Any]
        if pick == 0:
            schema = {"type": "string", "description": self.describe()}
        elif pick == 1:
            schema = {"type": "number", "description": self.describe()}
            if rng.random() < 0.5:
                schema["minimum"] = 1
        elif pick == 2:
            schema = {"type": "integer", "description": self.describe(), "maximum": 100}
        elif pick == 3:
            schema = {"type": "boolean", "description": self.describe()}
        elif pick == 4:
            values = sorted({_name(rng, set()) for _ in range(rng.randint(*self.enum_size))})
            schema = {"type": "string", "description": self.describe(), "enum": values}
        else:
            schema = {
                "type": "array",
                "description": self.describe(),
                "items": {"type": "string"},
            }
        if rng.random() < self.nullable:
            return self.nulled(schema)
        return schema

    def nulled(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.rng.random() < 0.5 and "enum" not in schema and schema["type"] != "array":
            return {**schema, "type": [schema["type"], "null"]}
        described = {"description": schema.pop("description")}
        return {**described, "anyOf": [schema, {"type": "null"}]}

    def obj(self, depth: int) -> dict[str, Any]:
        rng = self.rng
        props: dict[str, Any] = {}
        for _ in range(rng.randint(*self.properties)):
            props[_name(rng, props)] = self.leaf()
        if depth < self.depth:
            for _ in range(rng.randint(1, 2)):
                child = self.obj(depth + 1)
                if rng.random() < self.arrays:
                    child = {"type": "array", "description": self.describe(), "items": child}
                elif rng.random() < self.nullable:
                    child = {"anyOf": [child, {"type": "null"}]}
                props[_name(rng, props)] = child
        required = [name for name in props if rng.random() < self.required]
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        if depth:
            schema["description"] = self.describe()
        return schema

    def tool(self, index: int) -> dict[str, Any]:
        rng = self.rng
        definition: dict[str, Any] = {
            "name": f"{_name(rng, set())}_{index}",
            "description": _text(rng, rng.randint(*self.tool_description)),
            "inputSchema": self.obj(0),
        }
        if rng.random() < 0.5:
            definition["annotations"] = {"readOnlyHint": rng.random() < 0.5}
        return definition


class _LongDescriptions(_Shape):
    description = (500, 4000)
    tool_description = (1000, 4000)


class _ManyOptional(_Shape):
    properties = (40, 160)
    required = 0.03


class _NullableUnions(_Shape):
    nullable = 0.7
    depth = 1


class _NestedArrays(_Shape):
    depth = 3
    arrays = 0.8
    properties = (2, 5)


class _LargeEnums(_Shape):
    enum_size = (40, 400)


class _DeepNesting(_Shape):
    properties = (1, 4)

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.depth = rng.randint(6, 14)

    def obj(self, depth: int) -> dict[str, Any]:  # one chain of objects, leaves beside it
        rng = self.rng
        props = {_name(rng, set()): self.leaf() for _ in range(rng.randint(*self.properties))}
        if depth < self.depth:
            props[_name(rng, props)] = self.obj(depth + 1)
        required = [name for name in props if rng.random() < self.required]
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        return schema


FAMILIES: dict[str, type[_Shape]] = {
    "long-descriptions": _LongDescriptions,
    "many-optional": _ManyOptional,
    "nullable-unions": _NullableUnions,
    "nested-arrays": _NestedArrays,
    "large-enums": _LargeEnums,
    "deep-nesting": _DeepNesting,
}

# -- edits ---------------------------------------------------------------------------


def _objects(schema: Any) -> Iterator[dict[str, Any]]:
    """Every object schema with `properties`, the root first."""
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("properties"), dict):
        yield schema
        for child in schema["properties"].values():
            yield from _objects(child)
    for key in ("items",):
        yield from _objects(schema.get(key))
    for branch in schema.get("anyOf", ()):
        yield from _objects(branch)


def _leaves(schema: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """(holding object, property name) of every property."""
    for holder in _objects(schema):
        for name in holder["properties"]:
            yield holder, name


def _typed(node: dict[str, Any]) -> dict[str, Any]:
    """The branch of a nullable union that is not `null` (or the node)."""
    for branch in node.get("anyOf", ()):
        if branch.get("type") != "null":
            return branch  # type: ignore[no-any-return]
    return node


def _described(node: dict[str, Any]) -> bool:
    return "description" in node


Edit = Callable[[random.Random, dict[str, Any]], bool]


def _edit_unchanged(rng: random.Random, definition: dict[str, Any]) -> bool:
    return True


def _edit_description(rng: random.Random, definition: dict[str, Any]) -> bool:
    nodes = [holder["properties"][name] for holder, name in _leaves(definition["inputSchema"])]
    described = [node for node in nodes if _described(node)]
    if not described or rng.random() < 0.25:
        text = definition["description"]
        definition["description"] = text[: len(text) // 2] + " " + _sentence(rng, 8)
        return True
    node = rng.choice(described)
    words = node["description"].split()
    words[rng.randrange(len(words))] = rng.choice(_WORDS)
    node["description"] = " ".join(words) + ("" if rng.random() < 0.5 else " (optional)")
    return True


def _edit_optional_added(rng: random.Random, definition: dict[str, Any]) -> bool:
    holder = rng.choice(list(_objects(definition["inputSchema"])))
    name = _name(rng, holder["properties"])
    holder["properties"][name] = {"type": "string", "description": _sentence(rng, 10)}
    return True


def _enums(definition: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        node
        for holder, name in _leaves(definition["inputSchema"])
        if isinstance((node := _typed(holder["properties"][name])).get("enum"), list)
    ]


def _edit_enum_widened(rng: random.Random, definition: dict[str, Any]) -> bool:
    enums = _enums(definition)
    if not enums:
        return False
    node = rng.choice(enums)
    node["enum"] = [*node["enum"], _name(rng, set(node["enum"]))]
    return True


def _edit_enum_narrowed(rng: random.Random, definition: dict[str, Any]) -> bool:
    enums = [node for node in _enums(definition) if len(node["enum"]) > 1]
    if not enums:
        return False
    node = rng.choice(enums)
    values = list(node["enum"])
    del values[rng.randrange(len(values))]
    node["enum"] = values
    return True


_RETYPED = {"string": "integer", "number": "string", "integer": "string", "boolean": "string"}


def _edit_type_changed(rng: random.Random, definition: dict[str, Any]) -> bool:
    nodes = [
        _typed(holder["properties"][name]) for holder, name in _leaves(definition["inputSchema"])
    ]
    plain = [node for node in nodes if _first_type(node) in _RETYPED and "enum" not in node]
    if not plain:
        return False
    node = rng.choice(plain)
    retyped = _RETYPED[_first_type(node)]
    node["type"] = [retyped, "null"] if isinstance(node["type"], list) else retyped
    node.pop("minimum", None)
    node.pop("maximum", None)
    return True


def _first_type(node: dict[str, Any]) -> Any:
    """A node's type, the first of a list (`[X, "null"]`)."""
    written = node.get("type")
    return written[0] if isinstance(written, list) else written


def _edit_required_added(rng: random.Random, definition: dict[str, Any]) -> bool:
    optional = [
        (holder, name)
        for holder, name in _leaves(definition["inputSchema"])
        if name not in holder.get("required", ())
    ]
    if not optional:
        return False
    holder, name = rng.choice(optional)
    holder["required"] = [*holder.get("required", ()), name]
    return True


EDITS: dict[str, Edit] = {
    "unchanged": _edit_unchanged,
    "description": _edit_description,
    "optional-added": _edit_optional_added,
    "enum-widened": _edit_enum_widened,
    "enum-narrowed": _edit_enum_narrowed,
    "type-changed": _edit_type_changed,
    "required-added": _edit_required_added,
}


def family_pairs(
    per: int = 30, seed: int = 28
) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(family, edit, old, new): `per` pairs of each family and edit, drawn from `seed`."""
    pairs = []
    for family, shape in FAMILIES.items():
        for edit_name, edit in EDITS.items():
            rng = random.Random(f"{seed}/{family}/{edit_name}")
            made = 0
            while made < per:
                old = shape(rng).tool(made)
                new = copy.deepcopy(old)
                if edit(rng, new):
                    pairs.append((family, edit_name, old, new))
                    made += 1
    return pairs


# -- timing ---------------------------------------------------------------------------


Peer = Callable[[Any, Any], Any]


def mcp_diff() -> Peer | None:
    """mcp-diff's classifier on one pair (it takes tool lists; a listed
    `inputSchema: null` is given as `{}`, which it expects)."""
    try:
        from mcp_diff.diff import classify_changes
    except ImportError:
        return None

    def run(old: Any, new: Any) -> Any:
        return classify_changes([_listed(old)], [_listed(new)])

    return run


def _listed(definition: dict[str, Any]) -> dict[str, Any]:
    if definition.get("inputSchema") is None:
        return {**definition, "inputSchema": {}}
    return definition


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _time(run: Callable[[Any, Any], Any], old: Any, new: Any) -> float:
    started = time.perf_counter()
    run(old, new)
    return time.perf_counter() - started


def time_families(
    pairs: list[tuple[str, str, dict[str, Any], dict[str, Any]]], peer: Peer, rounds: int = ROUNDS
) -> tuple[list[float], list[float]]:
    """Seconds per pair, classify and the peer, first calls back to back in
    alternating order; the smaller of `rounds` passes per pair."""
    ours = [math.inf] * len(pairs)
    theirs = [math.inf] * len(pairs)
    for _ in range(rounds):
        for index, (_, _, old, new) in enumerate(pairs):
            if index % 2:
                theirs[index] = min(theirs[index], _time(peer, old, new))
            ours[index] = min(ours[index], _time(classify, old, new))
            if not index % 2:
                theirs[index] = min(theirs[index], _time(peer, old, new))
    return ours, theirs


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def print_families(
    pairs: list[tuple[str, str, dict[str, Any], dict[str, Any]]],
    ours: list[float],
    theirs: list[float],
    *,
    matrix: bool = False,
) -> None:
    print()
    head = f"{'family':<24} {'pairs':>5} {'classify med':>13} {'p99':>9}"
    print(f"{head} {'mcp-diff med':>13} {'ratio':>7}  target: p99 <= 300 us, ratio <= 0.8x")
    groups: dict[str, list[int]] = {}
    for index, (family, _, _, _) in enumerate(pairs):
        groups.setdefault(family, []).append(index)
    for index, (_, edit, _, _) in enumerate(pairs):
        groups.setdefault(f"  edit: {edit}", []).append(index)
    groups["all"] = list(range(len(pairs)))
    for label, indices in groups.items():
        mine = [ours[i] for i in indices]
        peer = [theirs[i] for i in indices]
        median, p99 = statistics.median(mine) * 1e6, percentile(mine, 0.99) * 1e6
        peer_median = statistics.median(peer) * 1e6
        ratio = median / peer_median
        missed = [] if p99 <= TARGET_P99_US else ["p99"]
        missed += [] if ratio <= TARGET_RATIO else ["ratio"]
        verdict = "ok" if not missed else "MISSED " + ", ".join(missed)
        print(
            f"{label:<24} {len(indices):>5} {median:>10.1f} us {p99:>6.0f} us "
            f"{peer_median:>10.1f} us {ratio:>6.2f}x  {verdict}"
        )
    if matrix:
        edits = list(EDITS)
        print()
        print(f"{'ratio of medians':<24} " + " ".join(f"{e[:9]:>9}" for e in edits))
        for family in FAMILIES:
            cells = []
            for edit in edits:
                indices = [i for i, p in enumerate(pairs) if p[0] == family and p[1] == edit]
                mine = statistics.median(ours[i] for i in indices)
                cells.append(f"{mine / statistics.median(theirs[i] for i in indices):>8.2f}x")
            print(f"{family:<24} " + " ".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per", type=int, default=30, help="pairs per family and edit")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--matrix", action="store_true", help="the ratio per family and edit")
    args = parser.parse_args(argv)
    peer = mcp_diff()
    if peer is None:
        print("mcp-diff: not installed (pip install -e '.[bench]')")
        return 1
    pairs = family_pairs(args.per, args.seed)
    load_before = load_average()
    ours, theirs = time_families(pairs, peer, args.rounds)
    print(
        f"families: {len(pairs)} generated pairs (seed {args.seed}, {args.per} per family and edit)"
    )
    print_families(pairs, ours, theirs, matrix=args.matrix)
    print(f"load average (1, 5, 15 min) before: {load_before}; after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
