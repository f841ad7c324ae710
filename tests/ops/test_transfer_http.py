"""`GET /v1/export` and `POST /v1/import` between two live registries.

The source holds every kind of record (tests/ops/records.py). A file refused
lands nothing; the one accepted lands everything, and the target then serves
the source's toolsets byte for byte (the same ETags) and holds the same rows.
"""

from __future__ import annotations

from typing import Any

import pytest_asyncio

from tests.api.conftest import Registry
from tests.ops.records import NAMESPACES, table_rows, toolset_tags
from tests.store.helpers import variant

JSONL = {"Content-Type": "application/jsonl"}


@pytest_asyncio.fixture(scope="module")
async def exported(source: Registry) -> bytes:
    answer = await source.client.get("/v1/export", params={"usage": "true"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/jsonl")
    assert answer.headers["content-disposition"] == 'attachment; filename="registry.jsonl"'
    return answer.content


@pytest_asyncio.fixture(scope="module")
async def source_rows(source: Registry, exported: bytes) -> dict[str, list[Any]]:
    """The source's records as the export saw them (later tests add tokens and events)."""
    return await table_rows(source.database_url)


async def _nothing_landed(target: Registry) -> None:
    assert (await target.client.get("/v1/namespaces")).json()["namespaces"] == []
    audit = await target.client.get("/v1/audit", params={"action": "namespace.import"})
    assert audit.json()["events"] == []


async def test_a_file_with_one_bad_digest_lands_nothing(
    exported: bytes, target: Registry, source_rows: dict[str, list[Any]]
) -> None:
    lines = exported.splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if b'"kind":"version"' in line and i > 5)
    lines[index] = lines[index].replace(b'"description": "', b'"description": "Now: ', 1)
    answer = await target.client.post("/v1/import", content=b"".join(lines), headers=JSONL)
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["type"].endswith("/import-refused")
    assert problem["line"] == index + 1
    assert "is not the digest of its definition" in problem["detail"]
    await _nothing_landed(target)


async def test_a_cut_file_lands_nothing(exported: bytes, target: Registry) -> None:
    half = exported[: len(exported) // 2]
    answer = await target.client.post("/v1/import", content=half, headers=JSONL)
    assert answer.status_code == 422, answer.text
    assert "cut short" in answer.json()["detail"] or "not a JSON object" in answer.json()["detail"]
    await _nothing_landed(target)


async def test_only_admins_move_records(source: Registry, exported: bytes) -> None:
    publisher = await source.token("*:publish")
    billing_admin = await source.token("billing:admin")
    async with source.with_token(publisher) as client:
        assert (await client.get("/v1/export")).status_code == 403
        refused = await client.post("/v1/import", content=exported, headers=JSONL)
        assert refused.status_code == 403
    async with source.with_token(billing_admin) as client:
        assert (await client.get("/v1/export")).status_code == 403, "the whole registry: *:admin"
        mine = await client.get("/v1/export", params={"namespace": "billing"})
        assert mine.status_code == 200, mine.text
        other = await client.get(
            "/v1/export", params=[("namespace", "billing"), ("namespace", "docs")]
        )
        assert other.status_code == 403
        # a whole registry's file carries registry-level events: *:admin to import it
        whole = await client.post("/v1/import", content=exported, headers=JSONL)
        assert whole.status_code == 403
    async with source.anonymous() as client:
        assert (await client.get("/v1/export")).status_code == 401


async def test_what_an_export_asks_for_is_checked_first(source: Registry) -> None:
    missing = await source.client.get("/v1/export", params={"namespace": "nowhere"})
    assert missing.status_code == 404 and missing.json()["namespace"] == "nowhere"
    bad = await source.client.get("/v1/export", params={"namespace": "Not A Name"})
    assert bad.status_code == 400
    typed = await source.client.post(
        "/v1/import", content=b'{"kind": "header"}\n', headers={"Content-Type": "application/json"}
    )
    assert typed.status_code == 415 and "application/jsonl" in typed.json()["detail"]


async def test_a_round_trip_keeps_every_record_and_every_toolset(
    source: Registry, target: Registry, exported: bytes, source_rows: dict[str, list[Any]]
) -> None:
    imported = await target.client.post(
        "/v1/import", params={"mode": "import"}, content=exported, headers=JSONL
    )
    assert imported.status_code == 201, imported.text
    answer = imported.json()
    assert answer["namespaces"] == list(NAMESPACES)
    assert answer["verified_digests"] == answer["counts"]["version"] == 9
    assert answer["counts"]["review"] == 2
    assert await toolset_tags(target.client) == await toolset_tags(source.client)
    assert await table_rows(target.database_url) == source_rows

    exports = await source.client.get("/v1/audit", params={"action": "registry.export"})
    first = exports.json()["events"][0]
    assert (first["actor"], first["detail"]["scope"], first["detail"]["usage"]) == (
        "bootstrap",
        "registry",
        True,
    )
    assert first["detail"]["namespaces"] == list(NAMESPACES)
    imports = await target.client.get("/v1/audit", params={"action": "namespace.import"})
    assert [e["namespace"] for e in imports.json()["events"]] == list(NAMESPACES)
    assert imports.json()["events"][0]["detail"]["records"]["version"] == 5

    # imported in import mode: publishes wait for the switch
    publish = "/v1/namespaces/quiet/tools/new/versions"
    held = await target.client.post(publish, json={"definition": variant(1, "new")})
    assert held.status_code == 409 and held.json()["mode"] == "import", held.text
    switched = await target.client.put("/v1/namespaces/quiet/mode", json={"mode": None})
    assert switched.status_code == 200
    landed = await target.client.post(publish, json={"definition": variant(1, "new")})
    assert landed.status_code == 201, landed.text

    # the version held for review waits there as here, and is decided there
    docs = "/v1/namespaces/docs"
    waiting = (await target.client.get(f"{docs}/reviews")).json()["reviews"]
    assert [(w["tool"], w["version"], w["state"]) for w in waiting] == [("notes.add", 4, "pending")]
    assert (await target.client.put(f"{docs}/mode", json={"mode": None})).status_code == 200
    approved = await target.client.post(
        f"{docs}/tools/notes.add/versions/4/approve", json={"reason": "moved and reviewed"}
    )
    assert (approved.status_code, approved.json()["state"]) == (200, "active"), approved.text

    again = await target.client.post("/v1/import", content=exported, headers=JSONL)
    assert again.status_code == 409, again.text
    assert again.json()["type"].endswith("/conflict") and again.json()["line"] == 1
