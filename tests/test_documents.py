"""Loading JSON and YAML documents: values, refusals, positions, limits."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry import documents, yaml_documents
from registry.documents import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_DEPTH,
    MAX_DOCUMENT_NODES,
    DocumentError,
    load_document,
    locate,
    parse_document,
)


def refusal(text: str | bytes, name: str) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        parse_document(text, name)
    return caught.value


# -- reading files ------------------------------------------------------------------


def test_loads_json_and_yaml_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"name": "t", "n": [1, 2.5, null, true]}')
    (tmp_path / "b.yaml").write_text("name: t\nn: [1, 2.5, null, true]\n")
    (tmp_path / "c.yml").write_text("name: t\nn:\n  - 1\n  - 2.5\n  - ~\n  - true\n")
    expected = {"name": "t", "n": [1, 2.5, None, True]}
    for name in ("a.json", "b.yaml", "c.yml"):
        assert load_document(tmp_path / name) == expected


def test_format_without_a_known_suffix_is_sniffed(tmp_path: Path) -> None:
    (tmp_path / "json.txt").write_text('  {"a": 1}')
    (tmp_path / "yaml.txt").write_text("a: 1\n")
    assert load_document(tmp_path / "json.txt") == {"a": 1}
    assert load_document(tmp_path / "yaml.txt") == {"a": 1}
    # named .json, so YAML syntax is a JSON error, not silently accepted
    assert "invalid JSON" in str(refusal("a: 1\n", "x.json"))


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(DocumentError) as caught:
        load_document(path)
    assert str(caught.value) == f"{path}: no such file"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="is a directory"):
        load_document(tmp_path)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    with pytest.raises(DocumentError, match="permission denied"):
        load_document(path)


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a: [1]\n")))
    assert load_document("-") == {"a": [1]}


def test_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b'"' + b"x" * MAX_DOCUMENT_BYTES + b'"')
    with pytest.raises(DocumentError, match=f"larger than {MAX_DOCUMENT_BYTES} bytes"):
        load_document(path)
    assert "larger than" in str(refusal("#" * (MAX_DOCUMENT_BYTES + 1), "x.yaml"))


def test_not_utf8_reports_the_position() -> None:
    error = refusal(b'{"a":\n  "\xc3\x28"}', "x.json")
    assert (error.line, error.column) == (2, 4)
    assert str(error) == "x.json:2:4: not UTF-8 text"


def test_a_byte_order_mark_is_ignored() -> None:
    assert parse_document("\ufeff{}".encode(), "x.json") == {}


@pytest.mark.parametrize("text", ["", "  \n", "# only a comment\n"])
def test_empty_documents_are_refused(text: str) -> None:
    assert "empty document" in str(refusal(text, "x.yaml"))


# -- syntax errors carry line and column ------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"a": 1,\n "b": }', 2, 7),
        ('{"a": 1', 1, 8),
        ("[1, 2,]\n", 1, 7),
        ("{'a': 1}", 1, 2),
    ],
)
def test_invalid_json(text: str, line: int, column: int) -> None:
    error = refusal(text, "tools/db.json")
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"tools/db.json:{line}:{column}: invalid JSON: ")
    assert "\n" not in str(error)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("name: db\ninputSchema:\n  type: object: x\n", 3, 15),
        ("a: [1, 2\n", 2, 1),
        ("a:\n  - x\n - y\n", 3, 2),
        ('a: "open\n', 2, 1),
    ],
)
def test_invalid_yaml(text: str, line: int, column: int) -> None:
    error = refusal(text, "tools/db.yaml")
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"tools/db.yaml:{line}:{column}: invalid YAML: ")
    assert "\n" not in str(error)


def test_several_yaml_documents_are_refused() -> None:
    error = refusal("a: 1\n---\nb: 2\n", "x.yaml")
    assert error.line == 2
    assert "single document" in error.message


# -- refusals: duplicates, non-JSON values ---------------------------------------------


def test_duplicate_json_key_is_named_with_its_line() -> None:
    error = refusal('{\n  "a": {"x": 1,\n        "x": 2}\n}', "x.json")
    assert error.message == "duplicate key 'x'"
    assert (error.line, error.column) == (3, 9)


def test_duplicate_yaml_key_is_named_with_its_line() -> None:
    error = refusal("name: a\ninputSchema: {}\nname: b\n", "x.yaml")
    assert str(error) == "x.yaml:3:1: duplicate key 'name'"


def test_yaml_merge_keys_may_be_overridden() -> None:
    text = "base: &base {x: 1, y: 1}\nderived:\n  <<: *base\n  y: 2\n"
    assert parse_document(text, "x.yaml")["derived"] == {"x": 1, "y": 2}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_json_non_finite_numbers_are_refused(literal: str) -> None:
    error = refusal(f'{{"minimum": {literal}}}', "x.json")
    assert "invalid JSON" in error.message
    assert literal.lstrip("-") in error.message


@pytest.mark.parametrize("literal", [".nan", ".NaN", ".inf", "-.inf", "+.Inf"])
def test_yaml_non_finite_numbers_are_refused(literal: str) -> None:
    error = refusal(f"minimum: {literal}\n", "x.yaml")
    assert (error.line, error.column) == (1, 10)
    assert "not a JSON number" in error.message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1: a\n", "keys must be strings"),
        ("true: a\n", "keys must be strings"),
        ("? [a]\n: b\n", "keys must be strings"),
        ("a: !!binary aGk=\n", "binary"),
        ("a: !!set {x}\n", "set"),
        ("a: !!timestamp 2020-01-01\n", "timestamp"),
        ("a: !custom x\n", "!custom"),
        ("a: !!python/object:os.system x\n", "python/object"),
    ],
)
def test_yaml_that_is_not_json_data_is_refused(text: str, problem: str) -> None:
    error = refusal(text, "x.yaml")
    assert problem in error.message
    assert error.line is not None


def test_yaml_scalars_follow_json_not_yaml_1_1() -> None:
    text = (
        "yes_: yes\noff_: off\ndate: 2027-06-01\noctal: 012\nhex: 0x1f\nsexagesimal: 1:30\n"
        "exp: 1e3\nfrac: .5\nint: -12\nfloat: 2.50\nnull_: ~\nempty:\nbool: true\nquoted: '12'\n"
    )
    assert parse_document(text, "x.yaml") == {
        "yes_": "yes",
        "off_": "off",
        "date": "2027-06-01",
        "octal": "012",
        "hex": "0x1f",
        "sexagesimal": "1:30",
        "exp": 1000.0,
        "frac": 0.5,
        "int": -12,
        "float": 2.5,
        "null_": None,
        "empty": None,
        "bool": True,
        "quoted": "12",
    }


# YAML forbids raw control characters and folds raw line separators, which
# json.dumps(ensure_ascii=False) leaves in place; JSON files are read as JSON.
yaml_safe_text = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Cn", "Zl", "Zp")), max_size=10
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | yaml_safe_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(yaml_safe_text, children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=50, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 2]))
def test_json_text_reads_the_same_as_json_and_as_yaml(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    assert parse_document(text, "x.json") == value
    assert parse_document(text, "x.yaml") == value


# -- limits ----------------------------------------------------------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * 10_000 + "]" * 10_000),
        ("deep.json", '{"a":' * 10_000 + "1" + "}" * 10_000),
        ("deep.yaml", "[" * 10_000 + "]" * 10_000),
        ("deep.yaml", "{a: " * 10_000 + "1" + "}" * 10_000),
        ("deep.yaml", "- " * 10_000 + "x\n"),
        ("deep.yaml", "".join(" " * i + "a:\n" for i in range(2_000)) + " " * 2_000 + "b: 1\n"),
    ],
)
def test_deep_nesting_is_refused(name: str, text: str) -> None:
    error = refusal(text, name)
    assert f"nested deeper than {MAX_DOCUMENT_DEPTH} levels" in error.message
    assert error.line is not None


@pytest.mark.parametrize("name", ["x.json", "x.yaml"])
def test_nesting_up_to_the_limit_is_accepted(name: str) -> None:
    depth = MAX_DOCUMENT_DEPTH
    value = parse_document("[" * depth + "]" * depth, name)
    for _ in range(depth - 1):
        value = value[0]
    assert value == []
    assert "nested deeper" in refusal("[" * (depth + 1) + "]" * (depth + 1), name).message


def _array_of(count: int, name: str) -> str:
    """An array holding `count` empty arrays: count + 1 arrays in all."""
    if name.endswith(".json"):
        return "[" + ",".join(["[]"] * count) + "]"
    return "- []\n" * count


@pytest.mark.parametrize("name", ["many.json", "many.yaml"])
def test_too_many_nodes_are_refused_before_parsing(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_DOCUMENT_NODES arrays/objects the pre-scan refuses, naming where the
    first node past the limit starts; no parser is asked to build the document."""
    with monkeypatch.context() as patched:
        patched.setattr(documents.json, "loads", _must_not_run)
        patched.setattr(yaml_documents._JsonYamlLoader, "get_single_node", _must_not_run)
        error = refusal(_array_of(MAX_DOCUMENT_NODES, name), name)
    assert f"more than {MAX_DOCUMENT_NODES} arrays and objects" in error.message
    assert error.line is not None and error.column is not None
    assert len(parse_document(_array_of(MAX_DOCUMENT_NODES - 1, name), name)) == (
        MAX_DOCUMENT_NODES - 1
    )


