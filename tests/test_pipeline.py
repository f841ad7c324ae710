"""`registry plan`, `apply` and `check` (registry/cli/pipeline.py) against a real registry.

The verbs run in-process, in a worker thread (`asyncio.to_thread`) so that the
registry served in this event loop keeps answering their real HTTP calls; their
stdout and stderr are captured per thread (the server logs on the loop's thread).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx
import pytest
import pytest_asyncio
import yaml
from jsonschema import Draft202012Validator, FormatChecker

from registry.cli import EXIT_BREAKING, EXIT_OK, EXIT_USAGE, VERBS, InputError, Verb
from registry.cli.pipeline import PIPELINE_VERBS
from registry.compat import classify, suggested_converter
from tests.api.conftest import ADMIN_TOKEN, TEST_NAMESPACES, Registry, free_port, serve
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

REPO = Path(__file__).resolve().parents[1]
PLAN_SCHEMA = REPO / "schemas" / "plan.schema.json"
CI = REPO / "examples" / "ci"
VENV_BIN = Path(sys.executable).parent

# -- manifests: seed 000's db.query, v1 -> v4 ---------------------------------------------------

DB_V1 = """\
namespace: billing
tool:
  name: db.query
  description: Run a query.
  inputSchema:
    type: object
    properties:
      query: {type: string}
      timeout_ms: {type: integer, default: 30000}
    required: [query]
"""
DB_V2 = """\
namespace: billing
tool:
  name: db.query
  description: Run a query.
  inputSchema:
    type: object
    properties:
      query: {type: string}
      timeout_ms: {type: integer, default: 30000}
      mode: {type: string, enum: [read, write]}
    required: [query]
"""
# seed 000's v3 (tests/fixtures/seeds.py DB_QUERY_V3); v1 and v2 retire when it lands
DB_V3 = """\
namespace: billing
tool:
  name: db.query
  description: Run a SQL query.
  inputSchema:
    type: object
    properties:
      query: {type: string}
      timeout_ms: {type: integer, default: 30000}
      mode: {type: string, enum: [read, write]}
    required: [query]
retire: [1, 2]
"""
# seed 000's v4 over a history of three versions, retiring v3 as it lands, and without that decision
DB_V4_DECIDED = """\
namespace: billing
tool:
  name: db.query
  description: Run a SQL query.
  inputSchema:
    type: object
    properties:
      query: {type: string}
      timeout: {type: integer}
      mode: {type: string, enum: [read]}
    required: [query]
    additionalProperties: true
retire: [3]
"""
DB_V4_UNDECIDED = DB_V4_DECIDED.replace("retire: [3]\n", "")

SEARCH_V1 = """\
namespace: search
tool:
  name: search
  description: Search documents.
  inputSchema:
    type: object
    properties:
      query: {type: string}
    required: [query]
"""
# seed 002's v2, its converter from v1 and the alias of the old name (the README's walkthrough)
EXAMPLE_SEARCH = """\
namespace: search
tool:
  name: search
  description: Search documents.
  inputSchema:
    type: object
    properties:
      query: {type: string}
      filters: {type: object}
      limit: {type: integer, default: 20}
    required: [query, filters]
converters:
  - from: 1
    ops:
      - {op: fill, path: /filters, value: {}}
      - {op: fill, path: /limit, value: 20}
aliases:
  - name: search_v1
    contract: {tool: search, version: 1}
"""


def additive_tool(namespace: str, name: str) -> str:
    return f"""\
namespace: {namespace}
tool:
  name: {name}
  inputSchema:
    type: object
    properties:
      q: {{type: string}}
