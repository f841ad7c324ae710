"""Bad input answers a clear 4xx problem and stores nothing (issue 6: the catalogue).

Each case is one request. It must answer its status with the problem `type`,
a `detail` naming the problem (a distinctive substring is asserted), leave
the store as it was (the tools' histories, the namespaces and the audit log
compared before and after) and leave the service answering.

One registry serves the whole catalogue (a fresh database, the real app under
uvicorn): ~70 servers started one per case would cost a minute, and one
server answering every case in turn also shows that none of them harms it.
billing/db.query is never stored (each case checks it is still absent);
ledger/db.query has v1 and v2 stored, for the cases that need versions to
exist (converters, retire) before the bad part is reached.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio

from registry.api.json_body import MAX_BODY_NODES
from registry.api.settings import Settings
from registry.definitions import MAX_IN_PLACE_SCHEMAS, MAX_SCHEMA_DEPTH
from registry.documents import MAX_DOCUMENT_DEPTH
from tests.api.conftest import ADMIN_TOKEN, Registry, serve
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

NS = "/v1/namespaces/billing"
VERSIONS = f"{NS}/tools/db.query/versions"
SEEDED = "/v1/namespaces/ledger/tools/db.query/versions"
SEEDED_CONVERTERS = "/v1/namespaces/ledger/tools/db.query/converters"
JSON = {"content-type": "application/json"}
MAX_BODY = Settings().max_body_bytes  # 4 MiB, the documented limit
DEFINITION_BODY = 2 * Settings().definition_max_bytes  # publish, check, converters: 1 MiB

# ledger/db.query: v1 (seed 000's v3) and v2 (v1 and an optional `explain`)
V2 = {
    **DB_QUERY_V3,
    "inputSchema": {
        **DB_QUERY_V3["inputSchema"],
        "properties": {**DB_QUERY_V3["inputSchema"]["properties"], "explain": {"type": "boolean"}},
    },
}


def tool(schema: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """db.query with this input schema."""
    return {"name": "db.query", "inputSchema": schema, **fields}


def prop(schema: dict[str, Any]) -> dict[str, Any]:
    """db.query whose property `x` has this schema."""
    return tool({"type": "object", "properties": {"x": schema}})


def publish(definition: Any, **extra: Any) -> dict[str, Any]:
    return {"json": {"definition": definition, **extra}}


def raw(text: str | bytes, content_type: str | None = "application/json") -> dict[str, Any]:
    body = text.encode() if isinstance(text, str) else text
    return {"content": body, "headers": {"content-type": content_type} if content_type else {}}


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def ref_bomb(levels: int) -> dict[str, Any]:
    """`allOf` of two `$ref`s to the level below: 2**levels schemas for one value."""
    defs: dict[str, Any] = {"l0": {"type": "string"}}
    for level in range(1, levels + 1):
        below = {"$ref": f"#/$defs/l{level - 1}"}
        defs[f"l{level}"] = {"allOf": [below, dict(below)]}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": f"#/$defs/l{levels}"}}}


async def chunked(size: int) -> AsyncIterator[bytes]:
    """A body with no Content-Length (Transfer-Encoding: chunked)."""
    yield b'{"definition": {"name": "'
    for _ in range(size // 65536 + 1):
        yield b"x" * 65536
    yield b'"}}'


def converter(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"json": {"from": 1, "to": 2, "ops": list(ops)}}


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    request: dict[str, Any] | Callable[[], dict[str, Any]]
    status: int
    problem: str
    detail: str  # a substring of the problem's detail that names the problem


CASES: list[Case] = [
    # -- size, content type, JSON syntax ------------------------------------------------
    Case(
        "body over the size limit",
        "POST",
        "/v1/apply",
        raw(b'{"manifests": [{"namespace": "' + b"x" * (MAX_BODY + 1) + b'"}]}'),
        413,
        "body-too-large",
        f"larger than {MAX_BODY} bytes",
    ),
    Case(
        "body of a definition route over its limit, from its Content-Length",
        "POST",
        VERSIONS,
        raw(b'{"definition": {"name": "' + b"x" * (DEFINITION_BODY + 1) + b'"}}'),
        413,
        "body-too-large",
        f"is larger than {DEFINITION_BODY} bytes, the limit here (2 x REGISTRY_DEFINITION_MAX",
    ),
    Case(
        "chunked body of a definition route over its limit",
        "POST",
        VERSIONS,
        lambda: {"content": chunked(DEFINITION_BODY), "headers": JSON},
        413,
        "body-too-large",
        f"larger than {DEFINITION_BODY} bytes",
    ),
    Case(
        "chunked body over the size limit",
        "POST",
        VERSIONS,
        lambda: {"content": chunked(MAX_BODY), "headers": JSON},
        413,
        "body-too-large",
        f"larger than {MAX_BODY} bytes",
    ),
    Case(
        "form body",
        "POST",
        VERSIONS,
        raw("definition=x", "application/x-www-form-urlencoded"),
        415,
        "unsupported-media-type",
        "application/x-www-form-urlencoded; send application/json",
    ),
    Case(
        "text/plain body",
        "POST",
        VERSIONS,
        raw('{"definition": {}}', "text/plain"),
        415,
        "unsupported-media-type",
        "the body is text/plain",
    ),
    Case(
        "body without a content type",
        "POST",
        VERSIONS,
        raw('{"definition": {}}', None),
        415,
        "unsupported-media-type",
        "the body is untyped",
    ),
    Case(
        "an empty body (issue 27: it was answered \"'data'\")",
        "POST",
        VERSIONS,
        raw(""),
        400,
        "invalid-json",
        "the body is empty: send a JSON object",
    ),
    Case(
        "an empty body to apply, untyped",
        "POST",
        "/v1/apply",
        raw("", None),
        400,
        "invalid-json",
        "the body is empty: send a JSON object",
    ),
    Case(
        "an empty policy",
        "PUT",
        f"{NS}/policy",
        raw(""),
        400,
        "invalid-json",
        "the body is empty: send a JSON object",
    ),
    Case(
        "truncated JSON",
        "POST",
        VERSIONS,
        raw('{"definition": '),
        400,
        "invalid-json",
        "not valid JSON: Expecting value",
    ),
    Case(
        "JSON with trailing garbage",
        "POST",
        VERSIONS,
        raw('{"definition": {}} x'),
        400,
        "invalid-json",
        "Extra data",
    ),
    Case(
        "JSON with single quotes",
        "POST",
        VERSIONS,
        raw("{'definition': {}}"),
        400,
        "invalid-json",
        "Expecting property name enclosed in double quotes",
    ),
    Case(
        "body that is not UTF-8",
        "POST",
        VERSIONS,
        raw(b'{"definition": {"name": "\xff\xfe"}}'),
        400,
        "invalid-json",
        "not valid JSON",
    ),
    Case(
        "duplicate key at the top level",
        "POST",
        VERSIONS,
        raw('{"definition": {"name": "a"}, "definition": {"name": "db.query"}}'),
        400,
        "invalid-json",
        "duplicate key 'definition' at the top level",
    ),
    Case(
        "duplicate key deep in a schema",
        "POST",
        VERSIONS,
        raw(
            '{"definition": {"name": "db.query", "inputSchema": {"type": "object", '
            '"properties": {"x": {"type": "string"}, "x": {"type": "integer"}}}}}'
        ),
        400,
        "invalid-json",
        "duplicate key 'x' at /definition/inputSchema/properties",
    ),
    Case(
        "NaN literal",
        "POST",
        VERSIONS,
        raw('{"definition": {"name": "db.query", "inputSchema": {"maximum": NaN}}}'),
        400,
        "invalid-json",
        "NaN is not a JSON number",
    ),
    Case(
        "Infinity literal",
        "POST",
        VERSIONS,
        raw('{"definition": {"name": "db.query", "inputSchema": {"minimum": -Infinity}}}'),
        400,
        "invalid-json",
        "-Infinity is not a JSON number",
    ),
    Case(
        "number past double range",
        "POST",
        VERSIONS,
        raw('{"definition": {"name": "db.query", "inputSchema": {"maximum": 1e400}}}'),
        400,
        "invalid-json",
        "the number 1e400 is out of range",
    ),
    Case(
        "integer of 5,000 digits",
        "POST",
        VERSIONS,
        raw('{"definition": {"name": "db.query", "maximum": ' + "9" * 5000 + "}}"),
        400,
        "invalid-json",
        "digits",
    ),
    Case(
        "body nested 100,000 levels",
        "POST",
        VERSIONS,
        raw('{"definition": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        400,
        "invalid-json",
        f"nested deeper than {MAX_DOCUMENT_DEPTH} levels (line 1, column",
    ),
    Case(
        # below the recursion limit of the JSON parser, past what canonical JSON
        # and the engine would recurse into: it answered 500
        "default nested 600 levels",
        "POST",
        VERSIONS,
        raw(
            '{"definition": {"name": "db.query", "inputSchema": {"type": "object", '
            '"properties": {"q": {"default": ' + "[" * 600 + "]" * 600 + "}}}}}"
        ),
        400,
        "invalid-json",
        f"nested deeper than {MAX_DOCUMENT_DEPTH} levels",
    ),
    Case(
        "body of more than a million arrays and objects",
        "POST",
        "/v1/apply",
        raw('{"manifests": [' + ",".join(["[]"] * 1_000_001) + "]}"),
        400,
        "invalid-json",
        f"more than {MAX_BODY_NODES} arrays and objects",
    ),
    # -- the body's shape ------------------------------------------------------------------
    Case(
        "definition not an object",
        "POST",
        VERSIONS,
        publish([1]),
        422,
        "invalid-body",
        "Expected `object`, got `array`",
    ),
    Case(
        "definition a string",
        "POST",
        VERSIONS,
        publish("db.query"),
        422,
        "invalid-body",
        "Expected `object`, got `str`",
    ),
    Case(
        "body without a definition",
        "POST",
        VERSIONS,
        {"json": {}},
        422,
        "invalid-body",
        "missing required field `definition`",
    ),
    Case(
        "unknown body field",
        "POST",
        VERSIONS,
        publish(DB_QUERY_V4, retires=[1]),
        422,
        "invalid-body",
        "unknown field `retires`",
    ),
    Case(
        "NUL character in a description",
        "POST",
        VERSIONS,
        publish(dict(DB_QUERY_V4, description="a\u0000b")),
        422,
        "invalid-body",
        "text may not contain the NUL character",
    ),
    Case(
        "NUL character in a property name",
        "POST",
        VERSIONS,
        publish(
            prop({"type": "string"})
            | {"inputSchema": {"type": "object", "properties": {"a\u0000": {}}}}
        ),
        422,
        "invalid-body",
        "text may not contain the NUL character",
    ),
    Case(
        "NUL character in an alias target",
        "PUT",
        f"{NS}/aliases/q",
        {"json": {"target": "db.query\u0000", "contract": {"tool": "db.query", "version": 1}}},
        422,
        "invalid-body",
        "text may not contain the NUL character",
    ),
    Case(
        "NUL character in a manifest namespace",
        "POST",
        "/v1/apply",
        {"json": {"manifests": [{"namespace": "billing\u0000", "tool": DB_QUERY_V4}]}},
        422,
        "invalid-body",
        "text may not contain the NUL character",
    ),
    Case(
        "version to retire past 32 bits",
        "POST",
        VERSIONS,
        publish(DB_QUERY_V4, retire=[2147483648]),
        422,
        "invalid-body",
        "<= 2147483647 (versions are positive 32-bit integers)",
    ),
    Case(
        "version to deprecate past 32 bits",
        "POST",
        VERSIONS,
        publish(DB_QUERY_V4, deprecate=[{"version": 2**40}]),
        422,
        "invalid-body",
        "<= 2147483647 (versions are positive 32-bit integers)",
    ),
    Case(
        "converter source past 32 bits",
        "POST",
        SEEDED_CONVERTERS,
        {"json": {"from": 2147483648, "to": 2, "ops": []}},
        422,
        "invalid-body",
        "<= 2147483647 (versions are positive 32-bit integers)",
    ),
    Case(
        "alias contract version past 32 bits",
        "PUT",
        "/v1/namespaces/ledger/aliases/q",
        {"json": {"target": "db.query", "contract": {"tool": "db.query", "version": 2147483648}}},
        422,
        "invalid-body",
        "<= 2147483647 (versions are positive 32-bit integers)",
    ),
    Case(
        "manifest retires a version past 32 bits",
        "POST",
        "/v1/apply?plan=true",
        {"json": {"manifests": [{"namespace": "ledger", "tool": V2, "retire": [2147483648]}]}},
        422,
        "invalid-body",
        "<= 2147483647 (versions are positive 32-bit integers)",
    ),
    # -- the definition ----------------------------------------------------------------------
    Case(
        "name differs from path",
        "POST",
        f"{NS}/tools/other/versions",
        publish(DB_QUERY_V4),
        422,
        "invalid-definition",
        "is not the tool 'other' of the path",
    ),
    Case(
        "NaN-like string as a number",
        "POST",
        VERSIONS,
        publish(tool({"type": "object", "maximum": "NaN"})),
        422,
        "invalid-definition",
        "'maximum' is invalid: 'NaN' is not of type 'number'",
    ),
    Case(
        f"schema nested past {MAX_SCHEMA_DEPTH} levels",
        "POST",
        VERSIONS,
        publish(tool(nested(MAX_SCHEMA_DEPTH + 1))),
        422,
        "invalid-definition",
        f"nested deeper than {MAX_SCHEMA_DEPTH} levels",
    ),
    Case(
        "schema past the size cap (before any other check)",
        "POST",
        VERSIONS,
        publish(
            tool(
                {
                    "type": "object",
                    # ~620 KB as compact JSON: past the cap, within the route's body limit
                    "properties": {f"p{i}": {} for i in range(52_000)},
                }
            )
        ),
        422,
        "definition-too-large",
        "bytes of JSON where at most 524,288 are allowed (REGISTRY_DEFINITION_MAX_BYTES)",
    ),
    Case(
        "ref cycle between two defs",
        "POST",
        VERSIONS,
        publish(
            tool(
                {
                    "type": "object",
                    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                    "properties": {"x": {"$ref": "#/$defs/a"}},
                }
            )
        ),
        422,
        "invalid-definition",
        "$ref cycle that never reaches a property or item",
    ),
    Case(
        "ref to the root from the root",
        "POST",
        VERSIONS,
        publish(tool({"type": "object", "$ref": "#"})),
        422,
        "invalid-definition",
        "(/inputSchema -> /inputSchema)",
    ),
    Case(
        "ref cycle through allOf",
        "POST",
        VERSIONS,
        publish(
            tool(
                {
                    "type": "object",
                    "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}},
                    "properties": {"x": {"$ref": "#/$defs/a"}},
                }
            )
        ),
        422,
        "invalid-definition",
        "$ref cycle that never reaches a property or item",
    ),
    Case(
        "ref bomb (allOf of refs, 30 levels)",
        "POST",
        VERSIONS,
        publish(tool(ref_bomb(30))),
        422,
        "invalid-definition",
        f"more than {MAX_IN_PLACE_SCHEMAS} subschemas to one value",
    ),
    Case(
        "ref to a missing target",
        "POST",
        VERSIONS,
        publish(prop({"$ref": "#/$defs/x"})),
        422,
        "invalid-definition",
        "$ref to missing target '#/$defs/x'",
    ),
    Case(
        "remote ref",
        "POST",
        VERSIONS,
        publish(prop({"$ref": "https://127.0.0.1:1/schema.json"})),
        422,
        "invalid-definition",
        "$ref to remote target 'https://127.0.0.1:1/schema.json' is not supported",
    ),
    Case(
        "pattern that does not compile",
        "POST",
        VERSIONS,
        publish(prop({"type": "string", "pattern": "(unclosed"})),
        422,
        "invalid-definition",
        "pattern '(unclosed' does not compile",
    ),
    Case(
        "patternProperties key that does not compile",
        "POST",
        VERSIONS,
        publish(tool({"type": "object", "patternProperties": {"[a-": {}}})),
        422,
        "invalid-definition",
        "pattern '[a-' does not compile",
    ),
    Case(
        "pattern with a lookahead",
        "POST",
        VERSIONS,
        publish(prop({"type": "string", "pattern": "^(?=.*[0-9]).+$"})),
        422,
        "invalid-definition",
        "uses a lookahead assertion",
    ),
    Case(
        "pattern with a backreference",
        "POST",
        VERSIONS,
        publish(prop({"type": "string", "pattern": "^(a+)\\1$"})),
        422,
        "invalid-definition",
        "uses a backreference",
    ),
    Case(
        "pattern nesting 1,000 groups",
        "POST",
        VERSIONS,
        publish(prop({"type": "string", "pattern": "(" * 1000 + ")" * 1000})),
        422,
        "invalid-definition",
        "nests groups too deeply",
    ),
    # -- names ------------------------------------------------------------------------------
    Case(
        "tool name empty",
        "POST",
        "/v1/apply",
        {
            "json": {
                "manifests": [{"namespace": "billing", "tool": tool({"type": "object"}, name="")}]
            }
        },
        422,
        "invalid-definition",
        "tool name '' must be 1 to 128 characters",
    ),
    Case(
        "tool name of 129 characters",
        "POST",
        f"{NS}/tools/{'t' * 129}/versions",
        publish(tool({"type": "object"}, name="t" * 129)),
        400,
        "invalid-request",
        "tool: ",
    ),
    Case(
        "tool name with a slash",
        "POST",
        "/v1/apply",
        {
            "json": {
                "manifests": [
                    {"namespace": "billing", "tool": tool({"type": "object"}, name="db/query")}
                ]
            }
        },
        422,
        "invalid-definition",
        "tool name 'db/query' must be",
    ),
    Case(
        "tool name with a space",
        "POST",
        f"{NS}/tools/db%20query/versions",
        publish(dict(DB_QUERY_V4, name="db query")),
        400,
        "invalid-request",
        "tool: ",
    ),
    Case(
        "tool name with a Cyrillic a",
        "POST",
        f"{NS}/tools/d\u0430ta/versions",
        publish(tool({"type": "object"}, name="d\u0430ta")),
        400,
        "invalid-request",
        "tool: ",
    ),
    Case(
        "definition name with a Cyrillic a",
        "POST",
        "/v1/apply",
        {
            "json": {
                "manifests": [
                    {"namespace": "billing", "tool": tool({"type": "object"}, name="d\u0430ta")}
                ]
            }
        },
        422,
        "invalid-definition",
        "tool name 'd\u0430ta' must be",
    ),
    Case(
        "namespace uppercase",
        "POST",
        "/v1/namespaces/Billing/tools/db.query/versions",
        publish(DB_QUERY_V4),
        400,
        "invalid-request",
        "ns: ",
    ),
    Case(
        "namespace with a leading dash",
        "POST",
        "/v1/namespaces/-bad/tools/db.query/versions",
        publish(DB_QUERY_V4),
        400,
        "invalid-request",
        "ns: ",
    ),
    Case(
        "namespace of 64 characters",
        "PUT",
        f"/v1/namespaces/{'n' * 64}",
        {},
        400,
        "invalid-request",
        "ns: ",
    ),
    Case(
        "namespace with an underscore",
        "PUT",
        "/v1/namespaces/bill_ing",
        {},
        400,
        "invalid-request",
        "ns: ",
    ),
    Case(
        "namespace off the rule in a manifest",
        "POST",
        "/v1/apply",
        {"json": {"manifests": [{"namespace": "Billing", "tool": DB_QUERY_V4}]}},
        422,
        "invalid-body",
        "namespace 'Billing' does not match",
    ),
    # -- versions -----------------------------------------------------------------------------
    *[
        Case(
            f"version {text} in the path",
            "GET",
            f"{VERSIONS}/{text}",
            {},
            400,
            "invalid-request",
            "n: ",
        )
        for text in ("0", "-1", "1.5", "abc", str(10**12))
    ],
    Case(
        "retire version 0 in the path",
        "POST",
        f"{SEEDED}/0/retire",
        {},
        400,
        "invalid-request",
        "n: ",
    ),
    Case(
        "retire version 10^12 in the path",
        "POST",
        f"{SEEDED}/{10**12}/retire",
        {},
        400,
        "invalid-request",
        "n: ",
    ),
    Case(
        "retire [0] in a publish",
        "POST",
        SEEDED,
        publish(DB_QUERY_V4, retire=[0]),
        422,
        "invalid-body",
        "retire[0]: Expected `int` >= 1 (versions are positive 32-bit integers)",
    ),
    Case(
        "retire [-1] in a publish",
        "POST",
        SEEDED,
        publish(DB_QUERY_V4, retire=[-1]),
        422,
        "invalid-body",
        "retire[0]: Expected `int` >= 1 (versions are positive 32-bit integers)",
    ),
    Case(
        "retire [1.5] in a publish",
        "POST",
        SEEDED,
        publish(DB_QUERY_V4, retire=[1.5]),
        422,
        "invalid-body",
        "Expected `int`, got `float`",
    ),
    Case(
        "retire ['abc'] in a publish",
        "POST",
        SEEDED,
        publish(DB_QUERY_V4, retire=["abc"]),
        422,
        "invalid-body",
        "Expected `int`, got `str`",
    ),
    Case(
        "retire [10^12] in a publish",
        "POST",
        SEEDED,
        publish(DB_QUERY_V4, retire=[10**12]),
        422,
        "invalid-body",
        "retire[0]: Expected `int` <= 2147483647 (versions are positive 32-bit integers)",
    ),
    Case(
        "retire a version that does not exist",
        "POST",
        SEEDED,
        publish(DB_QUERY_V4, retire=[7]),
        422,
        "version-not-found",
        "7",
    ),
    # -- converters and pointers ------------------------------------------------------------
    Case(
        "unknown converter op (publish, no such version)",
        "POST",
        VERSIONS,
        publish(DB_QUERY_V4, converters=[{"from": 1, "ops": [{"op": "teleport"}]}]),
        422,
        "version-not-found",
        "1",
    ),
    Case(
        "unknown converter op (publish)",
        "POST",
        SEEDED,
        publish(DB_QUERY_V4, retire=[1], converters=[{"from": 2, "ops": [{"op": "teleport"}]}]),
        422,
        "converter-invalid",
        "'teleport'",
    ),
    Case(
        "unknown converter op",
        "POST",
        SEEDED_CONVERTERS,
        converter({"op": "teleport", "path": "/x"}),
        422,
        "converter-invalid",
        "'teleport'",
    ),
    Case(
        "pointer without a leading slash",
        "POST",
        SEEDED_CONVERTERS,
        converter({"op": "drop", "path": "no-slash"}),
        422,
        "converter-invalid",
        "'no-slash' is not a JSON Pointer (it must start with '/')",
    ),
    Case(
        "pointer with a bad escape",
        "POST",
        SEEDED_CONVERTERS,
        converter({"op": "rename", "from": "/a~2b", "to": "/b"}),
        422,
        "converter-invalid",
        "'/a~2b' is not a JSON Pointer ('~' must be ~0 or ~1)",
    ),
    Case(
        "converter from a version to itself",
        "POST",
        SEEDED_CONVERTERS,
        {"json": {"from": 1, "to": 1, "ops": []}},
        422,
        "request-invalid",
        "from one version to another",
    ),
    # -- other routes ------------------------------------------------------------------------
    Case(
        "digest malformed",
        "GET",
        "/v1/digests/sha256:xyz",
        {},
        400,
        "invalid-request",
        "digest: ",
    ),
    Case("unknown route", "GET", "/v1/nothing", {}, 404, "not-found", "no resource at /v1/nothing"),
]


@pytest_asyncio.fixture(scope="module")
async def served(postgres_server: Any, migrated_template: str) -> AsyncIterator[Registry]:
    """tests/api/conftest.py's `registry`, once for the module, with ledger/db.query seeded."""
    name = f"test_{uuid.uuid4().hex[:20]}"
    admin = await asyncpg.connect(postgres_server.admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"')
        app = await serve(postgres_server.dsn(name))
        client = httpx.AsyncClient(
            base_url=app.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        )
        try:
            for definition in (DB_QUERY_V3, V2):
                answer = await client.post(SEEDED, json={"definition": definition})
                assert answer.status_code == 201, answer.text
            yield Registry(app.url, postgres_server.dsn(name), client)
        finally:
            await client.aclose()
            await app.stop()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def _stored(registry: Registry) -> tuple[Any, ...]:
    """What a bad request must not change: the histories, the namespaces, the audit log."""
    absent = await registry.client.get(VERSIONS)
    assert absent.status_code == 404, "billing/db.query is never stored"
    seeded = await registry.client.get(SEEDED)
    namespaces = await registry.client.get("/v1/namespaces")
    audit = await registry.client.get("/v1/audit", params={"limit": 1000})
    assert audit.status_code == 200, audit.text
    return (
        seeded.json()["versions"],
        namespaces.json(),
        [event["id"] for event in audit.json()["events"]],
    )


def test_the_catalogue_is_at_least_40_named_cases() -> None:
    names = [case.name for case in CASES]
    assert len(names) >= 40
    assert len(set(names)) == len(names), "each case has its own name"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_bad_input_is_a_clear_problem_and_stores_nothing(
    served: Registry, case: Case
) -> None:
    before = await _stored(served)
    request = case.request() if callable(case.request) else case.request
    answer = await served.client.request(case.method, case.path, **request)
    assert answer.status_code == case.status, answer.text[:500]
    assert answer.headers["content-type"].startswith("application/problem+json")
    body = answer.json()
    assert body["type"].endswith("/" + case.problem), body
    assert body["status"] == case.status
    assert case.detail in body["detail"], body["detail"][:500]
    assert "Traceback" not in answer.text
    assert "asyncpg" not in answer.text and "query argument" not in answer.text
    assert (await served.client.get("/healthz")).status_code == 200
    assert await _stored(served) == before, "nothing was stored"
