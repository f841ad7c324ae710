"""The `registry` command line: `digest` and `diff`, in-process and as a console script."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from registry.canonical import digest
from registry.cli import VERBS, main
from registry.compat import classify
from registry.documents import MAX_DOCUMENT_DEPTH, parse_document
from tests.fixtures.seeds import DB_QUERY_V3

OLD = DB_QUERY_V3
BREAKING_YAML = """\
name: db.query
description: Run a read-only SQL query.
inputSchema:
  type: object
  properties:
    query: {type: string}
    timeout: {type: integer}
    mode: {type: string, enum: [read]}
  required: [query]
"""
ADDITIVE = {
    **OLD,
    "inputSchema": {
        **OLD["inputSchema"],
        "properties": {**OLD["inputSchema"]["properties"], "explain": {"type": "boolean"}},
    },
}


def _yaml(text: str) -> Any:
    return parse_document(text, "x.yaml")


def write(directory: Path, name: str, content: Any) -> str:
    path = directory / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(err: str, out: str, starts: str) -> None:
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"registry: {starts}"), err
    assert "Traceback" not in err


# -- digest -----------------------------------------------------------------------------


def test_digest_prints_the_canonical_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "old.json", OLD)
    code, out, err = run(capsys, "digest", path)
    assert (code, err) == (0, "")
    assert out == digest(OLD) + "\n"


def test_digest_of_a_publish_body_is_the_digest_of_its_definition(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "publish.json", {"definition": OLD, "retire": [1]})
    code, out, err = run(capsys, "digest", path)
    assert (code, err, out) == (0, "", digest(OLD) + "\n")


def test_digest_is_the_same_for_json_and_yaml_and_any_key_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reordered = dict(reversed(list(OLD.items())))
    as_yaml = "\n".join(f"{key}: {json.dumps(value)}" for key, value in reordered.items())
    digests = set()
    for name, content in (("a.json", OLD), ("b.json", reordered), ("c.yaml", as_yaml)):
        code, out, _ = run(capsys, "digest", write(tmp_path, name, content))
        assert code == 0
        digests.add(out)
    assert len(digests) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "not a tool definition (an object with `inputSchema`), a manifest or a publish"),
        ('{"name": "t", "description": "no inputSchema"}', "not a tool definition"),
        ('{"definition": {"name": "t"}}', ":1:16: /definition: 'inputSchema' is required"),
        (
            '{"name": "t", "inputSchema": {"type": "object"}, "n": 9007199254740993}',
            "not canonicalisable",
        ),
        ('{"a": 1,\n "a": 2}', "duplicate key 'a'"),
    ],
)
def test_digest_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = write(tmp_path, "bad.json", content)
    code, out, err = run(capsys, "digest", path)
    assert code == 2
    assert_one_line_error(err, out, path)
    assert message in err


# -- diff: results ------------------------------------------------------------------------


def test_breaking_diff_exits_1_with_a_readable_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.json", OLD)
    new = write(tmp_path, "new.yaml", BREAKING_YAML)
    code, out, err = run(capsys, "diff", old, new)
    assert (code, err) == (1, "")
    report = classify(OLD, _yaml(BREAKING_YAML))
    lines = out.splitlines()
    assert lines[0].split() == ["SEVERITY", "KIND", "PATH", "OLD", "->", "NEW"]
    for change in report.changes:
        row = next(line for line in lines if change.path in line and change.kind.value in line)
        assert row.startswith(change.severity.value)
        assert change.message in out
        if change.witness is not None:
            assert f"witness: {json.dumps(change.witness, separators=(',', ':'))}" in out
    assert {"property-renamed", "enum-narrowed", "default-removed"} <= {
        c.kind.value for c in report.changes
    }
    assert lines[-1].startswith("breaking: ")
    assert "\x1b[" not in out  # capsys is not a terminal


def test_additive_diff_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "diff", write(tmp_path, "a.json", OLD), write(tmp_path, "b.json", ADDITIVE)
    )
    assert code == 0
    assert "property-added" in out
    assert "/inputSchema/properties/explain" in out
    assert out.splitlines()[-1].startswith("additive: ")


def test_identical_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write(tmp_path, "a.json", OLD)
    code, out, _ = run(capsys, "diff", old, old)
    assert (code, out) == (0, "identical: no changes\n")


def test_json_format_is_the_report_encoded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.json", OLD)
    new = write(tmp_path, "new.yaml", BREAKING_YAML)
    code, out, _ = run(capsys, "diff", "--format", "json", old, new)
    assert code == 1
    expected = classify(OLD, _yaml(BREAKING_YAML))
    assert out == msgspec.json.encode(expected).decode() + "\n"
    decoded = json.loads(out)
    assert decoded["severity"] == "breaking"
    assert set(decoded["changes"][0]) == {
        "kind",
        "severity",
        "path",
        "message",
        "old",
        "new",
        "witness",
        "suggested_op",
    }


def test_json_format_additive_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [write(tmp_path, "a.json", OLD), write(tmp_path, "b.json", ADDITIVE)]
    code, out, _ = run(capsys, "diff", "--format=json", *args)
    assert code == 0
    assert json.loads(out)["severity"] == "additive"


def test_bare_schemas_are_compared_as_input_schemas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path, "old.json", OLD["inputSchema"])
    new = write(tmp_path, "new.json", {**OLD["inputSchema"], "required": ["query", "mode"]})
    code, out, _ = run(capsys, "diff", "--format", "json", old, new)
    assert code == 1
    changes = json.loads(out)["changes"]
    assert [c["kind"] for c in changes] == ["required-added"]
    assert changes[0]["path"].startswith("/inputSchema/")
    assert changes[0]["witness"] == {"query": changes[0]["witness"]["query"]}


def test_manifests_are_compared_by_their_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`diff` and `digest` take the manifest files `plan`/`apply` read; errors point into
    the manifest (`/tool/...`, its line and column)."""
    manifest = "namespace: billing\ntool:\n" + "".join(
        f"  {line}\n" for line in BREAKING_YAML.splitlines()
    )
    old = write(tmp_path, "old.json", OLD)
    new = write(tmp_path, "db.query.yaml", manifest + "retire: [1]\n")
    code, out, _ = run(capsys, "diff", "--format", "json", old, new)
    assert code == 1
    assert json.loads(out) == json.loads(msgspec.json.encode(classify(OLD, _yaml(BREAKING_YAML))))
    code, out, _ = run(capsys, "digest", new)
    assert (code, out) == (0, digest(_yaml(BREAKING_YAML)) + "\n")

    bad = write(tmp_path, "bad.yaml", manifest.replace("{type: integer}", "{type: integr}"))
    code, out, err = run(capsys, "diff", old, bad)
    assert code == 2
    assert_one_line_error(err, out, f"{bad}:9:")
    assert "/tool/inputSchema/properties/timeout/type" in err


