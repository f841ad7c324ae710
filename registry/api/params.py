"""Path parameters with the naming rules of docs/contract.md, so the OpenAPI spec states them too.

The spec's patterns are anchored with `^...$`, which in JSON Schema (ECMA-262)
means the whole string. Litestar checks them with Python's `re.search`, whose
`$` also matches before a final newline, so `beta\\n` passed. `exact_names`
(an app guard, run after access is decided and before Litestar's own checks)
matches every path parameter, and the audit log's filters, whole.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from litestar.connection import ASGIConnection
from litestar.params import PathParameter

from registry.api.problems import ApiError

__all__ = [
    "AUDIT_ACTION_PATTERN",
    "AliasName",
    "DigestText",
    "NamespaceName",
    "ToolName",
    "VersionText",
    "exact",
    "exact_names",
    "namespace_name",
    "tool_name",
    "version_number",
]

NAMESPACE_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"
TOOL_PATTERN: Final = r"^[A-Za-z0-9._-]{1,128}$"
VERSION_PATTERN: Final = r"^v?[1-9][0-9]{0,8}$"
DIGEST_PATTERN: Final = r"^sha256:[0-9a-f]{64}$"
AUDIT_ACTION_PATTERN: Final = r"^[a-z][a-z._-]{0,63}$"

_NAMESPACE_RULE: Final = re.compile(NAMESPACE_PATTERN)
_TOOL_RULE: Final = re.compile(TOOL_PATTERN)
_VERSION_RULE: Final = re.compile(r"^v?([1-9][0-9]{0,8})$")  # VERSION_PATTERN, number captured

NamespaceName = Annotated[
    str, PathParameter(pattern=NAMESPACE_PATTERN, description="A namespace: " + NAMESPACE_PATTERN)
]
ToolName = Annotated[
    str, PathParameter(pattern=TOOL_PATTERN, description="An MCP tool name: " + TOOL_PATTERN)
]
AliasName = Annotated[
    str, PathParameter(pattern=TOOL_PATTERN, description="An alias (a tool name): " + TOOL_PATTERN)
]
VersionText = Annotated[
    str,
    PathParameter(pattern=VERSION_PATTERN, description='A version number; "v3" is accepted too'),
]
DigestText = Annotated[
    str, PathParameter(pattern=DIGEST_PATTERN, description="sha256: and 64 lowercase hex digits")
]

# The rule of each path parameter, by its name in the route templates.
_PATH_RULES: Final = {
    "ns": NAMESPACE_PATTERN,
    "tool": TOOL_PATTERN,
    "alias": TOOL_PATTERN,
    "n": VERSION_PATTERN,
    "digest": DIGEST_PATTERN,
}


def exact(name: str, value: str | None, pattern: str) -> None:
    """400 `invalid-request` unless `value` (when given) matches `pattern` whole."""
    if value is not None and re.fullmatch(pattern, value) is None:
        raise ApiError("invalid-request", f"{name}: {value!r} does not match {pattern}")


async def exact_names(connection: ASGIConnection[Any, Any, Any, Any], _handler: Any) -> None:
    """The app's second guard: every named path parameter matches its rule whole."""
    for name, value in connection.path_params.items():
        pattern = _PATH_RULES.get(name)
        if pattern is not None and isinstance(value, str):
            exact(name, value, pattern)


def namespace_name(ns: str) -> str:
    """`ns` when it is a namespace name (a body's, say); else 400 `invalid-request`."""
    if not _NAMESPACE_RULE.fullmatch(ns):
        raise ApiError(
            "invalid-request", f"namespace {ns!r} does not match {_NAMESPACE_RULE.pattern}"
        )
    return ns


def tool_name(tool: str, what: str = "tool") -> str:
    """`tool` when it is a tool name; else 400 `invalid-request` naming it as `what`."""
    if not _TOOL_RULE.fullmatch(tool):
        raise ApiError(
            "invalid-request", f"{what} name {tool!r} does not match {_TOOL_RULE.pattern}"
        )
    return tool


def version_number(n: str) -> int:
    """A version from the path: `3`, `"v3"` too (the MCP wire spelling)."""
    match = _VERSION_RULE.fullmatch(n)
    if match is None:
        raise ApiError("invalid-request", f"version {n!r} is not a positive integer")
    return int(match.group(1))
