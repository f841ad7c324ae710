"""Manifests: the schema, the examples, loading, and every refusal with its place."""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from registry import manifests as manifests_module
from registry.canonical import digest
from registry.compat import parse_ops
from registry.manifests import (
    Alias,
    AliasContract,
    ManifestError,
    collect_directory,
    load_directory,
    load_manifest,
    manifest_files,
    manifest_schema,
    schema_location,
)
from registry.policy.publishing import PublishRequest
from tests.fixtures.seeds import SEARCH_V1, SEARCH_V2

REPO = Path(__file__).resolve().parents[1]
SCHEMA_FILE = REPO / "schemas" / "manifest.schema.json"
EXAMPLES = sorted(
    path
    for path in REPO.glob("examples/**/manifests/**/*")
    if path.is_file() and path.suffix in {".yaml", ".yml", ".json"}
)

TOOL = "tool: {name: x, inputSchema: {type: object}}\n"


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _refusal(path: Path) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    return caught.value


# -- the schema and the examples ------------------------------------------------


def test_schema_is_valid_2020_12() -> None:
    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://mcp-tool-registry.dev/schemas/manifest.schema.json"
    assert schema["additionalProperties"] is False
    assert manifest_schema() == schema


def test_schema_is_found_in_the_checkout() -> None:
    assert Path(schema_location()) == SCHEMA_FILE


def test_schema_lookup_order_checkout_then_package_data_then_data_files() -> None:
    names = [name for name, _ in manifests_module._schema_candidates()]
    assert names[0] == str(REPO / "schemas")
    assert names[1] == "package data registry/schemas"
    assert all(
        name.endswith(str(Path("share", "mcp-tool-registry", "schemas"))) for name in names[2:]
    )


