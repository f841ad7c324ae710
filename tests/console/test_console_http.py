"""The console over HTTP (no browser): authorization as the API's, sign-in safety, bad
input, lookup per protocol revision, plan as the pipeline sees it, the live fragment."""

from __future__ import annotations

import copy
import hashlib
import html
import json
import re
from pathlib import Path

import httpx
import pytest

from registry.api.openapi import openapi_document
from registry.canonical import digest
from registry.console import HTMX
from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.console.conftest import BILLING, DB_QUERY, seed_000
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1

STATIC = Path(__file__).resolve().parents[2] / "registry" / "console" / "static"
HTMX_SHA256 = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"
COOKIE = "registry_console_session"
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


class signed_in:
    """A client signed in through the console's form: it carries the session cookie (and
    no Authorization header)."""

    def __init__(self, registry: Registry, secret: str) -> None:
        self.secret = secret
        self.client = httpx.AsyncClient(base_url=registry.url, timeout=30)

    async def __aenter__(self) -> httpx.AsyncClient:
        answer = await self.client.post("/ui/login", data={"token": self.secret}, headers=SAME_SITE)
        assert answer.status_code == 303, answer.text
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()


def text_of(page: str) -> str:
    """What a page says, tags dropped (a line-break hint, <wbr>, adds no space),
    entities decoded, white space collapsed."""
    words = re.sub(r"<[^>]+>", " ", page.replace("<wbr>", ""))
    return re.sub(r"\s+", " ", html.unescape(words))


def test_the_console_is_not_in_the_api_spec() -> None:
    assert not [path for path in openapi_document()["paths"] if path.startswith("/ui")]


async def test_pages_need_a_token_unless_reads_are_open(registry: Registry) -> None:
    await seed_000(registry.client)
    async with registry.anonymous() as anonymous:
        for path in ("/ui/", "/ui/namespaces/billing", "/ui/namespaces/billing/tools/db.query"):
            answer = await anonymous.get(path)
            assert answer.status_code == 401, path
            assert answer.headers["content-type"].startswith("text/html")
            assert '<input type="password" id="token" name="token"' in answer.text
            assert "Traceback" not in answer.text
    app = await serve(registry.database_url, open_reads=True)
    try:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as anonymous:
            page = await anonymous.get("/ui/namespaces/billing/tools/db.query")
            assert page.status_code == 200
            assert "Version 2" in page.text and "Open reads" in page.text
            # Open reads open reads only: the audit log still needs an admin token.
            assert (await anonymous.get("/ui/audit")).status_code == 401
            assert (await anonymous.get("/v1/audit")).status_code == 401
    finally:
        await app.stop()


async def test_sign_in_keeps_the_token_in_a_strict_http_only_cookie(registry: Registry) -> None:
    await seed_000(registry.client)
    reader = await registry.token("billing:read")
    async with registry.anonymous() as browser:
        answer = await browser.post(
            "/ui/login",
            data={"token": reader, "next": "/ui/namespaces/billing"},
            headers=SAME_SITE,
        )
        assert answer.status_code == 303
        assert answer.headers["location"] == "/ui/namespaces/billing"
        cookie = answer.headers["set-cookie"]
        session = cookie.split(";")[0].removeprefix(f"{COOKIE}=")
        # an opaque session id, never the token (issue 24, item 6)
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", session) and reader not in cookie
        assert {"HttpOnly", "Path=/ui", "SameSite=strict"} <= {
            part.strip() for part in cookie.split(";")
        }
        assert "Secure" not in cookie  # plain HTTP, no proxy trusted to say otherwise
        page = await browser.get("/ui/namespaces/billing")  # the cookie jar sends it
        assert page.status_code == 200 and "db.query" in page.text
        assert page.headers["cache-control"] == "no-store"
        out = await browser.post("/ui/logout", headers=SAME_SITE)
        assert out.status_code == 303 and out.headers["location"] == "/ui/login"
        assert f'{COOKIE}=""' in out.headers["set-cookie"]
        assert (await browser.get("/ui/namespaces/billing")).status_code == 401
        # the session ended with the sign-out: its id is worth nothing any more
        browser.cookies.set(COOKIE, session, path="/ui")
        assert (await browser.get("/ui/namespaces/billing")).status_code == 401


