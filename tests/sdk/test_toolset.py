"""Toolset payloads: the JSON Schema, loading, digest checks, lookups."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from registry.sdk import Toolset, ToolsetError, payload_digest
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1
from tests.sdk import payload, seed_000, seed_002, served

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "schemas" / "toolset.schema.json").read_text("utf-8")
)
EXAMPLES = {
    "seed_000_retired": seed_000(),
    "seed_000_served": seed_000(v3_served=True),
    "seed_002_no_route": seed_002(with_route=False),
    "seed_002_route": seed_002(with_route=True),
}


def encode(body: dict[str, Any]) -> bytes:
    return msgspec.json.encode(body)


def test_schema_is_valid_2020_12() -> None:
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_validate_against_schema(name: str) -> None:
    errors = list(Draft202012Validator(SCHEMA).iter_errors(EXAMPLES[name]))
    assert errors == []


def test_schema_refuses_a_broken_payload() -> None:
    body = copy.deepcopy(EXAMPLES["seed_000_served"])
    body["tools"][0]["versions"][1]["route"][0]["ops"][0] = {"op": "rename", "from": "timeout"}
    del body["aliases"]
    assert not Draft202012Validator(SCHEMA).is_valid(body)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_from_json_round_trips(name: str) -> None:
    data = encode(EXAMPLES[name])
    toolset = Toolset.from_json(data)
    assert toolset.digest == EXAMPLES[name]["digest"]
    assert toolset.etag == f'"{toolset.digest}"'
    assert toolset.to_json() == data
    assert Toolset.from_json(toolset.to_json()).digest == toolset.digest


def test_lookups() -> None:
    toolset = Toolset.from_json(encode(EXAMPLES["seed_000_served"]))
    tool = toolset.tool("db.query")
    assert tool is not None
    assert toolset.namespace == "billing"
    assert tool.current == 4
    assert tool.current_version.definition == DB_QUERY_V4
    v3 = tool.served(3)
    assert v3 is not None
    assert v3.state == "deprecated"
    assert v3.route[0].from_ == 3
    assert [type(op).__name__ for op in v3.route[0].ops] == ["Fill", "Rename", "Reject"]
    assert tool.version_of_digest(v3.digest) == 3
    assert toolset.tool("search") is None
    assert toolset.alias("db.query") is None

    aliased = Toolset.from_json(encode(EXAMPLES["seed_002_no_route"]))
    alias = aliased.alias("search_v1")
    assert alias is not None
    assert alias.target == "search"
    assert alias.contract.version == 1
    assert alias.route is None
    search = aliased.tool("search")
    assert search is not None
    assert search.is_retired(1)
    assert search.served(1) is None


def test_digest_mismatch_is_refused() -> None:
    body = copy.deepcopy(EXAMPLES["seed_000_retired"])
    body["tools"][0]["current"] = 3  # tampered after the digest was computed
    with pytest.raises(ToolsetError, match="digest mismatch"):
        Toolset.from_json(encode(body))


def test_missing_digest_is_refused() -> None:
    body = copy.deepcopy(EXAMPLES["seed_000_retired"])
    del body["digest"]
    with pytest.raises(ToolsetError, match="digest mismatch"):
        Toolset.from_json(encode(body))


def test_payload_digest_ignores_key_order_and_the_digest_itself() -> None:
    body = EXAMPLES["seed_002_route"]
    shuffled = dict(reversed(list(body.items())))
    shuffled["digest"] = "sha256:" + "0" * 64
    assert payload_digest(shuffled) == body["digest"]


def test_not_json_is_refused() -> None:
    with pytest.raises(ToolsetError, match="not JSON"):
        Toolset.from_json(b"{not json")
    with pytest.raises(ToolsetError, match="not a JSON object"):
        Toolset.from_json(b"[]")


def test_definition_digest_mismatch_is_refused() -> None:
    version = served(DB_QUERY_V4, 4)
    version["definition"] = DB_QUERY_V3  # digest still says v4
    body = payload([{"name": "db.query", "current": 4, "versions": [version], "retired": []}])
    with pytest.raises(ToolsetError, match="hashes to"):
        Toolset.from_json(encode(body))


def test_route_must_lead_to_current() -> None:
    v3 = served(DB_QUERY_V3, 3, route=[{"from": 3, "to": 5, "ops": []}])
    tool = {"name": "db.query", "current": 4, "versions": [served(DB_QUERY_V4, 4), v3]}
    with pytest.raises(ToolsetError, match="route ends at v5"):
        Toolset.from_json(encode(payload([tool])))


def test_current_must_come_first() -> None:
    tool = {"name": "db.query", "current": 4, "versions": [served(DB_QUERY_V3, 3)]}
    with pytest.raises(ToolsetError, match="first served version must be current"):
        Toolset.from_json(encode(payload([tool])))


def test_bad_operation_is_refused() -> None:
    route = [{"from": 3, "to": 4, "ops": [{"op": "rename", "from": "timeout_ms", "to": "/t"}]}]
    tool = {
        "name": "db.query",
        "current": 4,
        "versions": [served(DB_QUERY_V4, 4), served(DB_QUERY_V3, 3, route=route)],
    }
    with pytest.raises(ToolsetError, match="JSON Pointer"):
        Toolset.from_json(encode(payload([tool])))


def test_alias_target_must_exist() -> None:
    alias = {
        "name": "search_v1",
        "target": "search",
        "contract": {"tool": "search", "version": 1},
        "definition": SEARCH_V1,
        "route": None,
    }
    with pytest.raises(ToolsetError, match="not in the toolset"):
        Toolset.from_json(encode(payload([], [alias])))


def test_alias_definition_must_be_its_contract() -> None:
    body = seed_002(with_route=False)
    body["aliases"][0]["definition"] = {**SEARCH_V1, "description": "something else"}
    body = payload(body["tools"], body["aliases"])
    with pytest.raises(ToolsetError, match="not to the contract"):
        Toolset.from_json(encode(body))


# Definitions where a fast canonical writer could go wrong: numbers with fractions and
# exponents, a `_meta` (outside the definition's digest, inside the payload's), keys
# beyond U+FFFF, a long integer in a string.
AWKWARD = {
    "name": "awkward",
    "description": "Numbers \U0001f600 and keys",
    "inputSchema": {
        "type": "object",
        "properties": {
            "ratio": {"type": "number", "minimum": 0.5, "maximum": 1e21, "multipleOf": 1e-7},
            "\U0001f600": {"type": "string", "default": "12345678901234567890"},
            "\ufb33": {"type": "integer", "maximum": 9007199254740991},
        },
    },
    "_meta": {"ratio": 2.50, "note": "meta is outside the definition's digest"},
}


def test_awkward_definitions_load_with_their_reference_digests() -> None:
    from registry.canonical import digest

    tool = {"name": "awkward", "current": 1, "versions": [served(AWKWARD, 1)], "retired": []}
    body = payload([tool])
    toolset = Toolset.from_json(json.dumps(body, ensure_ascii=False).encode())
    assert toolset.digest == body["digest"]
    entry = toolset.tool("awkward")
    assert entry is not None
    assert entry.current_version.digest == digest(AWKWARD)
    ratio = entry.current_version.definition["inputSchema"]["properties"]["ratio"]
    assert type(ratio["minimum"]) is float  # numbers as a plain JSON reader gives them


def test_a_changed_number_is_a_digest_mismatch_even_when_the_payload_digest_fits() -> None:
    version = served(AWKWARD, 1)
    version["definition"] = copy.deepcopy(AWKWARD)
    version["definition"]["inputSchema"]["properties"]["ratio"]["minimum"] = 0.50000001
    body = payload([{"name": "awkward", "current": 1, "versions": [version], "retired": []}])
    with pytest.raises(ToolsetError, match="hashes to"):
        Toolset.from_json(encode(body))


def test_true_for_one_is_a_digest_mismatch() -> None:
    """`true == 1` in Python: a digest check by equality would miss this change."""
    original = {"name": "flags", "inputSchema": {"type": "object", "maxProperties": 1}}
    version = served(original, 1)
    version["definition"] = {
        "name": "flags",
        "inputSchema": {"type": "object", "maxProperties": True},
    }
    body = payload([{"name": "flags", "current": 1, "versions": [version], "retired": []}])
    with pytest.raises(ToolsetError, match="hashes to"):
        Toolset.from_json(encode(body))


# -- payloads as the registry serves them: canonical JSON, checked on their bytes --------


def canonical(body: dict[str, Any]) -> bytes:
    """A payload as the registry serves it: its canonical JSON, digest member included."""
    from registry.canonical import canonical_json

    return canonical_json(body)


def _awkward_payload(**changes: Any) -> dict[str, Any]:
    definition = {**copy.deepcopy(AWKWARD), **changes}
    version = served(AWKWARD, 1)
    version["definition"] = definition
    alias = {
        "name": "awkward_v1",
        "target": "awkward",
        "contract": {"tool": "awkward", "version": 1},
        "definition": definition,
        "route": [],
    }
    tool = {"name": "awkward", "current": 1, "versions": [version], "retired": []}
    return payload([tool], [alias])


@pytest.fixture
def slow_path_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the payloads checked by writing them canonically (not on their bytes)."""
    import registry.sdk.toolset as module

    calls: list[int] = []
    real = module.verify_payload

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(module, "verify_payload", spy)
    return calls


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_canonical_payloads_are_checked_on_their_bytes(name: str, slow_path_spy: list[int]) -> None:
    data = canonical(EXAMPLES[name])
    toolset = Toolset.from_json(data)
    assert toolset.digest == EXAMPLES[name]["digest"]
    assert slow_path_spy == []
    Toolset.from_json(encode(EXAMPLES[name]))  # the same payload, not canonical bytes
    assert slow_path_spy == [1]


