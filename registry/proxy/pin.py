"""Pin mode: the upstream's live tools against the registry's served versions.

    verdicts = compare(toolset, live_tools, "2025-06-18")
    verdicts["db.query"]          # Unapproved(...) when its live definition is no served version
    refusal = verdicts["db.query"].error()      # -31005 tool_definition_unapproved

What a host reviewed is what the registry serves; a server that changes a tool
underneath (a new description, a wider schema) lists a definition whose
canonical digest is no served version. `compare` matches every live tool of a
tool the namespace holds with `registry.policy.verify.verify_listing` (the
registry's own `verify`: digests in the upstream's revision, both sides
projected the way a gated server lists), and an unapproved one gets the
changes from the current version to the live definition in the engine's words.
A tool the namespace does not hold is not pinned here: the gate never lists it
and refuses its calls as an unknown tool (-32602), as every gated server does.

The refusal is a JSON-RPC error on every revision: it refuses the tool, not
the call's arguments, so nothing the caller sends can fix it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from registry.compat import classify
from registry.policy.verify import VerifyError, verify_listing
from registry.sdk.gate import GateError
from registry.sdk.revisions import project_tool
from registry.sdk.toolset import Toolset

__all__ = [
    "TOOL_DEFINITION_UNAPPROVED",
    "PinError",
    "Unapproved",
    "compare",
    "warning_line",
]

TOOL_DEFINITION_UNAPPROVED = -31005
_APPROVED = frozenset({"current", "served"})


class PinError(ValueError):
    """The upstream's listing cannot be compared (not a list of named tools)."""


class ServedDigest(msgspec.Struct, frozen=True):
    version: str
    digest: str


class Unapproved(msgspec.Struct, frozen=True):
    """A live tool whose definition is no served version of it."""

    tool: str
    namespace: str
    live_digest: str
    served: tuple[ServedDigest, ...]
    changes: tuple[dict[str, Any], ...]

    def error(self) -> GateError:
        """The refusal of its calls: -31005, with the tool, the live digest, the
        served versions and the changes (current -> live) in the engine's words."""
        served = ", ".join(f"{s.version} {s.digest}" for s in self.served) or "none"
        return GateError(
            TOOL_DEFINITION_UNAPPROVED,
            f"{self.tool}: the upstream's live definition ({self.live_digest}) is no version "
            f"the registry serves for {self.namespace}/{self.tool} (served: {served}); "
            "the tool is withheld until that definition is published and approved.",
            {
                "reason": "tool_definition_unapproved",
                "tool": self.tool,
                "liveDigest": self.live_digest,
                "servedVersions": [msgspec.to_builtins(s) for s in self.served],
                "changes": list(self.changes),
            },
        )


def compare(toolset: Toolset, live: Sequence[Any], revision: str) -> dict[str, Unapproved]:
    """The live tools (one `tools/list` of the upstream, every page, on `revision`)
    that the namespace holds and whose definition is no served version."""
    held = [
        t
        for t in live
        if isinstance(t, Mapping)
        and isinstance(t.get("name"), str)
        and toolset.tool(t["name"]) is not None
    ]
    versions = {entry.name: entry.versions for entry in toolset.tools}
    try:
        verdicts = verify_listing(held, revision, versions)
    except VerifyError as exc:
        raise PinError(f"the upstream's tools/list cannot be compared: {exc}") from exc
    out: dict[str, Unapproved] = {}
    for definition, verdict in zip(held, verdicts, strict=True):
        if verdict.status in _APPROVED:
            continue
        entry = toolset.tool(verdict.name)
        assert entry is not None and verdict.digest is not None
        current = entry.current_version
        report = classify(
            project_tool(current.definition, revision), project_tool(definition, revision)
        )
        out[verdict.name] = Unapproved(
            tool=verdict.name,
            namespace=toolset.namespace,
            live_digest=verdict.digest,
            served=tuple(ServedDigest(f"v{v.version}", v.digest) for v in entry.versions),
            changes=tuple(
                {
                    "kind": str(c.kind),
                    "severity": str(c.severity),
                    "path": c.path,
                    "message": c.message,
                    "old": msgspec.to_builtins(c.old),
                    "new": msgspec.to_builtins(c.new),
                }
                for c in report.changes
            ),
        )
    return out


def warning_line(unapproved: Unapproved) -> str:
    """The one stderr line that names a withheld tool."""
    served = ", ".join(s.version for s in unapproved.served) or "none"
    changes = "; ".join(c["message"] for c in unapproved.changes) or "no change the engine names"
    return (
        f"registry proxy: --pin: {unapproved.tool} withheld: the upstream lists a definition "
        f"({unapproved.live_digest}) that is no served version of "
        f"{unapproved.namespace}/{unapproved.tool} (served: {served}); from the current "
        f"version: {changes}"
    )
