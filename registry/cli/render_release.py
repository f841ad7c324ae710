"""The words of a release's removals and version bump, for every format of
`plan`, `apply` and `check` (registry/cli/render.py lays them out).

A tool the namespace serves that the manifests no longer hold is shown with
its kind (`tool-removed`, `tool-renamed`), the engine's message, who still
calls it, and the decision it needs; a `serverInfo.version` bump with its
verdict. Worded once here, so that text, github and markdown say the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry.policy.callers import VersionUsage
from registry.policy.plan import ToolRemoval
from registry.policy.semver import SemverCheck

__all__ = [
    "callers_lines",
    "decision_line",
    "removal_heading",
    "removed_summary",
    "semver_line",
    "shown_checks",
]


def callers_lines(usages: Sequence[VersionUsage]) -> list[str]:
    """`v2 (active) still called: 1,204 calls, last ..., by server (1,000) ...`, per version."""
    lines = []
    for usage in usages:
        servers = ", ".join(f"{s.name} ({s.calls:,})" for s in usage.servers[:3])
        more = f" and {len(usage.servers) - 3} more" if len(usage.servers) > 3 else ""
        last = usage.last_seen.isoformat(timespec="seconds") if usage.last_seen else "-"
        lines.append(
            f"v{usage.version} ({usage.state}) still called: {usage.calls:,} calls, "
            f"last {last.replace('+00:00', 'Z')}, by {servers}{more}"
        )
    return lines


def removal_heading(removal: ToolRemoval) -> str:
    """`billing/add (tool-renamed to get-sum)`."""
    what = f"renamed to {removal.renamed_to}" if removal.renamed_to else "no longer held"
    return f"{removal.namespace}/{removal.tool} ({removal.change.kind.value}: {what})"


def decision_line(removal: ToolRemoval) -> str:
    """What settles a removal, or how it was settled."""
    versions = ", ".join(str(v) for v in removal.versions)
    if removal.retired:
        return f"retired on purpose (--retire-removed): v{versions.replace(', ', ', v')}"
    return (
        f"decision needed: retire it (--retire-removed, or keep its manifest with "
        f"retire: [{versions}]), or keep serving it (keep its manifest)"
    )


def removed_summary(removals: Sequence[ToolRemoval]) -> str:
    """`2 tools no longer held (billing/x removed, billing/add renamed to get-sum)`."""
    undecided = [r for r in removals if not r.retired]
    names = ", ".join(
        f"{r.namespace}/{r.tool} " + (f"renamed to {r.renamed_to}" if r.renamed_to else "removed")
        for r in undecided
    )
    noun = "tool" if len(undecided) == 1 else "tools"
    return (
        f"{len(undecided)} {noun} the registry serves no longer held ({names}): retire "
        "with --retire-removed, or keep the manifests"
    )


def shown_checks(checks: Sequence[SemverCheck]) -> list[SemverCheck]:
    """The version checks worth a line: all but a release that changed nothing under
    the same version (JSON keeps them all)."""
    return [
        c
        for c in checks
        if not (c.verdict == "ok" and c.bump == "none" and c.change == "identical")
    ]


def semver_line(check: SemverCheck) -> str:
    """`semver billing: 1.2.0 -> 1.3.0 is a minor bump, but ... (mismatch)`."""
    return f"semver {check.namespace}: {check.message} ({check.verdict})"
