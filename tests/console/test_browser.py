"""The console in a real browser (Debian's Chromium through Playwright) against a live
`registry serve`: seed 000's pages, the live update after a publish, sign-in and 401,
keyboard use, and screenshots at desktop and phone widths (test-artifacts/console/).

Every page visited is also checked for what a person cannot see at a glance: requests
to anything but the service, script or Content-Security-Policy errors, form controls
without a label, text below 4.5:1 contrast, and (on a phone) content wider than the screen.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.console.conftest import DB_QUERY, Watched, open_page, seed_000, sign_in
from tests.fixtures.seeds import DB_QUERY_V4

TOOL_PAGE = "/ui/namespaces/billing/tools/db.query"
WITNESSES = {
    "property-renamed": '{"query":"a","timeout_ms":0}',
    "enum-narrowed": '{"query":"a","mode":"write"}',
    "default-removed": '{"query":"a"}',
}
SUGGESTED = {
    "property-renamed": '{"op":"rename","from":"/timeout_ms","to":"/timeout"}',
    "enum-narrowed": '"op":"reject","path":"/mode","values":["write"]',
    "default-removed": '{"op":"fill","path":"/timeout","value":30000}',
}

# Run in each page: a list of accessibility problems (see the file).
AUDIT_PAGE_JS = (Path(__file__).parent / "page_audit.js").read_text(encoding="utf-8")


async def check_page(watched: Watched, origin: str, *, phone: bool = False) -> None:
    page = watched.page
    assert await page.evaluate(AUDIT_PAGE_JS) == [], page.url
    if phone:
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= await page.evaluate("window.innerWidth"), f"{page.url} scrolls sideways"
    assert watched.outside(origin) == [], "requests outside the service"
    assert watched.errors == [], watched.errors


async def shoot(watched: Watched, artifacts: Path, name: str) -> None:
    path = artifacts / f"{name}.png"
    await watched.page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000


async def test_seed_000_pages_for_a_reader(
    console: Registry, browser: Any, artifacts: Path
) -> None:
    await seed_000(console.client)
    reader = await console.token("billing:read")
    watched = await open_page(browser)
    page = watched.page

    refused = await page.goto(console.url + TOOL_PAGE)
    assert refused is not None and refused.status == 401
    await expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    await page.get_by_label("Token").fill(reader)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(console.url + TOOL_PAGE)  # back where the 401 was
    await expect(page.get_by_role("heading", level=1)).to_have_text("Tool db.query")

    # The timeline: v2 current, breaking against v1, with seed 000's three kinds; v1 retired.
    v2, v1 = page.locator("#v2"), page.locator("#v1")
    await expect(v2.locator(".badge.current")).to_have_text("current")
    await expect(v2.locator(".sev-breaking")).to_have_text("breaking")
    for kind in WITNESSES:
        await expect(v2.get_by_text(kind, exact=True)).to_be_visible()
    await expect(v1.locator(".state-retired")).to_have_text("retired")
    # A reader is not shown the audit log (the API answers 403 for GET /v1/audit).
    await expect(page.get_by_text("which needs billing:admin")).to_be_visible()
    assert await page.get_by_text("by bootstrap").count() == 0
    await check_page(watched, console.url)
    await shoot(watched, artifacts, "tool-desktop")

    # The diff, reached from the timeline: each change with its witness and suggested op.
    await v2.get_by_role("link", name="diff v1 → v2").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(
        "db.query: version 1 → version 2"
    )
    for kind, witness in WITNESSES.items():
        row = page.locator(f'#changes tr[data-kind="{kind}"]')
        await expect(row.locator('td[data-label="Severity"]')).to_have_text("breaking")
        await expect(row.locator('td[data-label="Witness"]')).to_have_text(witness)
        await expect(row.locator('td[data-label="Suggested op"]')).to_contain_text(SUGGESTED[kind])
    renamed_path = page.locator('#changes tr[data-kind="property-renamed"] td[data-label="Path"]')
    await expect(renamed_path).to_have_text("/inputSchema/properties/timeout_ms")
    # Side by side: the renamed property and the dropped default marked on v1's side,
    # the opened content model on v2's, each with a word for screen readers.
    renamed = page.locator("table.sbs tr.changed", has_text='"timeout_ms": {')
    await expect(renamed.locator("td.new")).to_have_text('"timeout": {', use_inner_text=True)
    removed = page.locator("table.sbs tr.removed", has_text='"default": 30000')
    await expect(removed.locator("td.sign-old .visually-hidden")).to_have_text("removed")
    added = page.locator("table.sbs tr.added", has_text='"additionalProperties": true')
    await expect(added.locator("td.sign-new .visually-hidden")).to_have_text("added")
    narrowed = page.locator("table.sbs tr.removed", has_text='"write"')
    await expect(narrowed).to_have_count(1)
    await check_page(watched, console.url)
    await shoot(watched, artifacts, "diff-desktop")

    # The namespace: db.query current v2, active, v1 retired.
    breadcrumb = page.get_by_role("navigation", name="Breadcrumb")
    await breadcrumb.get_by_role("link", name="billing").click()
    row = page.get_by_role("row", name=re.compile(r"^db\.query"))
    await expect(row.locator('td[data-label="Current"]')).to_have_text("v2")
    await expect(row.locator('td[data-label="Retired"]')).to_have_text("v1")
    await expect(row.locator('td[data-label="Served"]')).to_have_text("v2")
    await check_page(watched, console.url)
    await shoot(watched, artifacts, "namespace-desktop")

    # The same pages on a phone's width.
    phone = await open_page(browser, phone=True)
    await sign_in(phone, console.url, reader, TOOL_PAGE)
    for name, path in (
        ("tool", TOOL_PAGE),
        ("diff", TOOL_PAGE + "/diff?old=1&new=2"),
        ("namespace", "/ui/namespaces/billing"),
        ("namespaces", "/ui/"),
    ):
        await phone.page.goto(console.url + path)
        await check_page(phone, console.url, phone=True)
        await shoot(phone, artifacts, f"{name}-phone")
    await watched.page.context.close()
    await phone.page.context.close()


async def test_the_timeline_follows_each_publish_live(console: Registry, browser: Any) -> None:
    await seed_000(console.client)
    watched = await open_page(browser)
    page = watched.page
    await sign_in(watched, console.url, ADMIN_TOKEN, TOOL_PAGE)
    await expect(page.locator("#v2 .badge.current")).to_be_visible()
    await page.evaluate("window.notReloaded = true")
    # The page holds a request for changes (the toolset's long-poll) before the publish.
    async with page.expect_request(re.compile(r"/ui/namespaces/billing/toolset\?")):
        pass

    v3 = copy.deepcopy(DB_QUERY_V4)
    v3["inputSchema"]["properties"]["comment"] = {"type": "string"}
    landed = await console.client.post(f"{DB_QUERY}/versions", json={"definition": v3})
    assert landed.status_code == 201, landed.text

    await expect(page.locator("#v3")).to_be_visible(timeout=30_000)
    await expect(page.locator("#v3 .badge.current")).to_have_text("current")
    await expect(page.locator("#v3 .sev-additive")).to_have_text("additive")
    await expect(page.locator("#v3")).to_contain_text("by bootstrap")  # admin: the audit log
    await expect(page.locator("#live-status")).to_contain_text("current is version 3")
    assert await page.evaluate("window.notReloaded") is True, "the page was reloaded"
    assert await page.locator("#v2 .badge.current").count() == 0

    # And again: the next request for changes was made after the swap.
    deprecated = await console.client.post(
        f"{DB_QUERY}/versions/2/deprecate", json={"sunset": "2099-01-01T00:00:00Z"}
    )
    assert deprecated.status_code == 200, deprecated.text
    await expect(page.locator("#v2 .state-deprecated")).to_have_text("deprecated", timeout=30_000)
    await expect(page.locator("#v2")).to_contain_text("2099-01-01 00:00:00 UTC")
    assert await page.evaluate("window.notReloaded") is True
    await check_page(watched, console.url)
    await page.context.close()


async def _tab_to(page: Any, matches: str, limit: int = 40) -> None:
    """Press Tab until the focused element matches the JS predicate `matches` (el => bool)."""
    for _ in range(limit):
        await page.keyboard.press("Tab")
        if await page.evaluate(f"({matches})(document.activeElement)"):
            return
    raise AssertionError(f"Tab never reached {matches}")


async def test_keyboard_only_sign_in_browse_and_sign_out(console: Registry, browser: Any) -> None:
    await seed_000(console.client)
    reader = await console.token("billing:read")
    watched = await open_page(browser)
    page = watched.page

    answer = await page.goto(console.url + "/ui/")
    assert answer is not None and answer.status == 401
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Skip to content"
    await page.keyboard.press("Enter")
    assert await page.evaluate("document.activeElement.id") == "main"
    await _tab_to(page, "el => el.id === 'token'")
    await page.keyboard.type("not-a-token")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("alert")).to_contain_text("unknown or revoked")

    await _tab_to(page, "el => el.id === 'token'")
    await page.keyboard.type(reader)
    await page.keyboard.press("Enter")
    await page.wait_for_url(console.url + "/ui/")
    cookie = next(
        c for c in await page.context.cookies() if c["name"] == "registry_console_session"
    )
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Strict", "/ui")
    assert cookie["value"] != reader, "the cookie holds a session id, never the token"

    await _tab_to(page, "el => el.tagName === 'A' && el.textContent === 'billing'")
    outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "the focused link shows no focus outline"
    await page.keyboard.press("Enter")
    await page.wait_for_url(console.url + "/ui/namespaces/billing")
    await _tab_to(page, "el => el.tagName === 'A' && el.textContent === 'db.query'")
    await page.keyboard.press("Enter")
    await page.wait_for_url(console.url + TOOL_PAGE)
    # The version pickers and the compare button, by keyboard.
    await _tab_to(page, "el => el.id === 'old'")
    await _tab_to(page, "el => el.tagName === 'BUTTON' && el.textContent === 'Compare'", 3)
    await page.keyboard.press("Enter")
    await page.wait_for_url(re.compile(r"/diff\?old=1&new=2$"))

    await _tab_to(page, "el => el.textContent === 'Sign out'")
    await page.keyboard.press("Enter")
    await page.wait_for_url(console.url + "/ui/login")
    names = [c["name"] for c in await page.context.cookies()]
    assert "registry_console_session" not in names
    refused = await page.goto(console.url + TOOL_PAGE)
    assert refused is not None and refused.status == 401
    await check_page(watched, console.url)
    await page.context.close()


async def test_the_page_audit_finds_what_it_looks_for(browser: Any) -> None:
    """The checks above can fail: a page with each problem is reported."""
    watched = await open_page(browser)
    await watched.page.set_content(
        "<html><body><h1>One</h1><h1>Two</h1><input id='q'>"
        "<p style='color:#aaaaaa'>pale text</p>"
        "<p style='width:14ch'><code class='path' style='overflow-wrap:anywhere'>"
        "/inputSchema/properties</code></p></body></html>"
    )
    problems = await watched.page.evaluate(AUDIT_PAGE_JS)
    assert "no lang on <html>" in problems
    assert "not exactly one h1" in problems
    assert "no <main> landmark" in problems
    assert "unlabelled control q" in problems
    assert any(p.startswith('contrast 2.32 for "pale text"') for p in problems), problems
    assert any(p.startswith('path "/inputSchema/properties" broken inside') for p in problems)
    await watched.page.context.close()
