"""The reports of `plan`, `apply` and `check`: text, json, github, markdown.

`Report` is what every renderer reads (a plan answer, its manifests and the mode);
`render(report, format, out)` writes one format. The github format writes workflow
commands (`::error file=...,line=...`) at the manifest line of each change;
`append_step_summary` adds the markdown report to `GITHUB_STEP_SUMMARY`.
Breaking changes accepted on purpose are shown as accepted, with their reason,
in every format; so are the namespace policies a bundle sets.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

import msgspec

from registry.cli.common import compact
from registry.compat import Change, Severity, suggested_converter
from registry.manifests import Manifest, PolicyManifest
from registry.policy.acceptance import Acceptance, NamespacePolicy
from registry.policy.plan import PlanAnswer, PolicyPlan, ToolPlan
from registry.policy.publishing import Decision

__all__ = [
    "FORMATS",
    "Mode",
    "Report",
    "append_step_summary",
    "display_path",
    "github_command",
    "manifest_pointer",
    "new_namespaces",
    "render",
]

FORMATS = ("text", "json", "github", "markdown")
_MARKDOWN_MARKER = "<!-- mcp-tool-registry:plan -->"

Mode = Literal["plan", "apply", "check"]


@dataclass(frozen=True)
class _Finding:
    """A change to show: `decided` is False for a breaking change no decision covers;
    `accepted` is set for a breaking change accepted on purpose."""

    plan: ToolPlan
    change: Change
    versions: list[int]  # the older versions it breaks (from the decisions), if any
    decided: bool
    accepted: Acceptance | None = None


class Report:
    """`live`: the server the tools were read from (--from-server), whose manifests have
    no file to point at."""

    def __init__(
        self,
        mode: Mode,
        answer: PlanAnswer,
        manifests: Sequence[Manifest],
        *,
        offline: bool,
        live: str | None = None,
        policies: Sequence[PolicyManifest] = (),
    ) -> None:
        self.mode = mode
        self.answer = answer
        self.offline = offline
        self.live = live
        self.manifests = {m.key: m for m in manifests}
        self.policies = {p.namespace: p for p in policies}

    def manifest(self, plan: ToolPlan) -> Manifest | None:
        if self.live is not None:
            return None
        return self.manifests.get((plan.namespace, plan.tool))

    @property
    def accepted(self) -> list[tuple[ToolPlan, Acceptance]]:
        """Every breaking change accepted on purpose, by tool."""
        return [(plan, a) for plan in self.answer.tools for a in plan.acceptances]

    @functools.cached_property
    def undecided(self) -> list[_Finding]:
        """The breaking changes lacking a decision, one per (tool, path, kind)."""
        found: dict[tuple[str, str, str, str], _Finding] = {}
        for plan in self.answer.tools:
            for decision in plan.decisions:
                for change in decision.report.breaking:
                    if _acceptance(plan, change) is not None:
                        continue
                    key = (plan.namespace, plan.tool, change.path, change.kind.value)
                    if key in found:
                        found[key].versions.append(decision.version)
                    else:
                        found[key] = _Finding(plan, change, [decision.version], decided=False)
        return list(found.values())

    @functools.cached_property
    def findings(self) -> list[_Finding]:
        """Every change of every tool's report (against its current version), plus the
        undecided breaking changes found only against older versions."""
        undecided = {
            (f.plan.namespace, f.plan.tool, f.change.path, f.change.kind.value): f
            for f in self.undecided
        }
        listed: list[_Finding] = []
        for plan in self.answer.tools:
            for change in plan.report.changes if plan.report else []:
                key = (plan.namespace, plan.tool, change.path, change.kind.value)
                known = undecided.pop(key, None)
                accepted = _acceptance(plan, change)
                listed.append(known or _Finding(plan, change, [], True, accepted))
        return listed + list(undecided.values())

    @property
    def needed(self) -> list[tuple[ToolPlan, Decision]]:
        return [(plan, d) for plan in self.answer.tools for d in plan.decisions]

    def verdict(self) -> str:
        """One line: the outcome, with the mode named (`check failed: ...`)."""
        tools = self.answer.tools
        forbidden = [
            f"creating namespace {n.name} needs {n.name}:admin"
            for n in self.answer.namespaces
            if not n.allowed
        ] + [
            f"setting the policy of {p.namespace} needs {p.namespace}:admin"
            for p in self.answer.policies
            if not p.allowed
        ]
        if forbidden:
            what = ", ".join(forbidden)
            if self.mode == "apply":
                return f"apply refused, nothing was applied: {what}"
            return f"{self.mode} refused: {what}; nothing would be applied"
        refused = [p for p in tools if not p.accepted]
        in_use = [m for p in refused for m in p.in_use]
        if in_use and not self.needed:
            what = (
                f"{len(in_use)} retirement{'s' if len(in_use) != 1 else ''} of a version "
                "still called (require_idle)"
            )
            if self.mode == "apply":
                return f"apply refused, nothing was applied: {what}"
            return f"{self.mode} refused: {what}; nothing would be applied"
        if refused:
            count = len(self.needed)
            names = ", ".join(f"{p.namespace}/{p.tool}" for p in refused)
            what = f"{count} decision{'s' if count != 1 else ''} missing for {names}"
            if self.mode == "apply":
                return f"apply refused, nothing was applied: {what}"
            if self.mode == "check":
                breaking = len(self.undecided)
                noun = "change lacks" if breaking == 1 else "changes lack"
                return f"check failed: {breaking} breaking {noun} a decision; {what}"
            return f"plan refused: {what}; nothing would be applied"
        counts = _counts(self.answer)
        if self.mode == "apply":
            if not self.answer.applied:
                return f"apply: nothing was applied: {counts}"
            if not _changes_anything(self.answer):
                return f"apply: no changes, the registry matches the manifests: {counts}"
            return f"applied: {counts}"
        if self.mode == "check":
            return f"check passed: no breaking change lacks a decision: {counts}"
        if not _changes_anything(self.answer):
            return f"plan: no changes, the registry matches the manifests: {counts}"
        return f"plan accepted: {counts}"


def _changes_anything(answer: PlanAnswer) -> bool:
    if any(p.action == "set" for p in answer.policies):
        return True
    return any(n.action == "create" for n in answer.namespaces) or any(
        p.action != "unchanged" or p.lifecycle or any(a.action != "unchanged" for a in p.aliases)
        for p in answer.tools
    )


def new_namespaces(answer: PlanAnswer) -> list[str]:
    return [n.name for n in answer.namespaces if n.action == "create"]


def _counts(answer: PlanAnswer) -> str:
    tools = answer.tools
    created = sum(p.action == "create" for p in tools)
    published = sum(p.action == "new-version" for p in tools)
    unchanged = sum(p.action == "unchanged" for p in tools)
    lifecycle = sum(len(p.lifecycle) for p in tools)
    aliases = sum(a.action != "unchanged" for p in tools for a in p.aliases)
    parts = []
    namespaces = len(new_namespaces(answer))
    if namespaces:
        parts.append(f"{namespaces} new namespace{'s' if namespaces != 1 else ''}")
    parts += [
        f"{created} to create",
        f"{published} new version{'s' if published != 1 else ''}",
        f"{unchanged} unchanged",
    ]
    if lifecycle:
        parts.append(f"{lifecycle} lifecycle change{'s' if lifecycle != 1 else ''}")
    if aliases:
        parts.append(f"{aliases} alias change{'s' if aliases != 1 else ''}")
    policies = sum(p.action == "set" for p in answer.policies)
    if policies:
        parts.append(f"{policies} namespace polic{'ies' if policies != 1 else 'y'} to set")
    accepted = sum(len(p.acceptances) for p in tools)
    if accepted:
        parts.append(f"{accepted} breaking change{'s' if accepted != 1 else ''} accepted")
    return ", ".join(parts)


# -- acceptances and policies, worded once for every format ------------------------------


def _acceptance(plan: ToolPlan, change: Change) -> Acceptance | None:
    key = (change.kind.value, change.path)
    return next((a for a in plan.acceptances if (a.kind, a.path) == key), None)


def _acceptance_text(acceptance: Acceptance) -> str:
    breaks = ", ".join(f"v{n}" for n in acceptance.versions)
    by = "the namespace policy" if acceptance.source == "policy" else "the manifest"
    return (
        f"accepted: {acceptance.kind} at {acceptance.path or '/'} (breaking for callers of "
        f"{breaks}; accepted on purpose by {by}): {acceptance.reason}"
    )


def _policy_text(policy: NamespacePolicy) -> str:
    if not policy.gating:
        return f"gating off ({policy.reason})"
    if not policy.relax:
        return "the strict rules (gating on, nothing relaxed)"
    return "; ".join(
        f"relax {r.kind} for {r.tool or 'every tool'} ({r.reason})" for r in policy.relax
    )


def _policy_lines(answer: PlanAnswer) -> list[tuple[PolicyPlan, str]]:
    """The policies to show (set, or refused), each with its line."""
    lines = []
    for step in answer.policies:
        if step.action == "set" or not step.allowed:
            refused = "" if step.allowed else f" (refused: needs {step.namespace}:admin)"
            line = f"namespace {step.namespace}: policy {step.action}{refused}: "
            lines.append((step, line + _policy_text(step.policy)))
    return lines


def _severity(plan: ToolPlan) -> str:
    return plan.report.severity.value if plan.report is not None else "-"


def _lifecycle_text(plan: ToolPlan) -> list[str]:
    lines = []
    for change in plan.lifecycle:
        if change.action == "retire":
            lines.append(f"retire v{change.version}")
        elif change.action == "deprecate":
            sunset = f" (sunset {change.sunset})" if change.sunset else ""
            lines.append(f"deprecate v{change.version}{sunset}")
        else:
            lines.append(f"converter v{change.version} -> v{change.to}: {compact(change.ops)}")
    for alias in plan.aliases:
        if alias.action == "unchanged" and alias.routed:
            continue
        routed = "routed" if alias.routed else "no route yet: calls refused until one exists"
        contract = f"{alias.contract.tool} v{alias.contract.version}"
        lines.append(f"alias {alias.name}: {alias.action} (contract {contract}, {routed})")
    return lines


def _callers_text(plan: ToolPlan) -> list[str]:
    """Who still calls the plan's deprecated or retiring versions, and refused retirements."""
    lines = [f"retirement refused: {message}" for message in plan.in_use]
    for usage in plan.callers:
        servers = ", ".join(f"{s.name} ({s.calls:,})" for s in usage.servers[:3])
        more = f" and {len(usage.servers) - 3} more" if len(usage.servers) > 3 else ""
        last = usage.last_seen.isoformat(timespec="seconds") if usage.last_seen else "-"
        lines.append(
            f"v{usage.version} ({usage.state}) still called: {usage.calls:,} calls, "
            f"last {last.replace('+00:00', 'Z')}, by {servers}{more}"
        )
    return lines


