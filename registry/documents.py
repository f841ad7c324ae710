"""Load JSON and YAML documents safely, with errors a person can act on.

    value = load_document("tools/db.yaml")           # a path ("-" reads stdin)
    value = parse_document(raw_bytes, "tools/db.yaml")
    locate(text, "/inputSchema/properties/x")        # -> (line, column) or None

Every refusal is a `DocumentError` whose `str()` is one line,
`tools/db.yaml:3:7: invalid YAML: mapping values are not allowed here`.

The result is always plain JSON data (dict, list, str, int, float, bool,
None). Limits, each checked before the step it protects:

* `MAX_DOCUMENT_BYTES` (4 MiB): checked before reading the whole file.
* `MAX_DOCUMENT_DEPTH` (256 nested arrays/objects) and `MAX_DOCUMENT_NODES`
  (200,000 arrays and objects): counted by an iterative pre-scan (a bracket
  count for JSON, PyYAML's event stream for YAML) before any parser builds
  anything, so a 10,000-level or a million-node document is a clean error that
  costs one pass over the text. The HTTP API runs the same scan on request
  bodies (`check_json_limits`).
* YAML aliases: at most `MAX_YAML_ALIASES` alias uses, and the document with
  every alias expanded has at most `MAX_EXPANDED_NODES` nodes and stays within
  `MAX_DOCUMENT_DEPTH` ("billion laughs"); recursive aliases are refused.
* Duplicate object keys, NaN and infinities, and non-string object keys are
  refused in both formats; JSON has no way to write them.

YAML is read with the JSON-compatible subset of YAML 1.2's core schema:
`yes`/`no`/`on`/`off` and dates stay strings, and `!!binary`, `!!set` and
other non-JSON tags are refused, so a YAML file means what the same JSON
file would.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from registry.pointers import split

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_NODES",
    "MAX_EXPANDED_NODES",
    "MAX_YAML_ALIASES",
    "DocumentError",
    "check_json_limits",
    "dump_yaml",
    "load_document",
    "locate",
    "parse_document",
    "read_source",
]

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
MAX_DOCUMENT_DEPTH = 256
# Twice the engine's 100,000 schema nodes: a schema at that limit also holds its
# `properties` maps, `required` and `enum` arrays.
MAX_DOCUMENT_NODES = 200_000
MAX_YAML_ALIASES = 1_000
MAX_EXPANDED_NODES = 1_000_000

_JSON_SUFFIXES = {".json"}
_YAML_SUFFIXES = {".yaml", ".yml"}


class DocumentError(ValueError):
    """A document that cannot be read or is refused. Lines and columns are 1-based."""

    def __init__(
        self,
        source: str,
        message: str,
        line: int | None = None,
        column: int | None = None,
        pointer: str | None = None,
    ) -> None:
        self.source = source
        self.message = message
        self.line = line
        self.column = column
        self.pointer = pointer
        super().__init__(self._render())

    def _render(self) -> str:
        return located(self.source, self.line, self.column, self.pointer, self.message)


def located(
    source: str, line: int | None, column: int | None, pointer: str | None, message: str
) -> str:
    """`file:line:col: /pointer: message`, leaving out the parts not known."""
    where = source
    if line is not None:
        where += f":{line}"
        if column is not None:
            where += f":{column}"
    if pointer:
        where += f": {pointer}"
    return f"{where}: {message}"


# -- reading -----------------------------------------------------------------


def read_source(path: str | Path) -> bytes:
    """The bytes of a file (or stdin for "-"), refusing anything past the size limit."""
    name = str(path)
    try:
        if name == "-":
            data = sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
        else:
            with open(path, "rb") as stream:
                data = stream.read(MAX_DOCUMENT_BYTES + 1)
    except FileNotFoundError:
        raise DocumentError(name, "no such file") from None
    except IsADirectoryError:
        raise DocumentError(name, "is a directory, not a file") from None
    except PermissionError:
        raise DocumentError(name, "permission denied") from None
    except OSError as exc:
        raise DocumentError(name, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(name, f"document is larger than {MAX_DOCUMENT_BYTES} bytes")
    return data


def load_document(path: str | Path) -> Any:
    """Read and parse a JSON or YAML file; "-" reads stdin."""
    return parse_document(read_source(path), str(path))


def parse_document(content: str | bytes, source_name: str) -> Any:
    """Parse JSON or YAML text. The format follows the name's suffix (`.json`,
    `.yaml`, `.yml`); otherwise text starting with `{` or `[` is JSON, the rest YAML."""
    text = _decode(content, source_name)
    if len(text) > MAX_DOCUMENT_BYTES:
        raise DocumentError(source_name, f"document is larger than {MAX_DOCUMENT_BYTES} bytes")
    if not text.strip():
        raise DocumentError(source_name, "empty document")
    if _is_json(text, source_name):
        return _parse_json(text, source_name)
    return _parse_yaml(text, source_name)


def _decode(content: str | bytes, source: str) -> str:
    if isinstance(content, str):
        return content.removeprefix("\ufeff")
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, column = _line_column(content, exc.start)
        raise DocumentError(source, "not UTF-8 text", line, column) from None


def _line_column(content: bytes, offset: int) -> tuple[int, int]:
    line_start = content.rfind(b"\n", 0, offset) + 1
    return content.count(b"\n", 0, offset) + 1, offset - line_start + 1


def _is_json(text: str, source: str) -> bool:
    suffix = Path(source).suffix.lower()
    if suffix in _JSON_SUFFIXES:
        return True
    if suffix in _YAML_SUFFIXES:
        return False
    return text.lstrip()[:1] in ("{", "[")


# -- JSON --------------------------------------------------------------------

# One pass over string tokens and brackets, so a "[" inside a string does
# not count. An unterminated string runs to the end of the text ("?) rather
# than making the regex retry from every later quote, which keeps it linear.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def check_json_limits(
    text: str,
    source: str,
    *,
    max_depth: int = MAX_DOCUMENT_DEPTH,
    max_nodes: int = MAX_DOCUMENT_NODES,
) -> None:
    """Refuse a JSON text nested deeper than `max_depth` arrays/objects or holding
    more than `max_nodes` of them, before any parser builds a value. One regex pass,
    no recursion; the error names the line and column of the node past the limit."""
    depth = 0
    nodes = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            nodes += 1
            if depth > max_depth:
                message = f"nested deeper than {max_depth} levels"
            elif nodes > max_nodes:
                message = f"more than {max_nodes} arrays and objects"
            else:
                continue
            offset = match.start()
            line_start = text.rfind("\n", 0, offset) + 1
            raise DocumentError(
                source, message, text.count("\n", 0, offset) + 1, offset - line_start + 1
            )
        if token in ("]", "}"):
            depth -= 1


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _json_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"number {literal} is out of range")
    return value


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(text: str, source: str) -> Any:
    check_json_limits(text, source)
    try:
        return json.loads(
            text,
            object_pairs_hook=_json_object,
            parse_float=_json_float,
            parse_constant=_json_constant,
        )
    except json.JSONDecodeError as exc:
        raise DocumentError(source, f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except _DuplicateKey as exc:
        # json gives no position to the hook; the YAML composer, which reads
        # JSON too, finds where the second copy of the key is.
        line, column = _yaml_duplicate_position(text, exc.key)
        raise DocumentError(source, f"duplicate key {exc.key!r}", line, column) from None
    except ValueError as exc:  # NaN/Infinity, out-of-range numbers, huge integers
        raise DocumentError(source, f"invalid JSON: {exc}") from None


# -- YAML --------------------------------------------------------------------

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_JSON_TAGS = {
    _STR,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
}


class _JsonYamlLoader(_BaseLoader):  # type: ignore[misc]
    """SafeLoader with YAML 1.2 core-schema scalars restricted to JSON's data model."""

    yaml_implicit_resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}
    yaml_constructors = {
        tag: constructor
        for tag, constructor in yaml.SafeLoader.yaml_constructors.items()
        if tag in _JSON_TAGS
    }

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag != _STR:
                raise _refusal(
                    "object keys must be strings; quote this key",
                    key_node,
                )
            if key_node.value in seen:
                raise _refusal(f"duplicate key {key_node.value!r}", key_node)
            seen.add(key_node.value)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping

    def construct_yaml_float(self, node: ScalarNode) -> float:
        value: float = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise _refusal(f"{node.value} is not a JSON number", node)
        return value

    def construct_undefined(self, node: Node) -> Any:
        raise _refusal(f"tag {node.tag} has no JSON equivalent", node)


