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
from pathlib import Path
from typing import Any

from registry.document_errors import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_DEPTH,
    MAX_DOCUMENT_NODES,
    MAX_EXPANDED_NODES,
    MAX_YAML_ALIASES,
    DocumentError,
    located,
)
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
    "located",
    "parse_document",
    "read_source",
]

_JSON_SUFFIXES = {".json"}
_YAML_SUFFIXES = {".yaml", ".yml"}


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
    from registry.yaml_documents import parse_yaml  # PyYAML, loaded for YAML only

    return parse_yaml(text, source_name)


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
        from registry.yaml_documents import yaml_duplicate_position

        line, column = yaml_duplicate_position(text, exc.key)
        raise DocumentError(source, f"duplicate key {exc.key!r}", line, column) from None
    except ValueError as exc:  # NaN/Infinity, out-of-range numbers, huge integers
        raise DocumentError(source, f"invalid JSON: {exc}") from None


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
    from registry.yaml_documents import locate_yaml

    return locate_yaml(decoded, tokens)


def dump_yaml(document: Any) -> str:
    """YAML that `parse_document` reads back as `document` (JSON data), keys in the
    order given, long lines unfolded."""
    from registry.yaml_documents import dump_yaml as dump

    return dump(document)


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
