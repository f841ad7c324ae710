"""The call gate, branch by branch, with the seed stories as toolsets."""

from __future__ import annotations

import copy
import logging
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from registry.canonical import digest
from registry.sdk import Decision, Declared, Gate, Toolset, strict_schema
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V2
from tests.sdk import payload, seed_000, seed_002, served


def gate_of(body: dict[str, Any], **kwargs: Any) -> Gate:
    return Gate(Toolset.from_json(msgspec.json.encode(body)), **kwargs)


def refused(decision: Decision, code: int) -> dict[str, Any]:
    assert not decision.accepted
    assert decision.arguments is None
    assert decision.error is not None
    assert decision.error.code == code, decision.error
    return decision.error.data


V3_CALL = {"query": "SELECT 1", "timeout_ms": 5000, "mode": "write"}


# ---------------------------------------------------------------- seed 000


def test_seed_000_retired_v3_call_is_refused_with_relist() -> None:
    gate = gate_of(seed_000())
    decision = gate.check("db.query", copy.deepcopy(V3_CALL), {"schemaVersion": "v3"})
    data = refused(decision, -31001)
    assert data["reason"] == "schema_version_retired"
    assert data["tool"] == "db.query"
    assert data["declaredVersion"] == "v3"
    assert data["currentVersion"] == "v4"
    assert data["retired"] == ["v3"]
    assert data["action"] == "relist"
    assert decision.error is not None
    assert "v3" in decision.error.message and "v4" in decision.error.message


def test_seed_000_versionless_timeout_ms_is_strict_failure_not_invalid_params() -> None:
    gate = gate_of(seed_000())
    decision = gate.check("db.query", {"query": "SELECT 1", "timeout_ms": 5000}, None)
    data = refused(decision, -31003)
    assert data["reason"] == "strict_validation_failed"
    assert data["action"] == "relist"
    assert data["declaredVersion"] is None
    assert data["currentVersion"] == "v4"
    assert data["errors"][0]["keyword"] == "additionalProperties"
    assert data["errors"][0]["unexpected"] == ["timeout_ms"]
    assert decision.error is not None
    assert "timeout_ms" in decision.error.message


def test_seed_000_v3_payload_without_version_is_strict_failure() -> None:
    data = refused(gate_of(seed_000()).check("db.query", dict(V3_CALL), {}), -31003)
    assert data["errors"]


def test_seed_000_forward_dated_version_is_unknown() -> None:
    data = refused(
        gate_of(seed_000()).check("db.query", {"query": "q"}, {"schemaVersion": "v99"}), -31002
    )
    assert data["reason"] == "schema_version_unknown"
    assert data["declaredVersion"] == "v99"
    assert data["currentVersion"] == "v4"
    assert "action" not in data  # refused hard: forward-dated or forged


@pytest.mark.parametrize(
    "garbage", ["vX", "v", "", "v-1", "4.0", 4.0, True, ["v4"], "V4 ", "v4\n", "4\n"]
)
def test_garbage_version_is_unknown(garbage: Any) -> None:
    decision = gate_of(seed_000()).check("db.query", {"query": "q"}, {"schemaVersion": garbage})
    data = refused(decision, -31002)
    assert data["declaredVersion"] == garbage


@pytest.mark.parametrize("declared", ["v4", 4, "4"])
def test_seed_000_current_call_passes_arguments_through(declared: Any) -> None:
    gate = gate_of(seed_000())
    arguments = {"query": "SELECT 1", "mode": "read"}
    before = msgspec.json.encode(arguments)
    decision = gate.check("db.query", arguments, {"schemaVersion": declared})
    assert decision.accepted
    assert decision.error is None
    assert decision.tool == "db.query"
    assert decision.version == 4
    assert decision.arguments is arguments  # the caller's own object
    assert msgspec.json.encode(decision.arguments) == before
    assert "timeout" not in decision.arguments  # no default filled