async def test_sign_in_refuses_bad_tokens_other_sites_and_foreign_redirects(
    registry: Registry,
) -> None:
    reader = await registry.token("billing:read")
    async with registry.anonymous() as browser:
        wrong = await browser.post("/ui/login", data={"token": "nope"}, headers=SAME_SITE)
        assert wrong.status_code == 401
        assert "the bearer token is unknown or revoked" in wrong.text
        empty = await browser.post("/ui/login", data={"token": " "}, headers=SAME_SITE)
        assert empty.status_code == 422 and "Enter a token" in empty.text
        for headers in (
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
            {"Origin": "https://evil.example"},
            {"Origin": "null"},  # a sandboxed frame or a data: page (issue 24, item 6)
            {"Sec-Fetch-Site": "cross-site", "Origin": f"{registry.url}"},
            {},  # a form that says nowhere where it comes from
        ):
            refused = await browser.post("/ui/login", data={"token": reader}, headers=headers)
            assert refused.status_code == 403, headers
            assert "set-cookie" not in refused.headers
            out = await browser.post("/ui/logout", headers=headers)
            assert out.status_code == 403, headers
        # what Chromium sends from the console's own sign-in page (Referrer-Policy:
        # no-referrer makes its form's Origin null): the browser's Sec-Fetch-Site suffices
        own = {"Sec-Fetch-Site": "same-origin", "Origin": "null"}
        signed = await browser.post("/ui/login", data={"token": reader}, headers=own)
        assert signed.status_code == 303, signed.text
        for target in ("https://evil.example/", "//evil.example/ui/", "/v1/audit", "/ui\\x"):
            answer = await browser.post(
                "/ui/login", data={"token": reader, "next": target}, headers=SAME_SITE
            )
            assert answer.headers["location"] == "/ui/", target
    # A cookie naming no session (or an ended one): back to sign-in, cookie cleared.
    async with httpx.AsyncClient(
        base_url=registry.url, timeout=30, cookies={COOKIE: "no-such-session"}
    ) as stale:
        answer = await stale.get("/ui/")
        assert answer.status_code == 401
        assert f'{COOKIE}=""' in answer.headers["set-cookie"]


async def test_a_token_sees_what_the_api_shows_it_and_nothing_more(registry: Registry) -> None:
    await seed_000(registry.client)
    other = await registry.client.post(
        "/v1/namespaces/search/tools/search/versions", json={"definition": SEARCH_V1}
    )
    assert other.status_code == 201, other.text
    reader = await registry.token("billing:read")
    async with signed_in(registry, reader) as console:
        front = await console.get("/ui/")
        assert front.status_code == 200
        assert 'href="/ui/namespaces/billing"' in front.text
        assert "/ui/namespaces/search" not in front.text
        for path in (
            "/ui/namespaces/search",
            "/ui/namespaces/search/tools/search",
            "/ui/namespaces/search/tools/search/diff",
            "/ui/namespaces/search/toolset?tool=search&wait=0",
            "/ui/audit",
            "/ui/audit?namespace=billing",
        ):
            answer = await console.get(path)
            assert answer.status_code == 403, path
            assert "has no" in answer.text, path
        # The digest of another namespace's tool is not found for this token, as in the API.
        found = await console.get("/ui/lookup", params={"digest": digest(SEARCH_V1)})
        assert "no registered version has digest" in found.text
        # Planning needs publish, as POST /v1/apply?plan=true does.
        manifest = json.dumps({"namespace": "billing", "tool": DB_QUERY_V4})
        plan = await console.post("/ui/plan", data={"manifest": manifest}, headers=SAME_SITE)
        assert plan.status_code == 403 and "billing:publish" in plan.text
        # The timeline without the audit log: who published is not shown to a reader.
        tool = await console.get("/ui/namespaces/billing/tools/db.query")
        assert "which needs <code>billing:admin</code>" in tool.text
        assert "bootstrap" not in tool.text
    admin = await registry.token("billing:admin")
    async with signed_in(registry, admin) as a:
        filters = {"namespace": "billing", "action": "version.retire"}
        audit = await a.get("/ui/audit", params=filters)
        assert audit.status_code == 200
        rows = re.findall(r'<td data-label="Action"><code>([a-z.]+)</code>', audit.text)
        assert rows == ["version.retire"]
        assert (await a.get("/ui/audit")).status_code == 403  # every namespace: *:admin


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/ui/namespaces/Billing", 400, "ns"),
        ("/ui/namespaces/billing/tools/db query", 400, "tool"),
        ("/ui/namespaces/billing/tools/db.query/diff?old=9", 404, "version 9 of billing/db.query"),
        ("/ui/namespaces/billing/tools/db.query/diff?old=x", 400, "old"),
        ("/ui/namespaces/billing/tools/nope", 404, "tool billing/nope does not exist"),
        ("/ui/namespaces/nope", 404, "nope"),
        ("/ui/audit?namespace=Not+Valid", 400, "namespace 'Not Valid' does not match"),
        ("/ui/audit?before=-1", 400, "before"),
        ("/ui/nowhere", 404, "nothing at /ui/nowhere"),
        ("/ui/namespaces/billing/toolset?tool=db.query&wait=61", 400, "wait"),
    ],
)
async def test_bad_input_gets_a_page_that_says_why(
    registry: Registry, path: str, status: int, says: str
) -> None:
    await seed_000(registry.client)
    async with signed_in(registry, ADMIN_TOKEN) as console:
        answer = await console.get(path)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert says in text_of(answer.text)
    assert "Traceback" not in answer.text


