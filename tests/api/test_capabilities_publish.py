"""A gated server publishes its own `initialize` result at boot (seed 004 fixtures)."""

from __future__ import annotations

import pytest
from mcp.server.lowlevel import NotificationOptions, Server

from registry.sdk import Toolset
from registry.sdk.capabilities import CapabilitiesError, publish_capabilities
from registry.sdk.mcp_adapter import captured_initialize, gate_server
from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.fixtures.seeds import DB_QUERY_V4
from tests.sdk import payload, served


async def test_the_gated_server_publishes_what_it_declares(registry: Registry) -> None:
    toolset = Toolset.from_payload(
        payload(
            [
                {
                    "name": "db.query",
                    "current": 1,
                    "versions": [served(DB_QUERY_V4, 1)],
                    "retired": [],
                }
            ]
        )
    )
    server: Server = Server("billing-gated", version="1.2.3")  # type: ignore[type-arg]
    gate_server(server, toolset, handlers={"db.query": lambda arguments: arguments})  # type: ignore[arg-type, return-value]
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    document = captured_initialize(options, "2025-06-18")
    assert document["capabilities"]["tools"] == {"listChanged": True}

    record = await publish_capabilities(registry.url, "billing", document, token=ADMIN_TOKEN)
    assert record["seq"] == 1
    again = await publish_capabilities(registry.url, "billing", document, token=ADMIN_TOKEN)
    assert again["seq"] == 1, "an equal document is not a new record"
    check = await registry.client.post(
        "/v1/namespaces/billing/capabilities/check",
        json={"methods": ["tools/list", "tools/call", "resources/read"]},
    )
    assert [u["method"] for u in check.json()["unmet"]] == ["resources/read"]

    with pytest.raises(CapabilitiesError, match="HTTP 401"):
        await publish_capabilities(registry.url, "billing", document, token=None)


async def test_registry_capabilities_check_on_the_seed_004_fixture(registry: Registry) -> None:
    import asyncio
    import sys
    from pathlib import Path

    fixture = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": True}, "resources": {}},
        "serverInfo": {"name": "files", "version": "1.0.0"},
    }
    assert (await registry.client.put("/v1/namespaces/files/capabilities", json=fixture)).is_success
    script = str(Path(sys.executable).parent / "registry")
    methods = ["tools/list", "tools/call", "resources/read", "resources/subscribe"]
    process = await asyncio.create_subprocess_exec(
        script,
        "capabilities",
        "check",
        "files",
        "--methods",
        *methods,
        "--url",
        registry.url,
        "--token",
        ADMIN_TOKEN,
        "--format",
        "json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 1, err
    import json

    answer = json.loads(out)
    assert [(u["method"], u["requires"]) for u in answer["unmet"]] == [
        ("resources/subscribe", "resources.subscribe")
    ]
    process = await asyncio.create_subprocess_exec(
        script,
        "capabilities",
        "check",
        "files",
        "--methods",
        "tools/list",
        "--url",
        registry.url,
        "--token",
        ADMIN_TOKEN,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err
    assert out.decode().startswith("met    tools/list")
