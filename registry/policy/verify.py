"""`POST /v1/namespaces/{ns}/verify`: is what a server lists what the registry holds?

A `tools/list` result is matched tool by tool: its canonical digest against
every stored version of the tool of that name. The protocol revision the list
came from decides which fields take part: a server speaking 2025-03-26 cannot
list `outputSchema` or `title`, so stored definitions are compared without the
fields that revision does not have. Both sides go through the projection a
gated server lists with (`registry.sdk.revisions.project_tool`), so what a
gated server lists on a revision verifies on that revision.

    verify_listing(tools, "2025-06-18", versions_by_tool)
    # [ToolVerdict(name="db.query", status="current", version=4, ...), ...]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from registry.canonical import DigestError, digest
from registry.policy.routes import VersionLike
from registry.sdk.revisions import RevisionError, project_tool, revision_of

__all__ = ["ToolVerdict", "VerifyError", "verify_listing"]

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


def verify_listing(
    tools: Sequence[Any],
    revision: str,
    versions_by_tool: Mapping[str, Sequence[VersionLike]],
) -> list[ToolVerdict]:
    """One verdict per listed tool, in the listing's order."""
    try:
        revision = revision_of(revision)
    except RevisionError as exc:
        raise VerifyError(str(exc)) from exc
    verdicts = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise VerifyError(f"/tools/{index}: a tool is an object with a string name")
        name = tool["name"]
        try:
            listed = digest(project_tool(tool, revision))
        except DigestError as exc:
            raise VerifyError(f"/tools/{index}: {exc}") from exc
        history = versions_by_tool.get(name, [])
        served = [v for v in history if v.state != "retired"]
        current = served[-1].version if served else None
        match = next(
            (
                v
                for v in reversed(history)
                if digest(project_tool(v.definition, revision)) == listed
            ),
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
