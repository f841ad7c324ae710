"""What a framework's own parsing would do to the gated arguments: the handler check.

    lines = handler_mismatches("db.query", "v4", handler_schema, registry_schema)
    report = compare_handlers(toolset, {"db.query": handler_schema})   # every tool
    report.raise_if_mismatched()      # HandlerMismatch: one line per mismatch

A framework with its own parse (FastMCP's and `MCPServer`'s pydantic signature,
the TypeScript `McpServer`'s zod shape) validates the gated arguments again
against the input schema it derived from the handler, and strips, refuses or
changes what that schema does not take. Bypassing that parse needs private APIs
in both SDKs; and a handler schema that lacks a property current declares is
code that does not implement current (seed 000's misread). So the adapters
refuse to start, one line per mismatch, when the handler's input schema (as
the framework lists it) would strip, reject or change an argument object the
registry's current version accepts:

* a property current declares that the handler's schema lacks (unless the
  handler takes any key there: `additionalProperties` true or a schema);
* a name the handler requires that current does not require;
* a type the handler narrows (current's types not all among the handler's;
  `integer` is among `number`), or an enum the handler narrows;
* a default the handler fills (other than null) for an optional property
  whose current default differs, or that has none (seed 002's silent default);
* keys current allows in a map (`additionalProperties` a schema) that the
  handler's schema does not take;

nested objects compared the same way, local `$ref`s followed. The TypeScript
gate has the same function (sdk-ts/src/handlers.ts); the golden table's
`handlers` rows pin both.

On a live toolset swap the adapter cannot refuse to start: it logs one error
per mismatch and refuses, with -31004 and reason `handler_mismatch`, only the
calls whose gated arguments the handler's schema would drop or refuse (or
that leave out a property the handler fills differently): `HandlerCheck`.
Low-level servers have no framework parse: their handlers get the gated
arguments as they are, and nothing here applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from registry.compat.jsonvalues import json_equal, json_type
from registry.pointers import unescape
from registry.sdk._compiled import Compiler, error_details, wire
from registry.sdk.gate import GateError, refusal_error
from registry.sdk.refusals import fragment, show, summary
from registry.sdk.strict import strict_schema
from registry.sdk.toolset import Toolset, ToolsetError

__all__ = [
    "HandlerCheck",
    "HandlerMismatch",
    "HandlerReport",
    "compare_handlers",
    "handler_check",
    "handler_mismatches",
]

_NUMBER_TYPES = ("integer", "number")


class HandlerMismatch(ValueError):
    """The server's handlers do not take what the registry's current versions
    accept; the message has one line per mismatch. Raised when an adapter starts."""

    def __init__(self, namespace: str, mismatches: Mapping[str, Sequence[str]]) -> None:
        self.namespace = namespace
        self.mismatches = {tool: tuple(lines) for tool, lines in mismatches.items()}
        count = sum(len(lines) for lines in self.mismatches.values())
        lines = "".join(
            fragment("mismatch_line", tool=tool, line=line)
            for tool, found in sorted(self.mismatches.items())
            for line in found
        )
        super().__init__(
            fragment("mismatch_refused", namespace=namespace, count=str(count), lines=lines)
        )


# ---------------------------------------------------------------- the comparison


def _deref(root: Any, node: Any) -> Any:
    """`node` with local `$ref`s (and single-branch `allOf`s) followed, a few hops at most."""
    for _ in range(16):
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
            target: Any = root
            for token in ref[2:].split("/") if ref != "#" else []:
                part = unescape(token)
                if not isinstance(target, dict) or part not in target:
                    return node
                target = target[part]
            node = target
            continue
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and not node.get("properties"):
            node = all_of[0]
            continue
        return node
    return node


def _branches(node: dict[str, Any]) -> list[Any] | None:
    for key in ("anyOf", "oneOf"):
        found = node.get(key)
        if isinstance(found, list):
            return found
    return None


def _types(root: Any, node: Any) -> frozenset[str] | None:
    """The JSON types a schema admits; None for any."""
    node = _deref(root, node)
    if not isinstance(node, dict):
        return None if node is not False else frozenset()
    kind = node.get("type")
    if isinstance(kind, str):
        return frozenset((kind,))
    if isinstance(kind, list):
        return frozenset(k for k in kind if isinstance(k, str))
    if "const" in node:
        return frozenset((json_type(node["const"]),))
    if isinstance(node.get("enum"), list):
        return frozenset(json_type(v) for v in node["enum"])
    branches = _branches(node)
    if branches is not None:
        found: set[str] = set()
        for branch in branches:
            types = _types(root, branch)
            if types is None:
                return None
            found |= types
        return frozenset(found)
    return None


def _covers(handler: frozenset[str] | None, registry: frozenset[str] | None) -> bool:
    if handler is None:
        return True
    if registry is None:
        return False
    return all(t in handler or (t == "integer" and "number" in handler) for t in registry)


def _type_words(types: frozenset[str] | None) -> str:
    if types is None:
        return fragment("type_any")
    return fragment("type_separator").join(sorted(types))


def _values(root: Any, node: Any) -> list[Any] | None:
    """The values a schema restricts to (`enum`, `const`, unions of them); None for any."""
    node = _deref(root, node)
    if not isinstance(node, dict):
        return None
    if "const" in node:
        return [node["const"]]
    if isinstance(node.get("enum"), list):
        return list(node["enum"])
    branches = _branches(node)
    if branches is None:
        return None
    found: list[Any] = []
    for raw in branches:
        branch = _deref(root, raw)
        if isinstance(branch, dict) and branch.get("type") == "null" and len(branch) == 1:
            found.append(None)
            continue
        values = _values(root, branch)
        if values is None:
            return None
        found.extend(values)
    return found


def _object_part(root: Any, node: Any) -> dict[str, Any] | None:
    """The object schema a property schema describes (the one object branch of a
    nullable union), or None when it describes no object."""
    node = _deref(root, node)
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("properties"), dict) or node.get("type") == "object":
        return node
    branches = _branches(node)
    if branches is not None:
        objects = [b for b in (_object_part(root, b) for b in branches) if b is not None]
        if len(objects) == 1:
            return objects[0]
    return None


def _takes_any_key(node: Mapping[str, Any]) -> bool:
    extra = node.get("additionalProperties")
    return extra is True or isinstance(extra, dict)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@dataclass(frozen=True, slots=True)
class _Sides:
    tool: str
    current: str
    handler_root: Any
    registry_root: Any


def _compare(
    sides: _Sides,
    path: str,
    handler: dict[str, Any],
    registry: dict[str, Any],
    lines: list[str],
    defaulted: list[str],
) -> None:
    h_root, r_root = sides.handler_root, sides.registry_root
    r_props = registry.get("properties") if isinstance(registry.get("properties"), dict) else {}
    h_props = handler.get("properties") if isinstance(handler.get("properties"), dict) else {}
    assert isinstance(r_props, dict) and isinstance(h_props, dict)
    r_required = [r for r in registry.get("required", []) if isinstance(r, str)]
    h_required = [r for r in handler.get("required", []) if isinstance(r, str)]
    said = {"tool": sides.tool, "current": sides.current}
    for name, r_prop in r_props.items():
        where = _join(path, name)
        if name not in h_props:
            if not _takes_any_key(handler):
                lines.append(fragment("mismatch_missing", name=where, **said))
            continue
        h_prop = h_props[name]
        h_types, r_types = _types(h_root, h_prop), _types(r_root, r_prop)
        if not _covers(h_types, r_types):
            lines.append(
                fragment(
                    "mismatch_type",
                    name=where,
                    handler=_type_words(h_types),
                    registry=_type_words(r_types),
                    **said,
                )
            )
        h_values = _values(h_root, h_prop)
        if h_values is not None:
            r_values = _values(r_root, r_prop)
            if r_values is None or not all(
                any(json_equal(v, h) for h in h_values) for v in r_values
            ):
                lines.append(
                    fragment(
                        "mismatch_enum",
                        name=where,
                        handler=show(h_values),
                        registry=show(r_values) if r_values is not None else fragment("type_any"),
                        **said,
                    )
                )
        h_node = _deref(h_root, h_prop)
        r_node = _deref(r_root, r_prop)
        if (
            name not in r_required
            and isinstance(h_node, dict)
            and h_node.get("default") is not None
            and not (
                isinstance(r_node, dict) and json_equal(r_node.get("default"), h_node["default"])
            )
        ):
            r_default = r_node.get("default") if isinstance(r_node, dict) else None
            lines.append(
                fragment(
                    "mismatch_default",
                    name=where,
                    handler=show(h_node["default"]),
                    registry=fragment("default_is", value=show(r_default))
                    if isinstance(r_node, dict) and "default" in r_node
                    else fragment("default_none"),
                    **said,
                )
            )
            defaulted.append(where)
        h_object, r_object = _object_part(h_root, h_prop), _object_part(r_root, r_prop)
        if h_object is not None and r_object is not None:
            _compare(sides, where, h_object, r_object, lines, defaulted)
    if isinstance(registry.get("additionalProperties"), dict) and not _takes_any_key(handler):
        shown = fragment("where_property", name=path) if path else fragment("where_root")
        lines.append(fragment("mismatch_closed", where=shown, **said))
    for name in h_required:
        if name not in r_required:
            lines.append(fragment("mismatch_required", name=_join(path, name), **said))


def _mismatches(
    tool: str, current: str, handler: Any, registry: Any
) -> tuple[list[str], list[str]]:
    lines: list[str] = []
    defaulted: list[str] = []
    sides = _Sides(tool, current, handler, registry)
    h_object = _object_part(handler, handler) or {"type": "object"}
    r_object = _object_part(registry, registry) or {"type": "object"}
    _compare(sides, "", h_object, r_object, lines, defaulted)
    return lines, defaulted


def handler_mismatches(tool: str, current: str, handler: Any, registry: Any) -> list[str]:
    """One line per way the `handler`'s input schema (as its framework lists it)
    would strip, refuse or change arguments `registry` (the input schema of
    `tool` at version `current`, wire form) accepts; [] when it takes them all."""
    return _mismatches(tool, current, handler, registry)[0]


# ---------------------------------------------------------------- per toolset


@dataclass(frozen=True, slots=True)
class HandlerCheck:
    """One tool whose handler's schema mismatches current: which calls to refuse."""

    tool: str
    current: int
    lines: tuple[str, ...]
    schema: Any
    """The handler's schema, closed where it leaves `additionalProperties` out."""
    compiled: Any
    defaulted: tuple[str, ...]
    """Dotted names the handler fills with a default the registry does not have."""

    def refusal(self, arguments: Mapping[str, Any]) -> GateError | None:
        """The -31004 `handler_mismatch` refusal of a gated call the handler's
        framework would drop, refuse or change; None when it takes it as it is."""
        errors = error_details(self.compiled, dict(arguments))
        missing = [n for n in self.defaulted if not _present(arguments, n)]
        if not errors and not missing:
            return None
        data = {"tool": self.tool, "currentVersion": wire(self.current), "errors": errors}
        values = {
            "tool": self.tool,
            "current": wire(self.current),
            "first_problem": summary(self.lines),
        }
        return refusal_error("handler_mismatch", "handler", data, values)


