"""The Python gate names the changes the payload carries, and runs the engine only without them."""

from __future__ import annotations

import copy

import msgspec

from registry.compat import classify
from registry.sdk import Gate, Toolset, payload_digest
from registry.sdk.toolset import contract_changes
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import seed_000

STALE = {"query": "q", "timeout_ms": 5000}


def reissued(body: dict) -> Toolset:
    body = {k: v for k, v in body.items() if k != "digest"}
    return Toolset.from_json(msgspec.json.encode({**body, "digest": payload_digest(body)}))


def test_the_carried_words_are_the_ones_named() -> None:
    body = copy.deepcopy(seed_000())
    carried = [
        {
            "kind": "property-renamed",
            "path": "/inputSchema/properties/timeout_ms",
            "message": "said by the registry",
            "old": "timeout_ms",
            "new": "timeout",
        }
    ]
    body["tools"][0]["retired"][0]["changes"] = carried
    gate = Gate(reissued(body))
    versionless = gate.check("db.query", STALE, None)
    assert versionless.error is not None and versionless.error.data["changes"] == carried
    assert versionless.error.model_text is not None
    assert "said by the registry" in versionless.error.model_text
    retired = gate.check("db.query", STALE, {"schemaVersion": "v3"})
    assert retired.error is not None and retired.error.data["changes"] == carried


def test_without_carried_changes_the_engine_names_them() -> None:
    gate = Gate(reissued(seed_000()))
    decision = gate.check("db.query", STALE, None)
    assert decision.error is not None
    engine = contract_changes(classify(DB_QUERY_V3, DB_QUERY_V4))
    assert decision.error.data["changes"] == [msgspec.to_builtins(c) for c in engine]