def _decision_options(plan: ToolPlan, decision: Decision) -> str:
    options = []
    if "retire" in decision.options:
        options.append(f"retire: [{decision.version}]")
    if "converter" in decision.options:
        suggested = suggested_converter(decision.suggested_ops)
        ops = compact(suggested) if suggested else "[...]"
        options.append(f"converters: [{{from: {decision.version}, ops: {ops}}}]")
    return " or ".join(options)


def _decision_subject(decision: Decision) -> str:
    if decision.alias:
        return f"alias {decision.alias} (contract v{decision.version})"
    return f"v{decision.version} ({decision.state})"


# -- text ---------------------------------------------------------------------------------------


def _render_text(report: Report, out: TextIO) -> None:
    headers = ("TOOL", "ACTION", "VERSION", "SEVERITY", "DECISIONS", "SOURCE")
    rows = [
        (
            f"{p.namespace}/{p.tool}",
            p.action,
            f"v{p.version}",
            _severity(p),
            f"{len(p.decisions)} missing" if p.decisions else "-",
            p.source or "-",
        )
        for p in report.answer.tools
    ]
    for step in report.answer.namespaces:
        if step.action == "create":
            refused = "" if step.allowed else f" (refused: needs {step.name}:admin)"
            print(f"namespace {step.name}: create{refused}", file=out)
    for _, line in _policy_lines(report.answer):
        print(line, file=out)
    if new_namespaces(report.answer) or _policy_lines(report.answer):
        print(file=out)
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=False)]
    for row in [headers, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)
    for plan in report.answer.tools:
        findings = [f for f in report.findings if f.plan is plan]
        details = _lifecycle_text(plan) + _callers_text(plan)
        if not findings and not details and not plan.decisions and not plan.acceptances:
            continue
        print(file=out)
        print(f"{plan.namespace}/{plan.tool} v{plan.version} ({plan.action})", file=out)
        kind_width = max((len(f.change.kind.value) for f in findings), default=0)
        for finding in findings:
            change = finding.change
            mark = "" if finding.decided else "  (no decision)"
            mark = "  (accepted)" if finding.accepted is not None else mark
            kind = change.kind.value.ljust(kind_width)
            print(f"  {change.severity.value:<9} {kind}  {change.path or '/'}{mark}", file=out)
            print(f"            {change.message}", file=out)
            if change.severity is Severity.BREAKING and change.witness is not None:
                print(f"            witness: {compact(change.witness)}", file=out)
        for acceptance in plan.acceptances:
            print(f"  {_acceptance_text(acceptance)}", file=out)
        for line in details:
            print(f"  {line}", file=out)
        for decision in plan.decisions:
            print(f"  decision needed: {_decision_subject(decision)}: {decision.message}", file=out)
            print(f"            options: {_decision_options(plan, decision)}", file=out)
    print(file=out)
    print(report.verdict(), file=out)