"""


@pytest_asyncio.fixture
async def registry(database_url: str) -> AsyncIterator[Registry]:
    """tests/api/conftest.py's `registry` (its fixtures are not visible from tests/):
    the test namespaces exist, as an admin made them; `apply` creates one only when told
    (`--create-namespace`, a manifest's `create_namespace`)."""
    async with _served(database_url, namespaces=TEST_NAMESPACES) as served:
        yield served


@pytest_asyncio.fixture
async def bare_registry(database_url: str) -> AsyncIterator[Registry]:
    """`registry` with no namespace yet."""
    async with _served(database_url, namespaces=()) as served:
        yield served


@asynccontextmanager
async def _served(database_url: str, namespaces: tuple[str, ...]) -> AsyncIterator[Registry]:
    app = await serve(database_url, namespaces=namespaces)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    client = httpx.AsyncClient(base_url=app.url, timeout=30, headers=headers)
    try:
        yield Registry(app.url, database_url, client)
    finally:
        await client.aclose()
        await app.stop()


# -- running a verb ------------------------------------------------------------------------------


class _ThreadStream(io.TextIOBase):
    """sys.stdout / sys.stderr while a verb runs: its thread's writes are captured,
    every other thread's (the registry's logs) go where they went before."""

    def __init__(self, original: TextIO, tty: bool) -> None:
        self.original = original
        self.captured = io.StringIO()
        self.owner: int | None = None
        self.tty = tty

    def write(self, text: str) -> int:
        if threading.get_ident() == self.owner:
            return self.captured.write(text)
        return self.original.write(text)

    def flush(self) -> None:
        if threading.get_ident() != self.owner:
            self.original.flush()

    def isatty(self) -> bool:
        return self.tty if threading.get_ident() == self.owner else self.original.isatty()


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def _parser(verbs: list[Verb]) -> argparse.ArgumentParser:
    """The verbs under a parser built the way registry.cli builds its own."""
    parser = argparse.ArgumentParser(prog="registry")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb in verbs:
        subparser = subparsers.add_parser(verb.name, help=verb.summary)
        verb.add_arguments(subparser)
        subparser.set_defaults(run=verb.run)
    return parser


async def run(*argv: str, tty: bool = False, verbs: list[Verb] = PIPELINE_VERBS) -> Result:
    """A verb (the pipeline's, unless `verbs` says) in a thread of this process, its
    output captured."""
    out, err = _ThreadStream(sys.stdout, False), _ThreadStream(sys.stderr, tty)

    def call() -> int:
        out.owner = err.owner = threading.get_ident()
        try:
            args = _parser(verbs).parse_args(list(argv))
        except SystemExit as exit_:  # a usage error, as registry.cli.main answers it
            return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
        try:
            return int(args.run(args))
        except InputError as error:  # as registry.cli.main reports it
            print(f"registry: {error}", file=sys.stderr)
            return EXIT_USAGE

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = await asyncio.to_thread(call)
    finally:
        sys.stdout, sys.stderr = saved
    return Result(code, out.captured.getvalue(), err.captured.getvalue())


def online(registry: Registry) -> list[str]:
    return ["--url", registry.url, "--token", ADMIN_TOKEN]


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def position(text: str, line_text: str, column_text: str) -> tuple[int, int]:
    """1-based line and column of `column_text` on the first line containing `line_text`."""
    for number, line in enumerate(text.splitlines(), 1):
        if line_text in line:
            return number, line.index(column_text) + 1
    raise AssertionError(f"{line_text!r} not in the manifest")


@contextmanager
def schema_checked() -> Iterator[Any]:
    schema = json.loads(PLAN_SCHEMA.read_text())
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema, format_checker=FormatChecker())

    def check(document: Any) -> Any:
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
        return document

    yield check


def one_line(result: Result, starts: str) -> None:
    assert result.code == EXIT_USAGE, result
    assert result.err.count("\n") == 1, result.err
    assert result.err.startswith(f"registry: {starts}"), result.err
    assert "Traceback" not in result.err


async def versions(registry: Registry, namespace: str, tool: str) -> list[tuple[int, str]]:
    answer = await registry.client.get(f"/v1/namespaces/{namespace}/tools/{tool}/versions")
    if answer.status_code == 404:
        return []
    return [(v["version"], v["state"]) for v in answer.json()["versions"]]


async def audit_count(registry: Registry) -> int:
    return len((await registry.client.get("/v1/audit")).json()["events"])


async def seed_v3(registry: Registry, tools: Path) -> Path:
    """db.query v1, v2, then v3 retiring both: seed 000's starting point."""
    path = tools / "billing" / "db.query.yaml"
    for text in (DB_V1, DB_V2, DB_V3):
        write(tools, "billing/db.query.yaml", text)
        applied = await run("apply", str(tools), *online(registry))
        assert applied.code == EXIT_OK, applied
    assert await versions(registry, "billing", "db.query") == [
        (1, "retired"),
        (2, "retired"),
        (3, "active"),
    ]
    return path


# -- plan and apply --------------------------------------------------------------------------------


