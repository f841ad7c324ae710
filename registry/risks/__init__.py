"""Risk findings: what a new version of a tool adds that a model may obey or a person
may not see, listed beside the compatibility report (a change keeps its kind and
severity; a risk is something to review, not a break).

    from registry.risks import scan
    for risk in scan(old_definition, new_definition, other_tools=["send_email"]):
        risk.kind, risk.path, risk.message, risk.evidence

Kinds (rules.py, one function each, with an example):

    instructions-added     text aimed at the model: secrecy towards the user, files or
                           credentials to read or send, data sent to an address,
                           instructions that override others, steering between tools
    link-added             a URL, domain, e-mail or IP address that was not there
    hidden-text            invisible characters or mixed-script words, names included
    tool-reference-added   the text starts naming another tool
    annotation-weakened    a hint promises less (its MCP default read when absent)

`old` is None for a first version: it is reviewed as a change from nothing. Pure:
no I/O; the strings are read as they are, nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import msgspec

from registry.risks.rules import CHECKS, Scan

__all__ = ["Risk", "RiskKind", "scan"]


class RiskKind(StrEnum):
    INSTRUCTIONS_ADDED = "instructions-added"
    LINK_ADDED = "link-added"
    HIDDEN_TEXT = "hidden-text"
    TOOL_REFERENCE_ADDED = "tool-reference-added"
    ANNOTATION_WEAKENED = "annotation-weakened"


class Risk(msgspec.Struct, frozen=True, kw_only=True):
    """One finding: its kind, where (a JSON Pointer into the new definition), what it
    is in words, and the evidence (the words added, the code points made visible)."""

    kind: RiskKind
    path: str
    message: str
    evidence: str


def scan(
    old: dict[str, Any] | None, new: dict[str, Any], other_tools: Sequence[str] = ()
) -> list[Risk]:
    """Every risk finding of the change from `old` (None: a first version) to `new`, by
    kind in catalogue order, then in document order."""
    if old is not None and old == new:
        return []
    context = Scan(old, new, other_tools)
    return [
        Risk(
            kind=RiskKind(found.kind),
            path=found.path,
            message=found.message,
            evidence=found.evidence,
        )
        for check in CHECKS.values()
        for found in check(context)
    ]
