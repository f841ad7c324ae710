"""What `plan`, `apply` and `check` report, worded once for every format.

`Report` is what every renderer reads (a plan answer, its manifests and the
mode): its findings (each change, marked undecided or accepted), its verdict
line (`check failed: ...`), and the words shared by the formats for
acceptances, policies, lifecycle changes, callers and decisions. The formats
themselves are registry/cli/render.py (text, json, github) and
registry/cli/render_markdown.py; the tools the manifests no longer hold and the
version bump are worded in registry/cli/render_release.py.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from registry.cli.common import compact
from registry.cli.render_release import callers_lines, removed_summary, shown_checks
from registry.compat import Change, suggested_converter
from registry.manifests import Manifest, PolicyManifest
from registry.policy.acceptance import Acceptance, NamespacePolicy
from registry.policy.plan import PlanAnswer, PolicyPlan, ToolPlan, ToolRemoval
from registry.policy.publishing import Decision
from registry.policy.semver import SemverCheck
from registry.risks import Risk
from registry.risks.characters import visible

__all__ = [
    "Mode",
    "Report",
    "acceptance_of",
    "acceptance_text",
    "callers_text",
    "decision_options",
    "decision_subject",
    "held_text",
    "lifecycle_text",
    "new_namespaces",
    "plan_severity",
    "policy_lines",
    "risk_evidence",
]

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
    no file to point at; `fail_on_semver`: a version bump that does not match fails;
    `fail_on_risk`: a risk finding fails."""

    def __init__(
        self,
        mode: Mode,
        answer: PlanAnswer,
        manifests: Sequence[Manifest],
        *,
        offline: bool,
        live: str | None = None,
        policies: Sequence[PolicyManifest] = (),
        fail_on_semver: bool = False,
        fail_on_risk: bool = False,
    ) -> None:
        self.mode = mode
        self.answer = answer
        self.offline = offline
        self.live = live
        self.manifests = {m.key: m for m in manifests}
        self.policies = {p.namespace: p for p in policies}
        self.fail_on_semver = fail_on_semver
        self.fail_on_risk = fail_on_risk

    @property
    def removed(self) -> list[ToolRemoval]:
        """The tools the manifests no longer hold (retired on purpose or not)."""
        removed = self.answer.removed
        return removed if isinstance(removed, list) else []

    @property
    def undecided_removals(self) -> list[ToolRemoval]:
        return [r for r in self.removed if not r.retired]

    @property
    def semver(self) -> list[SemverCheck]:
        """The version checks to show (`shown_checks`)."""
        checks = self.answer.semver
        return shown_checks(checks) if isinstance(checks, list) else []

    def semver_failed(self) -> bool:
        """Whether a version bump fails the run (`--fail-on semver` and a mismatch)."""
        return self.fail_on_semver and any(c.verdict == "mismatch" for c in self.semver)

    @property
    def risks(self) -> list[tuple[ToolPlan, Risk]]:
        """Every risk finding, by tool (registry.risks; beside the changes, not one)."""
        return [(plan, risk) for plan in self.answer.tools for risk in plan.risks]

    def risk_failed(self) -> bool:
        """Whether the risk findings fail the run (`--fail-on risk` and one found)."""
        return self.fail_on_risk and bool(self.risks)

    @property
    def failed(self) -> bool:
        """Whether the run is refused or failed, for whatever reason."""
        return self._refusal() is not None

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
                    if acceptance_of(plan, change) is not None:
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
                accepted = acceptance_of(plan, change)
                listed.append(known or _Finding(plan, change, [], True, accepted))
        return listed + list(undecided.values())

    @property
    def needed(self) -> list[tuple[ToolPlan, Decision]]:
        return [(plan, d) for plan in self.answer.tools for d in plan.decisions]

    def verdict(self) -> str:
        """One line: the outcome, with the mode named (`check failed: ...`)."""
        refusal = self._refusal()
        if refusal is None:
            return self._passed()
        prefix, what = refusal
        if self.mode == "apply":
            return f"apply refused, nothing was applied: {what}"
        if prefix == "failed":
            return f"check failed: {what}"
        return f"{self.mode} refused: {what}; nothing would be applied"

    def _refusal(self) -> tuple[str, str] | None:
        """Why the run is refused (`refused`, or `failed` for check's breaking
        changes), every reason in one clause; None when nothing refuses it."""
        reasons = []
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
            return "refused", ", ".join(forbidden)
        refused = [p for p in self.answer.tools if not p.accepted]
        in_use = [m for p in refused for m in p.in_use]
        breaking = self.mode == "check" and bool(refused) and not (in_use and not self.needed)
        if in_use and not self.needed:
            reasons.append(
                f"{len(in_use)} retirement{'s' if len(in_use) != 1 else ''} of a version "
                "still called (require_idle)"
            )
        elif refused:
            count = len(self.needed)
            names = ", ".join(f"{p.namespace}/{p.tool}" for p in refused)
            what = f"{count} decision{'s' if count != 1 else ''} missing for {names}"
            if breaking:
                lacking = len(self.undecided)
                noun = "change lacks" if lacking == 1 else "changes lack"
                what = f"{lacking} breaking {noun} a decision; {what}"
            reasons.append(what)
        if self.undecided_removals:
            reasons.append(removed_summary(self.undecided_removals))
            breaking = self.mode == "check"
        if self.semver_failed():
            mismatched = "; ".join(c.message for c in self.semver if c.verdict == "mismatch")
            reasons.append(f"serverInfo.version (--fail-on semver): {mismatched}")
            breaking = self.mode == "check"
        if self.risk_failed():
            count = len(self.risks)
            names = ", ".join(dict.fromkeys(f"{p.namespace}/{p.tool}" for p, _ in self.risks))
            noun = "finding" if count == 1 else "findings"
            reasons.append(f"{count} risk {noun} (--fail-on risk) in {names}")
            breaking = self.mode == "check"
        if not reasons:
            return None
        return ("failed" if breaking else "refused"), "; ".join(reasons)

    def _passed(self) -> str:
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
    held = sum(p.state == "pending" and p.action != "unchanged" for p in tools)
    if held:
        parts.append(f"{held} held for review")
    risks = sum(len(p.risks) for p in tools)
    if risks:
        parts.append(f"{risks} risk finding{'s' if risks != 1 else ''}")
    policies = sum(p.action == "set" for p in answer.policies)
    if policies:
        parts.append(f"{policies} namespace polic{'ies' if policies != 1 else 'y'} to set")
    accepted = sum(len(p.acceptances) for p in tools)
    if accepted:
        parts.append(f"{accepted} breaking change{'s' if accepted != 1 else ''} accepted")
    return ", ".join(parts)


