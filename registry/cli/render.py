"""The reports of `plan`, `apply` and `check`: text, json, github, markdown.

`render(report, format, out)` writes one format of a `Report`
(registry/cli/report.py). The github format writes workflow commands
(`::error file=...,line=...`) at the manifest line of each change;
`append_step_summary` adds the markdown report (registry/cli/render_markdown.py)
to `GITHUB_STEP_SUMMARY`. Breaking changes accepted on purpose are shown as
accepted, with their reason, in every format; so are the namespace policies a
bundle sets, the tools the manifests no longer hold and each
`serverInfo.version` bump (worded in registry/cli/render_release.py).
"""

from __future__ import annotations

import os
from typing import TextIO

import msgspec

from registry.cli.common import compact
from registry.cli.render_markdown import render_markdown
from registry.cli.render_release import callers_lines, decision_line, removal_heading, semver_line
from registry.cli.report import (
    Mode,
    Report,
    acceptance_text,
    callers_text,
    decision_options,
    decision_subject,
    held_text,
    lifecycle_text,
    new_namespaces,
    plan_severity,
    policy_lines,
    risk_evidence,
)
from registry.compat import Change, Severity
from registry.policy.plan import ToolPlan

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


# -- text ---------------------------------------------------------------------------------------


def _render_text(report: Report, out: TextIO) -> None:
    headers = ("TOOL", "ACTION", "VERSION", "SEVERITY", "DECISIONS", "SOURCE")
    rows = [
        (
            f"{p.namespace}/{p.tool}",
            p.action,
            f"v{p.version}",
            plan_severity(p),
            f"{len(p.decisions)} missing" if p.decisions else "-",
            p.source or "-",
        )
        for p in report.answer.tools
    ]
    for step in report.answer.namespaces:
        if step.action == "create":
            refused = "" if step.allowed else f" (refused: needs {step.name}:admin)"
            print(f"namespace {step.name}: create{refused}", file=out)
    for _, line in policy_lines(report.answer):
        print(line, file=out)
    if new_namespaces(report.answer) or policy_lines(report.answer):
        print(file=out)
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=False)]
    for row in [headers, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)
    for plan in report.answer.tools:
        findings = [f for f in report.findings if f.plan is plan]
        details = lifecycle_text(plan) + callers_text(plan)
        held = held_text(plan)
        shown = findings or details or plan.decisions or plan.acceptances or plan.risks
        if not shown and held is None:
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
            print(f"  {acceptance_text(acceptance)}", file=out)
        risk_width = max((len(r.kind.value) for r in plan.risks), default=0)
        for risk in plan.risks:
            print(f"  {'risk':<9} {risk.kind.value.ljust(risk_width)}  {risk.path}", file=out)
            print(f"            {risk.message}", file=out)
            print(f"            evidence: {risk_evidence(risk)}", file=out)
        if held is not None:
            print(f"  {held}", file=out)
        for line in details:
            print(f"  {line}", file=out)
        for decision in plan.decisions:
            print(f"  decision needed: {decision_subject(decision)}: {decision.message}", file=out)
            print(f"            options: {decision_options(plan, decision)}", file=out)
    for removal in report.removed:
        change = removal.change
        mark = "" if removal.retired else "  (no decision)"
        print(file=out)
        print(removal_heading(removal), file=out)
        print(
            f"  {change.severity.value:<9} {change.kind.value}  {change.path or '/'}{mark}",
            file=out,
        )
        print(f"            {change.message}", file=out)
        for line in [*callers_lines(removal.callers), decision_line(removal)]:
            print(f"  {line}", file=out)
    if report.semver:
        print(file=out)
    for check in report.semver:
        print(semver_line(check), file=out)
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
    for policy_step, line in policy_lines(report.answer):
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
        message = f"{plan.namespace}/{plan.tool}: {acceptance_text(acceptance)}"
        out.write(_annotation(report, plan, pointer, title, "warning", message))
    for plan, risk in report.risks:
        level = "error" if report.fail_on_risk else "warning"
        message = f"{plan.namespace}/{plan.tool}: {risk.message}; evidence: {risk_evidence(risk)}"
        title = f"{risk.kind.value} (risk)"
        out.write(_annotation(report, plan, "/tool" + risk.path, title, level, message))
    for plan in report.answer.tools:
        held = held_text(plan)
        if held is not None:
            text = f"{plan.namespace}/{plan.tool}: {held}"
            out.write(_annotation(report, plan, "/tool/name", "held for review", "notice", text))
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
        for line in callers_text(plan)[len(plan.in_use) :]:
            text = f"{plan.namespace}/{plan.tool}: {line}"
            out.write(_annotation(report, plan, "/retire", "still called", "warning", text))
    for removal in report.removed:
        lines = [removal.change.message, *callers_lines(removal.callers), decision_line(removal)]
        level = "notice" if removal.retired else "error"
        message = f"{removal.namespace}/{removal.tool}: " + "; ".join(lines)
        out.write(github_command(level, {"title": removal.change.kind.value}, message))
    for check in report.semver:
        level = {"mismatch": "error" if report.fail_on_semver else "warning"}.get(
            check.verdict, "notice"
        )
        out.write(github_command(level, {"title": "semver"}, semver_line(check)))
    print(report.verdict(), file=out)


def append_step_summary(report: Report) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            render_markdown(report, handle)
    except OSError:
        pass  # the summary is a courtesy; the annotations are already out


def render(report: Report, output_format: str, out: TextIO) -> None:
    renderers = {
        "text": _render_text,
        "json": _render_json,
        "github": _render_github,
        "markdown": render_markdown,
    }
    renderers[output_format](report, out)
    out.flush()
