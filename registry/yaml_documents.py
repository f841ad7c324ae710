"""YAML documents as JSON data: the reader `registry.documents` hands YAML text to,
and the writer of `dump_yaml`. Imported on the first YAML document (PyYAML costs
a `registry diff` of two JSON files about 10 ms to import).

YAML is read with the JSON-compatible subset of YAML 1.2's core schema (the
limits and refusals of registry/documents.py's docstring).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from registry.document_errors import (
    MAX_DOCUMENT_DEPTH,
    MAX_DOCUMENT_NODES,
    MAX_EXPANDED_NODES,
    MAX_YAML_ALIASES,
    DocumentError,
)

__all__ = ["dump_yaml", "locate_yaml", "parse_yaml", "yaml_duplicate_position"]

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


def parse_yaml(text: str, source: str) -> Any:
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


def yaml_duplicate_position(text: str, key: str) -> tuple[int | None, int | None]:
    try:
        parse_yaml(text, "<json>")
    except DocumentError as exc:
        if exc.message == f"duplicate key {key!r}":
            return exc.line, exc.column
    return None, None


def locate_yaml(text: str, tokens: list[str]) -> tuple[int, int] | None:
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