def test_a_declared_call_meets_the_strict_form_of_its_version() -> None:
    """v4 says `additionalProperties: true`, yet a property it does not declare is
    refused naming it, never passed through, dropped or ignored (decisions: one rule
    for every call and every gate); so is a stale caller's renamed `timeout_ms`."""
    for stray in ("extra", "timeout_ms"):
        decision = gate_of(seed_000()).check(
            "db.query", {"query": "q", stray: 1}, {"schemaVersion": "v4"}
        )
        data = refused(decision, -32602)
        assert data["reason"] == "invalid_arguments"
        assert data["errors"][0]["unexpected"] == [stray]
        assert decision.error is not None
        assert f"`{stray}` is not part of db.query v4" in (decision.error.model_text or "")
        assert data["inputSchema"]["additionalProperties"] is False


def test_versionless_valid_call_is_accepted_unchanged() -> None:
    arguments = {"query": "q", "timeout": 10}
    decision = gate_of(seed_000()).check("db.query", arguments, None)
    assert decision.accepted
    assert decision.arguments is arguments
    assert decision.version == 4


def test_versionless_missing_required_is_strict_failure() -> None:
    data = refused(gate_of(seed_000()).check("db.query", {}, None), -31003)
    assert data["errors"][0]["keyword"] == "required"


def test_current_invalid_arguments_are_invalid_params_naming_version_and_path() -> None:
    decision = gate_of(seed_000()).check(
        "db.query", {"query": "q", "mode": "write"}, {"schemaVersion": "v4"}
    )
    data = refused(decision, -32602)
    assert data["reason"] == "invalid_arguments"
    assert data["declaredVersion"] == "v4"
    assert data["errors"][0]["path"] == "/mode"
    assert data["errors"][0]["keyword"] == "enum"
    assert "action" not in data


def test_non_object_arguments_are_invalid_params() -> None:
    refused(gate_of(seed_000()).check("db.query", ["q"], {"schemaVersion": 4}), -32602)
    refused(gate_of(seed_000()).check("db.query", "q", None), -31003)


def test_missing_arguments_count_as_empty_object() -> None:
    data = refused(gate_of(seed_000()).check("db.query", None, {"schemaVersion": 4}), -32602)
    assert data["errors"][0]["keyword"] == "required"


def test_unknown_tool_is_invalid_params() -> None:
    data = refused(gate_of(seed_000()).check("db.drop", {}, None), -32602)
    assert data == {"reason": "unknown_tool", "tool": "db.drop"}


# ---------------------------------------------------------------- served version, converters


def test_served_v3_is_converted_to_v4() -> None:
    gate = gate_of(seed_000(v3_served=True))
    arguments = {"query": "SELECT 1", "timeout_ms": 5000, "mode": "read"}
    decision = gate.check("db.query", arguments, {"schemaVersion": "v3"})
    assert decision.accepted, decision.error
    assert decision.version == 4
    assert decision.arguments == {"query": "SELECT 1", "timeout": 5000, "mode": "read"}
    assert arguments == {"query": "SELECT 1", "timeout_ms": 5000, "mode": "read"}  # untouched


def test_served_v3_explicit_fill_is_the_only_value_added() -> None:
    decision = gate_of(seed_000(v3_served=True)).check(
        "db.query", {"query": "q"}, {"schemaVersion": 3}
    )
    assert decision.accepted
    assert decision.arguments == {"query": "q", "timeout": 30000}


def test_served_v3_validates_against_its_own_contract() -> None:
    decision = gate_of(seed_000(v3_served=True)).check(
        "db.query", {"query": "q", "timeout_ms": "soon"}, {"schemaVersion": "v3"}
    )
    data = refused(decision, -32602)
    assert data["declaredVersion"] == "v3"
    assert data["errors"][0]["path"] == "/timeout_ms"
    assert decision.error is not None
    assert "v3" in decision.error.message


