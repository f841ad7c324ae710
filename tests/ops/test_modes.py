"""Modes: `read-only` and `import` refuse every write to the records with 409 `not-writable`,
whatever route it takes; a namespace's own mode wins; imports pass in `import` mode only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import pytest_asyncio
import yaml

from registry import store
from registry.store.modes import set_mode
from tests.api.conftest import Registry
from tests.fixtures.seeds import SEARCH_V1
from tests.ops.conftest import module_registry
from tests.ops.records import INITIALIZE, NOTES_V1, NOTES_V2
from tests.store.helpers import accept, digest_of, variant

SPEC = Path(__file__).resolve().parents[2] / "openapi.yaml"
NS = "/v1/namespaces/billing"
DROP_TAGS = {"op": "drop", "path": "/tags"}
NOTES_V3 = {**NOTES_V2, "description": "Add a note to the notebook."}
# every route that writes the registry's records, with a body it would accept
HELD = "/v1/namespaces/held"
WRITES: list[tuple[str, str, Any]] = [
    ("PUT", "/v1/namespaces/fresh", None),
    ("POST", f"{NS}/tools/notes.add/versions", {"definition": NOTES_V3}),
    ("POST", f"{NS}/tools/notes.add/versions/1/deprecate", {}),
    ("POST", f"{NS}/tools/notes.add/versions/1/retire", {}),
    ("POST", f"{NS}/tools/notes.add/converters", {"from": 2, "to": 1, "ops": [DROP_TAGS]}),
    (
        "PUT",
        f"{NS}/aliases/notes_v1",
        {"target": "notes.add", "contract": {"tool": "notes.add", "version": 1}},
    ),
    ("PUT", f"{NS}/policy", {"gating": False, "reason": "testing"}),
    ("PUT", f"{NS}/capabilities", INITIALIZE),
    # a version held for review (the fixture's namespace `held`)
    ("POST", f"{HELD}/tools/notes.add/versions/1/approve", {"reason": "read it"}),
    ("POST", f"{HELD}/tools/notes.add/versions/1/reject", {"reason": "read it"}),
    (
        "POST",
        "/v1/apply",
        {"manifests": [{"namespace": "billing", "tool": SEARCH_V1, "source": "search.yaml"}]},
    ),
]


@pytest_asyncio.fixture(scope="module")
async def registry(postgres_server: Any, migrated_template: str) -> AsyncIterator[Registry]:
    async with module_registry(postgres_server, migrated_template) as served:
        assert (await served.client.put(f"{NS}")).status_code == 201
        for definition in (NOTES_V1, NOTES_V2):
            answer = await served.client.post(
                f"{NS}/tools/notes.add/versions", json={"definition": definition}
            )
            assert answer.status_code == 201, answer.text
        assert (await served.client.put(HELD)).status_code == 201
        policy = await served.client.put(f"{HELD}/policy", json={"review": "all"})
        assert policy.status_code == 200, policy.text
        held = await served.client.post(
            f"{HELD}/tools/notes.add/versions", json={"definition": NOTES_V1}
        )
        assert held.status_code == 202, held.text
        yield served


async def _put_mode(registry: Registry, mode: str | None, namespace: str | None = None) -> None:
    path = f"/v1/namespaces/{namespace}/mode" if namespace else "/v1/mode"
    answer = await registry.client.put(path, json={"mode": mode, "reason": "a test"})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("mode", ["read-only", "import"])
async def test_a_mode_refuses_every_write_and_lets_reads_through(
    registry: Registry, mode: str
) -> None:
    await _put_mode(registry, mode)
    try:
        for method, path, body in WRITES:
            answer = await registry.client.request(method, path, json=body)
            assert answer.status_code == 409, (path, answer.text)
            problem = answer.json()
            assert problem["type"] == "https://mcp-tool-registry.dev/problems/not-writable", path
            assert (problem["mode"], problem["scope"]) == (mode, "registry"), path
            assert 'PUT /v1/mode {"mode": "read-write"} lifts it' in problem["detail"]
        for path in (f"{NS}/tools", f"{NS}/toolset", f"{NS}/tools/notes.add/versions", "/v1/audit"):
            assert (await registry.client.get(path)).status_code == 200, path
        check = await registry.client.post(
            f"{NS}/tools/notes.add/check", json={"definition": NOTES_V2}
        )
        assert check.status_code == 200, check.text
    finally:
        await _put_mode(registry, "read-write")
    landed = await registry.client.put("/v1/namespaces/fresh")
    assert landed.status_code in (200, 201), "writes go on once the mode is read-write again"


async def test_a_namespace_mode_wins_over_the_registry_mode(registry: Registry) -> None:
    await _put_mode(registry, "read-only", "billing")
    try:
        refused = await registry.client.post(
            f"{NS}/tools/other/versions", json={"definition": variant(1, "other")}
        )
        assert refused.status_code == 409
        assert (refused.json()["scope"], refused.json()["namespace"]) == ("namespace", "billing")
        shown = (await registry.client.get(f"{NS}/mode")).json()
        assert (shown["mode"], shown["scope"]) == ("read-only", "namespace")
        await _put_mode(registry, "read-only")
        await _put_mode(registry, "read-write", "billing")
        landed = await registry.client.post(
            f"{NS}/tools/other/versions", json={"definition": variant(1, "other")}
        )
        assert landed.status_code == 201, "billing's own read-write wins over the registry's"
    finally:
        await _put_mode(registry, "read-write")
        await _put_mode(registry, None, "billing")
    shown = (await registry.client.get(f"{NS}/mode")).json()
    assert (shown["mode"], shown["scope"]) == ("read-write", "registry")
    audit = await registry.client.get("/v1/audit", params={"action": "namespace.mode"})
    assert [e["detail"]["mode"] for e in audit.json()["events"]][-3:] == [
        "read-only",
        "read-write",
        None,
    ]


async def test_setting_a_mode_needs_admin_where_it_applies(registry: Registry) -> None:
    publisher = await registry.token("billing:publish")
    admin = await registry.token("billing:admin")
    async with registry.with_token(publisher) as client:
        assert (await client.get("/v1/mode")).status_code == 200
        assert (await client.put(f"{NS}/mode", json={"mode": "read-only"})).status_code == 403
    async with registry.with_token(admin) as client:
        assert (await client.put("/v1/mode", json={"mode": "read-only"})).status_code == 403
        answer = await client.put(f"{NS}/mode", json={"mode": "read-write"})
        assert answer.status_code == 200, answer.text
        assert (await client.put(f"{NS}/mode", json={"mode": None})).json()["changed"]
    bad = await registry.client.put("/v1/mode", json={"mode": None})
    assert bad.status_code == 422 and bad.json()["pointer"] == "/mode"


async def test_a_mode_change_waits_for_the_writes_in_flight(registry: Registry) -> None:
    """A publish that has written (and holds the modes' lock shared) commits before a
    change to read-only takes effect; a write after the change is refused."""
    writer, setter = [await asyncpg.connect(registry.database_url) for _ in range(2)]
    try:
        transaction = writer.transaction()
        await transaction.start()
        definition = variant(2, "inflight")
        await store.publish(
            writer, "billing", "inflight", definition, digest_of(definition), accept, None, None
        )
        change = asyncio.create_task(set_mode(setter, "read-only", actor="test", request_id=None))
        while not await registry_waits_for_modes(registry):
            await asyncio.sleep(0.01)
        assert not change.done()
        await transaction.commit()
        await change
        later = variant(3, "inflight")
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError, match="read-only mode"):
            await store.publish(
                writer, "billing", "inflight", later, digest_of(later), accept, None, None
            )
    finally:
        await set_mode(setter, "read-write", actor="test", request_id=None)
        await writer.close()
        await setter.close()


async def registry_waits_for_modes(registry: Registry) -> bool:
    conn = await asyncpg.connect(registry.database_url)
    try:
        return bool(
            await conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND classid = 7 AND objid = 1836016741"
            )
        )
    finally:
        await conn.close()


def test_every_write_route_documents_not_writable() -> None:
    """openapi.yaml lists `not-writable` on exactly the routes that write records."""
    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    documented = set()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            conflict = operation.get("responses", {}).get("409", {})
            if "`not-writable`" in conflict.get("description", ""):
                documented.add((method.upper(), path))
    templates = {
        ("PUT", "/v1/namespaces/{ns}"),
        ("POST", "/v1/namespaces/{ns}/tools/{tool}/versions"),
        ("POST", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}/deprecate"),
        ("POST", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}/retire"),
        ("POST", "/v1/namespaces/{ns}/tools/{tool}/converters"),
        ("POST", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}/approve"),
        ("POST", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}/reject"),
        ("PUT", "/v1/namespaces/{ns}/aliases/{alias}"),
        ("PUT", "/v1/namespaces/{ns}/policy"),
        ("PUT", "/v1/namespaces/{ns}/capabilities"),
        ("POST", "/v1/apply"),
        ("POST", "/v1/import"),
    }
    assert documented == templates
    assert len(WRITES) == len(templates) - 1  # the import has its own tests