async def test_lookup_says_what_each_tool_is_per_protocol_revision(registry: Registry) -> None:
    with_output = {**DB_QUERY_V4, "outputSchema": {"type": "object"}}
    published = await registry.client.post(f"{DB_QUERY}/versions", json={"definition": with_output})
    assert published.status_code == 201, published.text
    # What a 2025-03-26 server lists: no outputSchema (that revision has none).
    listing = {"tools": [DB_QUERY_V4, {**SEARCH_V1, "name": "unregistered"}]}
    async with signed_in(registry, ADMIN_TOKEN) as console:
        answer = await console.post(
            "/ui/lookup",
            data={"namespace": "billing", "listing": json.dumps(listing)},
            headers=SAME_SITE,
        )
        assert answer.status_code == 200, answer.text
        cells = re.findall(
            r'<td data-label="([0-9-]+)"><span class="badge status-(\w+)">', answer.text
        )
        by_revision = dict(cells[:5])
        assert by_revision["2025-03-26"] == "current"
        assert by_revision["2025-06-18"] == "unknown"  # from here on outputSchema counts
        assert {status for _, status in cells[5:]} == {"unknown"}  # the unregistered tool
        # The API's verify answers the same for the same revision.
        api = await registry.client.post(
            "/v1/namespaces/billing/verify",
            json={"tools": listing["tools"], "protocolVersion": "2025-06-18"},
        )
        assert [t["status"] for t in api.json()["tools"]] == ["unknown", "unknown"]

        found = await console.get("/ui/lookup", params={"digest": digest(with_output)})
        assert 'href="/ui/namespaces/billing/tools/db.query#v1"' in found.text
        pasted = await console.post(
            "/ui/lookup", data={"listing": digest(with_output)}, headers=SAME_SITE
        )
        assert 'href="/ui/namespaces/billing/tools/db.query#v1"' in pasted.text
        for bad, says in (
            ('{"tools": [1, ', "the pasted listing:1:"),
            ("[]", "the listing has no tools"),
            ('"text"', "this is not a tools/list result"),
        ):
            answer = await console.post(
                "/ui/lookup", data={"namespace": "billing", "listing": bad}, headers=SAME_SITE
            )
            assert answer.status_code == 422, bad
            assert says in answer.text, (bad, text_of(answer.text))
        not_a_tool = await console.post(
            "/ui/lookup", data={"namespace": "billing", "listing": "[1]"}, headers=SAME_SITE
        )
        assert not_a_tool.status_code == 422
        assert "a tool is an object with a string name" in not_a_tool.text


