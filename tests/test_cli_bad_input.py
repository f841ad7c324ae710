"""Bad input through the command line (issue 6): `diff`, `check` and `apply`.

The catalogue of tests/api/test_bad_input.py where it applies to files: each
case writes one bad file and runs the verbs it concerns in-process. Each run
must exit 2 with one line on stderr, `registry: <file>...: <what is wrong>`,
nothing on stdout, and never a traceback. `check` runs offline
(`--against-file`); `apply` gets `--url http://127.0.0.1:1`, where nothing
listens: the manifests are refused before any network call.

The last tests are the unit tests of `registry.patterns`, the linear-time
matching that the checks of `pattern` here rely on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft201909Validator, Draft202012Validator

from registry.cli import EXIT_USAGE, VERBS, main
from registry.definitions import MAX_IN_PLACE_SCHEMAS, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES
from registry.documents import MAX_DOCUMENT_BYTES, MAX_DOCUMENT_DEPTH, MAX_EXPANDED_NODES
from registry.patterns import PatternError, check_pattern, linear_validator, search
from tests.fixtures.seeds import DB_QUERY_V3

UNREACHABLE = "http://127.0.0.1:1"

# -- running a verb ---------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`registry ARGV` in-process (registry.cli.main)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- documents --------------------------------------------------------------------------------


def manifest(tool: Any = None, namespace: str = "billing", **fields: Any) -> dict[str, Any]:
    return {"namespace": namespace, "tool": tool if tool is not None else DB_QUERY_V3, **fields}


def with_schema(schema: Any) -> dict[str, Any]:
    return {"name": "db.query", "inputSchema": schema}


def with_prop(schema: dict[str, Any]) -> dict[str, Any]:
    return with_schema({"type": "object", "properties": {"x": schema}})


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def ref_bomb(levels: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"l0": {"type": "string"}}
    for level in range(1, levels + 1):
        below = {"$ref": f"#/$defs/l{level - 1}"}
        defs[f"l{level}"] = {"allOf": [below, dict(below)]}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": f"#/$defs/l{levels}"}}}


def yaml_bomb(levels: int = 9) -> str:
    """Billion laughs: each anchor a list of ten aliases of the one before."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return (
        "namespace: billing\n"
        "tool:\n  name: db.query\n  inputSchema: {type: object}\n"
        "  _meta:\n" + "".join(f"    {line}\n" for line in lines)
    )


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2)


@dataclass(frozen=True)
class Case:
    name: str
    verbs: tuple[str, ...]  # "diff" (the file is NEW), "check" and "apply" (a manifest)
    file: str  # the bad file's name
    # the file as is, or a tool definition: NEW for diff, a manifest's `tool` otherwise
    content: str | bytes | Callable[[], str | bytes] | Tool
    message: str  # a substring of the one line on stderr


@dataclass(frozen=True)
class Tool:
    definition: dict[str, Any] | Callable[[], dict[str, Any]]

    def text(self, verb: str) -> str:
        definition = self.definition() if callable(self.definition) else self.definition
        return json.dumps(definition if verb == "diff" else manifest(definition))


ALL = ("check", "apply")
RENAME_BAD_ESCAPE = {"op": "rename", "from": "/a~2b", "to": "/b"}
DEFINITION = ("diff",)

