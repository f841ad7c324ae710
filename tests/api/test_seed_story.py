"""Seed 000 over HTTP, end to end: publish, idempotence, refusal with decisions, retire."""

from __future__ import annotations

import copy

from registry.canonical import digest
from registry.sdk import Toolset
from tests.api.conftest import Registry
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

VERSIONS = "/v1/namespaces/billing/tools/db.query/versions"


async def test_seed_000_story(registry: Registry) -> None:
    client = registry.client
    first = await client.post(VERSIONS, json={"definition": DB_QUERY_V3})
    assert first.status_code == 201, first.text
    assert first.json()["version"] == 1
    v3 = first.json()

    again = await client.post(VERSIONS, json={"definition": DB_QUERY_V3})
    assert again.status_code == 200
    assert (again.json()["version"], again.json()["digest"]) == (v3["version"], v3["digest"])

    refused = await client.post(VERSIONS, json={"definition": DB_QUERY_V4})
    assert refused.status_code == 409, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    problem = refused.json()
    assert problem["type"].endswith("/breaking-change")
    assert [d["version"] for d in problem["decisions"]] == [1]
    kinds = set(problem["decisions"][0]["kinds"])
    assert {"default-removed", "enum-narrowed"} <= kinds
    assert kinds & {"property-renamed", "property-removed"}
    assert problem["decisions"][0]["options"] == ["retire", "converter"]
    assert problem["report"]["severity"] == "breaking"

    history = await client.get(VERSIONS)
    assert [v["version"] for v in history.json()["versions"]] == [1], "a refusal stores nothing"

    landed = await client.post(VERSIONS, json={"definition": DB_QUERY_V4, "retire": [1]})
    assert landed.status_code == 201, landed.text
    assert landed.json()["version"] == 2
    assert landed.json()["retired"] == [1]

    synced = await client.get("/v1/namespaces/billing/toolset")
    assert synced.status_code == 200
    toolset = Toolset.from_json(synced.content)
    assert synced.headers["etag"] == f'"{toolset.digest}"'
    entry = toolset.tool("db.query")
    assert entry is not None
    assert entry.current == 2
    assert [v.version for v in entry.versions] == [2]
    assert entry.is_retired(1)

    looked_up = await client.get(f"/v1/digests/{digest(DB_QUERY_V3)}")
    assert looked_up.status_code == 200
    assert looked_up.json()["matches"][0]["state"] == "retired"
    assert looked_up.json()["matches"][0]["version"] == 1
    assert looked_up.headers["cache-control"] == "no-cache"  # its state changes


async def test_additive_change_keeps_old_version_served(registry: Registry) -> None:
    client = registry.client
    assert (await client.post(VERSIONS, json={"definition": DB_QUERY_V4})).status_code == 201
    wider = copy.deepcopy(DB_QUERY_V4)
    wider["inputSchema"]["properties"]["comment"] = {"type": "string"}
    answer = await client.post(VERSIONS, json={"definition": wider})
    assert answer.status_code == 201, answer.text
    assert answer.json()["report"]["severity"] == "additive"
    toolset = Toolset.from_json((await client.get("/v1/namespaces/billing/toolset")).content)
    entry = toolset.tool("db.query")
    assert entry is not None
    assert [v.version for v in entry.versions] == [2, 1]
    old = entry.served(1)
    assert old is not None
    assert [(s.from_, s.to, s.ops) for s in old.route] == [(1, 2, ())]
