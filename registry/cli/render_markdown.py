"""The markdown report of `plan`, `apply` and `check`: a pull-request comment
(`--format markdown`) and the GitHub step summary (registry/cli/render.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TextIO

from registry.cli.common import compact
from registry.cli.render_release import callers_lines, decision_line, semver_line
from registry.cli.report import (
    Report,
    callers_text,
    decision_options,
    decision_subject,
    held_text,
    lifecycle_text,
    plan_severity,
    policy_lines,
    risk_evidence,
)
from registry.compat import Severity

__all__ = ["render_markdown"]

_MARKDOWN_MARKER = "<!-- mcp-tool-registry:plan -->"


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


def render_markdown(report: Report, out: TextIO) -> None:
    ok = report.answer.accepted and (report.mode != "apply" or report.answer.applied)
    ok = ok and not report.risk_failed()
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
    for _, line in policy_lines(report.answer):
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
                plan_severity(plan),
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
    if report.risks:
        print(file=out)
        print("### Risk findings", file=out)
        print(file=out)
        _table(
            out,
            ("Tool", "Kind", "Path", "Message", "Evidence"),
            (
                (
                    _code(f"{plan.namespace}/{plan.tool}"),
                    _code(risk.kind.value),
                    _code(risk.path),
                    _cell(risk.message),
                    _code(risk_evidence(risk)),
                )
                for plan, risk in report.risks
            ),
        )
    held = [(plan, text) for plan in report.answer.tools if (text := held_text(plan))]
    if held:
        print(file=out)
        print("### Held for review", file=out)
        print(file=out)
        for plan, text in held:
            print(f"- {_code(f'{plan.namespace}/{plan.tool}')}: {_cell(text)}", file=out)
    if report.needed:
        print(file=out)
        print("### Decisions still needed", file=out)
        print(file=out)
        for plan, decision in report.needed:
            kinds = ", ".join(_code(k) for k in decision.kinds) or "-"
            print(
                f"- {_code(f'{plan.namespace}/{plan.tool}')} {decision_subject(decision)}: "
                f"{_cell(decision.message)}. Breaking kinds: {kinds}.",
                file=out,
            )
            print(f"  Add to the manifest: {_code(decision_options(plan, decision))}", file=out)
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
    if report.removed:
        print(file=out)
        print("### Tools no longer held", file=out)
        print(file=out)
        _table(
            out,
            ("Tool", "Kind", "Message", "Still called", "Decision"),
            (
                (
                    _code(f"{r.namespace}/{r.tool}"),
                    _code(r.change.kind.value),
                    _cell(r.change.message),
                    _cell("; ".join(callers_lines(r.callers))) or "-",
                    _cell(decision_line(r)),
                )
                for r in report.removed
            ),
        )
    if report.semver:
        print(file=out)
        print("### Version bump", file=out)
        print(file=out)
        for check in report.semver:
            print(f"- {_cell(semver_line(check))}", file=out)
    callers = [(plan, line) for plan in report.answer.tools for line in callers_text(plan)]
    if callers:
        print(file=out)
        print("### Still called", file=out)
        print(file=out)
        for plan, line in callers:
            print(f"- {_code(f'{plan.namespace}/{plan.tool}')}: {_cell(line)}", file=out)
    details = [(plan, line) for plan in report.answer.tools for line in lifecycle_text(plan)]
    if details:
        print(file=out)
        print("### Lifecycle and aliases", file=out)
        print(file=out)
        for plan, line in details:
            print(f"- {_code(f'{plan.namespace}/{plan.tool}')}: {_cell(line)}", file=out)
    print(file=out)