async def test_plan_shows_the_plan_the_pipeline_sees_and_writes_nothing(
    registry: Registry,
) -> None:
    await registry.client.put(BILLING)
    first = await registry.client.post(f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V3})
    assert first.status_code == 201
    manifests = {
        "db.query.yaml": "namespace: billing\ntool:\n"
        + "".join(f"  {line}\n" for line in json.dumps(DB_QUERY_V4, indent=2).splitlines()),
        "search.json": json.dumps({"namespace": "billing", "tool": SEARCH_V1}),
        "fresh.json": json.dumps(
            {"namespace": "fresh", "tool": SEARCH_V1, "create_namespace": True}
        ),
    }
    before = (await registry.client.get("/v1/audit", params={"limit": 1000})).json()["events"]
    async with signed_in(registry, ADMIN_TOKEN) as console:
        answer = await console.post(
            "/ui/plan",
            files=[("files", (name, text.encode())) for name, text in manifests.items()],
            headers=SAME_SITE,
        )
    assert answer.status_code == 200, answer.text
    page = text_of(answer.text)
    assert "billing/db.query: new-version v2 (db.query.yaml)" in page
    assert "billing/search: create v1 (search.json)" in page
    assert "namespace fresh: create" in page and "namespace billing: exists" in page
    assert "refused: decisions missing" in page
    assert "version 1 of db.query is still served" in page
    api = await registry.client.post(
        "/v1/apply?plan=true",
        json={
            "manifests": [
                {"namespace": "billing", "tool": DB_QUERY_V4},
                {"namespace": "billing", "tool": SEARCH_V1},
                {"namespace": "fresh", "tool": SEARCH_V1, "create_namespace": True},
            ]
        },
    )
    plan = api.json()
    assert [(t["tool"], t["action"], t["version"], t["accepted"]) for t in plan["tools"]] == [
        ("db.query", "new-version", 2, False),
        ("search", "create", 1, True),
        ("search", "create", 1, True),
    ]
    assert {n["name"]: n["action"] for n in plan["namespaces"]} == {
        "billing": "unchanged",
        "fresh": "create",
    }
    after = (await registry.client.get("/v1/audit", params={"limit": 1000})).json()["events"]
    assert after == before, "planning wrote nothing"

    async with signed_in(registry, ADMIN_TOKEN) as console:
        broken = await console.post(
            "/ui/plan",
            data={"manifest": "namespace: billing\ntool:\n  name: db.query\n  inputSchema: [\n"},
            headers=SAME_SITE,
        )
        assert broken.status_code == 422
        assert re.search(r"pasted\.yaml:\d+:\d+: ", broken.text), text_of(broken.text)
        nothing = await console.post("/ui/plan", data={"manifest": ""}, headers=SAME_SITE)
        assert nothing.status_code == 422 and "paste a manifest" in nothing.text


async def test_the_live_fragment_answers_with_a_change_or_the_next_request(
    registry: Registry,
) -> None:
    await seed_000(registry.client)
    etag = (await registry.client.get(f"{BILLING}/toolset")).headers["etag"].strip('"')
    live = "/ui/namespaces/billing/toolset"
    async with signed_in(registry, ADMIN_TOKEN) as console:
        tool = await console.get("/ui/namespaces/billing/tools/db.query")
        found = re.search(r"seen=([0-9a-f]+)&amp;known=&amp;", tool.text)
        assert found is not None, "the page's first live request carries no digest yet"
        seen = found.group(1)

        def next_request(answer: httpx.Response) -> str:
            poller = re.search(r'<div id="live" hx-get="([^"]+)"', answer.text)
            assert poller is not None, answer.text
            return html.unescape(poller.group(1)).replace("%3A", ":")

        # The first request learns the digest; nothing changed since the page: no timeline.
        first = await console.get(live, params={"tool": "db.query", "seen": seen, "wait": 1})
        assert first.status_code == 200
        assert f"known={etag}" in next_request(first) and f"seen={seen}" in next_request(first)
        assert 'id="timeline"' not in first.text
        held = await console.get(
            live, params={"tool": "db.query", "seen": seen, "known": etag, "wait": 1}
        )
        assert 'id="timeline"' not in held.text and f"known={etag}" in next_request(held)
        # Another tool changing the toolset does not re-render this one.
        other = await registry.client.post(
            "/v1/namespaces/billing/tools/search/versions", json={"definition": SEARCH_V1}
        )
        assert other.status_code == 201
        moved = await console.get(
            live, params={"tool": "db.query", "seen": seen, "known": etag, "wait": 5}
        )
        assert 'id="timeline"' not in moved.text
        new_etag = (await registry.client.get(f"{BILLING}/toolset")).headers["etag"].strip('"')
        assert new_etag != etag and f"known={new_etag}" in next_request(moved)
        # A page that shows something else gets the timeline, swapped in out of band.
        stale = await console.get(live, params={"tool": "db.query", "seen": "0" * 32, "wait": 5})
        assert '<section id="timeline" aria-labelledby="timeline-heading" hx-swap-oob="true">' in (
            stale.text
        )
        assert f"seen={seen}" in next_request(stale)
        assert 'id="live-status"' in stale.text and "current is version 2" in stale.text