def _present(arguments: Mapping[str, Any], dotted: str) -> bool:
    node: Any = arguments
    *parents, leaf = dotted.split(".")
    for part in parents:
        if not isinstance(node, dict) or part not in node:
            return True  # the parent is absent: nothing is filled below it
        node = node[part]
    return not isinstance(node, dict) or leaf in node


@dataclass(frozen=True, slots=True)
class HandlerReport:
    """A server's handlers against a toolset: names on one side only, and the
    mismatches of the tools on both (by tool, one line each)."""

    namespace: str
    not_implemented: tuple[str, ...]
    not_registered: tuple[str, ...]
    mismatches: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    checks: Mapping[str, HandlerCheck] = field(default_factory=dict)

    def raise_if_mismatched(self) -> None:
        if self.mismatches:
            raise HandlerMismatch(self.namespace, self.mismatches)

    def warnings(self) -> list[tuple[str, str]]:
        """(event, message) of the names on one side only, as the adapters log them."""
        sides = (
            ("tools_not_implemented", "not_implemented", self.not_implemented),
            ("tools_not_in_registry", "not_registered", self.not_registered),
        )
        return [
            (event, fragment(words, namespace=self.namespace, tools=", ".join(names)))
            for event, words, names in sides
            if names
        ]


def handler_check(
    tool: str, current: int, handler: Any, registry: Any, *, compiler: Compiler | None = None
) -> HandlerCheck | None:
    """The check of `tool` (current version `current`) whose handler's framework
    lists `handler` as its input schema; None when it takes what `registry` does."""
    lines, defaulted = _mismatches(tool, wire(current), handler, registry)
    if not lines:
        return None
    compiler = compiler or Compiler()
    closed = strict_schema(handler, close_true=False)
    try:
        compiled = compiler.validator(closed, f"{tool} (the handler's input schema)")
    except ToolsetError:  # a schema no validator reads refuses every call
        compiled = compiler.validator(False, f"{tool} (no handler schema to read)")
    return HandlerCheck(tool, current, tuple(lines), closed, compiled, tuple(defaulted))


def compare_handlers(toolset: Toolset, handlers: Mapping[str, Any]) -> HandlerReport:
    """Every tool of `toolset` against the input schema its handler's framework
    lists (`handlers`: tool name -> schema)."""
    compiler = Compiler()
    registered = {t.name for t in toolset.tools}
    checks: dict[str, HandlerCheck] = {}
    for entry in sorted(toolset.tools, key=lambda t: t.name):
        handler = handlers.get(entry.name)
        if handler is None:
            continue
        registry = entry.current_version.definition.get("inputSchema", {"type": "object"})
        check = handler_check(entry.name, entry.current, handler, registry, compiler=compiler)
        if check is not None:
            checks[entry.name] = check
    return HandlerReport(
        namespace=toolset.namespace,
        not_implemented=tuple(sorted(registered - set(handlers))),
        not_registered=tuple(sorted(set(handlers) - registered)),
        mismatches={tool: check.lines for tool, check in checks.items()},
        checks=checks,
    )
