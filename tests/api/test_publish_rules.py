"""The publishing rule over HTTP: converters, routes, lifecycle guards, aliases, check."""

from __future__ import annotations

import copy
from typing import Any

from registry.sdk import Gate, Toolset
from tests.api.conftest import Registry
from tests.fixtures.seeds import SEARCH_V1, SEARCH_V2

SEARCH = "/v1/namespaces/docs/tools/search"
FILL_BOTH = [
    {"op": "fill", "path": "/filters", "value": {}},
    {"op": "fill", "path": "/limit", "value": 20},
]


async def _toolset(registry: Registry, ns: str = "docs") -> Toolset:
    answer = await registry.client.get(f"/v1/namespaces/{ns}/toolset")
    assert answer.status_code == 200, answer.text
    return Toolset.from_json(answer.content)


async def _publish(registry: Registry, body: dict[str, Any]) -> Any:
    return await registry.client.post(f"{SEARCH}/versions", json=body)


async def test_breaking_change_with_a_verified_converter_keeps_the_old_version_served(
    registry: Registry,
) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    answer = await _publish(
        registry, {"definition": SEARCH_V2, "converters": [{"from": 1, "ops": FILL_BOTH}]}
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["report"]["severity"] == "breaking"
    toolset = await _toolset(registry)
    entry = toolset.tool("search")
    assert entry is not None
    assert [v.version for v in entry.versions] == [2, 1]
    route = entry.served(1).route  # type: ignore[union-attr]
    assert [(s.from_, s.to) for s in route] == [(1, 2)]
    # The gate converts a v1 call along that route: exactly the reviewed fills.
    decision = Gate(toolset).check("search", {"query": "q"}, {"schemaVersion": "v1"})
    assert decision.accepted, decision.error
    assert decision.arguments == {"query": "q", "filters": {}, "limit": 20}


async def test_an_unverifiable_converter_is_422_with_its_report(registry: Registry) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    only_filters = [{"op": "fill", "path": "/filters", "value": {}}]
    answer = await _publish(
        registry, {"definition": SEARCH_V2, "converters": [{"from": 1, "ops": only_filters}]}
    )
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["type"].endswith("/converter-unverified")
    assert "default-added" in {c["kind"] for c in problem["report"]["changes"]}
    assert problem["pointer"] == "/converters/0"
    history = await registry.client.get(f"{SEARCH}/versions")
    assert len(history.json()["versions"]) == 1


async def test_converter_registered_later_gives_a_route(registry: Registry) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    v2 = await _publish(registry, {"definition": SEARCH_V2, "deprecate": [], "retire": [1]})
    assert v2.status_code == 201
    # An alias for the retired contract: no route yet, and the answer says so.
    alias = await registry.client.put(
        "/v1/namespaces/docs/aliases/search_v1",
        json={"target": "search", "contract": {"tool": "search", "version": 1}},
    )
    assert alias.status_code == 201, alias.text
    assert alias.json()["routed"] is False
    assert "schema_version_mismatch" in alias.json()["message"]
    before = await registry.client.get("/v1/namespaces/docs/toolset")
    refused = Gate(Toolset.from_json(before.content)).check("search_v1", {"query": "q"}, {})
    assert refused.error is not None and refused.error.code == -31004

    converter = await registry.client.post(
        f"{SEARCH}/converters", json={"from": 1, "to": 2, "ops": FILL_BOTH}
    )
    assert converter.status_code == 201, converter.text
    again = await registry.client.post(
        f"{SEARCH}/converters", json={"from": 1, "to": 2, "ops": FILL_BOTH}
    )
    assert again.status_code == 200 and again.json()["created"] is False
    other = await registry.client.post(
        f"{SEARCH}/converters",
        json={"from": 1, "to": 2, "ops": [*FILL_BOTH, {"op": "drop", "path": "/query"}]},
    )
    assert other.status_code in (409, 422), other.text

    # the toolset once the converter is heard (LISTEN/NOTIFY), as a gated server syncs it
    after = await registry.client.get(
        "/v1/namespaces/docs/toolset",
        params={"wait": 10},
        headers={"If-None-Match": before.headers["etag"]},
    )
    assert after.status_code == 200, after.text
    accepted = Gate(Toolset.from_json(after.content)).check("search_v1", {"query": "q"}, {})
    assert accepted.accepted, accepted.error
    assert accepted.arguments == {"query": "q", "filters": {}, "limit": 20}
    # The retired version itself stays refused for direct callers.
    direct = Gate(await _toolset(registry)).check("search", {"query": "q"}, {"schemaVersion": "v1"})
    assert direct.error is not None and direct.error.code == -31001


async def test_retiring_current_makes_the_previous_version_current_with_its_routes(
    registry: Registry,
) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    answer = await _publish(
        registry, {"definition": SEARCH_V2, "converters": [{"from": 1, "ops": FILL_BOTH}]}
    )
    assert answer.status_code == 201
    wider = copy.deepcopy(SEARCH_V2)
    wider["inputSchema"]["properties"]["page"] = {"type": "integer"}
    assert (await _publish(registry, {"definition": wider})).status_code == 201
    retired = await registry.client.post(f"{SEARCH}/versions/3/retire")
    assert retired.status_code == 200, retired.text
    assert retired.json()["state"] == "retired"
    entry = (await _toolset(registry)).tool("search")
    assert entry is not None and entry.current == 2
    assert [(s.from_, s.to) for s in entry.served(1).route] == [(1, 2)]  # type: ignore[union-attr]
    backwards = await registry.client.post(f"{SEARCH}/versions/3/deprecate", json={})
    assert backwards.status_code == 409
    assert backwards.json()["type"].endswith("/illegal-transition")
    missing = await registry.client.post(f"{SEARCH}/versions/9/retire")
    assert missing.status_code == 404


async def test_check_stores_nothing_and_names_the_missing_decisions(registry: Registry) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    check = await registry.client.post(f"{SEARCH}/check", json={"definition": SEARCH_V2})
    assert check.status_code == 200, check.text
    body = check.json()
    assert (body["version"], body["accepted"]) == (2, False)
    assert body["decisions"][0]["version"] == 1
    assert "required-added" in body["decisions"][0]["kinds"]
    same = await registry.client.post(f"{SEARCH}/check", json={"definition": SEARCH_V1})
    assert same.json()["existing"] is True and same.json()["version"] == 1
    history = await registry.client.get(f"{SEARCH}/versions")
    assert len(history.json()["versions"]) == 1


async def test_diff_deprecate_and_sunset(registry: Registry) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    assert (await _publish(registry, {"definition": SEARCH_V2, "retire": [1]})).status_code == 201
    diff = await registry.client.get(f"{SEARCH}/versions/2/diff", params={"against": "1"})
    assert diff.status_code == 200
    assert diff.json()["report"]["severity"] == "breaking"
    deprecated = await registry.client.post(
        f"{SEARCH}/versions/2/deprecate", json={"sunset": "2099-01-01T00:00:00Z"}
    )
    assert deprecated.status_code == 200, deprecated.text
    assert deprecated.json()["state"] == "deprecated"
    served = await registry.client.get("/v1/namespaces/docs/toolset")
    entry = Toolset.from_json(served.content).tool("search")
    assert entry is not None and entry.versions[0].sunset == "2099-01-01T00:00:00Z"
    past = await registry.client.post(
        f"{SEARCH}/versions/2/deprecate", json={"sunset": "2000-01-01T00:00:00Z"}
    )
    assert past.status_code == 200
    assert past.json()["state"] == "retired", "a passed sunset reads as retired"
    # the toolset as a gated server sees it: once the change is heard (LISTEN/NOTIFY)
    after = await registry.client.get(
        "/v1/namespaces/docs/toolset",
        params={"wait": 10},
        headers={"If-None-Match": served.headers["etag"]},
    )
    assert after.status_code == 200, after.text
    assert Toolset.from_json(after.content).tool("search") is None