async def test_assets_are_served_here_and_pages_reach_nothing_else(registry: Registry) -> None:
    await seed_000(registry.client)
    async with signed_in(registry, ADMIN_TOKEN) as console:
        script = await console.get(f"/ui/static/{HTMX}")
        assert script.status_code == 200
        header, _, body = script.content.partition(b"\n")
        assert b"htmx 2.0.11" in header and b"Zero-Clause BSD" in header
        assert hashlib.sha256(body).hexdigest() == HTMX_SHA256
        assert (STATIC / HTMX).read_bytes() == script.content
        for path in (
            "/ui/",
            "/ui/namespaces/billing",
            "/ui/namespaces/billing/tools/db.query",
            "/ui/namespaces/billing/tools/db.query/diff",
            "/ui/lookup",
            "/ui/plan",
            "/ui/audit",
            "/ui/login",
        ):
            page = await console.get(path)
            assert page.status_code == 200, path
            policy = page.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "connect-src 'self'" in policy
            assert page.headers["x-frame-options"] == "DENY"
            targets = re.findall(r'(?:src|href|action|hx-get)="([^"]*)"', page.text)
            assert targets, path
            outside = [t for t in targets if not t.startswith(("/ui/", "#", "data:"))]
            assert outside == [], (path, outside)


def test_a_definition_changes_in_the_diff_with_its_lines_marked() -> None:
    from registry.console.views import side_by_side

    old = copy.deepcopy(DB_QUERY_V3)
    rows = side_by_side(old, DB_QUERY_V4)
    tagged = {(r.tag, (r.old_line or "").strip(), (r.new_line or "").strip()) for r in rows}
    assert ("changed", '"timeout_ms": {', '"timeout": {') in tagged
    assert ("removed", '"default": 30000,', "") in tagged
    assert ("added", "", '"additionalProperties": true,') in tagged
    same = [r for r in rows if r.tag == "same"]
    assert all(r.old_line == r.new_line for r in same)
    assert [r.old_number for r in rows if r.old_number] == list(
        range(1, len(json.dumps(old, indent=2).splitlines()) + 1)
    )
    assert {r.tag for r in side_by_side(old, old)} == {"same"}