# -- json ---------------------------------------------------------------------------------------


def _render_json(report: Report, out: TextIO) -> None:
    out.write(msgspec.json.encode(report.answer).decode() + "\n")


# -- github -------------------------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_command(name: str, props: dict[str, str], message: str) -> str:
    rendered = ",".join(f"{key}={_escape_property(value)}" for key, value in props.items())
    return f"::{name} {rendered}::{_escape_data(message)}\n"


def display_path(path: str) -> str:
    """The path GitHub annotates: relative to the working directory (the checkout)."""
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            return relative.replace(os.sep, "/")
    return path.replace(os.sep, "/")


def manifest_pointer(plan: ToolPlan, change: Change) -> str:
    """Where in the manifest a change is written: the definition is under `/tool`.
    A lifecycle decision of an unchanged definition (a retirement that strands an
    older version) is written at `/retire`."""
    if plan.action == "unchanged":
        return "/retire"
    return "/tool" + change.path


def _annotation(
    report: Report, plan: ToolPlan, pointer: str, title: str, level: str, message: str
) -> str:
    manifest = report.manifest(plan)
    props: dict[str, str] = {}
    if manifest is not None:
        props["file"] = display_path(manifest.path)
        position = manifest.position(pointer, key=True, nearest=True)
        if position is not None:
            props["line"], props["col"] = str(position[0]), str(position[1])
    props["title"] = title
    return github_command(level, props, message)