def _must_not_run(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the parser ran on a document the pre-scan should refuse")


@settings(max_examples=100, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 2, 4]), data=st.data())
def test_json_locations_match_the_yaml_composer(value: Any, indent: int | None, data: Any) -> None:
    """The one-pass JSON locator and the YAML composer agree on where every value starts."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    pointers = [[]]
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        children = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else []
        )
        for key, child in children:
            pointers.append([*path, str(key)])
            stack.append((child, [*path, str(key)]))
    pointer = data.draw(st.sampled_from(pointers))
    assert documents._locate_json(text, pointer) == yaml_documents.locate_yaml(text, pointer)
    assert documents._locate_json(text, [*pointer, "missing"]) is None


def test_brackets_inside_json_strings_do_not_count() -> None:
    text = '{"a": "' + "[" * 1000 + '", "b": "\\"[[["}'
    assert parse_document(text, "x.json") == {"a": "[" * 1000, "b": '"[[['}


@pytest.mark.timeout(60)  # a hang guard: a backtracking scan would take hours here
def test_an_unterminated_string_full_of_escaped_quotes_is_refused() -> None:
    assert "invalid JSON" in refusal('"\\"' * 300_000, "x.json").message


@pytest.mark.timeout(20)
def test_billion_laughs_is_refused() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        name, previous = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    error = refusal("\n".join(lines) + "\n", "lol.yaml")
    assert "expand to more than" in error.message


def test_alias_uses_past_the_budget_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_documents, "MAX_YAML_ALIASES", 3)
    text = "a: &x 1\nb: [*x, *x, *x, *x]\n"
    assert "more than 3 YAML aliases" in refusal(text, "x.yaml").message


def test_aliases_cannot_build_depth_the_text_does_not_have() -> None:
    lines = ["x0: &x0 [1]"] + [f"x{i}: &x{i} [*x{i - 1}]" for i in range(1, MAX_DOCUMENT_DEPTH + 2)]
    assert "expand deeper than" in refusal("\n".join(lines), "x.yaml").message


def test_recursive_alias_is_refused() -> None:
    error = refusal("a: &a\n  b: *a\n", "x.yaml")
    assert error.message == "recursive YAML alias"
    assert (error.line, error.column) == (1, 4)  # the anchor


def test_small_alias_use_is_fine() -> None:
    text = "defs: &s {type: string}\nproperties: {a: *s, b: *s}\n"
    assert parse_document(text, "x.yaml")["properties"] == {
        "a": {"type": "string"},
        "b": {"type": "string"},
    }


# -- locate ------------------------------------------------------------------------------


def test_locate_in_json() -> None:
    text = '{\n  "inputSchema": {\n    "properties": {"a/b": {"type": "string"}, "c~d": 1}\n  }\n}'
    assert locate(text, "/inputSchema/properties/a~1b") == (3, 27)
    assert locate(text, "/inputSchema/properties/c~0d") == (3, 54)
    assert locate(text, "") == (1, 1)


def test_locate_in_yaml() -> None:
    text = "name: t\ninputSchema:\n  type: object\n  required: [x, y]\n"
    assert locate(text, "/inputSchema/type") == (3, 9)
    assert locate(text, "/inputSchema/required/1") == (4, 17)
    assert locate(text.encode(), "/name") == (1, 7)


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("a: 1\n", "/b"),
        ("a: [1]\n", "/a/1"),
        ("a: [1]\n", "/a/x"),
        ("a: 1\n", "/a/b"),
        ("a: [\n", ""),
        ("a: 1\n", "no-slash"),
    ],
)
def test_locate_gives_none_when_there_is_no_such_place(text: str, pointer: str) -> None:
    assert locate(text, pointer) is None


def test_one_line_errors() -> None:
    error = DocumentError("tools/db.yaml", "invalid YAML: x", line=3, column=7)
    assert str(error) == "tools/db.yaml:3:7: invalid YAML: x"
    assert str(DocumentError("a.json", "bad", pointer="/x")) == "a.json: /x: bad"
    assert str(DocumentError("a.json", "bad")) == "a.json: bad"


def test_floats_are_finite_everywhere() -> None:
    value = parse_document('{"a": [1.5e300, -0.0, 5e-324]}', "x.json")
    assert all(math.isfinite(x) for x in value["a"])