async def test_the_timeline_shows_decisions_routes_and_who_to_an_admin(
    registry: Registry,
) -> None:
    await registry.client.put(BILLING)
    assert (
        await registry.client.post(f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V3})
    ).status_code == 201
    ops = [
        {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
        {"op": "fill", "path": "/timeout", "value": 30000},
        {"op": "reject", "path": "/mode", "values": ["write"], "message": "read-only now"},
    ]
    landed = await registry.client.post(
        f"{DB_QUERY}/versions",
        json={"definition": DB_QUERY_V4, "converters": [{"from": 1, "ops": ops}]},
    )
    assert landed.status_code == 201, landed.text
    alias = await registry.client.put(
        f"{BILLING}/aliases/db_query_v1",
        json={"target": "db.query", "contract": {"tool": "db.query", "version": 1}},
    )
    assert alias.status_code == 201, alias.text
    async with signed_in(registry, ADMIN_TOKEN) as console:
        tool = text_of((await console.get("/ui/namespaces/billing/tools/db.query")).text)
        namespace = text_of((await console.get("/ui/namespaces/billing")).text)
    v2 = tool[tool.index("Version 2") : tool.index("Version 1")]
    v1 = tool[tool.index("Version 1") :]
    assert "by bootstrap" in v2
    assert "Decided with it registered a converter from version 1 to 2 (by bootstrap)" in v2
    assert "Converters to it from v1:" in v2 and '"op":"rename"' in v2
    assert "Route to current v1 → v2: converter" in v1  # v1 is still served, through it
    assert "Alias contracts db_query_v1" in v1
    assert "Aliases resolving to db.query db_query_v1 speaks db.query v1" in tool
    # The namespace page: the alias, its contract and its route through the converter.
    assert "db_query_v1 db.query db.query v1 v1 → v2: converter" in namespace


async def test_the_timeline_shows_who_still_calls_each_version(registry: Registry) -> None:
    await registry.client.put(BILLING)
    assert (
        await registry.client.post(f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V3})
    ).status_code == 201
    ops = [
        {"op": "fill", "path": "/timeout_ms", "value": 30000},
        {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
        {"op": "reject", "path": "/mode", "values": ["write"], "message": "read-only now"},
    ]
    landed = await registry.client.post(
        f"{DB_QUERY}/versions",
        json={
            "definition": DB_QUERY_V4,
            "converters": [{"from": 1, "ops": ops}],
            "deprecate": [{"version": 1}],
        },
    )
    assert landed.status_code == 201, landed.text
    report = {
        "server": "billing-eu-1",
        "toolset": "sha256:" + "0" * 64,
        "counts": [
            {"tool": "db.query", "version": 1, "decision": "converted", "calls": 1204},
            {
                "tool": "db.query",
                "version": 1,
                "decision": "refused",
                "reason": "conversion_rejected",
                "calls": 3,
            },
        ],
    }
    assert (await registry.client.post(f"{BILLING}/usage", json=report)).status_code == 200
    async with signed_in(registry, await registry.token("billing:read")) as console:
        page = (await console.get("/ui/namespaces/billing/tools/db.query")).text
    tool = text_of(page)
    v2 = tool[tool.index("Version 2") : tool.index("Version 1")]
    v1 = tool[tool.index("Version 1") :]
    assert "Calls (last 7d) none reported" in v2
    assert "Calls (last 7d) 1,207: still called" in v1
    assert "by billing-eu-1 (1,207); refused: conversion_rejected 3" in v1
    assert 'class="usage still-called"' in page


async def test_the_console_shows_the_policy_and_what_was_accepted_on_purpose(
    registry: Registry,
) -> None:
    await registry.client.put(BILLING)
    assert (
        await registry.client.post(f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V3})
    ).status_code == 201
    reader = await registry.token("billing:read")
    async with signed_in(registry, reader) as console:
        default = text_of((await console.get("/ui/namespaces/billing")).text)
    assert (
        "Gating on Review off: new versions land at once Set never: the default policy "
        "Nothing relaxed"
    ) in default
    relax = {"relax": [{"kind": "default-removed", "tool": "db.query", "reason": "never read"}]}
    assert (await registry.client.put(f"{BILLING}/policy", json=relax)).status_code == 200
    accept = [
        {"kind": kind, "path": path, "reason": "no caller sends these any more"}
        for kind, path in (
            ("enum-narrowed", "/inputSchema/properties/mode/enum"),
            ("property-renamed", "/inputSchema/properties/timeout_ms"),
        )
    ]
    landed = await registry.client.post(
        f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V4, "accept": accept}
    )
    assert landed.status_code == 201, landed.text
    async with signed_in(registry, reader) as console:  # no audit log needed
        namespace = text_of((await console.get("/ui/namespaces/billing")).text)
        tool = text_of((await console.get("/ui/namespaces/billing/tools/db.query")).text)
    assert "default-removed db.query never read" in namespace
    v2 = tool[tool.index("Version 2") : tool.index("Version 1")]
    v1 = tool[tool.index("Version 1") :]
    assert (
        "enum-narrowed at /inputSchema/properties/mode/enum , breaking for v1 "
        "(named in the publish): no caller sends these any more"
    ) in v2
    assert (
        "default-removed at /inputSchema/properties/timeout/default , breaking for v1 "
        "(the namespace policy): the namespace policy relaxes default-removed for db.query: "
        "never read"
    ) in v2
    assert "Route to current v1 → v2: breaking, accepted on purpose (no conversion)" in v1


async def _token_id(registry: Registry, secret: str) -> str:
    import asyncpg

    from registry import store

    conn = await asyncpg.connect(registry.database_url)
    try:
        token = await store.lookup_token(conn, store.hash_token(secret))
    finally:
        await conn.close()
    assert token is not None
    return token.id


