"""The refusal catalogue: what every refusal of the gate says, read from one data file.

    entry = catalogue_entry("invalid_arguments", "declared")
    entry.code, entry.surface, entry.action      # -32602, "arg", None
    render(entry.message, {"tool": "db.query", ...})

`registry/sdk/refusals.json` holds, per reason, the JSON-RPC code, the surface
(`rpc`: a JSON-RPC error on every revision; `arg`: a refusal of the arguments
themselves, from 2025-11-25 on an `isError` result the model reads, SEP-1303)
and per variant the action and the words: `message` (the JSON-RPC message),
`model_text` (the result's text, `arg` only), `detail` (`data.detail`). The
TypeScript gate reads a byte-identical copy (sdk-ts/refusals.json), and
tests/golden/gate_decisions.json pins what both say, so the two SDKs' words
cannot drift apart.

The values the templates name are built here, the same way in both SDKs: one
line per problem in the caller's terms ("`timeout_ms` is not part of db.query
v4", "`mode` must be one of [\"read\"]"), sorted; what changed from an older
version to current in the engine's words; the input schema a retry must
satisfy (the strict form the gate applies, whole, or the properties that
matter when it is long). Values are shown as compact JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import msgspec

from registry.pointers import split, unescape

if TYPE_CHECKING:
    from registry.sdk.gate import GateError

__all__ = [
    "CATALOGUE_BYTES",
    "STRUCTURED_FIELDS",
    "Entry",
    "catalogue_entry",
    "change_lines",
    "fragment",
    "problems",
    "render",
    "schema_shown",
    "show",
    "structured_content",
    "summary",
]

STRUCTURED_FIELDS = (
    "code",
    "reason",
    "tool",
    "declaredVersion",
    "currentVersion",
    "inferredVersion",
    "changes",
    "action",
    "errors",
    "inputSchema",
)
"""The keys of `structuredContent`, always present (null or [] when empty)."""

SCHEMA_CHARS = 4000
"""A longer input schema is shown as the properties the refusal names."""

CATALOGUE_BYTES = resources.files("registry.sdk").joinpath("refusals.json").read_bytes()
"""The catalogue file as shipped (the npm package ships the same bytes)."""

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True, slots=True)
class Entry:
    """One variant of a refusal: its code, surface, action and templates."""

    reason: str
    variant: str
    code: int
    surface: str
    action: str | None
    message: str
    model_text: str | None
    detail: str | None


def _load(raw: bytes) -> tuple[dict[tuple[str, str], Entry], dict[str, str]]:
    document = json.loads(raw)
    entries: dict[tuple[str, str], Entry] = {}
    for reason, spec in document["reasons"].items():
        for variant, words in spec["variants"].items():
            entries[reason, variant] = Entry(
                reason=reason,
                variant=variant,
                code=spec["code"],
                surface=spec["surface"],
                action=words["action"],
                message=words["message"],
                model_text=words.get("model_text"),
                detail=words.get("detail"),
            )
    return entries, dict(document["fragments"])


_ENTRIES, _FRAGMENTS = _load(CATALOGUE_BYTES)


def catalogue_entry(reason: str, variant: str) -> Entry:
    return _ENTRIES[reason, variant]


def entries() -> tuple[Entry, ...]:
    return tuple(_ENTRIES.values())


def render(template: str, values: Mapping[str, str]) -> str:
    """`template` with each `{name}` replaced by `values[name]` (a missing one: KeyError)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def fragment(which: str, /, **values: str) -> str:
    return render(_FRAGMENTS[which], values)


def show(value: Any) -> str:
    """A value as the refusal texts write it: compact JSON, an integral float as an
    integer (JavaScript cannot tell 4.0 from 4, and both SDKs must say the same)."""
    return msgspec.json.encode(_integral(value)).decode()


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


# ---------------------------------------------------------------- problems


def caller_name(path: str, key: str | None = None) -> str:
    """A JSON Pointer (plus a key below it) as the caller writes it: `filters.tags[0]`."""
    parts = split(path)
    if key is not None:
        parts.append(key)
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def _resolve(schema: Any, schema_path: str) -> tuple[bool, Any]:
    """The value a validation error's schema path points at (local `$ref`s followed)."""
    node = schema
    for part in split(schema_path):
        if part == "$ref" and isinstance(node, dict) and isinstance(node.get("$ref"), str):
            found, node = _local(schema, node["$ref"])
            if not found:
                return False, None
            continue
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _local(schema: Any, ref: str) -> tuple[bool, Any]:
    if ref == "#":
        return True, schema
    if not ref.startswith("#/"):
        return False, None
    return _resolve(schema, ref[1:])


def _at(instance: Any, path: str) -> Any:
    node = instance
    for part in split(path):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _type_words(expected: Any) -> str:
    if isinstance(expected, list):
        return _FRAGMENTS["type_separator"].join(str(t) for t in expected)
    return str(expected)