CASES: list[Case] = [
    # -- reading the file ------------------------------------------------------------------
    Case(
        "file of 5 MiB",
        (*DEFINITION, *ALL),
        "big.json",
        lambda: '{"name": "db.query", "description": "' + "x" * (5 * 1024 * 1024) + '"}',
        f"document is larger than {MAX_DOCUMENT_BYTES} bytes",
    ),
    Case("empty file", (*DEFINITION, *ALL), "empty.yaml", "", "empty document"),
    Case(
        "file that is not UTF-8",
        (*DEFINITION, *ALL),
        "latin1.yaml",
        b"namespace: billing\ntool: {name: caf\xe9}\n",
        "UTF-8",
    ),
    Case(
        "invalid JSON",
        (*DEFINITION, *ALL),
        "bad.json",
        '{"name": "db.query",',
        "invalid JSON",
    ),
    Case(
        "invalid YAML",
        (*DEFINITION, *ALL),
        "bad.yaml",
        "namespace: billing\ntool: [unclosed\n",
        "invalid YAML",
    ),
    Case(
        "duplicate key in JSON",
        (*DEFINITION, *ALL),
        "dup.json",
        '{"namespace": "billing", "tool": {"name": "db.query", "name": "other"}}',
        "duplicate key 'name'",
    ),
    Case(
        "duplicate key in YAML",
        (*DEFINITION, *ALL),
        "dup.yaml",
        "namespace: billing\ntool:\n  name: db.query\n  inputSchema: {type: object}\n"
        "  name: other\n",
        "duplicate key 'name'",
    ),
    Case(
        "YAML anchor bomb",
        (*DEFINITION, *ALL),
        "bomb.yaml",
        yaml_bomb(),
        f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes",
    ),
    Case(
        "recursive YAML alias",
        (*DEFINITION, *ALL),
        "loop.yaml",
        "namespace: billing\ntool: &t\n  name: db.query\n  inputSchema: {type: object}\n"
        "  _meta: *t\n",
        "recursive YAML alias",
    ),
    Case(
        "document nested 10,000 levels",
        (*DEFINITION, *ALL),
        "deep.json",
        lambda: '{"namespace": "billing", "tool": ' + "[" * 10_000 + "]" * 10_000 + "}",
        f"nested deeper than {MAX_DOCUMENT_DEPTH} levels",
    ),
    Case(
        "NaN literal in JSON",
        (*DEFINITION, *ALL),
        "nan.json",
        '{"name": "db.query", "inputSchema": {"type": "object", "maximum": NaN}}',
        "NaN is not JSON",
    ),
    Case(
        "number past double range in JSON",
        (*DEFINITION, *ALL),
        "huge.json",
        '{"name": "db.query", "inputSchema": {"type": "object", "maximum": 1e400}}',
        "number 1e400 is out of range",
    ),
    Case(
        ".nan in YAML",
        (*DEFINITION, *ALL),
        "nan.yaml",
        "namespace: billing\ntool: {name: db.query, inputSchema: {type: object, maximum: .nan}}\n",
        ".nan is not a JSON number",
    ),
    # -- the definition ----------------------------------------------------------------------
    Case(
        "definition not an object",
        DEFINITION,
        "list.json",
        "[1, 2]",
        "expected a tool definition or a JSON Schema object, not an array",
    ),
    Case(
        "tool not an object in a manifest",
        ALL,
        "list.yaml",
        as_json(manifest([1, 2])),
        "/tool",
    ),
    Case(
        f"schema nested past {MAX_SCHEMA_DEPTH} levels",
        (*DEFINITION, *ALL),
        "nested.json",
        Tool(with_schema(nested(MAX_SCHEMA_DEPTH + 1))),
        f"nested deeper than {MAX_SCHEMA_DEPTH} levels",
    ),
    Case(
        f"schema of more than {MAX_SCHEMA_NODES:,} nodes",
        (*DEFINITION, *ALL),
        "wide.json",
        Tool(
            lambda: with_schema(
                {
                    "type": "object",
                    "properties": {f"p{i}": {} for i in range(MAX_SCHEMA_NODES + 1)},
                }
            )
        ),
        f"more than {MAX_SCHEMA_NODES} nodes",
    ),
    Case(
        "ref cycle",
        (*DEFINITION, *ALL),
        "cycle.json",
        Tool(
            with_schema(
                {
                    "type": "object",
                    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                    "properties": {"x": {"$ref": "#/$defs/a"}},
                }
            )
        ),
        "$ref cycle that never reaches a property or item",
    ),
    Case(
        "ref bomb",
        (*DEFINITION, *ALL),
        "refbomb.json",
        Tool(with_schema(ref_bomb(30))),
        f"more than {MAX_IN_PLACE_SCHEMAS} subschemas to one value",
    ),
    Case(
        "ref to a missing target",
        (*DEFINITION, *ALL),
        "missing.json",
        Tool(with_prop({"$ref": "#/$defs/nope"})),
        "$ref to missing target '#/$defs/nope'",
    ),
    Case(
        "remote ref",
        (*DEFINITION, *ALL),
        "remote.json",
        Tool(with_prop({"$ref": "https://127.0.0.1:1/s.json"})),
        "$ref to remote target",
    ),
    Case(
        "pattern that does not compile",
        (*DEFINITION, *ALL),
        "pattern.json",
        Tool(with_prop({"type": "string", "pattern": "(unclosed"})),
        "pattern '(unclosed' does not compile",
    ),
    Case(
        "pattern with a lookbehind",
        (*DEFINITION, *ALL),
        "lookbehind.json",
        Tool(with_prop({"type": "string", "pattern": "(?<!x)y"})),
        "uses a negative lookbehind assertion",
    ),
    Case(
        "patternProperties key with a backreference",
        (*DEFINITION, *ALL),
        "backref.json",
        Tool(with_schema({"type": "object", "patternProperties": {"(a)\\1": {}}})),
        "uses a backreference",
    ),
    # -- names ---------------------------------------------------------------------------------
    *[
        Case(
            f"tool name {label}",
            (*DEFINITION, *ALL),
            f"name-{index}.json",
            Tool({**DB_QUERY_V3, "name": name}),
            "1 to 128 characters",
        )
        for index, (label, name) in enumerate(
            [
                ("empty", ""),
                ("of 129 characters", "t" * 129),
                ("with a slash", "db/query"),
                ("with a space", "db query"),
                ("with a Cyrillic a", "d\u0430ta"),
            ]
        )
    ],
    *[
        Case(
            f"namespace {label}",
            ALL,
            f"ns-{index}.json",
            as_json(manifest(namespace=namespace)),
            "/namespace: ",
        )
        for index, (label, namespace) in enumerate(
            [
                ("uppercase", "Billing"),
                ("with a leading dash", "-billing"),
                ("of 64 characters", "n" * 64),
                ("with an underscore", "bill_ing"),
            ]
        )
    ],
    # -- versions, converters, pointers ---------------------------------------------------------
    *[
        Case(
            f"retire {value!r}",
            ALL,
            f"retire-{index}.json",
            as_json(manifest(retire=[value])),
            "/retire/0: ",
        )
        # 10**12 is a well-formed version for a manifest: the registry answers that
        # it does not exist (tests/api/test_bad_input.py)
        for index, value in enumerate([0, -1, 1.5, "abc"])
    ],
    Case(
        "unknown converter op",
        ALL,
        "teleport.json",
        as_json(manifest(converters=[{"from": 1, "ops": [{"op": "teleport", "path": "/x"}]}])),
        "/converters/0/ops/0",
    ),
    Case(
        "pointer without a leading slash",
        ALL,
        "noslash.json",
        as_json(manifest(converters=[{"from": 1, "ops": [{"op": "drop", "path": "no-slash"}]}])),
        '"no-slash" does not match',
    ),
    Case(
        "pointer with a bad escape",
        ALL,
        "escape.json",
        as_json(
            manifest(
                converters=[{"from": 1, "ops": [{"op": "rename", "from": "/a~2b", "to": "/b"}]}]
            )
        ),
        '"/a~2b" does not match',
    ),
]