# -- colour ----------------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("flag", "no_color", "coloured"),
    [
        (None, None, True),
        (None, "1", False),
        ("--color=never", None, False),
        ("--color=always", "1", True),
    ],
)
def test_colour_on_a_terminal_unless_no_color(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flag: str | None,
    no_color: str | None,
    coloured: bool,
) -> None:
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    args = [write(tmp_path, "a.json", OLD), write(tmp_path, "b.yaml", BREAKING_YAML)]
    assert main(["diff", *([flag] if flag else []), *args]) == 1
    assert ("\x1b[1;31mbreaking" in terminal.getvalue()) is coloured


# -- diff: bad input, one line, exit 2 -----------------------------------------------------------


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write(tmp_path, "old.json", OLD)
    missing = str(tmp_path / "new.json")
    code, out, err = run(capsys, "diff", old, missing)
    assert code == 2
    assert_one_line_error(err, out, missing)
    assert err == f"registry: {missing}: no such file\n"


def test_invalid_json_names_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "new.json", '{\n  "name": "t",\n  "inputSchema": {"type": "object",}\n}')
    code, out, err = run(capsys, "diff", write(tmp_path, "old.json", OLD), bad)
    assert code == 2
    assert_one_line_error(err, out, f"{bad}:3:36: invalid JSON: ")


def test_invalid_yaml_names_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "new.yaml", "name: t\ninputSchema:\n  type: object: x\n")
    code, out, err = run(capsys, "diff", write(tmp_path, "old.json", OLD), bad)
    assert code == 2
    assert_one_line_error(err, out, f"{bad}:3:15: invalid YAML: ")


def test_meta_schema_failure_names_the_keyword(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(
        tmp_path,
        "new.yaml",
        "name: t\ninputSchema:\n  type: object\n  properties:\n"
        "    x: {type: string, minLength: -1}\n",
    )
    code, out, err = run(capsys, "diff", write(tmp_path, "old.json", OLD), bad)
    assert code == 2
    assert_one_line_error(
        err, out, f"{bad}:5:34: /inputSchema/properties/x/minLength: 'minLength' is invalid: "
    )


def test_invalid_definition_is_refused_in_the_old_file_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "old.json", {**OLD, "name": "db query"})
    code, out, err = run(capsys, "diff", bad, write(tmp_path, "new.json", OLD))
    assert code == 2
    assert_one_line_error(err, out, f"{bad}:2:11: /name: tool name 'db query'")


def test_ref_to_a_missing_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path,
        "new.json",
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/Nope"}}},
    )
    code, out, err = run(capsys, "diff", write(tmp_path, "old.json", OLD), bad)
    assert code == 2
    # a bare schema: the pointer is the place in that file
    assert_one_line_error(err, out, f"{bad}:5:15: /properties/x/$ref: $ref to missing target")