async def test_plan_create_then_unchanged_then_new_version(
    bare_registry: Registry, tmp_path: Path
) -> None:
    registry = bare_registry
    tools = tmp_path / "tools"
    write(tools, "billing/db.query.yaml", "create_namespace: true\n" + DB_V1)
    write(tools, "search/search.yaml", "create_namespace: true\n" + SEARCH_V1)

    planned = await run("plan", str(tools), *online(registry), "--format", "json")
    assert planned.code == EXIT_OK, planned
    assert [(t["tool"], t["action"], t["version"]) for t in planned.json["tools"]] == [
        ("db.query", "create", 1),
        ("search", "create", 1),
    ]
    assert planned.json["applied"] is False
    assert (await registry.client.get("/v1/namespaces")).json()["namespaces"] == [], (
        "a plan stores nothing"
    )

    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    unchanged = await run("plan", str(tools), *online(registry), "--format", "json")
    assert [t["action"] for t in unchanged.json["tools"]] == ["unchanged", "unchanged"]

    write(tools, "search/search.yaml", EXAMPLE_SEARCH)  # v2 with a converter and an alias
    text = await run("plan", str(tools), *online(registry))
    assert text.code == EXIT_OK, text
    table = text.out.splitlines()
    assert table[0].split() == ["TOOL", "ACTION", "VERSION", "SEVERITY", "DECISIONS", "SOURCE"]
    assert table[1].split()[:5] == ["billing/db.query", "unchanged", "v1", "-", "-"]
    assert table[2].split()[:5] == ["search/search", "new-version", "v2", "breaking", "-"]
    assert "  required-added  /inputSchema/required" in text.out
    assert '  converter v1 -> v2: [{"op":"fill","path":"/filters","value":{}}' in text.out
    assert "  alias search_v1: create (contract search v1, routed)" in text.out
    assert text.out.rstrip().endswith(
        "plan accepted: 0 to create, 1 new version, 1 unchanged, 1 lifecycle change, 1 alias change"
    )
    assert await versions(registry, "search", "search") == [(1, "active")]


async def test_apply_then_reapply_is_a_no_op(bare_registry: Registry, tmp_path: Path) -> None:
    registry = bare_registry
    tools = tmp_path / "tools"
    write(tools, "billing/db.query.yaml", DB_V1)
    write(tools, "search/search.yaml", SEARCH_V1)
    mistyped = await run("plan", str(tools), *online(registry), "--create-namespace", "serach")
    one_line(mistyped, f"{registry.url}/v1/apply?plan=true answered 422 (request-invalid)")
    assert "create_namespaces names 'serach', which no manifest of the bundle names" in (
        mistyped.err
    )
    create = ["--create-namespace", "billing", "--create-namespace", "search"]
    first = await run("apply", str(tools), *online(registry), *create, tty=True)
    assert first.code == EXIT_OK, first
    assert first.out.startswith("namespace billing: create\nnamespace search: create\n")
    assert first.out.rstrip().endswith(
        "applied: 2 new namespaces, 2 to create, 0 new versions, 0 unchanged"
    )
    assert first.err.splitlines()[-4:] == [
        "namespace billing: created",
        "namespace search: created",
        "[1/2] billing/db.query: created v1",
        "[2/2] search/search: created v1",
    ]

    events = await audit_count(registry)
    second = await run("apply", str(tools), *online(registry), *create, "--format", "json")
    assert second.code == EXIT_OK, second
    assert second.json["applied"] is True
    assert [t["action"] for t in second.json["tools"]] == ["unchanged", "unchanged"]
    assert all(t["lifecycle"] == [] and t["aliases"] == [] for t in second.json["tools"])
    assert await audit_count(registry) == events, "re-applying writes nothing"
    again = await run("plan", str(tools), *online(registry))
    assert again.code == EXIT_OK
    assert "plan: no changes, the registry matches the manifests" in again.out
    assert second.err == "", "no progress lines when stderr is not a terminal"


async def test_a_mistyped_namespace_is_refused_at_its_line(
    registry: Registry, tmp_path: Path
) -> None:
    """`serach` for `search`, under an admin token: nothing is created, the line of the
    manifest is named, with the namespace it is likely a typo of (issue 27)."""
    tools = tmp_path / "tools"
    text = SEARCH_V1.replace("namespace: search", "namespace: serach")
    path = write(tools, "search/search.yaml", text)
    line, column = position(text, "namespace: serach", "serach")
    for verb in ("check", "plan", "apply"):
        result = await run(verb, str(tools), *online(registry))
        one_line(result, f"{registry.url}/v1/apply")
        assert f"answered 404 (namespace-not-found): {path}:{line}:{column}: " in result.err
        assert "namespace 'serach' does not exist (did you mean 'search'?)" in result.err
    listed = (await registry.client.get("/v1/namespaces")).json()["namespaces"]
    assert "serach" not in [n["name"] for n in listed]


