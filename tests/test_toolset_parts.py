"""The toolset payload built whole and built one tool at a time: the same bytes.

`registry.policy.toolset` keeps each tool's entry as canonical JSON and puts the
payload together from them; a write rebuilds the tools it names. Whatever the
order of writes, the incremental payload must be the payload built from scratch
from the same rows, and that payload must be what the SDK verifies.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.canonical import canonical_json, digest
from registry.policy.routes import RouteFinder
from registry.policy.toolset import assemble, build_parts, update_parts
from registry.sdk import Toolset, payload_digest
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Row(msgspec.Struct, frozen=True):
    tool: str
    version: int
    digest: str
    state: str
    definition: dict[str, Any]
    sunset: datetime | None = None


class Alias(msgspec.Struct, frozen=True):
    name: str
    target_tool: str
    contract_tool: str
    contract_version: int


def _definition(tool: str, version: int) -> dict[str, Any]:
    found = copy.deepcopy(DB_QUERY_V4 if version % 2 else DB_QUERY_V3)
    found["name"] = tool
    found["description"] = f"{tool} revision {version}."
    if version % 3 == 0:
        found["_meta"] = {"ratio": 0.5, "note": "outside the definition's digest"}
    return found


class Namespace:
    """Rows as the store keeps them: versions by tool, states moving forward."""

    def __init__(self) -> None:
        self.rows: dict[str, list[Row]] = {}
        self.aliases: list[Alias] = []

    def publish(self, tool: str) -> None:
        history = self.rows.setdefault(tool, [])
        definition = _definition(tool, len(history) + 1)
        history.append(Row(tool, len(history) + 1, digest(definition), "active", definition))

    def move(self, tool: str, state: str) -> None:
        """Retire the oldest version not retired yet, or deprecate (with a sunset to
        come) the oldest active one."""
        history = self.rows.get(tool, [])
        movable = ("active", "deprecated") if state == "retired" else ("active",)
        for index, row in enumerate(history):
            if row.state in movable:
                sunset = NOW + timedelta(days=30) if state == "deprecated" else row.sunset
                history[index] = msgspec.structs.replace(row, state=state, sunset=sunset)
                return

    def versions(self, tools: set[str] | None = None) -> list[Row]:
        names = sorted(self.rows) if tools is None else sorted(tools & set(self.rows))
        return [row for name in names for row in self.rows[name]]


def _full(ns: Namespace) -> Any:
    return assemble(build_parts("billing", ns.versions(), [], ns.aliases, RouteFinder(), NOW))


operations = st.lists(
    st.tuples(
        st.sampled_from(["publish", "publish", "deprecate", "retire", "alias"]),
        st.sampled_from(["a.tool", "b", "db.query", "m-tool", "z"]),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(steps=operations)
def test_one_tool_at_a_time_is_the_whole_build(steps: list[tuple[str, str]]) -> None:
    ns = Namespace()
    finder = RouteFinder()
    parts = build_parts("billing", [], [], [], finder, NOW)
    for action, tool in steps:
        if action == "publish":
            ns.publish(tool)
        elif action == "alias":
            if tool in ns.rows:
                ns.aliases = [Alias(f"{tool}_v1", tool, tool, 1)]
        else:
            ns.move(tool, "deprecated" if action == "deprecate" else "retired")
        # the rows of the tool named and of the aliases' contract tools, as the store reads
        contracts = {a.contract_tool for a in ns.aliases}
        parts = update_parts(
            parts, {tool}, ns.versions({tool} | contracts), [], ns.aliases, finder, NOW
        )
        assert assemble(parts).body == _full(ns).body


def test_the_body_is_canonical_json_and_its_digest_the_payload_digest() -> None:
    ns = Namespace()
    for tool in ("db.query", "search", "a"):
        ns.publish(tool)
        ns.publish(tool)
    ns.move("search", "deprecated")
    ns.aliases = [Alias("search_v1", "search", "search", 1)]
    built = _full(ns)
    body = msgspec.json.decode(built.body)
    assert built.digest == body["digest"] == payload_digest(body)
    without = {key: value for key, value in body.items() if key != "digest"}
    assert canonical_json(without) == built.body.replace(
        b'"digest":"' + built.digest.encode() + b'",', b""
    )
    toolset = Toolset.from_json(built.body)
    assert [t.name for t in toolset.tools] == ["a", "db.query", "search"]
    assert built.expires == NOW + timedelta(days=30)  # the deprecated version's sunset