_JsonYamlLoader.add_constructor("tag:yaml.org,2002:float", _JsonYamlLoader.construct_yaml_float)
_JsonYamlLoader.add_constructor(None, _JsonYamlLoader.construct_undefined)
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0|[1-9][0-9]*)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    (_MERGE, r"^(?:<<)$", "<"),
):
    _JsonYamlLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


class _JsonYamlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """SafeDumper that quotes every string the loader above would read as something else
    (`1e5` is a float to it, not to YAML 1.1), and writes multi-line strings as blocks."""

    def represent_str(self, data: str) -> yaml.ScalarNode:
        style = "|" if "\n" in data else None
        node: yaml.ScalarNode = self.represent_scalar(_STR, data, style=style)
        return node


for _first_char, _resolvers in _JsonYamlLoader.yaml_implicit_resolvers.items():
    for _tag, _regexp in _resolvers:
        _JsonYamlDumper.add_implicit_resolver(_tag, _regexp, [_first_char])
_JsonYamlDumper.add_representer(str, _JsonYamlDumper.represent_str)


def dump_yaml(document: Any) -> str:
    """YAML that `parse_document` reads back as `document` (JSON data), keys in the
    order given, long lines unfolded."""
    text: str = yaml.dump(
        document,
        Dumper=_JsonYamlDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 16,
    )
    return text


