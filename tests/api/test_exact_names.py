"""Names and numbers are matched whole (issue 18, item 3).

Python's `$` also matches before a final newline, so `^...$` let `beta\\n`
through to the database's check constraint (500) and `1\\n` retire version 1.
Every path parameter of every route, with a trailing newline, a NUL and a
non-ASCII lookalike, is a 400 naming the parameter, and nothing changes.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest

from registry.api.openapi import openapi_document
from registry.canonical import digest
from tests.api.conftest import Registry
from tests.fixtures.seeds import DB_QUERY_V3

VALID = {
    "ns": "billing",
    "tool": "db.query",
    "alias": "q",
    "n": "1",
    "digest": digest(DB_QUERY_V3),
}
# Each value with a character swapped for one that looks the same.
LOOKALIKES = {
    "ns": "bill\u0456ng",  # U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
    "tool": "db\u2024query",  # ONE DOT LEADER
    "alias": "\u0071\u0301",  # q and a combining acute accent
    "n": "\uff11",  # FULLWIDTH DIGIT ONE (int() reads it as 1)
    "digest": digest(DB_QUERY_V3)[:-1] + "\uff41",  # FULLWIDTH LATIN SMALL LETTER A
}
ROUTES = [
    (method.upper(), path)
    for path, item in openapi_document()["paths"].items()
    for method in item
    if "{" in path
]


def _variants(name: str) -> list[tuple[str, str]]:
    return [
        ("trailing newline", VALID[name] + "\n"),
        ("NUL", VALID[name] + "\x00"),
        ("lookalike", LOOKALIKES[name]),
    ]


def _state_query() -> list[tuple[str, str]]:
    return [
        ("GET", "/v1/namespaces/billing/tools/db.query/versions"),
        ("GET", "/v1/namespaces"),
        ("GET", "/v1/audit?limit=1000"),
    ]


async def _state(registry: Registry) -> list[Any]:
    answers = [await registry.client.request(m, p) for m, p in _state_query()]
    return [a.json() for a in answers]


def test_every_route_with_a_path_parameter_is_covered() -> None:
    names = {name for _, path in ROUTES for name in re.findall(r"\{(\w+)\}", path)}
    assert names == set(VALID) == set(LOOKALIKES)
    assert len(ROUTES) >= 15


async def test_every_path_parameter_is_matched_whole(registry: Registry) -> None:
    published = await registry.client.post(
        "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
    )
    assert published.status_code == 201, published.text
    before = await _state(registry)
    tried = 0
    for method, template in ROUTES:
        for name in re.findall(r"\{(\w+)\}", template):
            for label, value in _variants(name):
                path = template
                for other, good in VALID.items():
                    replacement = value if other == name else good
                    path = path.replace("{" + other + "}", quote(replacement, safe=":"))
                extra = {"json": {}} if method in ("POST", "PUT") else {}
                answer = await registry.client.request(method, path, **extra)
                where = (method, template, name, label)
                assert answer.status_code == 400, (where, answer.text)
                problem = answer.json()
                assert problem["type"].endswith("/invalid-request"), (where, problem)
                assert problem["detail"].startswith(f"{name}: "), (where, problem)
                tried += 1
    assert tried >= 3 * len(ROUTES)
    assert await _state(registry) == before, "nothing changed"
    version = await registry.client.get("/v1/namespaces/billing/tools/db.query/versions/1")
    assert version.json()["state"] == "active"


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("namespace=billing%0a", "namespace"),
        ("tool=db.query%0a", "tool"),
        ("action=publish%0a", "action"),
    ],
)
async def test_the_audit_filters_are_matched_whole(
    registry: Registry, query: str, name: str
) -> None:
    answer = await registry.client.get(f"/v1/audit?{query}")
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"].startswith(f"{name}: ")


async def test_a_version_to_diff_against_is_matched_whole(registry: Registry) -> None:
    await registry.client.post(
        "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
    )
    answer = await registry.client.get(
        "/v1/namespaces/billing/tools/db.query/versions/1/diff?against=1%0a"
    )
    assert answer.status_code == 400, answer.text
    assert "is not a positive integer" in answer.json()["detail"]


async def test_names_in_bodies_are_matched_whole(registry: Registry) -> None:
    await registry.client.post(
        "/v1/namespaces/billing/tools/db.query/versions", json={"definition": DB_QUERY_V3}
    )
    alias = await registry.client.put(
        "/v1/namespaces/billing/aliases/q",
        json={"target": "db.query\n", "contract": {"tool": "db.query", "version": 1}},
    )
    assert alias.status_code in (400, 422), alias.text
    assert "target tool name 'db.query\\n'" in alias.json()["detail"]
    bundle = {"manifests": [{"namespace": "billing\n", "tool": DB_QUERY_V3}]}
    planned = await registry.client.post("/v1/apply?plan=true", json=bundle)
    assert planned.status_code == 422, planned.text
    assert "namespace 'billing\\n'" in planned.json()["detail"]