def _properties(node: Any, where: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for name, value in node.get("properties", {}).items():
            yield f"{where}/properties/{name}", value
        for key, value in node.items():
            if key != "if":  # a condition, not properties a person writes
                yield from _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _properties(value, f"{where}/{index}")


def test_every_schema_property_has_a_description() -> None:
    """Editors show `description` when completing; `$ref`-only properties count
    when their target has one."""
    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    missing = []
    for where, prop in _properties(schema, "#"):
        target = prop
        if "description" not in prop and "$ref" in prop:
            target = schema["$defs"][prop["$ref"].rsplit("/", 1)[-1]]
        if "description" not in target:
            missing.append(where)
    assert missing == []


def test_the_repository_has_example_manifests() -> None:
    names = {path.relative_to(REPO).as_posix() for path in EXAMPLES}
    assert "examples/manifests/search/search.yaml" in names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_example_manifest_validates_and_loads(path: Path) -> None:
    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    document = yaml.safe_load(path.read_text("utf-8"))
    Draft202012Validator(schema).validate(document)
    manifest = load_manifest(path)
    assert manifest.digest == digest(manifest.tool)


def test_the_seed_002_example_is_where_search_starts() -> None:
    """The README's walkthrough starts from it on a fresh registry: nothing to decide."""
    manifest = load_manifest(REPO / "examples/manifests/search/search.yaml")
    assert manifest.key == ("search", "search")
    assert manifest.tool == SEARCH_V1
    assert manifest.to_request() == PublishRequest(definition=SEARCH_V1)


def test_a_manifest_with_lifecycle_intents(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "search.yaml",
        "namespace: search\ntool:\n"
        + "".join(f"  {line}\n" for line in yaml.safe_dump(SEARCH_V2, sort_keys=False).splitlines())
        + "retire: [3]\n"
        + "converters:\n  - from: 1\n    ops:\n"
        + "      - {op: fill, path: /filters, value: {}}\n"
        + "      - {op: fill, path: /limit, value: 20}\n"
        + "aliases:\n  - name: search_v1\n    contract: {tool: search, version: 1}\n",
    )
    manifest = load_manifest(path)
    assert manifest.tool == SEARCH_V2
    assert manifest.retire == [3]
    (converter,) = manifest.converters
    assert converter.from_ == 1
    assert converter.ops == [
        {"op": "fill", "path": "/filters", "value": {}},
        {"op": "fill", "path": "/limit", "value": 20},
    ]
    parse_ops(converter.ops)
    assert manifest.aliases == [
        Alias(name="search_v1", contract=AliasContract(tool="search", version=1))
    ]
    assert manifest.alias_bodies() == [
        ("search_v1", {"target": "search", "contract": {"tool": "search", "version": 1}})
    ]


def test_example_directory_loads_sorted(tmp_path: Path) -> None:
    _write(tmp_path, "search/search.yaml", f"namespace: search\n{TOOL}")
    _write(
        tmp_path, "billing/db.query.yaml", "namespace: billing\n" + TOOL.replace("x", "db.query")
    )
    manifests = load_directory(tmp_path)
    assert [m.key for m in manifests] == [("billing", "db.query"), ("search", "x")]


# -- what a manifest gives ---------------------------------------------------------


FULL = """\
namespace: billing
tool:
  name: db.query
  description: Run a SQL query.
  inputSchema:
    type: object
    properties:
      query: {type: string}
      limit:
        type: integer
    required: [query]
  _meta: {team: data}
retire: [3]
deprecate: [{version: 2, sunset: "2027-06-01T00:00:00Z"}, {version: 1}]
converters: [{from: 1, ops: [{op: rename, from: /timeout_ms, to: /timeout}]}]
aliases: [{name: db_query_v1, contract: {tool: db.query, version: 1}}]
"""


def test_full_manifest_and_its_publish_request(tmp_path: Path) -> None:
    manifest = load_manifest(_write(tmp_path, "db.yaml", FULL))
    assert manifest.path == str(tmp_path / "db.yaml")
    assert manifest.namespace == "billing"
    assert manifest.name == "db.query"
    assert manifest.digest == digest(manifest.tool)
    request = manifest.to_request()
    body = msgspec.json.decode(msgspec.json.encode(request))
    assert body == {
        "definition": manifest.tool,
        "retire": [3],
        "deprecate": [
            {"version": 2, "sunset": "2027-06-01T00:00:00Z"},
            {"version": 1, "sunset": None},
        ],
        "converters": [
            {"from": 1, "ops": [{"op": "rename", "from": "/timeout_ms", "to": "/timeout"}]}
        ],
        "require_idle": None,
    }
    assert msgspec.json.decode(msgspec.json.encode(request), type=PublishRequest) == request
    assert request.deprecate[0].sunset == datetime(2027, 6, 1, tzinfo=UTC)


def test_positions_of_pointers(tmp_path: Path) -> None:
    manifest = load_manifest(_write(tmp_path, "db.yaml", FULL))
    assert manifest.position("/tool/inputSchema/properties/query") == (8, 14)
    assert manifest.position("/tool/inputSchema/properties/query", key=True) == (8, 7)
    assert manifest.position("/tool/inputSchema/properties/limit") == (10, 9)
    assert manifest.position("/tool/inputSchema/properties/limit", key=True) == (9, 7)
    assert manifest.position("/retire/0") == (13, 10)
    assert manifest.position("/aliases/0/contract/version") == (16, 67)
    assert manifest.position("") == (1, 1)
    assert manifest.position("/tool/inputSchema/properties/gone") is None
    assert manifest.position("/tool/inputSchema/properties/gone", nearest=True) == (8, 7)
    assert manifest.position("/retire/7") is None
    assert manifest.position("no-slash") is None


def test_positions_in_json(tmp_path: Path) -> None:
    text = '{\n  "namespace": "billing",\n  "tool": {\n    "name": "x",\n' + (
        '    "inputSchema": {"type": "object", "properties": {"a~b/c": {}}}\n  }\n}\n'
    )
    manifest = load_manifest(_write(tmp_path, "x.json", text))
    assert manifest.position("/tool/name") == (4, 13)
    assert manifest.position("/tool/inputSchema/properties/a~0b~1c") == (5, 63)


def test_yaml_and_json_manifests_are_the_same_manifest(tmp_path: Path) -> None:
    from_yaml = load_manifest(_write(tmp_path, "a.yaml", FULL))
    document = yaml.safe_load(FULL)
    from_json = load_manifest(_write(tmp_path, "a.json", json.dumps(document, indent=2)))
    assert from_json.digest == from_yaml.digest
    assert from_json.to_request() == from_yaml.to_request()
    assert from_json.aliases == from_yaml.aliases


def test_schema_key_is_allowed_for_editors(tmp_path: Path) -> None:
    document = {
        "$schema": "https://mcp-tool-registry.dev/schemas/manifest.schema.json",
        "namespace": "billing",
        "tool": {"name": "x", "inputSchema": {"type": "object"}},
    }
    manifest = load_manifest(_write(tmp_path, "x.json", json.dumps(document)))
    assert manifest.to_request().definition == document["tool"]


def test_yaml_dates_stay_strings_and_yes_is_not_true(tmp_path: Path) -> None:
    text = (
        "namespace: billing\ntool:\n  name: x\n  description: yes\n"
        "  inputSchema: {type: object}\n"
        "deprecate: [{version: 2, sunset: 2027-06-01T00:00:00Z}]\n"
    )
    manifest = load_manifest(_write(tmp_path, "x.yaml", text))
    assert manifest.tool["description"] == "yes"
    assert manifest.deprecate[0].sunset == datetime(2027, 6, 1, tzinfo=UTC)


# -- refusals: one file ----------------------------------------------------------------


BOMB = (
    "namespace: billing\n"
    "tool:\n"
    "  name: x\n"
    "  inputSchema: {type: object}\n"
    "  _meta:\n"
    "    a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    "    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    "    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
    "    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
    "    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
)

# (id, file name, text, line, column, pointer, message)
BAD: list[tuple[str, str, str, int | None, int | None, str | None, str]] = [
    (
        "yaml-syntax-error",
        "a.yaml",
        "namespace: billing\ntool:\n  name: x\n   inputSchema: {}\n",
        4,
        15,
        None,
        "invalid YAML: mapping values are not allowed in this context",
    ),
    (
        "json-syntax-error",
        "a.json",
        '{\n  "namespace": "billing",\n  "tool": {"name": "x",}\n}\n',
        3,
        24,
        None,
        "invalid JSON: Expecting property name enclosed in double quotes",
    ),
    (
        "unknown-top-level-key",
        "a.yaml",
        "namespace: billing\nretrie: [3]\n" + TOOL,
        2,
        1,
        "/retrie",
        "unknown field 'retrie'; did you mean 'retire'? "
        "(allowed: namespace, tool, retire, require_idle, deprecate, converters, aliases, "
        "accept, create_namespace, server_version, policy)",
    ),
    (
        "namespace-off-pattern",
        "a.yaml",
        "namespace: Billing\n" + TOOL,
        1,
        12,
        "/namespace",
        '"Billing" does not match ^[a-z0-9][a-z0-9-]{0,62}$ (a namespace is 1 to 63 '
        "characters of a-z, 0-9 and '-', not starting with '-')",
    ),
    (
        "tool-name-with-space",
        "a.yaml",
        "namespace: billing\ntool:\n  name: db query\n  inputSchema: {type: object}\n",
        3,
        9,
        "/tool/name",
        '"db query" does not match ^[A-Za-z0-9._-]{1,128}$ (a tool name is 1 to 128 '
        "characters of A-Z, a-z, 0-9, '.', '_' and '-')",
    ),
    (
        "missing-input-schema",
        "a.yaml",
        "namespace: billing\ntool:\n  name: x\n  description: y\n",
        3,
        3,
        "/tool/inputSchema",
        "required field 'inputSchema' is missing",
    ),
    (
        "missing-namespace",
        "a.yaml",
        TOOL,
        1,
        1,
        "/namespace",
        "required field 'namespace' is missing",
    ),
    (
        "input-schema-not-an-object",
        "a.yaml",
        "namespace: billing\ntool:\n  name: x\n  inputSchema: [type, object]\n",
        4,
        16,
        "/tool/inputSchema",
        "must be an object, not an array",
    ),
    (
        "input-schema-not-an-object-schema",
        "a.json",
        '{\n\t"namespace": "billing",\n'
        '\t"tool": {"name": "x", "inputSchema": {"type": "array"}}\n}',
        3,
        48,
        "/tool/inputSchema/type",
        'must be "object", not "array"',
    ),
    (
        "input-schema-fails-its-meta-schema",
        "a.yaml",
        "namespace: billing\ntool:\n  name: x\n  inputSchema:\n    type: object\n"
        "    properties:\n      limit: {type: integr}\n",
        7,
        21,
        "/tool/inputSchema/properties/limit/type",
        "'type' is invalid: 'integr' is not valid under any of the given schemas",
    ),
    (
        "retire-zero",
        "a.yaml",
        "namespace: billing\n" + TOOL + "retire: [3, 0]\n",
        3,
        13,
        "/retire/1",
        "must be at least 1, not 0",
    ),
    (
        "retire-twice",
        "a.yaml",
        "namespace: billing\n" + TOOL + "retire: [3, 2, 3]\n",
        3,
        16,
        "/retire/2",
        "3 is listed twice",
    ),
    (
        "sunset-not-a-date-time",
        "a.yaml",
        "namespace: billing\n" + TOOL + "deprecate:\n  - version: 2\n    sunset: next tuesday\n",
        5,
        13,
        "/deprecate/0/sunset",
        '"next tuesday" is not an RFC 3339 date-time with a time zone '
        '(e.g. "2027-06-01T00:00:00Z")',
    ),
    (
        "sunset-without-time-zone",
        "a.yaml",
        "namespace: billing\n"
        + TOOL
        + 'deprecate: [{version: 2, sunset: "2027-06-01T00:00:00"}]\n',
        3,
        34,
        "/deprecate/0/sunset",
        '"2027-06-01T00:00:00" is not an RFC 3339 date-time with a time zone '
        '(e.g. "2027-06-01T00:00:00Z")',
    ),
    (
        "sunset-impossible-date",
        "a.yaml",
        "namespace: billing\n"
        + TOOL
        + 'deprecate: [{version: 2, sunset: "2027-02-30T00:00:00Z"}]\n',
        3,
        34,
        "/deprecate/0/sunset",
        '"2027-02-30T00:00:00Z" is not an RFC 3339 date-time with a time zone '
        '(e.g. "2027-06-01T00:00:00Z")',
    ),
    (
        "deprecated-and-retired",
        "a.yaml",
        "namespace: billing\n" + TOOL + "retire: [2]\ndeprecate: [{version: 2}]\n",
        4,
        23,
        "/deprecate/0/version",
        "version 2 is also in 'retire'",
    ),
    (
        "unknown-converter-op",
        "a.yaml",
        "namespace: billing\n"
        + TOOL
        + "converters:\n  - from: 3\n    ops:\n      - {op: rname, from: /a, to: /b}\n",
        6,
        14,
        "/converters/0/ops/0/op",
        '"rname" is not one of "rename", "fill", "drop", "map", "reject"',
    ),
    (
        "bad-json-pointer-in-op",
        "a.yaml",
        "namespace: billing\n"
        + TOOL
        + "converters:\n  - from: 3\n    ops:\n      - op: rename\n"
        + "        from: timeout_ms\n        to: /timeout\n",
        7,
        15,
        "/converters/0/ops/0/from",
        '"timeout_ms" does not match ^(/([^~/]|~[01])*)+$ (a JSON Pointer starts with '
        "'/' (e.g. /timeout_ms), and '~' is written ~0, '/' in a name ~1)",
    ),
    (
        "op-missing-field",
        "a.yaml",
        "namespace: billing\n" + TOOL + "converters: [{from: 3, ops: [{op: fill, path: /a}]}]\n",
        3,
        30,
        "/converters/0/ops/0/value",
        "required field 'value' is missing",
    ),
    (
        "op-field-of-another-op",
        "a.yaml",
        "namespace: billing\n"
        + TOOL
        + "converters: [{from: 3, ops: [{op: drop, path: /a, to: /b}]}]\n",
        3,
        51,
        "/converters/0/ops/0/to",
        "unknown field 'to' (allowed: op, path)",
    ),
    (
        "two-converters-from-one-version",
        "a.yaml",
        "namespace: billing\n"
        + TOOL
        + "converters:\n  - {from: 3, ops: []}\n  - {from: 3, ops: []}\n",
        5,
        12,
        "/converters/1/from",
        "a second converter from version 3",
    ),
    (
        "duplicate-key-yaml",
        "a.yaml",
        "namespace: billing\ntool:\n  name: x\n  inputSchema: {type: object}\n  name: y\n",
        5,
        3,
        "/tool/name",
        "duplicate key 'name'",
    ),
    (
        "duplicate-key-json",
        "a.json",
        '{"namespace": "billing",\n "tool": {"name": "x", "inputSchema": {"type": "object"}, '
        '"name": "y"}}\n',
        2,
        59,
        "/tool/name",
        "duplicate key 'name'",
    ),
    (
        "yaml-anchor-bomb",
        "a.yaml",
        BOMB,
        12,
        8,
        "/tool/_meta/g",
        "YAML aliases expand to more than 1000000 nodes",
    ),
    (
        "alias-named-like-its-tool",
        "a.yaml",
        "namespace: billing\n" + TOOL + "aliases: [{name: x, contract: {tool: x, version: 1}}]\n",
        3,
        18,
        "/aliases/0/name",
        "alias 'x' is the name of its own tool",
    ),
    (
        "alias-contract-version-missing",
        "a.yaml",
        "namespace: billing\n" + TOOL + "aliases:\n  - name: old\n    contract: {tool: x}\n",
        5,
        15,
        "/aliases/0/contract/version",
        "required field 'version' is missing",
    ),
    (
        "not-an-object",
        "a.yaml",
        "- namespace: billing\n",
        1,
        1,
        "",
        "must be an object, not an array",
    ),
    ("empty-file", "a.yaml", "# nothing\n", None, None, None, "empty document"),
]


@pytest.mark.parametrize(
    ("name", "text", "line", "column", "pointer", "message"),
    [case[1:] for case in BAD],
    ids=[case[0] for case in BAD],
)
def test_refusal_names_file_line_column_and_pointer(
    tmp_path: Path,
    name: str,
    text: str,
    line: int | None,
    column: int | None,
    pointer: str | None,
    message: str,
) -> None:
    path = _write(tmp_path, name, text)
    error = _refusal(path)
    assert (error.path, error.line, error.column, error.pointer, error.message) == (
        str(path),
        line,
        column,
        pointer,
        message,
    )
    where = str(path) + "".join(f":{n}" for n in (line, column) if n is not None)
    assert str(error) == f"{where}: {pointer}: {message}" if pointer else f"{where}: {message}"


def test_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    error = _refusal(tmp_path / "nope.yaml")
    assert str(error) == f"{tmp_path / 'nope.yaml'}: no such file"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"namespace: billing\ntool: \xff\n")
    error = _refusal(path)
    assert (error.line, error.column, error.pointer, error.message) == (
        2,
        7,
        None,
        "not UTF-8 text",
    )