def test_a_canonical_payload_with_meta_floats_and_an_alias_loads(slow_path_spy: list[int]) -> None:
    body = _awkward_payload()
    toolset = Toolset.from_json(canonical(body))
    assert slow_path_spy == []
    assert toolset.alias("awkward_v1") is not None
    minimum = toolset.tool("awkward").current_version.definition["inputSchema"]  # type: ignore[union-attr]
    assert type(minimum["properties"]["ratio"]["minimum"]) is float


@pytest.fixture
def writer_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the definitions whose digest is written canonically on the byte path."""
    import registry.sdk._verify as module

    calls: list[int] = []
    real = module.digest

    def spy(definition: Any) -> str:
        calls.append(1)
        return real(definition)

    monkeypatch.setattr(module, "digest", spy)
    return calls


def test_a_meta_first_definition_is_checked_on_its_bytes_without_the_meta(
    writer_spy: list[int],
) -> None:
    """`_meta` sorts first in canonical JSON: cut out, the rest is the digested text."""
    body = _awkward_payload(_meta={"note": "changed", "nested": {"_meta": [1.5, "}"]}})
    toolset = Toolset.from_json(canonical(body))
    assert writer_spy == []
    definition = toolset.tool("awkward").current_version.definition  # type: ignore[union-attr]
    assert definition["_meta"]["nested"] == {"_meta": [1.5, "}"]}
    for meta in ({}, {"a": None}):  # an empty object; a member alone with `_meta`
        only = {"name": "lone", "inputSchema": {"type": "object"}, "_meta": meta}
        tool = {"name": "lone", "current": 1, "versions": [served(only, 1)], "retired": []}
        assert Toolset.from_json(canonical(payload([tool]))).tool("lone") is not None
    assert writer_spy == []


def test_a_key_before_meta_is_written_canonically_and_still_exact(
    writer_spy: list[int],
) -> None:
    from registry.canonical import digest

    definition = {**copy.deepcopy(AWKWARD), "$comment": "sorts before _meta"}
    version = served(definition, 1)
    tool = {"name": "awkward", "current": 1, "versions": [version], "retired": []}
    toolset = Toolset.from_json(canonical(payload([tool])))
    assert writer_spy == [1]
    assert toolset.tool("awkward").current_version.digest == digest(definition)  # type: ignore[union-attr]
    version["digest"] = digest({**definition, "$comment": "another"})
    with pytest.raises(ToolsetError, match="hashes to"):
        Toolset.from_json(canonical(payload([tool])))


@pytest.mark.parametrize(
    "change",
    [
        {"description": "Numbers \U0001f600 and keys, changed"},
        {"inputSchema": {"type": "object", "maxProperties": True}},
    ],
)
def test_a_changed_definition_in_canonical_bytes_is_refused(change: dict[str, Any]) -> None:
    """The payload digest fits (recomputed), the definition's does not."""
    body = _awkward_payload(**change)
    with pytest.raises(ToolsetError, match="hashes to"):
        Toolset.from_json(canonical(body))


def test_canonical_bytes_with_a_wrong_payload_digest_are_refused() -> None:
    body = {**EXAMPLES["seed_000_served"], "digest": "sha256:" + "1" * 64}
    with pytest.raises(ToolsetError, match="digest mismatch"):
        Toolset.from_json(canonical(body))


def test_the_registrys_own_payload_is_checked_on_its_bytes(slow_path_spy: list[int]) -> None:
    from registry.canonical import digest
    from registry.policy.routes import RouteFinder
    from registry.policy.toolset import build_toolset
    from tests.test_toolset_parts import Row

    rows = [Row("db.query", 1, digest(DB_QUERY_V3), "deprecated", DB_QUERY_V3)]
    rows.append(Row("db.query", 2, digest(DB_QUERY_V4), "active", DB_QUERY_V4))
    built = build_toolset("billing", rows, [], [], RouteFinder())
    assert Toolset.from_json(built.body).digest == built.digest
    assert slow_path_spy == []
