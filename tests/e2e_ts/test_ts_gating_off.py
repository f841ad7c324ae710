"""The TypeScript gate and a namespace policy that turns gating off, end to end.

A live registry serves billing at seed 000's v4 (v1..v3 retired); the gated
TypeScript server (sdk-ts/e2e/gated_server.ts, its watcher long-polling the
registry) is driven by the official TypeScript client
(sdk-ts/e2e/policy_client.ts). A stale call declaring v3 is refused -31001
while the namespace is gated; an admin PUTs `{"gating": false, reason}` on the
namespace's policy, the watcher swaps in the payload that says
`"gating": false` (list_changed), and the same call is served with the
caller's own arguments (nothing renamed); the policy back to the default, the
same call is refused again.
"""

from __future__ import annotations

from pathlib import Path

from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.e2e.test_mcp_e2e import seed_000_at_v3, seed_000_v4
from tests.e2e_ts.test_ts_gate import SDK_TS, SERVER, STALE, node, run_client, server_env

CLIENT = SDK_TS / "dist" / "e2e" / "policy_client.js"


def _refused_as_retired(outcome: dict[str, object]) -> None:
    error = outcome.get("error")
    assert isinstance(error, dict), outcome
    assert error["code"] == -31001, error
    assert error["data"]["reason"] == "schema_version_retired"


async def test_a_typescript_gated_server_follows_the_policy_turning_gating_off_and_on(
    registry: Registry, tmp_path: Path
) -> None:
    await seed_000_at_v3(registry.client)
    await seed_000_v4(registry.client)
    policy = f"{registry.url}/v1/namespaces/billing/policy"
    stale = {"name": "db.query", "arguments": STALE, "_meta": {"schemaVersion": "v3"}}
    versionless = {"name": "db.query", "arguments": STALE}
    report = await run_client(
        {
            "server": {
                "command": node(),
                "args": [str(SERVER)],
                "env": server_env(registry.url, tmp_path / "billing.toolset.json"),
                "cwd": str(SDK_TS),
            },
            "steps": [
                {"name": "gatedStale", "call": stale},
                {
                    "name": "off",
                    "put": {
                        "url": policy,
                        "token": ADMIN_TOKEN,
                        "body": {"gating": False, "reason": "a prototype nobody depends on yet"},
                    },
                },
                {"name": "ungatedStale", "call": stale},
                {"name": "ungatedVersionless", "call": versionless},
                {"name": "ungatedUnknown", "call": {"name": "db.querry", "arguments": {}}},
                {"name": "on", "put": {"url": policy, "token": ADMIN_TOKEN, "body": {}}},
                {"name": "regatedStale", "call": stale},
            ],
        },
        client=CLIENT,
    )
    (listed,) = report["listed"]
    assert listed["_meta"]["schemaVersion"] == "v4"
    outcomes = report["outcomes"]
    _refused_as_retired(outcomes["gatedStale"])

    off = outcomes["off"]
    assert off["status"] == 200, off["body"]
    assert off["listChanged"] == 1
    assert [t["_meta"]["schemaVersion"] for t in off["listed"]] == [
        "v4"
    ]  # the listing is current's
    for name in ("ungatedStale", "ungatedVersionless"):
        served = outcomes[name]["result"]
        assert not served.get("isError"), (name, served)
        # the caller's own arguments: timeout_ms is not renamed to v4's timeout
        assert served["structuredContent"] == {"rows": [], "received": STALE}, name
    unknown = outcomes["ungatedUnknown"]["error"]
    assert unknown["code"] == -32602 and unknown["data"]["reason"] == "unknown_tool", unknown
    assert report["serverStderr"].count("gate.gating_off") == 1, report["serverStderr"]

    on = outcomes["on"]
    assert on["status"] == 200, on["body"]
    assert on["listChanged"] == 2
    _refused_as_retired(outcomes["regatedStale"])
    assert "Traceback" not in report["serverStderr"]