def test_reject_op_names_value_and_message() -> None:
    decision = gate_of(seed_000(v3_served=True)).check(
        "db.query", dict(V3_CALL), {"schemaVersion": "v3"}
    )
    data = refused(decision, -32602)
    assert data["reason"] == "conversion_rejected"
    assert data["path"] == "/mode"
    assert data["value"] == "write"
    assert data["detail"] == "writes moved off the replica"
    assert decision.error is not None
    assert '"write"' in decision.error.message
    assert "writes moved off the replica" in decision.error.message


def test_broken_converter_output_is_mismatch_with_relist() -> None:
    route = [{"from": 3, "to": 4, "ops": [{"op": "map", "path": "/mode", "values": {}}]}]
    tool = {
        "name": "db.query",
        "current": 4,
        "versions": [served(DB_QUERY_V4, 4), served(DB_QUERY_V3, 3, route=route)],
    }
    decision = gate_of(payload([tool])).check(
        "db.query", {"query": "q", "mode": "write"}, {"schemaVersion": 3}
    )
    data = refused(decision, -31004)
    assert data["action"] == "relist"
    assert data["errors"][0]["path"] == "/mode"


def test_identity_route_step_converts_nothing() -> None:
    v5 = {**DB_QUERY_V4, "description": "Run a SQL query, faster."}
    tool = {
        "name": "db.query",
        "current": 5,
        "versions": [
            served(v5, 5),
            served(DB_QUERY_V4, 4, route=[{"from": 4, "to": 5, "ops": []}]),
        ],
    }
    arguments = {"query": "q", "timeout": 1}
    decision = gate_of(payload([tool])).check("db.query", arguments, {"schemaVersion": "v4"})
    assert decision.accepted
    assert decision.version == 5
    assert decision.arguments == arguments


# ---------------------------------------------------------------- schemaHash


def test_schema_hash_declares_a_served_version() -> None:
    gate = gate_of(seed_000(v3_served=True))
    decision = gate.check(
        "db.query", {"query": "q", "timeout_ms": 1}, {"schemaHash": digest(DB_QUERY_V3)}
    )
    assert decision.accepted
    assert decision.arguments == {"query": "q", "timeout": 1}


def test_schema_hash_of_current_and_of_retired() -> None:
    gate = gate_of(seed_000())
    assert gate.check("db.query", {"query": "q"}, {"schemaHash": digest(DB_QUERY_V4)}).accepted
    data = refused(
        gate.check("db.query", dict(V3_CALL), {"schemaHash": digest(DB_QUERY_V3)}), -31001
    )
    assert data["declaredVersion"] == "v3"


def test_unknown_schema_hash_is_unknown() -> None:
    data = refused(
        gate_of(seed_000()).check("db.query", {"query": "q"}, {"schemaHash": digest(SEARCH_V2)}),
        -31002,
    )
    assert data["declaredHash"] == digest(SEARCH_V2)


def test_conflicting_version_and_hash_is_unknown() -> None:
    meta = {"schemaVersion": "v4", "schemaHash": digest(DB_QUERY_V3)}
    data = refused(
        gate_of(seed_000(v3_served=True)).check("db.query", {"query": "q"}, meta), -31002
    )
    assert "disagree" in data["detail"]


def test_agreeing_version_and_hash_is_accepted() -> None:
    meta = {"schemaVersion": "v4", "schemaHash": digest(DB_QUERY_V4)}
    assert gate_of(seed_000()).check("db.query", {"query": "q"}, meta).accepted


# ---------------------------------------------------------------- seed 002, aliases


def test_seed_002_alias_without_route_is_mismatch() -> None:
    decision = gate_of(seed_002(with_route=False)).check("search_v1", {"query": "foo"}, None)
    data = refused(decision, -31004)
    assert data["reason"] == "schema_version_mismatch"
    assert data["tool"] == "search_v1"
    assert data["target"] == "search"
    assert data["declaredVersion"] == "v1"
    assert data["currentVersion"] == "v2"
    assert data["retired"] == ["v1"]