class _YamlRefusal(yaml.MarkedYAMLError):
    """A well-formed YAML document this loader refuses (not JSON data)."""


def _refusal(message: str, node: Node) -> _YamlRefusal:
    return _YamlRefusal(problem=message, problem_mark=node.start_mark)


def _scan_yaml_events(text: str, source: str) -> int:
    """Walk the event stream (PyYAML's parser keeps explicit stacks, so this
    is iterative) to bound depth and count aliases before composing anything."""
    depth = 0
    nodes = 0
    aliases = 0
    for event in yaml.parse(text, Loader=_JsonYamlLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            nodes += 1
            if depth > MAX_DOCUMENT_DEPTH:
                line, column = _mark(event.start_mark)
                raise DocumentError(
                    source, f"nested deeper than {MAX_DOCUMENT_DEPTH} levels", line, column
                )
            if nodes > MAX_DOCUMENT_NODES:
                line, column = _mark(event.start_mark)
                raise DocumentError(
                    source, f"more than {MAX_DOCUMENT_NODES} arrays and objects", line, column
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                line, column = _mark(event.start_mark)
                raise DocumentError(
                    source, f"more than {MAX_YAML_ALIASES} YAML aliases", line, column
                )
    return aliases


def _check_expansion(root: Node, source: str) -> None:
    """Size and depth of the tree once every alias is expanded, computed over
    the node graph (shared nodes counted once per use, each visited once)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = list(_children(node))
        if children_done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in children)
            depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
            if size[key] > MAX_EXPANDED_NODES:
                line, column = _mark(node.start_mark)
                raise DocumentError(
                    source,
                    f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes",
                    line,
                    column,
                )
            if depth[key] > MAX_DOCUMENT_DEPTH + 1:
                line, column = _mark(node.start_mark)
                raise DocumentError(
                    source,
                    f"YAML aliases expand deeper than {MAX_DOCUMENT_DEPTH} levels",
                    line,
                    column,
                )
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                line, column = _mark(child.start_mark)
                raise DocumentError(source, "recursive YAML alias", line, column)
            if id(child) not in size:
                stack.append((child, False))


def _children(node: Node) -> Iterator[Node]:
    if isinstance(node, SequenceNode):
        yield from node.value
    elif isinstance(node, MappingNode):
        for key, value in node.value:
            yield key
            yield value


def _mark(mark: Any) -> tuple[int | None, int | None]:
    if mark is None:
        return None, None
    return mark.line + 1, mark.column + 1


def _yaml_error(exc: yaml.YAMLError, source: str) -> DocumentError:
    if not isinstance(exc, yaml.MarkedYAMLError):
        return DocumentError(source, f"invalid YAML: {exc}")
    line, column = _mark(exc.problem_mark or exc.context_mark)
    if isinstance(exc, _YamlRefusal):
        return DocumentError(source, exc.problem or "refused", line, column)
    if exc.problem and "maximum nesting depth" in exc.problem:  # libyaml's own limit (1000)
        return DocumentError(
            source, f"nested deeper than {MAX_DOCUMENT_DEPTH} levels", line, column
        )
    message = exc.problem or exc.context or "syntax error"
    if exc.problem and exc.context:
        message = f"{exc.problem} ({exc.context}"
        if exc.context_mark is not None and exc.context_mark is not exc.problem_mark:
            message += f" started at line {exc.context_mark.line + 1}"
        message += ")"
    return DocumentError(source, f"invalid YAML: {message}", line, column)


def _compose(text: str, source: str) -> Node | None:
    """The YAML node graph of a single-document stream, limits checked."""
    try:
        aliases = _scan_yaml_events(text, source)
        loader = _JsonYamlLoader(text)
        try:
            node: Node | None = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source) from None
    if node is not None and aliases:
        _check_expansion(node, source)
    return node


def _parse_yaml(text: str, source: str) -> Any:
    node = _compose(text, source)
    if node is None:
        raise DocumentError(source, "empty document")
    loader = _JsonYamlLoader("")
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source) from None
    finally:
        loader.dispose()


def _yaml_duplicate_position(text: str, key: str) -> tuple[int | None, int | None]:
    try:
        _parse_yaml(text, "<json>")
    except DocumentError as exc:
        if exc.message == f"duplicate key {key!r}":
            return exc.line, exc.column
    return None, None


# -- locating a JSON Pointer --------------------------------------------------


def locate(text: str | bytes, pointer: str) -> tuple[int, int] | None:
    """Line and column (1-based) where the value at `pointer` starts in a JSON
    or YAML text, or None when the text does not parse or has no such value."""
    if pointer and not pointer.startswith("/"):
        return None
    tokens = split(pointer)
    try:
        decoded = _decode(text, "<locate>")
    except DocumentError:
        return None
    if decoded.lstrip()[:1] in ("{", "["):
        return _locate_json(decoded, tokens)
    return _locate_yaml(decoded, tokens)


def _locate_yaml(text: str, tokens: list[str]) -> tuple[int, int] | None:
    try:
        node = _compose(text, "<locate>")
    except DocumentError:
        return None
    for token in tokens:
        if isinstance(node, MappingNode):
            node = next(
                (
                    value
                    for key, value in node.value
                    if isinstance(key, ScalarNode) and key.value == token
                ),
                None,
            )
        elif isinstance(node, SequenceNode) and token.isdigit():
            index = int(token)
            node = node.value[index] if index < len(node.value) else None
        else:
            return None
        if node is None:
            return None
    if node is None:
        return None
    return node.start_mark.line + 1, node.start_mark.column + 1


_JSON_STRUCTURE = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{},:]', re.DOTALL)
_SPACE = re.compile(r"[ \t\r\n]*")


def _locate_json(text: str, target: list[str]) -> tuple[int, int] | None:
    """`locate` for JSON text in one pass over its strings and punctuation, never
    building the document: a large file is located in a fraction of the time the
    YAML composer takes. Only called on texts that parsed as JSON."""
    # per open container: [is_object, the member key or element index being read]
    frames: list[list[Any]] = []

    def value_at(offset: int) -> tuple[int, int] | None:
        if len(frames) != len(target) or any(
            str(frame[1]) != token for frame, token in zip(frames, target, strict=True)
        ):
            return None
        position = _SPACE.match(text, offset).end()  # type: ignore[union-attr]
        if position >= len(text) or text[position] in "]}":
            return None  # an empty array has no element here
        line_start = text.rfind("\n", 0, position) + 1
        return text.count("\n", 0, position) + 1, position - line_start + 1

    if not target:
        return value_at(0)
    expect_key = False
    for match in _JSON_STRUCTURE.finditer(text):
        token = match.group()
        found = None
        if token == "{":
            frames.append([True, None])
            expect_key = True
        elif token == "[":
            frames.append([False, 0])
            found = value_at(match.end())
        elif token in ("}", "]"):
            if frames:
                frames.pop()
            expect_key = False
        elif token == ",":
            if frames and frames[-1][0]:
                expect_key = True
            elif frames:
                frames[-1][1] += 1
                found = value_at(match.end())
        elif token == ":":
            found = value_at(match.end())
        elif expect_key and frames:
            frames[-1][1] = json.loads(token) if "\\" in token else token[1:-1]
            expect_key = False
        if found is not None:
            return found
    return None
