"""Seed 000 over HTTP: the suggested operations of a 409, sent back unchanged
as that version's converter, are accepted (issue 10, item 1); where no
operation repairs a change, the 409 names it and offers retire or accept."""

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


async def test_a_change_no_operation_repairs_is_named_and_accept_settles_it(
    registry: Registry,
) -> None:
    """A rename (an operation repairs it) beside a tightened `maxLength` (none
    does): no converter is suggested, since the publish would refuse it as
    unverified; the refusal names the tightened bound and offers retire or accept,
    and accepting what the report lists lands the version."""
    namespace = "/v1/namespaces/docs"
    versions = f"{namespace}/tools/search/versions"
    old = {
        "name": "search",
        "inputSchema": {
            "type": "object",
            "properties": {"q": {"type": "string"}, "lang": {"type": "string"}},
        },
    }
    new = {
        "name": "search",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "lang": {"type": "string", "maxLength": 2}},
        },
    }
    client = registry.client
    assert (await client.put(namespace, json={})).status_code in (200, 201)
    assert (await client.post(versions, json={"definition": old})).status_code == 201

    refused = await client.post(versions, json={"definition": new})
    assert refused.status_code == 409, refused.text
    [decision] = refused.json()["decisions"]
    assert decision["options"] == ["retire", "accept"]
    assert decision["suggested_ops"] == []
    assert decision["unrepairable"] == [
        {
            "kind": "constraint-tightened",
            "path": "/inputSchema/properties/lang/maxLength",
            "message": "'maxLength' tightened from (absent) to 2",
            "fill": None,
        }
    ]
    assert "no converter operation repairs constraint-tightened at" in decision["message"]

    # the rename's own operation, sent as the converter, is refused as the decision said
    renamed = [{"op": "rename", "from": "/q", "to": "/query"}]
    unverified = await client.post(
        versions, json={"definition": new, "converters": [{"from": 1, "ops": renamed}]}
    )
    assert unverified.status_code == 422, unverified.text
    assert unverified.json()["type"].endswith("/converter-unverified")

    accept = [
        {"kind": change["kind"], "path": change["path"], "reason": "lang codes are two letters"}
        for change in decision["report"]["changes"]
        if change["severity"] == "breaking"
    ]
    landed = await client.post(versions, json={"definition": new, "accept": accept})
    assert landed.status_code == 201, landed.text