RUNS = [(case, verb) for case in CASES for verb in case.verbs]


def test_the_catalogue_is_named_and_covers_each_verb() -> None:
    assert {"diff", "check", "apply"} <= {verb.name for verb in VERBS}
    names = [case.name for case in CASES]
    assert len(set(names)) == len(names)
    assert len(CASES) >= 40
    assert {verb for _, verb in RUNS} == {"diff", "check", "apply"}


@pytest.mark.parametrize(
    ("case", "verb"), RUNS, ids=[f"{verb}: {case.name}" for case, verb in RUNS]
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case, verb: str
) -> None:
    if isinstance(case.content, Tool):
        content: str | bytes = case.content.text(verb)
    else:
        content = case.content() if callable(case.content) else case.content
    bad = tmp_path / "tools" / "billing" / case.file
    bad.parent.mkdir(parents=True)
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    if verb == "diff":
        old = tmp_path / "old.json"
        old.write_text(as_json(DB_QUERY_V3))
        argv = ["diff", str(old), str(bad)]
    elif verb == "check":
        argv = ["check", str(tmp_path / "tools"), "--against-file", str(tmp_path / "none.json")]
    else:
        argv = ["apply", str(tmp_path / "tools"), "--url", UNREACHABLE, "--timeout", "2"]
    code, out, err = run(capsys, *argv)
    assert "Traceback" not in err
    assert code == EXIT_USAGE, (code, out, err)
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"registry: {bad}"), err
    assert case.message in err, err


def _check_against(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> tuple[Path, int, str, str]:
    tools = tmp_path / "tools"
    (tools / "billing").mkdir(parents=True, exist_ok=True)
    (tools / "billing" / "db.query.json").write_text(as_json(manifest()))
    toolset = tmp_path / "toolset.json"
    toolset.write_text(content)
    return toolset, *run(capsys, "check", str(tools), "--against-file", str(toolset))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"namespace": ', "toolset payload is not JSON"),
        ('{"a": 1, "a": 2}', "toolset digest mismatch"),
        ("[1]", "toolset payload is not a JSON object"),
    ],
    ids=["truncated", "duplicate key", "not an object"],
)
def test_a_bad_toolset_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    toolset, code, out, err = _check_against(tmp_path, capsys, content)
    assert "Traceback" not in err
    assert (code, out) == (EXIT_USAGE, ""), err
    assert err.count("\n") == 1, err
    assert err.startswith(f"registry: {toolset}: "), err
    assert message in err, err


def test_a_deeply_nested_toolset_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toolset, code, out, err = _check_against(tmp_path, capsys, "[" * 10_000 + "]" * 10_000)
    assert (code, out) == (EXIT_USAGE, ""), err
    assert err.startswith(f"registry: {toolset}: "), err


