"""`registry lint`: every rule reports its own example, keeps quiet on what it must
not report, and `mcp-registry.yaml` turns rules on, off and ignores findings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from registry.lint import CATEGORIES, RULES, ConfigError, find, lint_definition
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.test_cli_server import assert_one_line_error, run


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_reports_its_own_example(name: str) -> None:
    rule = RULES[name]
    assert re.fullmatch(r"[a-z]+(-[a-z]+)+", name)
    assert rule.category in CATEGORIES and rule.summary
    found = lint_definition(rule.example, iter([rule]))
    assert found and {f.rule for f in found} == {name}
    assert all(f.pointer.startswith("/") and f.message for f in found)


def _tool(schema: dict[str, Any], description: str | None = "A tool.") -> dict[str, Any]:
    tool: dict[str, Any] = {"name": "t", "inputSchema": schema}
    if description is not None:
        tool["description"] = description
    return tool


def _found(definition: dict[str, Any], rule: str) -> list[tuple[str, str]]:
    return [(f.pointer, f.message) for f in lint_definition(definition, iter([RULES[rule]]))]


def test_the_seed_definitions_are_correct() -> None:
    for definition in (DB_QUERY_V3, DB_QUERY_V4):
        assert [f for f in lint_definition(definition) if f.category == "correctness"] == []


def test_required_undeclared_reads_where_names_may_come_from() -> None:
    nested = _tool(
        {
            "type": "object",
            "properties": {"filter": {"type": "object", "required": ["field"]}},
        }
    )
    assert _found(nested, "required-undeclared") == [
        (
            "/inputSchema/properties/filter/required/0",
            "'field' is required but not declared in properties",
        )
    ]
    # a map's required names are its keys; a combinator may declare them
    for schema in (
        {"type": "object", "additionalProperties": {"type": "string"}, "required": ["x"]},
        {"type": "object", "patternProperties": {"^x": {}}, "required": ["x1"]},
        {"allOf": [{"properties": {"x": {}}}], "required": ["x"]},
    ):
        assert _found(_tool(schema), "required-undeclared") == []


def test_default_invalid_follows_refs_and_tells_why() -> None:
    schema = {
        "type": "object",
        "$defs": {"positive": {"type": "integer", "minimum": 1}},
        "properties": {
            "limit": {"$ref": "#/$defs/positive", "default": 0},
            "page": {"$ref": "#/$defs/positive", "default": 2},
        },
    }
    assert _found(_tool(schema), "default-invalid") == [
        (
            "/inputSchema/properties/limit/default",
            "the default is refused by its own schema: 0 is less than the minimum of 1",
        )
    ]
    output = {
        "name": "t",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "string", "default": 3}}},
    }
    assert [p for p, _ in _found(output, "default-invalid")] == [
        "/outputSchema/properties/n/default"
    ]


def test_enum_duplicates_are_json_equal_values() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"enum": [1, True, {"a": 1, "b": 2}, 1.0, {"b": 2, "a": 1}]}},
    }
    assert [p for p, _ in _found(_tool(schema), "enum-duplicate")] == [
        "/inputSchema/properties/v/enum/4"
    ]


def test_descriptions_are_asked_of_input_properties_only() -> None:
    definition = {
        "name": "t",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"title": "A"}, "b~/": {"type": "string"}, "c": {"$ref": "#/x"}},
        },
        "outputSchema": {"type": "object", "properties": {"out": {"type": "string"}}},
    }
    assert _found(definition, "property-description-missing") == [
        ("/inputSchema/properties/b~0~1", "'b~/' has no description")
    ]
    assert _found(definition, "tool-description-missing") == [
        ("/description", "the tool has no description")
    ]
    assert _found(_tool({"type": "object"}, description="  "), "tool-description-missing")


# -- the configuration file --------------------------------------------------------------


def _repository(tmp_path: Path, config: str, manifests: dict[str, dict[str, Any]]) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "mcp-registry.yaml").write_text(config)
    for name, tool in manifests.items():
        path = tmp_path / "tools" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"namespace": "billing", "tool": tool}, indent=2))
    return tmp_path


BAD_DEFAULT = _tool(
    {
        "type": "object",
        "properties": {"n": {"type": "integer", "default": "x", "description": "n"}},
    }
)
NO_DESCRIPTION = {**_tool({"type": "object"}, description=None), "name": "u"}


def test_a_config_turns_rules_on_and_off_and_ignores_by_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _repository(
        tmp_path,
        "version: 1\nmanifests: [tools]\nlint:\n  use: [correctness, docs, tool-name-portable]\n"
        "  except: [tool-description-missing]\n"
        "  ignore:\n    - {rule: default-invalid, path: tools/legacy/*.json}\n",
        {
            "t.json": BAD_DEFAULT,
            "legacy/t.json": {**BAD_DEFAULT, "name": "legacy.t"},
            "u.json": NO_DESCRIPTION,
        },
    )
    monkeypatch.chdir(root / "tools")  # found from a subfolder, up to the repository root
    config = find(None)
    assert [rule.name for rule in config.rules()] == [
        "required-undeclared",
        "default-invalid",
        "examples-invalid",
        "enum-duplicate",
        "property-description-missing",
        "tool-name-portable",
    ]
    code, out, err = run(capsys, "lint")
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"{root}/tools/legacy/t.json:4:5: ")
    assert lines[0].endswith(
        "tool-name-portable: /tool/name: 'legacy.t' is not portable: use 1-64 of A-Z a-z 0-9 _ -"
    )
    expected = (
        rf"{root}/tools/t.json:\d+:\d+: default-invalid: "
        r"/tool/inputSchema/properties/n/default: the default is refused"
    )
    assert re.match(expected, lines[1])
    assert lines[2] == "lint failed: 2 findings in 3 tools (rules: correctness, docs, portability)"

    code, out, _ = run(capsys, "lint", "--format", "json")
    findings = json.loads(out)["findings"]
    assert [(f["rule"], f["tool"]) for f in findings] == [
        ("tool-name-portable", "legacy.t"),
        ("default-invalid", "t"),
    ]
    code, out, _ = run(capsys, "lint", "--format", "github", str(root / "tools" / "t.json"))
    assert code == 1
    assert out.startswith("::error file=") and "line=10,col=11,title=default-invalid::" in out


def test_lint_passes_and_lists_its_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _repository(tmp_path, "lint: {use: [correctness]}\n", {"t.json": NO_DESCRIPTION})
    monkeypatch.chdir(root)
    code, out, err = run(capsys, "lint", "tools")
    assert (code, out, err) == (0, "lint passed: 1 tool (rules: correctness)\n", "")
    code, out, _ = run(capsys, "lint", "--list")
    states = {line.split()[0]: line.split()[2] for line in out.splitlines()}
    assert states == {
        name: "on" if RULES[name].category == "correctness" else "off" for name in RULES
    }


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            "lint:\n  use: [correctness, doc]\n",
            "mcp-registry.yaml:2:22: /lint/use/1: unknown rule "
            "or category 'doc' (did you mean 'docs'?)",
        ),
        ("lint:\n  ignore: [{}]\n", "/lint/ignore/0: an ignore names a rule, a path or both"),
        ("fail_on: [breaking, risky]\n", "unknown fail_on value 'risky' (did you mean 'risk'?)"),
        ("version: 2\n", "/version: version 2 is not known"),
        ("lint: {use: correctness}\n", "Expected `array`, got `str`"),
        ("linting: {}\n", "unknown field `linting`"),
    ],
)
def test_a_bad_config_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    config: str,
    message: str,
) -> None:
    root = _repository(tmp_path, config, {"t.json": BAD_DEFAULT})
    monkeypatch.chdir(root)
    with pytest.raises(ConfigError, match=re.escape(message)):
        find(None)
    code, out, err = run(capsys, "lint", "tools")
    assert (code, out) == (2, "")
    assert_one_line_error(err, message)


def test_without_a_folder_or_a_config_lint_says_what_to_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "lint")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "no DIR given")
