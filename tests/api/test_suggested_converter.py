"""Seed 000 over HTTP: the suggested operations of a 409, sent back unchanged
as that version's converter, are accepted (issue 10, item 1)."""

from __future__ import annotations

from registry.sdk import Gate, Toolset
from tests.api.conftest import Registry
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

NAMESPACE = "/v1/namespaces/billing"
VERSIONS = f"{NAMESPACE}/tools/db.query/versions"


async def test_suggested_ops_sent_back_unchanged_are_accepted(registry: Registry) -> None:
    client = registry.client
    assert (await client.put(NAMESPACE, json={})).status_code in (200, 201)
    first = await client.post(VERSIONS, json={"definition": DB_QUERY_V3})
    assert first.status_code == 201, first.text

    refused = await client.post(VERSIONS, json={"definition": DB_QUERY_V4})
    assert refused.status_code == 409, refused.text
    decision = refused.json()["decisions"][0]
    assert decision["version"] == 1
    suggested = decision["suggested_ops"]
    assert {op["op"] for op in suggested} == {"reject", "rename", "fill"}

    landed = await client.post(
        VERSIONS,
        json={"definition": DB_QUERY_V4, "converters": [{"from": 1, "ops": suggested}]},
    )
    assert landed.status_code == 201, landed.text
    assert landed.json()["version"] == 2

    # the converter the registry stored is the one suggested, and it works at call time
    toolset = Toolset.from_json((await client.get(f"{NAMESPACE}/toolset")).content)
    decision_v3 = Gate(toolset).check(
        "db.query", {"query": "select 1", "timeout_ms": 500}, {"schemaVersion": "v1"}
    )
    assert decision_v3.accepted, decision_v3.error
    assert decision_v3.arguments == {"query": "select 1", "timeout": 500}
    defaulted = Gate(toolset).check("db.query", {"query": "select 1"}, {"schemaVersion": "v1"})
    assert defaulted.arguments == {"query": "select 1", "timeout": 30000}
    writing = Gate(toolset).check(
        "db.query", {"query": "delete", "mode": "write"}, {"schemaVersion": "v1"}
    )
    assert not writing.accepted
