"""The gate and the namespace policy: gating off, and breaks accepted on purpose."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from registry.sdk import Decision, Declared, Gate, Toolset, payload_digest
from registry.sdk.ungated import UngatedGate
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import seed_000, seed_002, served


def _toolset(body: dict[str, Any]) -> Toolset:
    return Toolset.from_json(msgspec.json.encode(body))


def _ungated(body: dict[str, Any]) -> dict[str, Any]:
    """The payload as the registry serves it for a namespace with gating off."""
    content = {key: value for key, value in body.items() if key != "digest"}
    content["gating"] = False
    return {**content, "digest": payload_digest(content)}


def test_a_gated_toolset_gets_the_gate_and_an_ungated_one_the_pass_through() -> None:
    assert type(Gate(_toolset(seed_000()))) is Gate
    ungated = _toolset(_ungated(seed_000()))
    assert ungated.gating is False
    assert type(Gate(ungated)) is UngatedGate


def test_gating_off_serves_every_declared_version_as_sent() -> None:
    seen: list[tuple[Decision, Declared]] = []
    gate = Gate(_toolset(_ungated(seed_000())), on_decision=lambda d, x: seen.append((d, x)))
    call = {"query": "SELECT 1", "timeout_ms": 5000, "mode": "write"}  # v3's, v3 retired
    for meta in ({"schemaVersion": "v3"}, {"schemaVersion": "v99"}, {"schemaHash": "x"}, {}):
        decision = gate.check("db.query", call, meta)
        assert decision.accepted, decision.error
        assert decision.arguments is call  # the caller's own object: nothing converted
        assert decision.version == 4
    # usage counting still hears which version the call declared
    assert [declared.version for _, declared in seen] == [3, 99, None, None]


def test_gating_off_still_refuses_unknown_names_and_non_objects() -> None:
    gate = Gate(_toolset(_ungated(seed_000())))
    unknown = gate.check("db.querry", {}, None)
    assert unknown.error is not None and unknown.error.code == -32602
    assert unknown.error.data == {"reason": "unknown_tool", "tool": "db.querry"}
    for arguments in (["SELECT 1"], "SELECT 1", 3):
        refused = gate.check("db.query", arguments, None)
        assert refused.error is not None and refused.error.data["reason"] == "invalid_arguments"
    assert gate.check("db.query", None, None).arguments == {}


def test_gating_off_dispatches_an_alias_to_its_target_unconverted() -> None:
    gate = Gate(_toolset(_ungated(seed_002(with_route=True))))
    decision = gate.check("search_v1", {"query": "q"}, None)
    assert decision.accepted and decision.tool == "search"
    assert decision.arguments == {"query": "q"}  # no fills: nothing is converted


def _accepted_break() -> dict[str, Any]:
    """db.query v4 current; v3 still served through a step whose breaks were accepted."""
    versions = [
        served(DB_QUERY_V4, 4),
        served(DB_QUERY_V3, 3, route=[{"from": 3, "to": 4, "ops": [], "accepted": True}]),
    ]
    body = {
        "namespace": "billing",
        "tools": [{"name": "db.query", "current": 4, "versions": versions, "retired": []}],
        "aliases": [],
    }
    return {**body, "digest": payload_digest(body)}


def test_an_accepted_step_serves_old_calls_current_accepts_and_refuses_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    toolset = _toolset(_accepted_break())
    (step,) = toolset.tool("db.query").served(3).route  # type: ignore[union-attr]
    assert step.accepted is True
    gate = Gate(toolset)
    kept = gate.check("db.query", {"query": "q", "mode": "read"}, {"schemaVersion": "v3"})
    assert kept.accepted and kept.arguments == {"query": "q", "mode": "read"}
    with caplog.at_level(logging.INFO, logger="registry.sdk.gate"):
        refused = gate.check("db.query", {"query": "q", "mode": "write"}, {"schemaVersion": "v3"})
    assert refused.error is not None and refused.error.code == -31004
    assert refused.error.data["action"] == "relist"
    events = [r.getMessage() for r in caplog.records]
    assert any("gate.accepted_break" in e for e in events), events
    assert not any("converter_broken" in e for e in events), events
    # v3's renamed timeout_ms is never carried to v4 unread: the strict form of v4 refuses it
    stale = gate.check("db.query", {"query": "q", "timeout_ms": 5}, {"schemaVersion": "v3"})
    assert stale.error is not None and stale.error.code == -31004
    assert stale.error.data["errors"][0]["unexpected"] == ["timeout_ms"]


def test_a_broken_converter_is_still_logged_as_one(caplog: pytest.LogCaptureFixture) -> None:
    # v3 -> v4 with no ops and no acceptance: not what a registry serves, a broken route
    versions = [served(DB_QUERY_V4, 4), served(DB_QUERY_V3, 3, route=[{"from": 3, "to": 4}])]
    body = {
        "namespace": "billing",
        "tools": [{"name": "db.query", "current": 4, "versions": versions, "retired": []}],
        "aliases": [],
    }
    gate = Gate(_toolset({**body, "digest": payload_digest(body)}))
    with caplog.at_level(logging.INFO, logger="registry.sdk.gate"):
        refused = gate.check("db.query", {"query": "q", "mode": "write"}, {"schemaVersion": "v3"})
    assert refused.error is not None and refused.error.code == -31004
    assert any("converter_broken" in r.getMessage() for r in caplog.records)