def test_seed_002_alias_with_route_fills_exactly_what_was_reviewed() -> None:
    decision = gate_of(seed_002(with_route=True)).check("search_v1", {"query": "foo"}, None)
    assert decision.accepted, decision.error
    assert decision.tool == "search"
    assert decision.version == 2
    assert decision.arguments == {"query": "foo", "filters": {}, "limit": 20}


def test_seed_002_alias_validates_against_its_contract() -> None:
    gate = gate_of(seed_002(with_route=True))
    data = refused(gate.check("search_v1", {"query": 7}, None), -32602)
    assert data["declaredVersion"] == "v1"
    assert data["errors"][0]["path"] == "/query"


def test_seed_002_direct_call_declaring_retired_v1_is_refused() -> None:
    gate = gate_of(seed_002(with_route=True))
    data = refused(gate.check("search", {"query": "foo"}, {"schemaVersion": "v1"}), -31001)
    assert data["retired"] == ["v1"]


def test_seed_002_versionless_direct_call_never_gets_limit_filled() -> None:
    gate = gate_of(seed_002(with_route=True))
    arguments = {"query": "foo", "filters": {}}
    decision = gate.check("search", arguments, None)
    assert decision.accepted
    assert decision.arguments == {"query": "foo", "filters": {}}


def test_alias_call_declaring_another_version_is_unknown() -> None:
    gate = gate_of(seed_002(with_route=True))
    refused(gate.check("search_v1", {"query": "foo"}, {"schemaVersion": "v2"}), -31002)
    assert gate.check("search_v1", {"query": "foo"}, {"schemaVersion": "v1"}).accepted


# ---------------------------------------------------------------- hooks, compilation


def test_on_decision_sees_every_decision() -> None:
    seen: list[tuple[Decision, Declared]] = []
    gate = gate_of(seed_000(), on_decision=lambda d, declared: seen.append((d, declared)))
    gate.check("db.query", {"query": "q"}, {"schemaVersion": "v4"})
    gate.check("db.query", {"query": "q"}, None)
    gate.check("db.query", dict(V3_CALL), {"schemaVersion": "v3"})
    assert [(d.accepted, dec.version, dec.present) for d, dec in seen] == [
        (True, 4, True),
        (True, None, False),
        (False, 3, True),
    ]


def test_failing_hook_does_not_fail_the_call() -> None:
    def broken(decision: Decision, declared: Declared) -> None:
        raise RuntimeError("metrics down")

    assert gate_of(seed_000(), on_decision=broken).check("db.query", {"query": "q"}, None).accepted


def test_validators_are_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from registry.sdk._compiled import Compiler

    real = Compiler._build
    calls: list[Any] = []

    def counting(self: Compiler, schema: Any, where: str) -> Any:
        calls.append(schema)
        return real(self, schema, where)

    monkeypatch.setattr(Compiler, "_build", counting)
    gate = gate_of(seed_000(v3_served=True))
    assert len(calls) == 2  # the strict forms of v4 and v3, whatever the calls declare
    for _ in range(3):
        gate.check("db.query", {"query": "q", "timeout_ms": 1}, {"schemaVersion": "v3"})
        gate.check("db.query", {"query": "q"}, None)
    assert len(calls) == 2  # accepted calls compile nothing
    for _ in range(5):
        gate.check("db.query", {"query": "q", "bad": 1}, None)
        gate.check("db.query", {"query": "q", "timeout_ms": 1}, None)
    assert len(calls) == 2  # inference reuses the served versions' strict validators


def test_gate_logs_decisions_through_the_standard_library(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="registry.sdk.gate"):
        gate_of(seed_000()).check("db.query", {"query": "q"}, None)
        gate_of(seed_000()).check("db.query", dict(V3_CALL), {"schemaVersion": "v3"})
    records = [r for r in caplog.records if getattr(r, "event", None) == "gate.decision"]
    assert [(r.levelno, r.decision, r.reason) for r in records] == [  # type: ignore[attr-defined]
        (logging.INFO, "accept", "undeclared_strict_ok"),
        (logging.INFO, "reject", "schema_version_retired"),
    ]
    assert (records[1].declared, records[1].current) == (3, 4)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- strict schemas


