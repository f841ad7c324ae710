"""16 concurrent publishers on one tool: versions contiguous, none duplicated, digests once."""

from __future__ import annotations

import asyncio
import copy

from tests.api.conftest import Registry
from tests.fixtures.seeds import DB_QUERY_V4

VERSIONS = "/v1/namespaces/billing/tools/db.query/versions"


async def test_sixteen_concurrent_publishers(registry: Registry) -> None:
    definitions = []
    for index in range(16):
        definition = copy.deepcopy(DB_QUERY_V4)
        # A cosmetic change: accepted in whatever order the publishes land.
        definition["description"] = f"Run a SQL query (revision {index})."
        definitions.append(definition)
    # Each definition twice: the same digest published concurrently lands once.
    bodies = [{"definition": d} for d in definitions * 2]
    answers = await asyncio.gather(*(registry.client.post(VERSIONS, json=b) for b in bodies))
    assert all(a.status_code in (200, 201) for a in answers), [a.text for a in answers]
    assert sum(a.status_code == 201 for a in answers) == 16
    by_digest: dict[str, set[int]] = {}
    for answer in answers:
        by_digest.setdefault(answer.json()["digest"], set()).add(answer.json()["version"])
    assert all(len(v) == 1 for v in by_digest.values()), "one digest, one version"
    history = (await registry.client.get(VERSIONS)).json()["versions"]
    assert [v["version"] for v in history] == list(range(1, 17))
    audit = (await registry.client.get("/v1/audit", params={"action": "version.publish"})).json()
    assert sorted(e["version"] for e in audit["events"]) == list(range(1, 17))