def test_a_schema_the_engine_refuses_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nesting through a chain of $refs is only seen by the engine (LIMITS.max_depth)."""
    defs: dict[str, Any] = {
        f"D{i}": {"type": "object", "properties": {"n": {"$ref": f"#/$defs/D{i + 1}"}}}
        for i in range(100)
    }
    defs["D100"] = {"type": "string"}
    deep = {"type": "object", "$defs": defs, "properties": {"root": {"$ref": "#/$defs/D0"}}}
    old = write(tmp_path, "old.json", OLD["inputSchema"])
    bad = write(tmp_path, "deep.json", deep)
    for argv in (["diff", old, bad], ["diff", bad, old]):
        code, out, err = run(capsys, *argv)
        assert code == 2
        assert_one_line_error(err, out, f"{bad}:")
        assert "nested deeper than" in err


@pytest.mark.timeout(30)
@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_ten_thousand_levels_of_nesting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    deep = '{"type": "object", "properties": {"x": ' + "[" * 10_000 + "]" * 10_000 + "}}"
    bad = write(tmp_path, f"deep.{suffix}", deep)
    code, out, err = run(capsys, "diff", write(tmp_path, "old.json", OLD), bad)
    assert code == 2
    assert_one_line_error(err, out, f"{bad}:1:")
    assert f"nested deeper than {MAX_DOCUMENT_DEPTH} levels" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "expected a tool definition, a manifest or a JSON Schema object, not an array"),
        ('{"type": "array"}', 'must be an object schema ("type": "object")'),
        ("", "empty document"),
    ],
)
def test_documents_that_are_not_definitions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = write(tmp_path, "new.json", content)
    code, out, err = run(capsys, "diff", write(tmp_path, "old.json", OLD), bad)
    assert code == 2
    assert_one_line_error(err, out, bad)
    assert message in err


@pytest.mark.parametrize(
    "argv",
    [[], ["diff", "only-one.json"], ["diff", "a", "b", "--format", "xml"], ["nope"]],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert "usage: registry" in err


def test_help_exits_0_and_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for verb in VERBS:
        assert verb.name in out


# -- the console script -------------------------------------------------------------------------


def test_as_a_subprocess(tmp_path: Path) -> None:
    old = write(tmp_path, "old.json", OLD)
    new = write(tmp_path, "new.yaml", BREAKING_YAML)
    script = Path(sys.executable).with_name("registry")
    commands = [[sys.executable, "-m", "registry"]]
    if script.exists():
        commands.append([str(script)])
    for command in commands:
        diff = subprocess.run(
            [*command, "diff", old, new], capture_output=True, text=True, check=False
        )
        assert diff.returncode == 1, diff.stderr
        assert "property-renamed" in diff.stdout
        digested = subprocess.run(
            [*command, "digest", old], capture_output=True, text=True, check=False
        )
        assert (digested.returncode, digested.stdout) == (0, digest(OLD) + "\n")
        missing = subprocess.run(
            [*command, "digest", str(tmp_path / "gone.json")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert missing.returncode == 2
        assert missing.stderr == f"registry: {tmp_path / 'gone.json'}: no such file\n"


# -- the package's shape ------------------------------------------------------------------------


def test_the_verb_modules_import_no_circle() -> None:
    """registry/cli/: no verb module imports the package `__init__` (where VERBS is
    assembled), and the modules' imports of each other form no circle."""
    import ast

    package = Path(__file__).resolve().parents[1] / "registry" / "cli"
    imports: dict[str, set[str]] = {}
    for path in sorted(package.glob("*.py")):
        if path.name == "__init__.py":
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        assert "registry.cli" not in names, f"{path.name} imports registry.cli"
        imports[path.stem] = {
            n.removeprefix("registry.cli.") for n in names if n.startswith("registry.cli.")
        }
    assert {"common", "diff_digest", "service", "client", "pipeline", "render"} <= set(imports)

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for name in imports.get(start, set()):
            if name == target or (name not in seen and reaches(name, target, seen | {name})):
                return True
        return False

    assert [name for name in imports if reaches(name, name, set())] == []


def test_the_verb_table_names_each_module_s_own_verbs() -> None:
    from registry.cli import MODULES, module_verbs

    assert {module: tuple(v.name for v in module_verbs(module)) for module in MODULES} == MODULES
    package = Path(__file__).resolve().parents[1] / "registry" / "cli"
    holding = {
        path.stem
        for path in package.glob("*.py")
        if "VERBS: list[Verb]" in path.read_text(encoding="utf-8")
    }
    assert holding == set(MODULES), "a module with verbs is missing from MODULES"


def test_a_verb_imports_only_its_own_module() -> None:
    """`registry diff` never imports the MCP client `capture` needs, nor the pipeline."""
    probe = (
        "import sys, runpy; sys.argv = ['registry', 'diff', '--help']\n"
        "try:\n    runpy.run_module('registry', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('registry.cli.')), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = done.stderr.strip().splitlines()[-1]
    assert "registry.cli.diff_digest" in loaded
    for other in ("capture", "live", "pipeline", "service", "lifecycle"):
        assert f"registry.cli.{other}'" not in loaded, loaded