def _render_github(report: Report, out: TextIO) -> None:
    for step in report.answer.namespaces:
        if step.action == "create":
            level = "notice" if step.allowed else "error"
            needs = "" if step.allowed else f" (refused: needs {step.name}:admin)"
            out.write(f"::{level} title=namespace::namespace {step.name}: create{needs}\n")
    for policy_step, line in _policy_lines(report.answer):
        props: dict[str, str] = {}
        declared = report.policies.get(policy_step.namespace)
        position = declared.position("/policy", key=True) if declared is not None else None
        if declared is not None:
            props["file"] = display_path(declared.path)
        if position is not None:
            props["line"], props["col"] = str(position[0]), str(position[1])
        props["title"] = "namespace policy"
        out.write(github_command("notice" if policy_step.allowed else "error", props, line))
    for plan, acceptance in report.accepted:
        pointer = "/tool" + acceptance.path
        manifest = report.manifest(plan)
        keys = [(a.kind, a.path) for a in manifest.accept] if manifest is not None else []
        if (acceptance.kind, acceptance.path) in keys and acceptance.source == "request":
            pointer = f"/accept/{keys.index((acceptance.kind, acceptance.path))}"
        title = f"{acceptance.kind} (accepted)"
        message = f"{plan.namespace}/{plan.tool}: {_acceptance_text(acceptance)}"
        out.write(_annotation(report, plan, pointer, title, "warning", message))
    for finding in report.findings:
        if finding.accepted is not None:
            continue  # annotated above, with its reason
        plan, change = finding.plan, finding.change
        name = f"{plan.namespace}/{plan.tool}"
        pointer = manifest_pointer(plan, change)
        if not finding.decided:
            versions = ", ".join(f"v{n}" for n in sorted(set(finding.versions)))
            message = (
                f"{name}: {change.message} (breaking for callers of {versions}, which would "
                f"have no route to v{plan.version}: retire them or add a converter)"
            )
            if change.witness is not None:
                message += f"; witness: {compact(change.witness)}"
            if change.suggested_op is not None:
                message += f"; suggested op: {compact(change.suggested_op)}"
            out.write(_annotation(report, plan, pointer, change.kind.value, "error", message))
        elif change.severity is Severity.BREAKING:
            message = f"{name}: {change.message} (breaking, settled by this manifest's decisions)"
            out.write(_annotation(report, plan, pointer, change.kind.value, "warning", message))
        else:
            message = f"{name}: {change.message} ({change.severity.value})"
            out.write(_annotation(report, plan, pointer, change.kind.value, "notice", message))
    covered = {(f.plan.namespace, f.plan.tool) for f in report.undecided}
    for plan, decision in report.needed:
        if (plan.namespace, plan.tool) in covered:
            continue
        # a decision with no breaking change to point at (e.g. an alias losing its route)
        message = f"{plan.namespace}/{plan.tool}: {decision.message}"
        pointer = "/retire" if plan.action == "unchanged" else "/tool/name"
        out.write(_annotation(report, plan, pointer, "decision needed", "error", message))
    for plan in report.answer.tools:
        for message in plan.in_use:
            text = f"{plan.namespace}/{plan.tool}: {message}"
            out.write(_annotation(report, plan, "/require_idle", "still called", "error", text))
        for line in _callers_text(plan)[len(plan.in_use) :]:
            text = f"{plan.namespace}/{plan.tool}: {line}"
            out.write(_annotation(report, plan, "/retire", "still called", "warning", text))
    print(report.verdict(), file=out)


