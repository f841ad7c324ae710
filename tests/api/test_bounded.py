"""Bounded work per request and the third round of security findings (issue 24).

Each test fails on the code before it: caps refused nothing, bodies of any size
were read and parsed on the event loop, classification ran there too with no
budget and no share, a past sunset retired around
`require_idle`, long-polls had no per-token share and console ones were not
counted, an integer past 2**53 was a 500 (before the scope check on apply),
`/schema/swagger` loaded a CDN and `/metrics` was open. No wall-clock assert:
the event loop's freedom is shown by another request completing while the
heavy one still runs.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from registry import store
from registry.api.settings import Settings
from tests.api.conftest import ADMIN_TOKEN, Registry, ServedApp, serve
from tests.fixtures.seeds import DB_QUERY_V3, SEARCH_V1

BILLING = "/v1/namespaces/billing"
TOOL = f"{BILLING}/tools/u"
HUGE = 9007199254740993  # 2**53 + 1


def union(branches: int, tag: str) -> dict[str, Any]:
    """A tool whose one argument is an `anyOf` of `branches` objects: comparing two of
    them costs the product of their branches (the engine of issue 24)."""
    choices = [
        {
            "type": "object",
            "properties": {f"{tag}{i}": {"type": "string", "const": f"{tag}{i}"}},
            "required": [f"{tag}{i}"],
        }
        for i in range(branches)
    ]
    return {"name": "u", "inputSchema": {"type": "object", "properties": {"x": {"anyOf": choices}}}}


def services(app: ServedApp) -> Any:
    return app.server.config.app.app.state.services


async def test_definitions_past_a_cap_are_refused_before_any_work(registry: Registry) -> None:
    wide = {"type": "object", "properties": {f"p{i}": {} for i in range(1001)}}
    many = {"type": "object", "properties": {"x": {"oneOf": [{"const": i} for i in range(257)]}}}
    big = {"type": "object", "description": "x" * (600 * 1024)}
    for schema, cap, where in (
        (wide, "definition_max_properties", "/definition/inputSchema/properties"),
        (many, "definition_max_branches", "/definition/inputSchema/properties/x/oneOf"),
        (big, "definition_max_bytes", "/definition"),
    ):
        body = {"definition": {"name": "u", "inputSchema": schema}}
        for path in (f"{TOOL}/versions", f"{TOOL}/check"):
            answer = await registry.client.post(path, json=body)
            assert answer.status_code == 422, answer.text
            problem = answer.json()
            assert problem["type"].endswith("/definition-too-large"), problem
            assert problem["limit"]["name"] == cap and problem["pointer"] == where, problem
            assert f"REGISTRY_{cap.upper()}" in problem["detail"]
    bundle = {"manifests": [{"namespace": "billing", "tool": {"name": "u", "inputSchema": wide}}]}
    answer = await registry.client.post("/v1/apply", params={"plan": "true"}, json=bundle)
    assert answer.json()["pointer"] == "/manifests/0/tool/inputSchema/properties", answer.text
    assert (await registry.client.get(f"{TOOL}/versions")).status_code == 404, "nothing stored"


async def test_an_integer_past_2_53_is_a_4xx_and_scopes_come_first(registry: Registry) -> None:
    tool = {"name": "u", "inputSchema": {"type": "object", "maximum": HUGE}}
    for path in (f"{TOOL}/versions", f"{TOOL}/check"):
        answer = await registry.client.post(path, json={"definition": tool})
        assert answer.status_code == 422, answer.text
        assert answer.json()["pointer"] == "/definition/inputSchema/maximum"
    bundle = {"manifests": [{"namespace": "billing", "tool": tool}]}
    answer = await registry.client.post("/v1/apply", params={"plan": "true"}, json=bundle)
    assert answer.status_code == 422 and answer.json()["pointer"] == (
        "/manifests/0/tool/inputSchema/maximum"
    )
    reader = await registry.token("billing:read")
    other = await registry.token("search:publish")
    for secret in (reader, other):
        async with registry.with_token(secret) as client:
            for plan in ("true", "false"):
                answer = await client.post("/v1/apply", params={"plan": plan}, json=bundle)
                assert answer.status_code == 403, answer.text
            # malformed bodies too: the scope is checked before the body is read
            answer = await client.post(
                f"{TOOL}/versions", content=b"{", headers={"content-type": "application/json"}
            )
            assert answer.status_code == 403, answer.text


async def test_a_check_over_its_budget_is_answered_with_the_problem(database_url: str) -> None:
    app = await serve(database_url)
    try:
        async with httpx.AsyncClient(
            base_url=app.url, timeout=60, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        ) as client:
            # 64 x 64 branches: the engine's pairing stays within max_branch_pairs (4,096)
            # and costs about 0.3 s; wider unions are cut short by that bound in
            # milliseconds, so only a budget well below the work is sure to run out
            stored = await client.post(f"{TOOL}/versions", json={"definition": union(64, "a")})
            assert stored.status_code == 201, stored.text
            services(app).budget.seconds = 0.02  # REGISTRY_ANALYSIS_SECONDS=0.02 from here on
            answer = await client.post(f"{TOOL}/check", json={"definition": union(64, "b")})
            assert answer.status_code == 422, answer.text
            problem = answer.json()
            assert problem["type"].endswith("/analysis-over-budget")
            assert problem["limit"] == {"name": "analysis_seconds", "maximum": 0.02}
            # the worker that was stopped is replaced: the next check is answered
            services(app).budget.seconds = 60.0
            small = await client.post(f"{TOOL}/check", json={"definition": union(64, "a")})
            assert small.status_code == 200 and small.json()["existing"] is True
            metrics = (await client.get("/metrics")).text
            assert "registry_analysis_over_budget_total 1.0" in metrics
    finally:
        await app.stop()


async def test_a_heavy_check_leaves_the_event_loop_serving(database_url: str) -> None:
    """While one token's costly checks run, another token's check and another namespace's
    reads complete; one check past the token's share is refused at once (429)."""
    app = await serve(database_url, analysis_seconds=60, analysis_per_token=1)
    services(app).budget.admitted = 2  # the token's calls admitted at once, for this test
    admin = httpx.AsyncClient(
        base_url=app.url, timeout=120, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        stored = await admin.post(f"{TOOL}/versions", json={"definition": union(160, "a")})
        assert stored.status_code == 201, stored.text
        search = await admin.post(
            "/v1/namespaces/search/tools/search/versions", json={"definition": SEARCH_V1}
        )
        assert search.status_code == 201
        registry = Registry(app.url, database_url, admin)
        heavy = [
            asyncio.ensure_future(admin.post(f"{TOOL}/check", json={"definition": union(160, tag)}))
            for tag in ("b", "c")
        ]
        while services(app).budget.admitted_of("bootstrap") < 2:
            await asyncio.sleep(0.01)
        refused = await admin.post(f"{TOOL}/check", json={"definition": union(160, "d")})
        assert refused.status_code == 429, refused.text
        assert refused.json()["type"].endswith("/too-many-requests")
        assert refused.headers["retry-after"]
        async with registry.with_token(await registry.token("search:publish")) as other:
            reads = await other.get("/v1/namespaces/search/tools")
            checked = await other.post(
                "/v1/namespaces/search/tools/search/check", json={"definition": SEARCH_V1}
            )
        assert reads.status_code == 200 and checked.status_code == 200, checked.text
        assert not all(task.done() for task in heavy), "the heavy checks still run"
        answers = await asyncio.gather(*heavy)
        assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
    finally:
        await admin.aclose()
        await app.stop()


async def test_a_sunset_that_retires_passes_the_idle_rule(registry: Registry) -> None:
    """Deprecating with a past (or near) sunset retires: refused while still called, by
    deprecate, publish and apply alike; a retirement says so."""
    assert (
        await registry.client.post(
            f"{BILLING}/tools/db.query/versions", json={"definition": DB_QUERY_V3}
        )
    ).status_code == 201
    changed = {**DB_QUERY_V3, "description": "Run a read-only query (v2)."}
    assert (
        await registry.client.post(
            f"{BILLING}/tools/db.query/versions", json={"definition": changed}
        )
    ).status_code == 201
    report = {
        "server": "billing-1",
        "toolset": "sha256:" + "0" * 64,
        "counts": [{"tool": "db.query", "version": 1, "decision": "accepted", "calls": 500}],
    }
    assert (await registry.client.post(f"{BILLING}/usage", json=report)).status_code == 200
    past = "2000-01-01T00:00:00Z"
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    for sunset, idle in ((past, "1d"), (soon, "7d")):
        answer = await registry.client.post(
            f"{BILLING}/tools/db.query/versions/1/deprecate",
            json={"sunset": sunset, "require_idle": idle},
        )
        assert answer.status_code == 409, answer.text
        assert answer.json()["type"].endswith("/version-in-use")
    third = {**DB_QUERY_V3, "description": "Run a read-only query (v3)."}
    answer = await registry.client.post(
        f"{BILLING}/tools/db.query/versions",
        json={
            "definition": third,
            "deprecate": [{"version": 1, "sunset": past}],
            "require_idle": "1d",
        },
    )
    assert answer.status_code == 409 and answer.json()["type"].endswith("/version-in-use")
    bundle = {
        "manifests": [
            {
                "namespace": "billing",
                "tool": third,
                "require_idle": "1d",
                "deprecate": [{"version": 1, "sunset": past}],
            }
        ]
    }
    planned = await registry.client.post("/v1/apply", params={"plan": "true"}, json=bundle)
    assert planned.json()["accepted"] is False and planned.json()["tools"][0]["in_use"]
    applied = await registry.client.post("/v1/apply", json=bundle)
    assert applied.status_code == 409, applied.text
    # without require_idle it lands, and says who still called it
    landed = await registry.client.post(
        f"{BILLING}/tools/db.query/versions/1/deprecate", json={"sunset": past}
    )
    assert landed.status_code == 200, landed.text
    assert "500 times" in landed.json()["warnings"][0]


async def test_long_polls_have_a_per_token_share_console_polls_count(database_url: str) -> None:
    app = await serve(database_url, max_waiters=8, max_waiters_per_token=2)
    admin = httpx.AsyncClient(
        base_url=app.url, timeout=60, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    registry = Registry(app.url, database_url, admin)
    try:
        for path, tool in (
            ("billing/tools/db.query", DB_QUERY_V3),
            ("search/tools/search", SEARCH_V1),
        ):
            stored = await admin.post(f"/v1/namespaces/{path}/versions", json={"definition": tool})
            assert stored.status_code == 201
        reader = await registry.token("billing:read")
        hog = registry.with_token(reader)
        etag = (await hog.get(f"{BILLING}/toolset")).headers["etag"]
        wait = {"If-None-Match": etag}
        held = [
            asyncio.ensure_future(hog.get(f"{BILLING}/toolset?wait=30", headers=wait))
            for _ in range(2)
        ]
        while services(app).longpolls.waiting < 2:
            await asyncio.sleep(0.01)
        third = await hog.get(f"{BILLING}/toolset?wait=30", headers=wait)
        assert third.status_code == 429 and third.json()["limit"]["name"] == (
            "max_waiters_per_token"
        )
        # the console's live page takes a slot of the same share
        login = await hog.post(
            "/ui/login", data={"token": reader}, headers={"Sec-Fetch-Site": "same-origin"}
        )
        assert login.status_code == 303
        hog.headers.pop("Authorization")
        live = await hog.get(
            "/ui/namespaces/billing/toolset", params={"tool": "db.query", "wait": 30}
        )
        assert live.status_code == 429, live.text
        # another token's watcher of another namespace is held
        async with registry.with_token(await registry.token("search:read")) as sdk:
            tag = (await sdk.get("/v1/namespaces/search/toolset")).headers["etag"]
            watcher = asyncio.ensure_future(
                sdk.get("/v1/namespaces/search/toolset?wait=1", headers={"If-None-Match": tag})
            )
            assert (await watcher).status_code == 304
        metrics = (await admin.get("/metrics")).text
        assert 'registry_limit{limit="max_waiters_per_token"} 2.0' in metrics
        assert 'registry_limit_reached_total{limit="waiters_per_token"} 2.0' in metrics
        for task in held:
            task.cancel()
        await hog.aclose()
    finally:
        await admin.aclose()
        await app.stop()


async def test_revocation_ends_the_console_long_poll(registry: Registry) -> None:
    assert (
        await registry.client.post(
            f"{BILLING}/tools/db.query/versions", json={"definition": DB_QUERY_V3}
        )
    ).status_code == 201
    secret = await registry.token("billing:admin")
    async with registry.anonymous() as browser:
        login = await browser.post(
            "/ui/login", data={"token": secret}, headers={"Sec-Fetch-Site": "same-origin"}
        )
        assert login.status_code == 303
        first = await browser.get(
            "/ui/namespaces/billing/toolset", params={"tool": "db.query", "wait": 30}
        )
        # the page's next live request, as htmx would send it: held until a change
        follow = html.unescape(re.search(r'hx-get="([^"]+)"', first.text).group(1))  # type: ignore[union-attr]
        live = asyncio.ensure_future(browser.get(follow))
        import asyncpg

        conn = await asyncpg.connect(registry.database_url)
        try:
            token = await store.lookup_token(conn, store.hash_token(secret))
            assert token is not None
            while not live.done() and not await _waiting(registry):
                await asyncio.sleep(0.01)
            await store.revoke_token(conn, token.id, actor=None, request_id=None)
        finally:
            await conn.close()
        answer = await live
        assert answer.status_code == 401, answer.text
        assert "tok_" not in answer.text.replace(token.id, "") and "Published" not in answer.text


async def _waiting(registry: Registry) -> bool:
    metrics = (await registry.client.get("/metrics")).text
    return "registry_console_longpoll_waiters 1.0" in metrics


async def test_no_cdn_a_csp_everywhere_and_metrics_need_a_token(registry: Registry) -> None:
    async with registry.anonymous() as anonymous:
        assert (await anonymous.get("/schema/swagger")).status_code == 404
        spec = await anonymous.get("/schema/openapi.json")
        assert spec.status_code == 200
        for answer in (spec, await anonymous.get("/healthz"), await anonymous.get("/ui/login")):
            policy = answer.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "http" not in policy
        assert (await anonymous.get("/metrics")).status_code == 401
    assert (await registry.client.get("/metrics")).status_code == 200


async def test_a_definition_route_refuses_a_large_body_before_reading_it(
    registry: Registry,
) -> None:
    """The 30,000-property schema of issue 24 (1.9 MB): 413 from its Content-Length alone,
    answered while not one byte of its body has been sent."""
    limit = 2 * Settings().definition_max_bytes
    head = (
        f"POST {TOOL}/check HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer {ADMIN_TOKEN}"
        "\r\nContent-Type: application/json\r\nContent-Length: 1938973\r\n\r\n"
    )
    status, problem = await asyncio.wait_for(_answer_to_headers(registry.url, head), 30)
    assert status.startswith(b"HTTP/1.1 413"), status
    assert problem["type"].endswith("/body-too-large")
    assert problem["limit"] == {"name": "body_bytes", "maximum": limit}
    assert "2 x REGISTRY_DEFINITION_MAX_BYTES" in problem["detail"]
    # within the limit, 30,000 short properties: parsed and refused by the caps, in a worker
    compact = {"type": "object", "properties": {f"p{i}": {} for i in range(30_000)}}
    answer = await registry.client.post(
        f"{TOOL}/check", json={"definition": {"name": "u", "inputSchema": compact}}
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["limit"]["name"] == "definition_max_properties"


async def test_a_large_body_is_checked_in_a_worker_never_on_the_event_loop(
    registry: Registry, monkeypatch: Any
) -> None:
    """The strict JSON check in this (the event loop's) process is replaced by one that
    records what it sees: a small body is checked here, a large one (past 64 KiB) is not,
    and is refused all the same, by the worker that checked it."""
    from registry.api import bodies
    from registry.api.json_body import check_document

    here: list[int] = []

    def recorded(raw: bytes) -> None:
        here.append(len(raw))
        check_document(raw)

    monkeypatch.setattr(bodies, "check_document", recorded)
    small = b'{"definition": {"name": "u", "name": "u"}}'
    padding = b"x" * (bodies.INLINE_BODY_BYTES + 1)
    large = b'{"definition": {"name": "u", "name": "u", "description": "' + padding + b'"}}'
    headers = {"content-type": "application/json"}
    for body in (small, large):
        answer = await registry.client.post(f"{TOOL}/check", content=body, headers=headers)
        assert answer.status_code == 400, answer.text
        assert "duplicate key 'name'" in answer.json()["detail"]
    assert here == [len(small)]


async def _answer_to_headers(url: str, head: str) -> tuple[bytes, Any]:
    """The status line and JSON body answered to `head` alone (no byte of a body sent)."""
    reader, writer = await asyncio.open_connection(*url.removeprefix("http://").split(":"))
    writer.write(head.encode())
    try:
        status = await reader.readline()
        fields = (await reader.readuntil(b"\r\n\r\n")).decode().lower().split("\r\n")
        length = next(int(f.split(":")[1]) for f in fields if f.startswith("content-length:"))
        return status, json.loads(await reader.readexactly(length))
    finally:
        writer.transport.abort()
