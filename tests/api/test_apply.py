"""POST /v1/apply: plan, all-or-nothing apply, idempotent re-apply; capabilities endpoints."""

from __future__ import annotations

import copy
from typing import Any

from registry.sdk import Gate, Toolset
from tests.api.conftest import Registry
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1, SEARCH_V2

FILL_BOTH = [
    {"op": "fill", "path": "/filters", "value": {}},
    {"op": "fill", "path": "/limit", "value": 20},
]


def _bundle(*manifests: dict[str, Any]) -> dict[str, Any]:
    return {"manifests": list(manifests)}


async def _apply(registry: Registry, bundle: dict[str, Any], *, plan: bool = False) -> Any:
    params = {"plan": "true"} if plan else {}
    return await registry.client.post("/v1/apply", json=bundle, params=params)


async def test_a_namespace_is_created_only_when_the_bundle_says_so(registry: Registry) -> None:
    """A mistyped namespace (`serach`) is refused as an HTTP publish is, naming the
    namespace it is likely a typo of and where it is written; nothing is created."""
    await registry.client.put("/v1/namespaces/search")
    typo = _bundle(
        {"namespace": "search", "tool": SEARCH_V1}, {"namespace": "serach", "tool": DB_QUERY_V3}
    )
    versions = "/v1/namespaces/search/tools/search/versions"
    before = (await registry.client.get(versions)).status_code
    for plan in (True, False):
        answer = await _apply(registry, typo, plan=plan)
        assert answer.status_code == 404, answer.text
        problem = answer.json()
        assert problem["type"].endswith("/namespace-not-found") and problem["namespace"] == "serach"
        assert problem["pointer"] == "/manifests/1/namespace"
        assert "did you mean 'search'?" in problem["detail"]
        assert "--create-namespace serach" in problem["detail"]
    names = [n["name"] for n in (await registry.client.get("/v1/namespaces")).json()["namespaces"]]
    assert "serach" not in names
    assert before == 404 == (await registry.client.get(versions)).status_code, "none applied"

    stray = typo | {"create_namespaces": ["serach", "nowhere"]}
    answer = await _apply(registry, stray, plan=True)
    assert answer.status_code == 422 and answer.json()["pointer"] == "/create_namespaces/1"

    # a reader of no namespace near the typo is told nothing about other namespaces
    reader = await registry.token("serach:publish")
    async with registry.with_token(reader) as client:
        answer = await client.post("/v1/apply", json=_bundle(typo["manifests"][1]))
        assert answer.status_code == 404 and "did you mean" not in answer.json()["detail"]


async def test_plan_then_apply_then_reapply_is_a_no_op(bare_registry: Registry) -> None:
    registry = bare_registry
    # the namespaces are created because the bundle says so: the command's list, or a
    # manifest's own create_namespace
    first = _bundle(
        {"namespace": "billing", "tool": DB_QUERY_V3, "source": "tools/billing/db.query.yaml"},
        {"namespace": "docs", "tool": SEARCH_V1, "create_namespace": True},
    ) | {"create_namespaces": ["billing"]}
    planned = await _apply(registry, first, plan=True)
    assert planned.status_code == 200, planned.text
    assert planned.json()["namespaces"] == [
        {"name": "billing", "action": "create"},
        {"name": "docs", "action": "create"},
    ]
    assert [t["action"] for t in planned.json()["tools"]] == ["create", "create"]
    assert planned.json()["applied"] is False
    assert (await registry.client.get("/v1/namespaces")).json()["namespaces"] == []

    applied = await _apply(registry, first)
    assert applied.status_code == 200, applied.text
    assert applied.json()["applied"] is True
    listed = (await registry.client.get("/v1/namespaces")).json()["namespaces"]
    assert [n["name"] for n in listed] == ["billing", "docs"]
    audit = (await registry.client.get("/v1/audit")).json()["events"]
    assert sorted(e["namespace"] for e in audit if e["action"] == "namespace.create") == [
        "billing",
        "docs",
    ]

    second = _bundle(
        {"namespace": "billing", "tool": DB_QUERY_V4, "retire": [1]},
        {
            "namespace": "docs",
            "tool": SEARCH_V2,
            "converters": [{"from": 1, "ops": FILL_BOTH}],
            "aliases": [{"name": "search_v1", "contract": {"tool": "search", "version": 1}}],
        },
    )
    plan = (await _apply(registry, second, plan=True)).json()
    assert plan["accepted"] is True
    assert [n["action"] for n in plan["namespaces"]] == ["unchanged", "unchanged"]
    assert [t["action"] for t in plan["tools"]] == ["new-version", "new-version"]
    assert plan["tools"][0]["lifecycle"] == [{"action": "retire", "version": 1}]
    assert plan["tools"][1]["aliases"][0]["action"] == "create"
    assert plan["tools"][1]["aliases"][0]["routed"] is True
    assert (await _apply(registry, second)).status_code == 200

    toolset = Toolset.from_json((await registry.client.get("/v1/namespaces/docs/toolset")).content)
    decision = Gate(toolset).check("search_v1", {"query": "q"}, {})
    assert decision.accepted and decision.arguments == {"query": "q", "filters": {}, "limit": 20}

    events_before = len((await registry.client.get("/v1/audit")).json()["events"])
    again = await _apply(registry, second)
    assert again.status_code == 200
    assert [t["action"] for t in again.json()["tools"]] == ["unchanged", "unchanged"]
    assert all(t["lifecycle"] == [] for t in again.json()["tools"])
    assert len((await registry.client.get("/v1/audit")).json()["events"]) == events_before