# -- acceptances and policies, worded once for every format ------------------------------


def acceptance_of(plan: ToolPlan, change: Change) -> Acceptance | None:
    key = (change.kind.value, change.path)
    return next((a for a in plan.acceptances if (a.kind, a.path) == key), None)


def acceptance_text(acceptance: Acceptance) -> str:
    breaks = ", ".join(f"v{n}" for n in acceptance.versions)
    by = "the namespace policy" if acceptance.source == "policy" else "the manifest"
    return (
        f"accepted: {acceptance.kind} at {acceptance.path or '/'} (breaking for callers of "
        f"{breaks}; accepted on purpose by {by}): {acceptance.reason}"
    )


def _policy_text(policy: NamespacePolicy) -> str:
    if not policy.gating:
        text = f"gating off ({policy.reason})"
    elif not policy.relax:
        text = "the strict rules (gating on, nothing relaxed)"
    else:
        text = "; ".join(
            f"relax {r.kind} for {r.tool or 'every tool'} ({r.reason})" for r in policy.relax
        )
    if policy.review != "off":
        held = "every new version" if policy.review == "all" else "versions with a risk finding"
        eyes = ", approved by another token than the publisher's" if policy.four_eyes else ""
        text += f"; review {policy.review}: {held} wait for an owner{eyes}"
    return text


# -- review ---------------------------------------------------------------------------------


def risk_evidence(risk: Risk) -> str:
    """A finding's evidence on one line, invisible characters written out."""
    return " ".join(visible(risk.evidence).split())


def held_text(plan: ToolPlan) -> str | None:
    """What happens to a version the review policy holds; None when it lands."""
    if plan.state != "pending":
        return None
    if plan.action == "unchanged":
        return (
            f"v{plan.version} is pending review: served nowhere until an owner approves it "
            f"(registry review approve {plan.namespace} {plan.tool} {plan.version})"
        )
    why = "it has a risk finding" if plan.review == "risky" else "every new version waits"
    return (
        f"held for review (review: {plan.review}, {why}): v{plan.version} is stored pending, "
        "served nowhere, its lifecycle changes applied when an owner approves it"
    )


def policy_lines(answer: PlanAnswer) -> list[tuple[PolicyPlan, str]]:
    """The policies to show (set, or refused), each with its line."""
    lines = []
    for step in answer.policies:
        if step.action == "set" or not step.allowed:
            refused = "" if step.allowed else f" (refused: needs {step.namespace}:admin)"
            line = f"namespace {step.namespace}: policy {step.action}{refused}: "
            lines.append((step, line + _policy_text(step.policy)))
    return lines


def plan_severity(plan: ToolPlan) -> str:
    return plan.report.severity.value if plan.report is not None else "-"


def lifecycle_text(plan: ToolPlan) -> list[str]:
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


def callers_text(plan: ToolPlan) -> list[str]:
    """Who still calls the plan's deprecated or retiring versions, and refused retirements."""
    return [f"retirement refused: {message}" for message in plan.in_use] + callers_lines(
        plan.callers
    )


def decision_options(plan: ToolPlan, decision: Decision) -> str:
    """What settles `decision`, as a manifest writes it (`accept` names every breaking
    change left: accepting covers them all; `reason` is yours to write)."""
    options = []
    if "retire" in decision.options:
        options.append(f"retire: [{decision.version}]")
    if "converter" in decision.options:
        suggested = suggested_converter(decision.suggested_ops)
        ops = compact(suggested) if suggested else "[...]"
        options.append(f"converters: [{{from: {decision.version}, ops: {ops}}}]")
    if "accept" in decision.options:
        left = [c for c in decision.report.breaking if acceptance_of(plan, c) is None]
        entries = ", ".join(f"{{kind: {c.kind.value}, path: {c.path}, reason: ...}}" for c in left)
        options.append(f"accept: [{entries}]")
    return " or ".join(options) or "none"


def decision_subject(decision: Decision) -> str:
    if decision.alias:
        return f"alias {decision.alias} (contract v{decision.version})"
    return f"v{decision.version} ({decision.state})"
