"""Refusals written for the model: the text and `structuredContent` of an `isError` result.

From the 2025-11-25 revision on (SEP-1303), a refusal of the arguments
themselves is answered as a tool result the model reads, so that its next call
can be right. The gate writes that text (`GateError.model_text`) with the
refusal; `structured_content(error)` gives the machine fields beside it.

The text says, in the caller's terms, what is wrong (one line per problem:
"`timeout_ms` is not part of db.query v4", "`mode`: 'write' is not one of
['read']"); where the call's arguments match an older version, what changed
from it to current in the engine's words; and the input schema a retry must
satisfy (whole, or the properties that matter when it is long).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from registry.sdk._compiled import CompiledTool, wire

if TYPE_CHECKING:
    from registry.sdk.gate import GateError

__all__ = [
    "STRUCTURED_FIELDS",
    "change_line",
    "conversion_rejected_text",
    "invalid_arguments_text",
    "problems",
    "structured_content",
    "versionless_text",
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

_SCHEMA_CHARS = 4000
"""A longer input schema is shown as the properties the refusal names."""


def _name(path: str, key: str | None = None) -> str:
    """A JSON Pointer (plus a key below it) as the caller writes it: `filters.tags[0]`."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    if key is not None:
        parts.append(key)
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def problems(tool: str, version: int, errors: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per validation error, in the caller's terms."""
    lines: list[str] = []
    for error in errors:
        unexpected = error.get("unexpected")
        if unexpected:
            lines.extend(
                f"`{_name(error['path'], key)}` is not part of {tool} {wire(version)}"
                for key in unexpected
            )
        elif error.get("path"):
            lines.append(f"`{_name(error['path'])}`: {error['message']}")
        else:
            lines.append(str(error["message"]))
    return lines


def _property_of(path: str) -> str:
    """The property a change's path points into, as the caller writes it:
    `/inputSchema/properties/a/properties/b/enum` -> `a.b`; "" at the root."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[2:]]
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
    return f"`{where}`: {message}"


def _named(errors: Iterable[Mapping[str, Any]], changes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Top-level property names a refusal's errors and changes point at."""
    names: set[str] = set()
    for error in errors:
        names.update(error.get("unexpected") or ())
        names.add(_name(str(error.get("path", ""))).split(".")[0].split("[")[0])
    for change in changes:
        names.add(_property_of(str(change.get("path", ""))).split(".")[0].split("[")[0])
        if change.get("kind") == "property-renamed" and isinstance(change.get("new"), str):
            names.add(change["new"])
    names.discard("")
    return names


def _schema_shown(
    tool: CompiledTool,
    version: int,
    errors: Sequence[Mapping[str, Any]],
    changes: Sequence[Mapping[str, Any]],
    *,
    strict: bool = False,
) -> str:
    text = tool.schema_text(version, strict=strict)
    what = (
        "its input schema, closed as calls without a version are checked"
        if strict
        else ("its input schema")
    )
    if len(text) <= _SCHEMA_CHARS:
        return f"{what}: {text}"
    schema = tool.schema(version, strict=strict)
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    names = sorted(_named(errors, changes) & set(properties))
    part = {
        "type": "object",
        "properties": {n: properties[n] for n in names},
        "required": [r for r in schema.get("required", []) if isinstance(r, str)],
    }
    return (
        f"the part of {what} that matters here ({len(names)} of {len(properties)} "
        f"properties, every required name): {msgspec.json.encode(part).decode()}"
    )


def _bullets(lines: Iterable[str]) -> str:
    return "".join(f"\n- {line}" for line in lines)


def versionless_text(
    tool: CompiledTool,
    errors: Sequence[Mapping[str, Any]],
    inferred: int | None,
    changes: Sequence[Mapping[str, Any]],
) -> str:
    """A version-less call that fails strict validation against current."""
    current = tool.current.version
    out = (
        f"{tool.name} refused this call: its arguments do not match {tool.name} "
        f"{wire(current)}, the current version." + _bullets(problems(tool.name, current, errors))
    )
    if inferred is not None:
        if inferred in tool.retired:
            where = "which this server no longer serves (retired)"
        else:
            where = (
                "an older version this server still serves to clients that declare it "
                f'(_meta.schemaVersion "{wire(inferred)}")'
            )
        out += f"\nThey match {tool.name} {wire(inferred)}, {where}."
        if changes:
            out += f" What changed from {wire(inferred)} to {wire(current)}:" + _bullets(
                change_line(c) for c in changes
            )
    out += (
        f"\nCall {tool.name} once more with arguments valid under {wire(current)}; "
        + _schema_shown(tool, current, errors, changes, strict=True)
    )
    return out


def invalid_arguments_text(
    tool: CompiledTool, version: int, errors: Sequence[Mapping[str, Any]], *, alias: str | None
) -> str:
    """Arguments invalid under the version the call declares (or its alias speaks)."""
    called = alias or tool.name
    declared = (
        f"{tool.name} {wire(version)}, the contract {alias} speaks"
        if alias
        else f"{tool.name} {wire(version)}, the version the call declares"
    )
    shown = (
        _schema_shown(tool, version, errors, ())
        if version in tool.definitions
        else "see the tool's listing"
    )
    return (
        f"{called} refused this call: its arguments do not match {declared}."
        + _bullets(problems(tool.name, version, errors))
        + f"\nCall {called} once more with arguments valid under {wire(version)}; {shown}"
    )


def conversion_rejected_text(
    tool: CompiledTool, version: int, path: str, value: Any, detail: str, *, alias: str | None
) -> str:
    """A value a converter's `reject` operation refuses."""
    called = alias or tool.name
    shown = msgspec.json.encode(value).decode()
    return (
        f"{called} refused this call: the value {shown} of `{_name(path)}` is no longer "
        f"accepted: {detail}. (The call speaks {tool.name} {wire(version)}; the current "
        f"version is {wire(tool.current.version)}.)\nCall {called} once more without this value."
    )


def structured_content(error: GateError) -> dict[str, Any]:
    """The machine fields of a refusal, as `structuredContent` carries them."""
    data = error.data
    out: dict[str, Any] = {"code": error.code}
    for key in STRUCTURED_FIELDS[1:]:
        default: Any = [] if key in ("changes", "errors") else None
        out[key] = data.get(key, default)
    return out