async def test_a_refused_manifest_applies_nothing(bare_registry: Registry) -> None:
    registry = bare_registry
    first = _bundle({"namespace": "billing", "tool": DB_QUERY_V3, "create_namespace": True})
    assert (await _apply(registry, first)).is_success
    wider = copy.deepcopy(SEARCH_V1)
    bundle = _bundle(
        {"namespace": "docs", "tool": wider, "create_namespace": True},
        {"namespace": "billing", "tool": DB_QUERY_V4},  # breaking, no decision
    )
    plan = (await _apply(registry, bundle, plan=True)).json()
    assert [t["accepted"] for t in plan["tools"]] == [True, False]
    assert plan["tools"][1]["decisions"][0]["version"] == 1
    refused = await _apply(registry, bundle)
    assert refused.status_code == 409, refused.text
    assert refused.json()["decisions"][0]["version"] == 1
    missing = await registry.client.get("/v1/namespaces/docs/tools")
    assert missing.status_code == 404
    assert missing.json()["type"].endswith("/namespace-not-found")


async def test_lifecycle_intents_apply_to_an_unchanged_definition(registry: Registry) -> None:
    bundle = _bundle({"namespace": "billing", "tool": DB_QUERY_V4})
    assert (await _apply(registry, bundle)).is_success
    with_sunset = _bundle(
        {
            "namespace": "billing",
            "tool": DB_QUERY_V4,
            "deprecate": [{"version": 1, "sunset": "2099-06-01T00:00:00Z"}],
        }
    )
    plan = (await _apply(registry, with_sunset, plan=True)).json()["tools"][0]
    assert plan["action"] == "unchanged"
    assert plan["lifecycle"] == [
        {"action": "deprecate", "version": 1, "sunset": "2099-06-01T00:00:00Z"}
    ]
    assert (await _apply(registry, with_sunset)).is_success
    version = await registry.client.get("/v1/namespaces/billing/tools/db.query/versions/1")
    assert version.json()["state"] == "deprecated"
    again = (await _apply(registry, with_sunset, plan=True)).json()["tools"][0]
    assert again["lifecycle"] == []


async def test_apply_needs_publish_on_every_namespace(registry: Registry) -> None:
    async with registry.anonymous() as anonymous:
        answer = await anonymous.post(
            "/v1/apply", json=_bundle({"namespace": "billing", "tool": DB_QUERY_V4})
        )
        assert answer.status_code == 401
    duplicate = _bundle(
        {"namespace": "billing", "tool": DB_QUERY_V4}, {"namespace": "billing", "tool": DB_QUERY_V3}
    )
    answer = await _apply(registry, duplicate)
    assert answer.status_code == 422
    assert answer.json()["pointer"] == "/manifests/1"


async def test_creating_a_namespace_needs_admin_on_it(bare_registry: Registry) -> None:
    """A token that may publish to `billing` but not administer it sees the creation
    as a refused step of the plan; the apply is refused and creates nothing."""
    registry = bare_registry
    bundle = _bundle({"namespace": "billing", "tool": DB_QUERY_V3}) | {
        "create_namespaces": ["billing"]
    }
    async with registry.with_token(await registry.token("billing:publish")) as ci:
        plan = await ci.post("/v1/apply", params={"plan": "true"}, json=bundle)
        assert plan.status_code == 200, plan.text
        assert plan.json()["namespaces"] == [
            {"name": "billing", "action": "create", "allowed": False}
        ]
        assert plan.json()["accepted"] is False
        refused = await ci.post("/v1/apply", json=bundle)
        assert refused.status_code == 403, refused.text
        assert "creating namespace billing needs billing:admin" in refused.json()["detail"]
    assert (await registry.client.get("/v1/namespaces")).json()["namespaces"] == []
    async with registry.with_token(await registry.token("billing:admin")) as owner:
        assert (await owner.post("/v1/apply", json=bundle)).status_code == 200
    listed = (await registry.client.get("/v1/namespaces")).json()["namespaces"]
    assert [n["name"] for n in listed] == ["billing"]


async def test_capabilities_fixture_and_check(registry: Registry) -> None:
    captured = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": True}, "resources": {}},
        "serverInfo": {"name": "billing", "version": "1.4.0"},
    }
    stored = await registry.client.put("/v1/namespaces/billing/capabilities", json=captured)
    assert stored.status_code == 201, stored.text
    assert stored.json()["seq"] == 1
    same = await registry.client.put("/v1/namespaces/billing/capabilities", json=captured)
    assert same.status_code == 200 and same.json()["seq"] == 1
    latest = await registry.client.get("/v1/namespaces/billing/capabilities")
    assert latest.json()["initialize"]["capabilities"]["resources"] == {}
    check = await registry.client.post(
        "/v1/namespaces/billing/capabilities/check",
        json={"methods": ["tools/list", "resources/list", "resources/subscribe", "prompts/get"]},
    )
    assert check.status_code == 200, check.text
    unmet = {u["method"]: u["requires"] for u in check.json()["unmet"]}
    assert unmet == {"resources/subscribe": "resources.subscribe", "prompts/get": "prompts"}
    unknown = await registry.client.post(
        "/v1/namespaces/billing/capabilities/check", json={"methods": ["tools/lists"]}
    )
    assert unknown.status_code == 422
    bad = await registry.client.put(
        "/v1/namespaces/billing/capabilities",
        json=dict(captured, capabilities={"resources": True}),
    )
    assert bad.status_code == 422
    assert bad.json()["pointer"] == "/capabilities/resources"
