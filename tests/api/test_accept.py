"""Breaking changes accepted on purpose, and namespace policies, over HTTP (issue 13, part 3).

Seed 002's search v1 -> v2 breaks v1's callers twice: `filters` became required
(`required-added` at /inputSchema/required) and `limit` arrived with a default
(`default-added` at /inputSchema/properties/limit/default).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from registry.sdk import Gate, Toolset
from registry.sdk.ungated import UngatedGate
from tests.api.conftest import Registry
from tests.fixtures.seeds import SEARCH_V1, SEARCH_V2

TOOLSET_SCHEMA = json.loads(
    (Path(__file__).parents[2] / "schemas" / "toolset.schema.json").read_text("utf-8")
)
SEARCH = "/v1/namespaces/docs/tools/search"
POLICY = "/v1/namespaces/docs/policy"
REQUIRED = "/inputSchema/required"
LIMIT_DEFAULT = "/inputSchema/properties/limit/default"
ACCEPT_BOTH = [
    {"kind": "required-added", "path": REQUIRED, "reason": "every caller sends filters already"},
    {"kind": "default-added", "path": LIMIT_DEFAULT, "reason": "20 is what the old server did"},
]


def _lookup(version: int, name: str = "lookup") -> dict[str, Any]:
    """v1 takes `q`; v2 adds `limit` with a default (`default-added`, nothing else breaking)."""
    properties: dict[str, Any] = {"q": {"type": "string"}}
    if version >= 2:
        properties["limit"] = {"type": "integer", "default": 10}
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


async def _toolset(
    registry: Registry, ns: str = "docs", *, after: Toolset | None = None
) -> Toolset:
    """The namespace's toolset; `after`: one that differs from it, as a syncing server waits
    for it (the cache learns of a write by LISTEN/NOTIFY, after the write's answer)."""
    headers = {"If-None-Match": after.etag} if after is not None else {}
    answer = await registry.client.get(
        f"/v1/namespaces/{ns}/toolset", params={"wait": 30} if after else {}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    Draft202012Validator(TOOLSET_SCHEMA).validate(answer.json())  # accepted steps, gating
    return Toolset.from_json(answer.content)


async def _publish(registry: Registry, body: dict[str, Any], tool: str = "search") -> Any:
    return await registry.client.post(f"/v1/namespaces/docs/tools/{tool}/versions", json=body)


async def _events(registry: Registry, action: str) -> list[dict[str, Any]]:
    answer = await registry.client.get("/v1/audit", params={"namespace": "docs", "action": action})
    assert answer.status_code == 200, answer.text
    events: list[dict[str, Any]] = answer.json()["events"]
    return events


async def test_an_accepted_break_lands_where_it_was_refused_and_is_shown_everywhere(
    registry: Registry,
) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    refused = await _publish(registry, {"definition": SEARCH_V2})
    assert refused.status_code == 409, refused.text

    landed = await _publish(registry, {"definition": SEARCH_V2, "accept": ACCEPT_BOTH})
    assert landed.status_code == 201, landed.text
    shown = [
        (a["kind"], a["path"], a["source"], a["versions"]) for a in landed.json()["acceptances"]
    ]
    assert shown == [  # by path
        ("default-added", LIMIT_DEFAULT, "request", [1]),
        ("required-added", REQUIRED, "request", [1]),
    ]
    # history and the version resource carry them, with the reasons
    history = (await registry.client.get(f"{SEARCH}/versions")).json()["versions"]
    assert history[0]["acceptances"] == []
    assert {a["reason"] for a in history[1]["acceptances"]} == {
        "every caller sends filters already",
        "20 is what the old server did",
    }
    version = (await registry.client.get(f"{SEARCH}/versions/2")).json()
    assert version["acceptances"] == history[1]["acceptances"]
    # the diff names what of the change was accepted; the reverse diff accepts nothing
    diff = (await registry.client.get(f"{SEARCH}/versions/2/diff?against=1")).json()
    assert {(a["kind"], a["path"]) for a in diff["acceptances"]} == {
        ("required-added", REQUIRED),
        ("default-added", LIMIT_DEFAULT),
    }
    backwards = (await registry.client.get(f"{SEARCH}/versions/1/diff?against=2")).json()
    assert backwards["acceptances"] == []
    # the audit log's publish event carries them
    (published,) = [e for e in await _events(registry, "version.publish") if e["version"] == 2]
    assert [a["kind"] for a in published["detail"]["acceptances"]] == [
        "default-added",
        "required-added",
    ]


async def test_callers_of_the_old_version_meet_current_unconverted(registry: Registry) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    landed = await _publish(registry, {"definition": SEARCH_V2, "accept": ACCEPT_BOTH})
    assert landed.status_code == 201, landed.text
    toolset = await _toolset(registry)
    entry = toolset.tool("search")
    assert entry is not None
    assert [v.version for v in entry.versions] == [2, 1]  # v1 is still served
    (step,) = entry.served(1).route  # type: ignore[union-attr]
    assert (step.from_, step.to, step.ops, step.accepted) == (1, 2, (), True)
    gate = Gate(toolset)
    # every call meets the strict form of the version it speaks: v2's `filters` is not
    # part of v1, so no v1 call reaches current here (each is refused, never passed on)
    stray = gate.check("search", {"query": "q", "filters": {}}, {"schemaVersion": "v1"})
    assert stray.error is not None and stray.error.code == -32602
    assert stray.error.data["errors"][0]["unexpected"] == ["filters"]
    # a v1 call that current refuses (no filters): -31004 with the errors and a re-list
    refused = gate.check("search", {"query": "q"}, {"schemaVersion": "v1"})
    assert refused.error is not None and refused.error.code == -31004
    assert refused.error.data["action"] == "relist"
    assert "filters" in refused.error.message


async def test_a_partial_acceptance_still_needs_a_decision_for_the_rest(
    registry: Registry,
) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    answer = await _publish(registry, {"definition": SEARCH_V2, "accept": ACCEPT_BOTH[1:]})
    assert answer.status_code == 409, answer.text
    (decision,) = answer.json()["decisions"]
    assert decision["kinds"] == ["required-added"]  # what is accepted needs no decision


@pytest.mark.parametrize(
    ("entry", "pointer", "says"),
    [
        (
            {"kind": "defualt-added", "path": LIMIT_DEFAULT, "reason": "typo"},
            "/accept/0/kind",
            "did you mean 'default-added'",
        ),
        (
            {"kind": "default-added", "path": "/inputSchema/properties/limit", "reason": "typo"},
            "/accept/0",
            f"default-added at {LIMIT_DEFAULT}",
        ),
        (
            {"kind": "property-added", "path": "/inputSchema/properties/limit", "reason": "no"},
            "/accept/0",
            "no breaking change of kind property-added",
        ),
    ],
)
async def test_an_acceptance_that_matches_nothing_is_refused(
    registry: Registry, entry: dict[str, Any], pointer: str, says: str
) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    for path in ("versions", "check"):
        answer = await registry.client.post(
            f"{SEARCH}/{path}", json={"definition": SEARCH_V2, "accept": [entry, *ACCEPT_BOTH]}
        )
        assert answer.status_code == 422, answer.text
        problem = answer.json()
        assert problem["type"].endswith("/acceptance-unmatched")
        assert problem["pointer"] == pointer
        assert says in problem["detail"]
    history = (await registry.client.get(f"{SEARCH}/versions")).json()["versions"]
    assert len(history) == 1


async def test_an_acceptance_needs_a_reason_and_a_change_to_accept(registry: Registry) -> None:
    for reason in ("", "   "):
        blank = {"kind": "default-added", "path": LIMIT_DEFAULT, "reason": reason}
        answer = await _publish(registry, {"definition": SEARCH_V1, "accept": [blank]})
        assert answer.status_code == 422, answer.text
        assert answer.json()["type"].endswith("/invalid-body")
    # a first version breaks nothing: there is nothing to accept
    first = await _publish(registry, {"definition": SEARCH_V1, "accept": ACCEPT_BOTH[:1]})
    assert first.status_code == 422, first.text
    assert "breaks no served version" in first.json()["detail"]
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    twice = await _publish(
        registry, {"definition": SEARCH_V2, "accept": [*ACCEPT_BOTH, ACCEPT_BOTH[0]]}
    )
    assert twice.status_code == 422, twice.text
    assert twice.json()["type"].endswith("/request-invalid")


async def test_check_reports_acceptances_as_accepted(registry: Registry) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    plain = (await registry.client.post(f"{SEARCH}/check", json={"definition": SEARCH_V2})).json()
    assert plain["accepted"] is False and plain["acceptances"] == []
    answer = await registry.client.post(
        f"{SEARCH}/check", json={"definition": SEARCH_V2, "accept": ACCEPT_BOTH}
    )
    assert answer.status_code == 200, answer.text
    checked = answer.json()
    assert checked["accepted"] is True and checked["decisions"] == []
    assert [a["reason"] for a in checked["acceptances"]] == [
        "20 is what the old server did",
        "every caller sends filters already",
    ]
    history = (await registry.client.get(f"{SEARCH}/versions")).json()["versions"]
    assert len(history) == 1  # a check stores nothing


# -- the namespace policy ---------------------------------------------------------------


async def test_the_policy_is_read_by_readers_and_set_by_admins_audited(
    registry: Registry,
) -> None:
    default = await registry.client.get(POLICY)
    assert default.status_code == 200, default.text
    assert default.json() == {
        "namespace": "docs",
        "gating": True,
        "reason": None,
        "relax": [],
        "updated_at": None,
        "review": "off",
        "four_eyes": False,
        "changed": False,
        "warnings": [],
    }
    relax = {"relax": [{"kind": "default-added", "tool": "lookup", "reason": "caller-blind"}]}
    publisher = await registry.token("docs:publish")
    async with registry.with_token(publisher) as client:
        assert (await client.get(POLICY)).status_code == 200
        forbidden = await client.put(POLICY, json=relax)
        assert forbidden.status_code == 403, forbidden.text
    async with registry.anonymous() as anonymous:
        assert (await anonymous.put(POLICY, json=relax)).status_code == 401
    assert await _events(registry, "namespace.policy") == []

    admin = await registry.token("docs:admin")
    async with registry.with_token(admin) as client:
        put = await client.put(POLICY, json=relax)
        assert put.status_code == 200, put.text
        assert put.json()["changed"] is True
        assert put.json()["warnings"] == [
            "relax/0: docs has no tool lookup yet; the relaxation applies once it is published"
        ]
        again = await client.put(POLICY, json=relax)
        assert again.json()["changed"] is False
    stored = (await registry.client.get(POLICY)).json()
    assert stored["relax"] == [
        {"kind": "default-added", "tool": "lookup", "reason": "caller-blind"}
    ]
    assert stored["updated_at"] is not None
    (event,) = await _events(registry, "namespace.policy")
    assert event["detail"]["previous"] is None
    assert event["detail"]["policy"]["relax"][0]["kind"] == "default-added"
    assert (await registry.client.put(POLICY, json={})).json()["changed"] is True
    latest = (await _events(registry, "namespace.policy"))[-1]
    assert latest["detail"]["previous"]["relax"][0]["tool"] == "lookup"
    assert latest["detail"]["policy"]["relax"] == []


@pytest.mark.parametrize(
    ("body", "pointer", "says"),
    [
        ({"relax": [{"kind": "default-adedd", "reason": "x"}]}, "/relax/0/kind", "did you mean"),
        ({"gating": False}, "/reason", "gating off needs a reason"),
        (
            {"relax": [{"kind": "default-added", "reason": "x"}] * 2},
            "/relax/1",
            "relaxed twice",
        ),
        (
            {"relax": [{"kind": "default-added", "tool": "no tool", "reason": "x"}]},
            "/relax/0/tool",
            "not a tool name",
        ),
    ],
)
async def test_an_invalid_policy_is_refused(
    registry: Registry, body: dict[str, Any], pointer: str, says: str
) -> None:
    answer = await registry.client.put(POLICY, json=body)
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["type"].endswith("/policy-invalid")
    assert problem["pointer"] == pointer
    assert says in problem["detail"]
    assert (await registry.client.get(POLICY)).json()["updated_at"] is None


async def test_a_policy_of_a_missing_namespace_is_404(registry: Registry) -> None:
    for method in ("GET", "PUT"):
        answer = await registry.client.request(
            method, "/v1/namespaces/nowhere/policy", json={} if method == "PUT" else None
        )
        assert answer.status_code == 404, answer.text
        assert answer.json()["type"].endswith("/namespace-not-found")


async def test_a_policy_relaxes_a_kind_for_one_tool_only(registry: Registry) -> None:
    for tool in ("lookup", "other"):
        first = await _publish(registry, {"definition": _lookup(1, tool)}, tool)
        assert first.status_code == 201, first.text
    put = await registry.client.put(
        POLICY,
        json={"relax": [{"kind": "default-added", "tool": "lookup", "reason": "callers blind"}]},
    )
    assert put.status_code == 200, put.text
    relaxed = await _publish(registry, {"definition": _lookup(2)}, "lookup")
    assert relaxed.status_code == 201, relaxed.text
    (acceptance,) = relaxed.json()["acceptances"]
    assert acceptance["kind"] == "default-added"
    assert acceptance["source"] == "policy"
    assert "relaxes default-added for lookup: callers blind" in acceptance["reason"]
    strict = await _publish(registry, {"definition": _lookup(2, "other")}, "other")
    assert strict.status_code == 409, strict.text
    # a later policy change never changes the stored acceptance (nor the route it makes)
    assert (await registry.client.put(POLICY, json={})).status_code == 200
    entry = (await _toolset(registry)).tool("lookup")
    assert entry is not None and [v.version for v in entry.versions] == [2, 1]
    assert [s.accepted for s in entry.served(1).route] == [True]  # type: ignore[union-attr]


async def test_a_namespace_wide_relaxation_covers_every_tool(registry: Registry) -> None:
    assert (await _publish(registry, {"definition": _lookup(1, "other")}, "other")).is_success
    put = await registry.client.put(
        POLICY, json={"relax": [{"kind": "default-added", "reason": "defaults are harmless"}]}
    )
    assert put.status_code == 200, put.text
    answer = await _publish(registry, {"definition": _lookup(2, "other")}, "other")
    assert answer.status_code == 201, answer.text
    assert "for every tool of the namespace" in answer.json()["acceptances"][0]["reason"]
    # an explicit acceptance of the same change wins over the policy's, with its reason
    v3 = copy.deepcopy(_lookup(2, "other"))
    v3["inputSchema"]["properties"]["page"] = {"type": "integer", "default": 1}
    explicit = await _publish(
        registry,
        {
            "definition": v3,
            "accept": [
                {
                    "kind": "default-added",
                    "path": "/inputSchema/properties/page/default",
                    "reason": "page 1 is where everyone starts",
                }
            ],
        },
        "other",
    )
    assert explicit.status_code == 201, explicit.text
    by_source = {a["source"]: a["reason"] for a in explicit.json()["acceptances"]}
    assert by_source["request"] == "page 1 is where everyone starts"


async def test_gating_off_lets_breaks_land_and_the_gate_pass_calls_through(
    registry: Registry,
) -> None:
    assert (await _publish(registry, {"definition": SEARCH_V1})).status_code == 201
    gated = await _toolset(registry)
    assert gated.gating is True and type(Gate(gated)) is Gate
    assert b'"gating"' not in gated.to_json()  # gated payloads are as they always were
    put = await registry.client.put(
        POLICY, json={"gating": False, "reason": "a prototype nobody depends on yet"}
    )
    assert put.status_code == 200, put.text
    ungated = await _toolset(registry, after=gated)
    assert ungated.gating is False
    landed = await _publish(registry, {"definition": SEARCH_V2})
    assert landed.status_code == 201, landed.text
    assert {a["source"] for a in landed.json()["acceptances"]} == {"policy"}
    assert all("gating is off" in a["reason"] for a in landed.json()["acceptances"])

    toolset = await _toolset(registry, after=ungated)
    assert toolset.gating is False
    gate = Gate(toolset)
    assert isinstance(gate, UngatedGate)
    for meta in ({"schemaVersion": "v1"}, {"schemaVersion": "v9"}, {}, None):
        decision = gate.check("search", {"query": "q", "stray": 1}, meta)
        assert decision.accepted, (meta, decision.error)
        assert decision.arguments == {"query": "q", "stray": 1}  # as sent, nothing filled
        assert decision.version == 2
    unknown = gate.check("nothing", {}, None)
    assert unknown.error is not None and unknown.error.code == -32602
    not_object = gate.check("search", ["q"], None)
    assert not_object.error is not None and not_object.error.data["reason"] == "invalid_arguments"

    # gating back on: the strict gate again, and the routes the policy accepted stay
    assert (await registry.client.put(POLICY, json={})).status_code == 200
    again = await _toolset(registry, after=toolset)
    assert type(Gate(again)) is Gate
    refused = Gate(again).check("search", {"query": "q", "stray": 1}, None)
    assert refused.error is not None and refused.error.code == -31003


async def test_an_apply_bundle_sets_policies_first_and_refuses_bad_ones(
    registry: Registry,
) -> None:
    assert (await _publish(registry, {"definition": _lookup(1)}, "lookup")).status_code == 201
    relax = {"relax": [{"kind": "default-added", "reason": "defaults are what callers meant"}]}
    bundle = {
        "manifests": [{"namespace": "docs", "tool": _lookup(2), "source": "lookup.yaml"}],
        "policies": [{"namespace": "docs", "policy": relax, "source": "policy.yaml"}],
    }
    planned = await registry.client.post("/v1/apply?plan=true", json=bundle)
    assert planned.status_code == 200, planned.text
    plan = planned.json()
    assert plan["accepted"] is True
    assert [(p["action"], p["source"]) for p in plan["policies"]] == [("set", "policy.yaml")]
    assert plan["tools"][0]["acceptances"][0]["source"] == "policy"
    assert (await registry.client.get(POLICY)).json()["updated_at"] is None  # a plan writes nothing

    for policies, code, pointer in (
        (
            [{"namespace": "docs", "policy": {"relax": [{"kind": "nope", "reason": "x"}]}}],
            "policy-invalid",
            "/policies/0/policy/relax/0/kind",
        ),
        ([{"namespace": "docs", "policy": {}}] * 2, "request-invalid", "/policies/1"),
    ):
        answer = await registry.client.post("/v1/apply", json={**bundle, "policies": policies})
        assert answer.status_code == 422, answer.text
        assert answer.json()["type"].endswith(f"/{code}")
        assert answer.json()["pointer"] == pointer

    applied = await registry.client.post("/v1/apply", json=bundle)
    assert applied.status_code == 200, applied.text
    assert applied.json()["applied"] is True
    assert (await registry.client.get(POLICY)).json()["relax"][0]["kind"] == "default-added"
    history = (await registry.client.get("/v1/namespaces/docs/tools/lookup/versions")).json()
    assert history["versions"][1]["acceptances"][0]["source"] == "policy"
    (event,) = await _events(registry, "namespace.policy")
    assert event["detail"]["policy"]["relax"][0]["reason"] == "defaults are what callers meant"