async def test_a_namespace_to_create_needs_admin(bare_registry: Registry, tmp_path: Path) -> None:
    registry = bare_registry
    tools = tmp_path / "tools"
    write(tools, "billing/db.query.yaml", DB_V1)
    import asyncpg

    from registry import store

    conn = await asyncpg.connect(registry.database_url)
    try:
        await store.create_token(
            conn,
            store.hash_token("ci-secret"),
            ["billing:publish"],
            actor=None,
            request_id=None,
        )
    finally:
        await conn.close()
    as_ci = ["--url", registry.url, "--token", "ci-secret", "--create-namespace", "billing"]
    plan = await run("plan", str(tools), *as_ci)
    assert plan.code == EXIT_BREAKING, plan
    assert plan.out.startswith("namespace billing: create (refused: needs billing:admin)\n")
    assert plan.out.rstrip().endswith(
        "plan refused: creating namespace billing needs billing:admin; nothing would be applied"
    )
    apply = await run("apply", str(tools), *as_ci)
    assert apply.code == EXIT_USAGE, apply
    assert "403 (forbidden)" in apply.err and "needs billing:admin" in apply.err
    assert (await registry.client.get("/v1/namespaces")).json()["namespaces"] == []


async def test_seed_000_story(registry: Registry, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    path = await seed_v3(registry, tools)

    path.write_text(DB_V4_UNDECIDED)  # v4 edited in without a decision
    for verb in ("plan", "check"):
        refused = await run(verb, str(tools), *online(registry))
        assert refused.code == EXIT_BREAKING, refused
        assert "decision needed: v3 (active): version 3 of db.query is still served" in refused.out
        assert "options: retire: [3] or converters: [{from: 3," in refused.out
    assert "check failed: 3 breaking changes lack a decision" in refused.out
    events = await audit_count(registry)
    applied = await run("apply", str(tools), *online(registry))
    assert applied.code == EXIT_BREAKING, applied
    assert "apply refused, nothing was applied" in applied.out
    assert "answered 409 (breaking-change)" in applied.err
    assert await versions(registry, "billing", "db.query") == [
        (1, "retired"),
        (2, "retired"),
        (3, "active"),
    ], "a refused apply stores nothing"
    assert await audit_count(registry) == events

    path.write_text(DB_V4_DECIDED)  # retire: [3]
    checked = await run("check", str(tools), *online(registry))
    assert checked.code == EXIT_OK, checked
    assert "  retire v3" in checked.out
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    assert (await versions(registry, "billing", "db.query"))[-2:] == [(3, "retired"), (4, "active")]
    events = await audit_count(registry)
    again = await run("apply", str(tools), *online(registry), "--format", "json")
    assert again.code == EXIT_OK
    assert [(t["action"], t["version"], t["lifecycle"]) for t in again.json["tools"]] == [
        ("unchanged", 4, [])
    ]
    assert await audit_count(registry) == events


async def test_one_breaking_manifest_among_five_applies_nothing(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    write(tools, "billing/db.query.yaml", DB_V3.replace("retire: [1, 2]\n", ""))
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    write(tools, "billing/db.query.yaml", DB_V4_UNDECIDED)
    for index in range(4):
        write(tools, f"docs/tool{index}.yaml", additive_tool("docs", f"tool{index}"))

    planned = await run("plan", str(tools), *online(registry), "--format", "json")
    assert planned.code == EXIT_BREAKING
    assert [t["accepted"] for t in planned.json["tools"]] == [False, True, True, True, True]
    applied = await run("apply", str(tools), *online(registry))
    assert applied.code == EXIT_BREAKING, applied
    assert (await registry.client.get("/v1/namespaces/docs/tools")).json()["tools"] == []
    assert await versions(registry, "billing", "db.query") == [(1, "active")]


async def test_a_refused_lifecycle_intent_names_its_manifest_line(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    write(tools, "billing/db.query.yaml", DB_V1)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    for index in range(3):
        write(tools, f"docs/tool{index}.yaml", additive_tool("docs", f"tool{index}"))
    text = DB_V2 + "retire: [1, 9]\n"
    path = write(tools, "billing/db.query.yaml", text)
    for verb in ("plan", "apply"):
        result = await run(verb, str(tools), *online(registry))
        line, column = position(text, "retire: [1, 9]", "9")
        one_line(result, f"{registry.url}/v1/apply")
        assert f"answered 422 (version-not-found): {path}:{line}:{column}: /retire/1: " in (
            result.err
        )
        assert "retire: version 9 of db.query does not exist" in result.err
    assert (await registry.client.get("/v1/namespaces/docs/tools")).json()["tools"] == []
    assert await versions(registry, "billing", "db.query") == [(1, "active")]


# -- output formats ---------------------------------------------------------------------------


async def test_json_output_follows_the_plan_schema(registry: Registry, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    with schema_checked() as check:
        write(tools, "search/search.yaml", SEARCH_V1)
        check((await run("plan", str(tools), *online(registry), "--format", "json")).json)
        check((await run("apply", str(tools), *online(registry), "--format", "json")).json)
        write(tools, "search/search.yaml", EXAMPLE_SEARCH)
        planned = check((await run("plan", str(tools), *online(registry), "--format", "json")).json)
        assert planned["tools"][0]["lifecycle"][0]["action"] == "converter"
        assert planned["tools"][0]["aliases"][0]["name"] == "search_v1"
        write(tools, "search/search.yaml", EXAMPLE_SEARCH.split("converters:", maxsplit=1)[0])
        refused = await run("apply", str(tools), *online(registry), "--format", "json")
        assert refused.code == EXIT_BREAKING
        document = check(refused.json)
        assert document["accepted"] is False and document["applied"] is False
        decision = document["tools"][0]["decisions"][0]
        assert (decision["version"], decision["options"]) == (1, ["retire", "converter", "accept"])
        # `filters` is now required and nothing gives it a value: no converter is made up
        assert decision["suggested_ops"] == []
        assert [(u["kind"], u["fill"]) for u in decision["unrepairable"]] == [
            ("required-added", "/filters")
        ]
        deprecating = SEARCH_V1 + 'deprecate: [{version: 1, sunset: "2027-06-01T00:00:00Z"}]\n'
        write(tools, "search/search.yaml", deprecating)
        planned = check((await run("plan", str(tools), *online(registry), "--format", "json")).json)
        assert planned["tools"][0]["lifecycle"] == [
            {"action": "deprecate", "version": 1, "sunset": "2027-06-01T00:00:00Z"}
        ]


async def test_github_format_points_at_the_changed_properties(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    tools = tmp_path / "tools"
    path = await seed_v3(registry, tools)
    path.write_text(DB_V4_UNDECIDED)
    result = await run("check", str(tools), *online(registry), "--format", "github")
    assert result.code == EXIT_BREAKING, result
    errors = {}
    for line in result.out.splitlines():
        match = re.fullmatch(r"::error file=([^,]+),line=(\d+),col=(\d+),title=([^:]+)::(.*)", line)
        if match:
            errors[match[4]] = (match[1], int(match[2]), int(match[3]), match[5])
    assert set(errors) == {"enum-narrowed", "default-removed", "property-renamed"}
    assert {file for file, *_ in errors.values()} == {str(path)}
    # the changed property's line and column in the YAML
    assert errors["enum-narrowed"][1:3] == position(DB_V4_UNDECIDED, "mode: {", "enum")
    assert errors["default-removed"][1:3] == position(DB_V4_UNDECIDED, "timeout: {", "timeout")
    # a removed (renamed) property is reported at its parent
    assert errors["property-renamed"][1:3] == position(DB_V4_UNDECIDED, "properties:", "prop")
    message = errors["property-renamed"][3]
    assert message.startswith("billing/db.query: property 'timeout_ms' was renamed to 'timeout'")
    assert 'witness: {"query"%3A' not in message, "data is not escaped like properties"
    assert 'witness: {"query":"a","timeout_ms":0}' in message
    assert result.out.splitlines()[-1].startswith("check failed: 3 breaking changes lack")

    path.write_text(DB_V4_DECIDED.replace("description: Run a SQL query.", "description: SQL."))
    decided = await run("check", str(tools), *online(registry), "--format", "github")
    assert decided.code == EXIT_OK, decided
    assert "::error" not in decided.out
    row, column = position(DB_V4_DECIDED, "description:", "description")
    assert f"::notice file={path},line={row},col={column},title=description-changed::" in (
        decided.out
    )
    assert f"::warning file={path}," in decided.out and "title=enum-narrowed::" in decided.out


async def test_github_step_summary_gets_the_markdown_report(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "tools"
    write(tools, "search/search.yaml", SEARCH_V1)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = await run("check", str(tools), *online(registry), "--format", "github")
    assert result.code == EXIT_OK, result
    assert "## ✅ check passed" in summary.read_text()


async def test_markdown_format_is_a_pull_request_comment(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    path = await seed_v3(registry, tools)
    path.write_text(DB_V4_UNDECIDED)
    result = await run("check", str(tools), *online(registry), "--format", "markdown")
    assert result.code == EXIT_BREAKING, result
    lines = result.out.splitlines()
    assert lines[1].startswith("## ❌ check failed: 3 breaking changes lack a decision")
    assert (
        "| `billing/db.query` | `property-renamed` | **breaking** (no decision) "
        "| `/inputSchema/properties/timeout_ms` | property 'timeout_ms' was renamed to 'timeout' "
        '| `{"query":"a","timeout_ms":0}` |'
    ) in lines
    assert "### Decisions still needed" in lines
    assert any(
        line.startswith("- `billing/db.query` v3 (active): version 3 of db.query is still served")
        for line in lines
    )
    assert any(
        line.startswith("  Add to the manifest: `retire: [3] or converters: [{from: 3,")
        for line in lines
    )

    path.write_text(DB_V4_DECIDED)
    decided = await run("plan", str(tools), *online(registry), "--format", "markdown")
    assert decided.code == EXIT_OK
    assert decided.out.splitlines()[1].startswith("## ✅ plan accepted")
    assert "- `billing/db.query`: retire v3" in decided.out


async def test_text_format_golden(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = await seed_v3(registry, Path("tools"))
    path.write_text(DB_V4_UNDECIDED)
    result = await run("plan", "tools", *online(registry))
    assert result.code == EXIT_BREAKING
    # the layout is golden; the changes' wording is the engine's
    changes = classify(DB_QUERY_V3, DB_QUERY_V4).changes
    width = max(len(c.kind.value) for c in changes)
    lines = []
    for c in changes:
        lines.append(f"  breaking  {c.kind.value.ljust(width)}  {c.path}  (no decision)")
        lines.append(f"            {c.message}")
        lines.append(f"            witness: {json.dumps(c.witness, separators=(',', ':'))}")
    suggested = suggested_converter(c.suggested_op for c in changes if c.suggested_op)
    ops = json.dumps(suggested, separators=(",", ":"))
    assert result.out == "\n".join(
        [
            "TOOL              ACTION       VERSION  SEVERITY  DECISIONS  SOURCE",
            "billing/db.query  new-version  v4       breaking  1 missing  "
            "tools/billing/db.query.yaml",
            "",
            "billing/db.query v4 (new-version)",
            *lines,
            "  decision needed: v3 (active): version 3 of db.query is still served and has no "
            "route to version 4: retire it, or register a converter from it in this request",
            f"            options: retire: [3] or converters: [{{from: 3, ops: {ops}}}]",
            "",
            "plan refused: 1 decision missing for billing/db.query; nothing would be applied",
            "",
        ]
    )


# -- check --against-file --------------------------------------------------------------------------


async def save_toolset(registry: Registry, namespace: str, path: Path) -> Path:
    answer = await registry.client.get(f"/v1/namespaces/{namespace}/toolset")
    assert answer.status_code == 200, answer.text
    path.write_bytes(answer.content)
    return path


async def test_check_offline_gives_the_online_verdict(registry: Registry, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    path = await seed_v3(registry, tools)
    toolset = await save_toolset(registry, "billing", tmp_path / "toolset.json")
    offline = ["--against-file", str(toolset), "--format", "json"]
    with schema_checked() as check:
        for text, code in (
            (DB_V3, EXIT_OK),  # unchanged, its retirements already in effect
            (DB_V4_UNDECIDED, EXIT_BREAKING),
            (DB_V4_DECIDED, EXIT_OK),
            (DB_V3.replace("Run a SQL query.", "Run SQL."), EXIT_OK),  # cosmetic
        ):
            path.write_text(text)
            here = await run("check", str(tools), *online(registry), "--format", "json")
            there = await run("check", str(tools), *offline)
            assert (here.code, there.code) == (code, code), (here, there)
            assert check(there.json) == check(here.json)
            assert there.err == ""


async def test_check_offline_routes_through_saved_converters_and_aliases(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    write(tools, "search/search.yaml", SEARCH_V1)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    write(tools, "search/search.yaml", EXAMPLE_SEARCH)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    toolset = await save_toolset(registry, "search", tmp_path / "toolset.json")
    converters = EXAMPLE_SEARCH[
        EXAMPLE_SEARCH.index("converters:") : EXAMPLE_SEARCH.index("aliases:")
    ]
    limit = "limit: {type: integer, default: 20}"
    v3 = EXAMPLE_SEARCH.replace(converters, "").replace(
        limit, f"{limit}\n      page: {{type: integer}}"
    )
    required = v3.replace("required: [query, filters]", "required: [query, filters, page]")
    cases = [
        (EXAMPLE_SEARCH, EXIT_OK),  # unchanged: its converter and alias are in effect
        (v3, EXIT_OK),  # additive: v1 and the alias keep their route through the converter
        (required, EXIT_BREAKING),  # v1, v2 and the alias search_v1 lose their route
        (
            EXAMPLE_SEARCH.replace(limit, f"{limit}\n      page: {{type: integer}}").replace(
                "required: [query, filters]", "required: [query, filters, page]"
            ),
            EXIT_USAGE,
        ),  # the converter from v1 no longer verifies against the new version
    ]
    for text, code in cases:
        write(tools, "search/search.yaml", text)
        here = await run("check", str(tools), *online(registry), "--format", "json")
        there = await run("check", str(tools), "--against-file", str(toolset), "--format", "json")
        assert (here.code, there.code) == (code, code), (here, there)
        if code == EXIT_USAGE:
            assert there.err.split(": /converters/0: ")[1] == here.err.split(": /converters/0: ")[1]
            continue
        assert there.json == here.json
        if code == EXIT_BREAKING:
            decisions = here.json["tools"][0]["decisions"]
            assert [(d["version"], d["alias"]) for d in decisions] == [
                (2, None),
                (1, None),
                (1, "search_v1"),
            ]


async def test_check_offline_reads_saved_deprecations(registry: Registry, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    write(tools, "search/search.yaml", SEARCH_V1)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    v2 = SEARCH_V1.replace("query: {type: string}", "query: {type: string}\n      page: {}")
    deprecating = v2 + 'deprecate: [{version: 1, sunset: "2031-06-01T00:00:00Z"}]\n'
    write(tools, "search/search.yaml", deprecating)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    toolset = await save_toolset(registry, "search", tmp_path / "toolset.json")
    later = deprecating.replace("2031-06-01", "2032-01-01")
    for text, lifecycle in ((deprecating, []), (later, [("deprecate", 1)])):
        write(tools, "search/search.yaml", text)
        here = await run("check", str(tools), *online(registry), "--format", "json")
        there = await run("check", str(tools), "--against-file", str(toolset), "--format", "json")
        assert (here.code, there.code) == (EXIT_OK, EXIT_OK), (here, there)
        assert there.json == here.json
        assert [(c["action"], c["version"]) for c in there.json["tools"][0]["lifecycle"]] == (
            lifecycle
        )


async def test_check_offline_cannot_verify_a_converter_from_a_retired_version(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    write(tools, "search/search.yaml", SEARCH_V1)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    v2 = EXAMPLE_SEARCH.split("converters:", maxsplit=1)[0]
    write(tools, "search/search.yaml", v2 + "retire: [1]\n")
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    toolset = await save_toolset(registry, "search", tmp_path / "toolset.json")

    text = (
        v2 + "converters:\n  - from: 1\n    ops:\n      - {op: fill, path: /filters, value: {}}\n"
    )
    text += "      - {op: fill, path: /limit, value: 20}\n"
    path = write(tools, "search/search.yaml", text)
    assert (await run("check", str(tools), *online(registry))).code == EXIT_OK
    result = await run("check", str(tools), "--against-file", str(toolset))
    line, column = position(text, "- from: 1", "1")
    one_line(result, f"{path}:{line}:{column}: /converters/0/from: the converter from version 1 ")
    assert "cannot be verified offline" in result.err


async def test_check_offline_refuses_another_namespace(registry: Registry, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    write(tools, "billing/db.query.yaml", DB_V1)
    write(tools, "search/search.yaml", SEARCH_V1)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    toolset = await save_toolset(registry, "billing", tmp_path / "billing.json")
    result = await run("check", str(tools), "--against-file", str(toolset))
    line, column = position(SEARCH_V1, "namespace:", "search")
    one_line(result, f"{tools}/search/search.yaml:{line}:{column}: /namespace: namespace 'search'")
    assert f"is not the namespace of the saved toolset {toolset} ('billing')" in result.err
    assert (await run("check", str(tools / "billing"), "--against-file", str(toolset))).code == 0


async def test_check_offline_refuses_a_tampered_toolset(registry: Registry, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    write(tools, "billing/db.query.yaml", DB_V1)
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    toolset = await save_toolset(registry, "billing", tmp_path / "toolset.json")
    toolset.write_text(toolset.read_text().replace("Run a query.", "Run any query."))
    one_line(
        await run("check", str(tools), "--against-file", str(toolset)),
        f"{toolset}: toolset digest mismatch",
    )
    one_line(
        await run("check", str(tools), "--against-file", str(tmp_path / "missing.json")),
        f"{tmp_path / 'missing.json'}: No such file or directory",
    )


# -- input errors -----------------------------------------------------------------------------


async def test_bad_manifests_are_all_reported_with_file_line_column(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    good = "namespace: billing\ntool:\n  name: a\n  inputSchema: {type: object}\n"
    write(tools, "billing/a.yaml", good)
    bad_name = write(tools, "billing/b.yaml", good.replace("name: a", "name: 'b c'"))
    bad_key = write(tools, "search/c.yaml", good.replace("billing", "search") + "retired: [1]\n")
    for verb in ("plan", "apply", "check"):
        result = await run(verb, str(tools), "--url", "http://127.0.0.1:9")
        assert result.code == EXIT_USAGE, result
        assert result.out == ""
        lines = result.err.splitlines()
        assert len(lines) == 2, lines
        assert lines[0].startswith(f"registry: {bad_name}:3:9: /tool/name: "), lines
        assert lines[1].startswith(
            f"registry: {bad_key}:5:1: /retired: unknown field 'retired'; did you mean 'retire'?"
        ), lines
    github = await run("check", str(tools), "--format", "github", "--url", "http://127.0.0.1:9")
    assert github.code == EXIT_USAGE
    assert github.out.startswith(f"::error file={bad_name},line=3,col=9,title=invalid manifest::")


async def test_an_unreachable_registry_is_one_line(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    write(tools, "search/search.yaml", SEARCH_V1)
    url = f"http://127.0.0.1:{free_port()}"
    for verb in ("plan", "apply", "check"):
        result = await run(verb, str(tools), "--url", url, "--timeout", "5")
        # (the namespace's tools are read first: the manifests are its whole set)
        one_line(result, f"cannot reach the registry at {url}/v1/namespaces/search/tools")
        assert result.out == ""
    one_line(await run("plan", str(tools)), "no registry URL: pass --url or set REGISTRY_URL")


async def test_an_unauthenticated_plan_is_one_line(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REGISTRY_TOKEN", raising=False)
    tools = tmp_path / "tools"
    write(tools, "search/search.yaml", SEARCH_V1)
    result = await run("plan", str(tools), "--url", registry.url)
    tools_url = f"{registry.url}/v1/namespaces/search/tools"
    one_line(result, f"{tools_url} answered 401 (unauthenticated)")
    assert result.err.rstrip().endswith("(pass --token or set REGISTRY_TOKEN)")
    monkeypatch.setenv("REGISTRY_URL", registry.url)
    monkeypatch.setenv("REGISTRY_TOKEN", "not-a-token")
    one_line(await run("plan", str(tools)), f"{tools_url} answered 401")


# -- examples/ci -----------------------------------------------------------------------------------


async def test_pre_commit_hook_entry_point(registry: Registry, tmp_path: Path) -> None:
    assert {"plan", "apply", "check"} <= {verb.name for verb in VERBS}, (
        "registry.cli.VERBS lacks registry.cli.pipeline.PIPELINE_VERBS"
    )
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "registry-check")
    assert (hook["entry"], hook["language"], hook["pass_filenames"]) == (
        "registry check",
        "python",
        False,
    )
    command = [*shlex.split(hook["entry"]), *hook["args"]]
    assert "--against-file" in command

    repo = tmp_path / "repo"
    tools = repo / "tools"
    write(tools, "billing/db.query.yaml", DB_V3.replace("retire: [1, 2]\n", ""))
    assert (await run("apply", str(tools), *online(registry))).code == EXIT_OK
    await save_toolset(registry, "billing", repo / command[command.index("--against-file") + 1])
    environment = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    environment.pop("REGISTRY_URL", None)
    environment.pop("REGISTRY_TOKEN", None)
    assert shutil.which("registry", path=environment["PATH"]), "the console script"

    def hook_run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command,
            cwd=repo,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    clean = DB_V3.replace("retire: [1, 2]\n", "").replace(
        "      mode:", "      explain: {type: boolean}\n      mode:"
    )
    write(tools, "billing/db.query.yaml", clean)
    passed = await asyncio.to_thread(hook_run)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "check passed" in passed.stdout

    write(tools, "billing/db.query.yaml", DB_V4_UNDECIDED)
    failed = await asyncio.to_thread(hook_run)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "property 'timeout_ms' was renamed to 'timeout'" in failed.stdout
    assert "check failed: 3 breaking changes lack a decision" in failed.stdout
    assert "Traceback" not in failed.stderr


def test_pre_commit_config_and_workflow_run_registry_check() -> None:
    config = yaml.safe_load((CI / "pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert [hook["id"] for hook in hooks] == ["registry-check"]
    assert "--against-file" in hooks[0]["args"]

    workflow = yaml.safe_load((CI / "github-workflow.yml").read_text())
    steps = {
        name: [step.get("run", "") for step in job["steps"]]
        for name, job in workflow["jobs"].items()
    }
    assert "pip install mcp-tool-registry" in steps["check"]
    assert "registry check tools/ --format github" in steps["check"]
    check_env = next(s["env"] for s in workflow["jobs"]["check"]["steps"] if "env" in s)
    assert check_env == {
        "REGISTRY_URL": "${{ secrets.REGISTRY_URL }}",
        "REGISTRY_TOKEN": "${{ secrets.REGISTRY_TOKEN }}",
    }
    offline = " ".join(steps["check-offline"])
    assert "registry check" in offline and "--against-file" in offline
