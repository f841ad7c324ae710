"""The toolset payload carries, per older version, what changed from it to current.

The TypeScript gate cannot run the engine; the registry ships the engine's
words in the payload so that both SDKs name the same changes (issue 17).
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from jsonschema import Draft202012Validator

from registry.compat import classify
from registry.sdk import Gate, Toolset
from registry.sdk.toolset import contract_changes
from tests.api.conftest import Registry
from tests.e2e.test_mcp_e2e import seed_000_at_v3
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "schemas" / "toolset.schema.json").read_text("utf-8")
)


async def test_each_older_version_carries_the_engines_changes_to_current(
    registry: Registry,
) -> None:
    await seed_000_at_v3(registry.client)
    published = await registry.client.post(
        "/v1/namespaces/billing/tools/db.query/versions",
        json={"definition": DB_QUERY_V4, "retire": [1, 2, 3]},
    )
    assert published.status_code == 201, published.text
    answer = await registry.client.get("/v1/namespaces/billing/toolset")
    assert answer.status_code == 200
    body = answer.json()
    assert list(Draft202012Validator(SCHEMA).iter_errors(body)) == []

    (tool,) = body["tools"]
    (current,) = tool["versions"]
    assert "changes" not in current
    expected = [
        msgspec.to_builtins(c) for c in contract_changes(classify(DB_QUERY_V3, DB_QUERY_V4))
    ]
    assert {"property-renamed", "enum-narrowed"} <= {c["kind"] for c in expected}
    retired = {r["version"]: r for r in tool["retired"]}
    assert retired[3]["changes"] == expected
    assert sorted(retired) == [1, 2, 3] and all("changes" in r for r in retired.values())

    # the gate names exactly the carried changes
    decision = Gate(Toolset.from_json(answer.content)).check(
        "db.query", {"query": "q", "timeout_ms": 5}, None
    )
    assert decision.error is not None
    assert decision.error.data["inferredVersion"] == "v3"
    assert decision.error.data["changes"] == expected