def test_strict_schema_closes_objects_and_keeps_maps() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"y": {}}}},
        },
        "additionalProperties": True,
    }
    strict = Draft202012Validator(strict_schema(schema))
    assert strict.is_valid({"a": {"x": 1}, "tags": {"any": "key"}, "list": [{"y": 1}]})
    assert not strict.is_valid({"z": 1})
    assert not strict.is_valid({"a": {"x": 1, "w": 2}})
    assert not strict.is_valid({"list": [{"y": 1, "w": 2}]})
    assert schema["additionalProperties"] is True  # the input is untouched


def test_strict_schema_keeps_properties_of_composed_branches() -> None:
    schema = {
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "string"}}},
            {"properties": {"b": {"type": "string"}}, "additionalProperties": True},
        ],
    }
    strict = Draft202012Validator(strict_schema(schema))
    assert strict.is_valid({"a": "1", "b": "2"})
    assert not strict.is_valid({"a": "1", "c": "3"})


def test_strict_schema_leaves_not_alone() -> None:
    schema = {
        "type": "object",
        "not": {"type": "object", "properties": {"x": {}}, "required": ["x"]},
    }
    strict = Draft202012Validator(strict_schema(schema))
    assert not strict.is_valid({"x": 1, "y": 2})


# ---------------------------------------------------------------- hot path


@pytest.mark.parametrize(("level", "logged"), [(logging.INFO, False), (logging.DEBUG, True)])
def test_accepted_declared_call_logs_only_when_debug_is_enabled(
    level: int, logged: bool, caplog: pytest.LogCaptureFixture
) -> None:
    gate = gate_of(seed_000())
    with caplog.at_level(level, logger="registry.sdk.gate"):
        assert gate.check("db.query", {"query": "q"}, {"schemaVersion": "v4"}).accepted
        assert bool(caplog.records) is logged
        if logged:
            (record,) = caplog.records
            assert (record.levelno, record.event, record.decision, record.declared) == (  # type: ignore[attr-defined]
                logging.DEBUG,
                "gate.decision",
                "accept",
                4,
            )
        caplog.clear()
        gate.check("db.query", {"query": "q"}, None)  # an omission: logged at info
        assert [r.levelno for r in caplog.records] == [logging.INFO]


def test_no_line_is_formatted_for_accepted_calls_when_logging_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unconfigured logging (root at WARNING): an accepted call, declared or
    not, never reaches a log method."""
    gate = gate_of(seed_000())
    reached: list[str] = []
    monkeypatch.setattr("registry.sdk.gate._log", _Recorder(reached))
    assert logging.getLogger("registry.sdk.gate").getEffectiveLevel() == logging.WARNING
    assert gate.check("db.query", {"query": "q"}, {"schemaVersion": "v4"}).accepted
    assert gate.check("db.query", {"query": "q"}, None).accepted
    assert reached == []
    gate.check("db.query", {"query": "q", "x": 1}, None)  # a refusal: info, also below WARNING
    assert reached == []


class _Recorder:
    def __init__(self, reached: list[str]) -> None:
        self.reached = reached

    def __getattr__(self, method: str) -> Any:
        return lambda *args, **kwargs: self.reached.append(method)


def test_version_spellings_decide_as_before() -> None:
    gate = gate_of(seed_000(v3_served=True))
    call = {"query": "q", "timeout_ms": 1}
    for spelled in ("v3", "3", 3):
        assert gate.check("db.query", call, {"schemaVersion": spelled}).accepted
    for odd in ("v03", "03", "+3", " 3", 3.0, True):
        refused(gate.check("db.query", call, {"schemaVersion": odd}), -31002)
    refused(gate.check("db.query", call, {"schemaVersion": "v99"}), -31002)