def _problem(
    tool: str, version: str, error: Mapping[str, Any], schema: Any, instance: Any
) -> list[str]:
    path = str(error.get("path", ""))
    keyword = str(error.get("keyword", ""))
    unexpected = error.get("unexpected")
    if unexpected:
        return [
            fragment("problem_unexpected", name=caller_name(path, k), tool=tool, version=version)
            for k in unexpected
        ]
    found, expected = _resolve(schema, str(error.get("schemaPath", "")))
    if keyword == "required" and found and isinstance(expected, list):
        node = _at(instance, path)
        if isinstance(node, dict):
            return [
                fragment("problem_missing", name=caller_name(path, n))
                for n in expected
                if isinstance(n, str) and n not in node
            ]
    if not path:
        if keyword == "type":
            return [fragment("problem_root_type")]
        shown = show(expected) if found else "its schema"
        return [fragment("problem_root_other", keyword=keyword, expected=shown)]
    name = caller_name(path)
    if keyword == "type" and found:
        return [fragment("problem_type", name=name, expected=_type_words(expected))]
    if keyword in ("enum", "const") and found:
        return [fragment(f"problem_{keyword}", name=name, expected=show(expected))]
    shown = show(expected) if found else "its schema"
    return [fragment("problem_other", name=name, keyword=keyword, expected=shown)]


def problems(
    tool: str,
    version: str,
    errors: Sequence[Mapping[str, Any]],
    schema: Any,
    instance: Any,
) -> list[str]:
    """One line per problem of `instance` under `schema` (`tool` `version`, wire form),
    in the caller's terms, sorted, each once. A non-object is one line."""
    if not isinstance(instance, dict):
        return [fragment("problem_root_type")]
    lines = {line for e in errors for line in _problem(tool, version, e, schema, instance)}
    return sorted(lines)


def summary(lines: Sequence[str]) -> str:
    """The first problem, and how many more (a JSON-RPC message's one line)."""
    if not lines:
        return "refused"
    if len(lines) == 1:
        return lines[0]
    return fragment("more", first=lines[0], count=str(len(lines) - 1))


def bullets(lines: Iterable[str]) -> str:
    return "".join(fragment("bullet", line=line) for line in lines)


# ---------------------------------------------------------------- changes


def _property_of(path: str) -> str:
    """The property a change's path points into, as the caller writes it:
    `/inputSchema/properties/a/properties/b/enum` -> `a.b`; "" at the root."""
    parts = [unescape(p) for p in path.split("/")[2:]]
    out = ""
    i = 0
    while i < len(parts):
        if parts[i] == "properties" and i + 1 < len(parts):
            out += f".{parts[i + 1]}" if out else parts[i + 1]
            i += 2
        elif parts[i] in ("items", "additionalProperties") and out:
            out += "[]"
            i += 1
        else:
            break
    return out


def change_line(change: Mapping[str, Any]) -> str:
    """The engine's message, led by the property it is about unless it names it."""
    message = str(change["message"])
    where = _property_of(str(change.get("path", "")))
    leaf = where.rsplit(".", 1)[-1].removesuffix("[]")
    if not where or f"'{leaf}'" in message:
        return message
    return fragment("change_at", where=where, message=message)


def change_lines(inferred: str, current: str, changes: Sequence[Mapping[str, Any]]) -> str:
    """What changed from `inferred` to `current`, as a sentence and bullets ("" for none)."""
    if not changes:
        return ""
    return fragment(
        "changes", inferred=inferred, current=current, lines=bullets(map(change_line, changes))
    )


# ---------------------------------------------------------------- the schema to retry under


def _named(errors: Iterable[Mapping[str, Any]], changes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Top-level property names a refusal's errors and changes point at."""
    names: set[str] = set()
    for error in errors:
        names.update(error.get("unexpected") or ())
        names.add(caller_name(str(error.get("path", ""))).split(".")[0].split("[")[0])
    for change in changes:
        names.add(_property_of(str(change.get("path", ""))).split(".")[0].split("[")[0])
        if change.get("kind") == "property-renamed" and isinstance(change.get("new"), str):
            names.add(change["new"])
    names.discard("")
    return names


def schema_shown(
    schema: Any,
    text: str,
    errors: Sequence[Mapping[str, Any]],
    changes: Sequence[Mapping[str, Any]],
) -> str:
    """The input schema to retry under (`text`: its compact JSON), whole when short,
    else the properties the errors and changes name plus every required name."""
    if len(text) <= SCHEMA_CHARS:
        return fragment("schema_whole", schema=text)
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    names = sorted(_named(errors, changes) & set(properties))
    required = schema.get("required", []) if isinstance(schema, dict) else []
    part = {
        "type": "object",
        "properties": {n: properties[n] for n in names},
        "required": [r for r in required if isinstance(r, str)],
    }
    return fragment(
        "schema_part", shown=str(len(names)), total=str(len(properties)), schema=show(part)
    )


# ---------------------------------------------------------------- structuredContent


def structured_content(error: GateError) -> dict[str, Any]:
    """The machine fields of a refusal, as `structuredContent` carries them."""
    data = error.data
    out: dict[str, Any] = {"code": error.code}
    for key in STRUCTURED_FIELDS[1:]:
        default: Any = [] if key in ("changes", "errors") else None
        out[key] = data.get(key, default)
    return out