# -- refusals: a directory ----------------------------------------------------------


def _manifest(namespace: str, tool: str, aliases: list[str] | None = None) -> str:
    text = f"namespace: {namespace}\ntool:\n  name: {json.dumps(tool)}\n"
    text += "  inputSchema: {type: object}\n"
    if aliases:
        text += "aliases:\n"
        for alias in aliases:
            text += f"  - name: {alias}\n    contract: {{tool: {tool}, version: 1}}\n"
    return text


def test_two_files_for_one_tool(tmp_path: Path) -> None:
    _write(tmp_path, "billing/a.yaml", _manifest("billing", "db.query"))
    second = _write(tmp_path, "billing/b.yml", _manifest("billing", "db.query"))
    with pytest.raises(ManifestError) as caught:
        load_directory(tmp_path)
    first = tmp_path / "billing" / "a.yaml"
    assert str(caught.value) == (
        f"{second}:3:9: /tool/name: tool 'db.query' of namespace 'billing' "
        f"is already declared in {first}:3"
    )
    assert (caught.value.line, caught.value.column, caught.value.pointer) == (3, 9, "/tool/name")


def test_same_tool_in_two_namespaces_is_fine(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", _manifest("billing", "db.query"))
    _write(tmp_path, "b.yaml", _manifest("search", "db.query"))
    assert [m.key for m in load_directory(tmp_path)] == [
        ("billing", "db.query"),
        ("search", "db.query"),
    ]


def test_alias_colliding_with_a_tool(tmp_path: Path) -> None:
    alias_file = _write(tmp_path, "a.yaml", _manifest("billing", "db.query", ["report"]))
    tool_file = _write(
        tmp_path, "z/report.json", json.dumps(yaml.safe_load(_manifest("billing", "report")))
    )
    with pytest.raises(ManifestError) as caught:
        load_directory(tmp_path)
    assert str(caught.value) == (
        f"{alias_file}:6:11: /aliases/0/name: alias 'report' collides with tool 'report' "
        f"of namespace 'billing' ({tool_file}:1)"
    )


def test_alias_colliding_with_another_alias(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", _manifest("billing", "one", ["old"]))
    second = _write(tmp_path, "b.yaml", _manifest("billing", "two", ["older", "old"]))
    with pytest.raises(ManifestError) as caught:
        load_directory(tmp_path)
    assert str(caught.value) == (
        f"{second}:8:11: /aliases/1/name: alias 'old' of namespace 'billing' is already "
        f"declared in {tmp_path / 'a.yaml'}:6"
    )


def test_empty_directory(tmp_path: Path) -> None:
    _write(tmp_path, "README.md", "not a manifest")
    _write(tmp_path, ".hidden.yaml", _manifest("billing", "x"))
    with pytest.raises(ManifestError) as caught:
        load_directory(tmp_path)
    error = caught.value
    assert (error.path, error.line, error.column, error.pointer) == (
        str(tmp_path),
        None,
        None,
        None,
    )
    assert str(error) == f"{tmp_path}: no manifest files (*.yaml, *.yml, *.json) found"


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        load_directory(tmp_path / "nope")
    assert str(caught.value) == f"{tmp_path / 'nope'}: no such file or directory"


def test_a_file_instead_of_a_directory(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.yaml", _manifest("billing", "x"))
    assert [m.path for m in load_directory(path)] == [str(path)]


def test_collect_reports_every_problem_in_file_order(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", _manifest("billing", "x"))
    _write(tmp_path, "b.yaml", "namespace: Billing\n" + TOOL)
    _write(tmp_path, "c.yaml", _manifest("billing", "x"))
    _write(tmp_path, "d.yaml", _manifest("billing", "y"))
    manifests, errors = collect_directory(tmp_path)
    assert [Path(m.path).name for m in manifests] == ["a.yaml", "d.yaml"]
    assert [(Path(e.path).name, e.pointer) for e in errors] == [
        ("b.yaml", "/namespace"),
        ("c.yaml", "/tool/name"),
    ]
    with pytest.raises(ManifestError) as caught:
        load_directory(tmp_path)
    assert caught.value.path == str(tmp_path / "b.yaml")


def test_hidden_files_and_directories_and_other_suffixes_are_skipped(tmp_path: Path) -> None:
    _write(tmp_path, "b/tool.YAML", _manifest("billing", "upper"))
    _write(tmp_path, "a/tool.json", json.dumps(yaml.safe_load(_manifest("billing", "j"))))
    _write(tmp_path, "a/.tool.yaml", "not: [valid")
    _write(tmp_path, ".git/x.yaml", "not: [valid")
    _write(tmp_path, "a/notes.txt", "not: [valid")
    _write(tmp_path, "c.yml", _manifest("billing", "c"))
    names = [path.relative_to(tmp_path).as_posix() for path in manifest_files(tmp_path)]
    assert names == ["a/tool.json", "b/tool.YAML", "c.yml"]
    assert [m.name for m in load_directory(tmp_path)] == ["j", "upper", "c"]


# -- determinism -------------------------------------------------------------------------

_NAMESPACES = st.sampled_from(["billing", "search", "a-b", "x9"])
_TOOLS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,8}", fullmatch=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.lists(
        st.tuples(_NAMESPACES, _TOOLS, st.sampled_from([".yaml", ".yml", ".json"]), st.booleans()),
        min_size=1,
        max_size=8,
        unique_by=lambda entry: (entry[0], entry[1]),
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_loading_is_deterministic(entries: list[tuple[str, str, str, bool]], seed: int) -> None:
    """Whatever order files are written in, the result is the same list, in the
    order of the files' relative paths, and loading twice gives equal manifests."""
    results = []
    for order in (list(entries), random.Random(seed).sample(entries, len(entries))):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            for namespace, tool, suffix, nested in order:
                relative = (
                    f"{namespace}/{tool}{suffix}" if nested else f"{namespace}-{tool}{suffix}"
                )
                text = _manifest(namespace, tool)
                if suffix == ".json":
                    text = json.dumps(yaml.safe_load(text))
                _write(root, relative, text)
            first = load_directory(root)
            second = load_directory(root)
            assert first == second
            relatives = [Path(m.path).relative_to(root).as_posix() for m in first]
            assert relatives == sorted(relatives)
            results.append(
                [(rel, m.key, m.digest, m.text) for rel, m in zip(relatives, first, strict=True)]
            )
    assert results[0] == results[1]
    assert len(results[0]) == len(entries)


def test_require_idle_is_read_with_the_retirements_and_checked_where_written(
    tmp_path: Path,
) -> None:
    good = _write(
        tmp_path, "ok.yaml", "namespace: billing\n" + TOOL + "retire: [3]\nrequire_idle: 7d\n"
    )
    manifest = load_manifest(good)
    assert manifest.require_idle == "7d"
    assert manifest.to_request().require_idle == "7d"
    assert manifest.to_body().require_idle == "7d"
    bad = _write(tmp_path, "bad.yaml", "namespace: billing\n" + TOOL + "require_idle: 7 days\n")
    error = _refusal(bad)
    assert (error.line, error.column, error.pointer) == (3, 15, "/require_idle")
    assert "7 days" in error.message
