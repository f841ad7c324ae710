"""Digest lookups: what is served as immutable never changes (issue 10 item 3,
issue 18 item 6).

`GET /v1/digests/{d}` (where a digest is published, each version's state)
changes when the definition is published elsewhere or a version retires, so
it is revalidated (`no-cache`, ETag, 304). `GET /v1/digests/{d}/definition`
is the definition itself, the same bytes forever: immutable, its body hashes to
the digest. An anonymous caller learns nothing about what exists while reads
are closed.
"""

from __future__ import annotations

import hashlib

from registry.canonical import digest
from tests.api.conftest import Registry
from tests.api.test_isolation import _token
from tests.fixtures.seeds import DB_QUERY_V3

D = digest(DB_QUERY_V3)
LOOKUP = f"/v1/digests/{D}"


def _publish(namespace: str, definition: dict[str, object]) -> tuple[str, dict[str, object]]:
    return (
        f"/v1/namespaces/{namespace}/tools/{definition['name']}/versions",
        {"definition": definition},
    )


async def test_the_changing_part_is_revalidated_and_the_definition_is_immutable(
    registry: Registry,
) -> None:
    client = registry.client
    path, body = _publish("billing", {**DB_QUERY_V3, "_meta": {"team": "billing"}})
    assert (await client.post(path, json=body)).status_code == 201

    first = await client.get(LOOKUP)
    assert first.status_code == 200, first.text
    assert "immutable" not in first.headers["cache-control"]
    assert first.headers["cache-control"] == "no-cache"
    etag = first.headers["etag"]
    assert [(m["namespace"], m["state"]) for m in first.json()["matches"]] == [
        ("billing", "active")
    ]
    unchanged = await client.get(LOOKUP, headers={"If-None-Match": etag})
    assert unchanged.status_code == 304
    assert unchanged.headers["etag"] == etag

    definition = await client.get(first.json()["definition_url"])
    assert definition.status_code == 200
    assert "immutable" in definition.headers["cache-control"]
    assert definition.headers["etag"] == f'"{D}"'
    assert "sha256:" + hashlib.sha256(definition.content).hexdigest() == D
    assert "_meta" not in definition.json()
    assert definition.json()["inputSchema"] == DB_QUERY_V3["inputSchema"]

    # Published in a second namespace: the lookup changes, its ETag with it.
    path, body = _publish("ledger", DB_QUERY_V3)
    assert (await client.post(path, json=body)).status_code == 201
    grown = await client.get(LOOKUP, headers={"If-None-Match": etag})
    assert grown.status_code == 200
    assert grown.headers["etag"] != etag
    assert [m["namespace"] for m in grown.json()["matches"]] == ["billing", "ledger"]
    # ... and when a version's state changes.
    assert (await client.post(path.replace("/versions", "/versions/1/retire"))).status_code == 200
    retired = await client.get(LOOKUP, headers={"If-None-Match": grown.headers["etag"]})
    assert retired.status_code == 200
    assert [m["state"] for m in retired.json()["matches"]] == ["active", "retired"]

    # The immutable part has not changed, byte for byte.
    again = await client.get(f"{LOOKUP}/definition")
    assert again.content == definition.content
    assert again.headers["etag"] == definition.headers["etag"]
    assert (
        await client.get(f"{LOOKUP}/definition", headers={"If-None-Match": f'"{D}"'})
    ).status_code == 304


async def test_anonymous_callers_learn_nothing_about_what_exists(registry: Registry) -> None:
    path, body = _publish("billing", DB_QUERY_V3)
    assert (await registry.client.post(path, json=body)).status_code == 201
    unknown = "/v1/digests/sha256:" + "0" * 64
    async with registry.anonymous() as anonymous:
        answers = [
            await anonymous.get(p)
            for p in (LOOKUP, unknown, f"{LOOKUP}/definition", f"{unknown}/definition")
        ]
    assert {a.status_code for a in answers} == {401}
    assert len({a.json()["detail"] for a in answers}) == 1


async def test_a_token_sees_only_what_it_may_read(registry: Registry) -> None:
    path, body = _publish("billing", DB_QUERY_V3)
    assert (await registry.client.post(path, json=body)).status_code == 201
    path, body = _publish("ledger", DB_QUERY_V3)
    assert (await registry.client.post(path, json=body)).status_code == 201
    ledger, _ = await _token(registry, "ledger:read")
    other, _ = await _token(registry, "search:read")
    unknown = "/v1/digests/sha256:" + "0" * 64
    async with registry.with_token(ledger) as client:
        seen = await client.get(LOOKUP)
        assert [m["namespace"] for m in seen.json()["matches"]] == ["ledger"]
        assert (await client.get(f"{LOOKUP}/definition")).status_code == 200
    async with registry.with_token(other) as client:
        hidden = await client.get(LOOKUP)
        never = await client.get(unknown)
        assert hidden.status_code == never.status_code == 404
        assert hidden.json()["detail"].replace(D, "") == never.json()["detail"].replace(
            "sha256:" + "0" * 64, ""
        )
        assert (await client.get(f"{LOOKUP}/definition")).status_code == 404
