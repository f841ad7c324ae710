"""`POST /v1/namespaces/{ns}/verify`: is what a server lists what the registry holds?

A `tools/list` result is matched tool by tool: its canonical digest against
every stored version of the tool of that name. The protocol revision the list
came from decides which fields take part: a server speaking 2025-03-26 cannot
list `outputSchema` or `title`, so stored definitions are compared without the
fields that revision does not have.

    verify_listing(tools, "2025-06-18", versions_by_tool)
    # [ToolVerdict(name="db.query", status="current", version=4, ...), ...]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from registry.canonical import DigestError, digest
from registry.policy.routes import VersionLike

__all__ = [
    "REVISIONS",
    "ToolVerdict",
    "VerifyError",
    "fields_of",
    "verify_listing",
]

# The Tool fields each protocol revision added (the digest never counts `_meta`).
REVISIONS: dict[str, frozenset[str]] = {
    "2024-11-05": frozenset({"name", "description", "inputSchema"}),
    "2025-03-26": frozenset({"name", "description", "inputSchema", "annotations"}),
    "2025-06-18": frozenset(
        {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
    ),
    "2025-11-25": frozenset(
        {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons"}
    ),
    "2026-07-28": frozenset(
        {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons"}
    ),
}
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")

Status = Literal["current", "served", "retired", "unknown"]


class VerifyError(ValueError):
    pass


class ToolVerdict(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    status: Status
    digest: str | None
    version: int | None = None
    current_version: int | None = None
    message: str


def fields_of(revision: str) -> frozenset[str]:
    """The Tool fields of a revision; a newer, unknown date uses the newest known one."""
    if not _DATE.fullmatch(revision):
        raise VerifyError(f"protocolVersion {revision!r} is not a revision date (YYYY-MM-DD)")
    known = [r for r in sorted(REVISIONS) if r <= revision]
    if not known:
        raise VerifyError(
            f"protocolVersion {revision} predates MCP tools (first revision: {min(REVISIONS)})"
        )
    return REVISIONS[known[-1]]


def _projected(definition: Mapping[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in definition.items() if k in fields}


def verify_listing(
    tools: Sequence[Any],
    revision: str,
    versions_by_tool: Mapping[str, Sequence[VersionLike]],
) -> list[ToolVerdict]:
    """One verdict per listed tool, in the listing's order."""
    fields = fields_of(revision)
    verdicts = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise VerifyError(f"/tools/{index}: a tool is an object with a string name")
        name = tool["name"]
        try:
            listed = digest(_projected(tool, fields))
        except DigestError as exc:
            raise VerifyError(f"/tools/{index}: {exc}") from exc
        history = versions_by_tool.get(name, [])
        served = [v for v in history if v.state != "retired"]
        current = served[-1].version if served else None
        match = next(
            (v for v in reversed(history) if digest(_projected(v.definition, fields)) == listed),
            None,
        )
        if match is None:
            message = (
                f"{name} is not registered"
                if not history
                else f"{name} matches no registered version: unregistered or tampered"
            )
            verdicts.append(
                ToolVerdict(
                    name=name,
                    status="unknown",
                    digest=listed,
                    current_version=current,
                    message=message,
                )
            )
            continue
        status: Status = (
            "retired"
            if match.state == "retired"
            else "current"
            if match.version == current
            else "served"
        )
        verdicts.append(
            ToolVerdict(
                name=name,
                status=status,
                digest=listed,
                version=match.version,
                current_version=current,
                message=f"{name} is version {match.version} ({status})",
            )
        )
    return verdicts