async def test_pages_below_admin_show_no_publisher_and_no_audit_information(
    registry: Registry,
) -> None:
    """Who published, who decided and the audit log are the audit log's (`ns:admin`): a
    reader's and a publisher's pages, the live fragment that swaps the timeline in
    included, show none of it (issue 24: the live page showed "Published ... by tok_")."""
    assert (await registry.client.put(BILLING)).status_code in (200, 201)
    publisher = await registry.token("billing:publish")
    publisher_id = await _token_id(registry, publisher)
    async with registry.with_token(publisher) as pipeline:
        first = await pipeline.post(f"{DB_QUERY}/versions", json={"definition": DB_QUERY_V3})
        assert first.status_code == 201, first.text
        ops = [
            {"op": "rename", "from": "/timeout_ms", "to": "/timeout"},
            {"op": "fill", "path": "/timeout", "value": 30000},
            {"op": "reject", "path": "/mode", "values": ["write"], "message": "read-only now"},
        ]
        second = await pipeline.post(
            f"{DB_QUERY}/versions",
            json={"definition": DB_QUERY_V4, "converters": [{"from": 1, "ops": ops}]},
        )
        assert second.status_code == 201, second.text
    tool_page = "/ui/namespaces/billing/tools/db.query"
    pages = (
        "/ui/",
        "/ui/namespaces/billing",
        tool_page,
        f"{tool_page}/diff",
        f"{tool_page}/diff?old=1&new=2",
        f"/ui/lookup?digest={digest(DB_QUERY_V4)}",
        # the live fragment for a page that shows something older: the timeline, out of band
        f"/ui/namespaces/billing/toolset?tool=db.query&seen={'0' * 32}&wait=0",
    )
    admin = await registry.token("billing:admin")
    async with signed_in(registry, admin) as control:  # what the assertions below look for
        shown = await control.get(tool_page)
        assert f"by {publisher_id}" in text_of(shown.text), "an admin sees who published"
        live = await control.get(pages[-1])
        assert 'hx-swap-oob="true"' in live.text and publisher_id in live.text
    for secret in (await registry.token("billing:read"), publisher):
        own = await _token_id(registry, secret)
        async with signed_in(registry, secret) as console:
            for path in pages:
                answer = await console.get(path)
                assert answer.status_code == 200, (path, answer.text)
                said = text_of(answer.text).replace(f"Signed in: {own}", "")
                for audit_only in (publisher_id, "tok_", "bootstrap", "Published by"):
                    assert audit_only not in said, (path, audit_only)
                assert not re.search(r"\(by [^)]*\)", said), path
            for path in ("/ui/audit", "/ui/audit?namespace=billing"):
                assert (await console.get(path)).status_code == 403, path


async def test_every_console_answer_carries_the_page_policy(registry: Registry) -> None:
    """The console's Content-Security-Policy on every answer under /ui/: pages, the htmx
    fragments (with a change and without), error pages, sign-in and sign-out, assets."""
    from registry.console import CONTENT_SECURITY_POLICY

    await seed_000(registry.client)
    live = "/ui/namespaces/billing/toolset"
    answers: list[tuple[str, httpx.Response]] = []
    async with registry.anonymous() as anonymous:
        for path in ("/ui/login", "/ui/", "/ui/namespaces/billing", f"/ui/static/{HTMX}"):
            answers.append((path, await anonymous.get(path)))
        refused = await anonymous.post("/ui/login", data={"token": "x"}, headers=SAME_SITE)
        answers.append(("refused sign-in", refused))
        answers.append(("cross-site", await anonymous.post("/ui/logout")))
    reader = await registry.token("billing:read")
    async with signed_in(registry, reader) as console:
        for path in (
            "/ui/",
            "/ui/namespaces/billing/tools/db.query",
            "/ui/namespaces/search",  # 403
            "/ui/namespaces/billing/tools/nope",  # 404
            "/ui/namespaces/Billing",  # 400
        ):
            answers.append((path, await console.get(path)))
        changed = await console.get(live, params={"tool": "db.query", "seen": "0" * 32, "wait": 0})
        assert 'hx-swap-oob="true"' in changed.text
        answers.append(("fragment with a change", changed))
        etag = (await registry.client.get(f"{BILLING}/toolset")).headers["etag"].strip('"')
        seen = re.search(r"seen=([0-9a-f]+)", changed.text)
        assert seen is not None
        params = {"tool": "db.query", "seen": seen.group(1), "known": etag, "wait": 1}
        held = await console.get(live, params=params)
        assert 'id="live"' in held.text and "hx-swap-oob" not in held.text
        answers.append(("fragment after a wait", held))
        answers.append(("sign-out", await console.post("/ui/logout", headers=SAME_SITE)))
    statuses = {status for _, answer in answers for status in [answer.status_code]}
    assert {200, 303, 400, 401, 403, 404} <= statuses, statuses
    for what, answer in answers:
        assert answer.headers.get("content-security-policy") == CONTENT_SECURITY_POLICY, what
        assert answer.headers["x-content-type-options"] == "nosniff", what