@pytest.mark.parametrize(
    ("verb", "name", "content", "message"),
    [
        ("diff", "bomb.yaml", yaml_bomb(), "YAML aliases expand to more than"),
        ("apply", "bomb.yaml", yaml_bomb(), "YAML aliases expand to more than"),
        # refused by RE2 itself, which would log to the process's stderr (fd 2)
        (
            "diff",
            "repeat.json",
            json.dumps(with_prop({"pattern": "a{1001}"})),
            "not supported by RE2",
        ),
    ],
    ids=["diff: YAML anchor bomb", "apply: YAML anchor bomb", "diff: pattern RE2 refuses"],
)
def test_the_console_script_says_one_line(
    tmp_path: Path, verb: str, name: str, content: str, message: str
) -> None:
    """The same through `registry` as installed: stderr at the file descriptor level."""
    old, new = tmp_path / "old.json", tmp_path / "tools" / "billing" / name
    old.write_text(as_json(DB_QUERY_V3))
    new.parent.mkdir(parents=True)
    new.write_text(content)
    script = Path(sys.executable).parent / "registry"
    if verb == "diff":
        argv = [str(script), "diff", str(old), str(new)]
    else:
        argv = [str(script), "apply", str(tmp_path / "tools"), "--url", UNREACHABLE]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == EXIT_USAGE, done
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"registry: {new}"), done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_diff_against_a_catastrophic_pattern_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value = "a" * 27 + "!"
    old_schema = {"type": "string", "default": value, "enum": [value, "a"]}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(with_prop(old_schema)))
    new.write_text(json.dumps(with_prop({**old_schema, "pattern": "^(a+)+$"})))
    code, _, err = run(capsys, "diff", str(old), str(new))
    assert (code, err) == (1, "")


# -- registry.patterns ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "does not compile"),
        ("(a)\\1", "a backreference"),
        ("(?P<x>a)(?P=x)", "a backreference"),
        ("(?=a)", "a lookahead assertion"),
        ("(?!a)", "a negative lookahead assertion"),
        ("(?<=a)b", "a lookbehind assertion"),
        ("(?<!a)b", "a negative lookbehind assertion"),
        ("(a)?(?(1)b|c)", "a conditional group"),
        ("(?>a)", "an atomic group"),
        ("a++", "a possessive quantifier"),
        ("(?x) a", "not supported by RE2"),
        ("a{1001}", "not supported by RE2"),
        ("(" * 600 + ")" * 600, "nests groups too deeply"),
        ("x" * 9000, "longer than 8192 characters"),
    ],
)
def test_check_pattern_refuses_what_is_not_linear(pattern: str, message: str) -> None:
    with pytest.raises(PatternError, match=message.replace("(", "\\(")):
        check_pattern(pattern)


def test_catastrophic_patterns_are_accepted_and_run_in_linear_time() -> None:
    check_pattern("^(a+)+$")
    assert not search("^(a+)+$", "a" * 100_000 + "!")
    assert search("^(a+)+$", "a" * 100_000)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("\\u00e9", "caf\u00e9", True),
        ("\\N{LATIN SMALL LETTER E WITH ACUTE}", "caf\u00e9", True),
        ("^a\\Z", "a", True),
        ("a{,3}b", "b", True),
        ("[\\b]", "\b", True),
        ("[]a]", "]", True),
        ("^[a-z]+$", "abc\n", False),  # ECMA-262's `$`, not Python's
        ("\\d", "\u0663", False),  # ECMA-262's ASCII `\d`
        ("^[a-z0-9-]{1,63}$", "billing", True),
    ],
)
def test_search_speaks_python_spellings_with_ecma_meaning(
    pattern: str, text: str, found: bool
) -> None:
    check_pattern(pattern)
    assert search(pattern, text) is found


@pytest.mark.parametrize("cls", [Draft202012Validator, Draft201909Validator, Draft7Validator])
def test_linear_validator_agrees_with_jsonschema_and_stays_bounded(cls: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^p": {"type": "integer"}, "^(x+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    fast, reference = linear_validator(cls)(schema), cls(schema)
    for instance in ({"a": "aa"}, {"p1": 1}, {"p1": "s"}, {"xx": "s"}, {"y": 1}, {"a": "b"}):
        assert fast.is_valid(instance) == reference.is_valid(instance), instance
        assert [e.message for e in fast.iter_errors(instance)] == [
            e.message for e in reference.iter_errors(instance)
        ]
    assert not fast.is_valid({"a": "a" * 50 + "!"})
    assert not fast.is_valid({"x" * 50 + "!": "s"})
    if "unevaluatedProperties" in cls.VALIDATORS:
        closed = {"allOf": [{"patternProperties": {"^p": {}}}], "unevaluatedProperties": False}
        fast, reference = linear_validator(cls)(closed), cls(closed)
        for instance in ({"p1": 1}, {"q": 1}, {}):
            assert fast.is_valid(instance) == reference.is_valid(instance), instance
            assert [e.message for e in fast.iter_errors(instance)] == [
                e.message for e in reference.iter_errors(instance)
            ]
