"""Path parameters with the naming rules of DESIGN.md, so the OpenAPI spec states them too."""

from __future__ import annotations

from typing import Annotated, Final

from litestar.params import PathParameter

__all__ = ["AliasName", "DigestText", "NamespaceName", "ToolName", "VersionText"]

NAMESPACE_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"
TOOL_PATTERN: Final = r"^[A-Za-z0-9._-]{1,128}$"
VERSION_PATTERN: Final = r"^v?[1-9][0-9]{0,8}$"
DIGEST_PATTERN: Final = r"^sha256:[0-9a-f]{64}$"

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