def append_step_summary(report: Report) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            _render_markdown(report, handle)
    except OSError:
        pass  # the summary is a courtesy; the annotations are already out


# -- markdown -----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    text = " ".join(text.split())
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


def _table(out: TextIO, headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A Markdown table: its header, the rule under it, a line per row of cells."""
    print("| " + " | ".join(headers) + " |", file=out)
    print("|" + "---|" * len(headers), file=out)
    for row in rows:
        print("| " + " | ".join(row) + " |", file=out)


def _render_markdown(report: Report, out: TextIO) -> None:
    ok = report.answer.accepted and (report.mode != "apply" or report.answer.applied)
    icon = "✅" if ok else "❌"
    print(_MARKDOWN_MARKER, file=out)
    print(f"## {icon} {_cell(report.verdict())}", file=out)
    if report.live is not None:
        print(file=out)
        print(f"_The tools listed by the live server {_code(report.live)}._", file=out)
    if report.offline:
        print(file=out)
        print("_Checked offline against a saved toolset._", file=out)
    for step in report.answer.namespaces:
        if step.action == "create":
            refused = "" if step.allowed else f" (refused: needs {_code(step.name + ':admin')})"
            print(file=out)
            print(f"- namespace {_code(step.name)}: create{refused}", file=out)
    for _, line in _policy_lines(report.answer):
        print(file=out)
        print(f"- {_cell(line)}", file=out)
    print(file=out)
    _table(
        out,
        ("Tool", "Action", "Version", "Severity", "Decisions missing", "Manifest"),
        (
            (
                _code(f"{plan.namespace}/{plan.tool}"),
                plan.action,
                f"v{plan.version}",
                _severity(plan),
                str(len(plan.decisions) or "-"),
                _code(plan.source) if plan.source else "-",
            )
            for plan in report.answer.tools
        ),
    )
    if report.findings:
        print(file=out)
        print("### Changes", file=out)
        print(file=out)
        rows = []
        for finding in report.findings:
            plan, change = finding.plan, finding.change
            severity = change.severity.value
            if change.severity is Severity.BREAKING:
                severity = f"**{severity}**" + ("" if finding.decided else " (no decision)")
                severity += " (accepted)" if finding.accepted is not None else ""
            rows.append(
                (
                    _code(f"{plan.namespace}/{plan.tool}"),
                    _code(change.kind.value),
                    severity,
                    _code(change.path or "/"),
                    _cell(change.message),
                    _code(compact(change.witness)) if change.witness is not None else "-",
                )
            )
        _table(out, ("Tool", "Kind", "Severity", "Path", "Message", "Witness"), rows)
    if report.needed:
        print(file=out)
        print("### Decisions still needed", file=out)
        print(file=out)
        for plan, decision in report.needed:
            kinds = ", ".join(_code(k) for k in decision.kinds) or "-"
            print(
                f"- {_code(f'{plan.namespace}/{plan.tool}')} {_decision_subject(decision)}: "
                f"{_cell(decision.message)}. Breaking kinds: {kinds}.",
                file=out,
            )
            print(f"  Add to the manifest: {_code(_decision_options(plan, decision))}", file=out)
    if report.accepted:
        print(file=out)
        print("### Accepted on purpose", file=out)
        print(file=out)
        _table(
            out,
            ("Tool", "Kind", "Path", "Breaking for", "Accepted by", "Reason"),
            (
                (
                    _code(f"{plan.namespace}/{plan.tool}"),
                    _code(a.kind),
                    _code(a.path or "/"),
                    ", ".join(f"v{n}" for n in a.versions),
                    "namespace policy" if a.source == "policy" else "manifest",
                    _cell(a.reason),
                )
                for plan, a in report.accepted
            ),
        )
    callers = [(plan, line) for plan in report.answer.tools for line in _callers_text(plan)]
    if callers:
        print(file=out)
        print("### Still called", file=out)
        print(file=out)
        for plan, line in callers:
            print(f"- {_code(f'{plan.namespace}/{plan.tool}')}: {_cell(line)}", file=out)
    details = [(plan, line) for plan in report.answer.tools for line in _lifecycle_text(plan)]
    if details:
        print(file=out)
        print("### Lifecycle and aliases", file=out)
        print(file=out)
        for plan, line in details:
            print(f"- {_code(f'{plan.namespace}/{plan.tool}')}: {_cell(line)}", file=out)
    print(file=out)


def render(report: Report, output_format: str, out: TextIO) -> None:
    renderers = {
        "text": _render_text,
        "json": _render_json,
        "github": _render_github,
        "markdown": _render_markdown,
    }
    renderers[output_format](report, out)
    out.flush()
