"""Review before release: the risk findings of a new version, whether it waits for an
owner, and who may approve it. Pure: no I/O.

    assessed = assess(state, definition, digest, request, finder, policy)
    assessed.outcome    # the publishing rule's outcome (registry.policy.publishing)
    assessed.risks      # registry.risks findings against current (a first version:
                        # against nothing), the namespace's other tools named
    assessed.review     # "risky" | "all": the version waits (stored pending); None: lands
    four_eyes_refusal(policy, published_by, approver)   # why this approver may not, or None

The namespace policy's `review` says which versions wait: `"off"` (the default)
none, `"risky"` those with a risk finding, `"all"` every new version. A version
that waits keeps what its publish asked for (`kept_request`) and is published
again from it at approval (`approval_request`), under the rule as it is then.
With `four_eyes`, the token that published a version may not approve it.
A publish the rule refuses (a break without its decisions) is refused at once,
never held: review decides whether a version that could land may land.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from registry.policy.acceptance import NamespacePolicy
from registry.policy.publishing import (
    PublishOutcome,
    PublishRequest,
    ToolStateLike,
    plan_publish,
)
from registry.policy.routes import RouteFinder
from registry.risks import Risk, scan

__all__ = [
    "Assessment",
    "Held",
    "approval_request",
    "assess",
    "four_eyes_refusal",
    "holds",
    "kept_request",
    "risks_of",
]

Held = Literal["risky", "all"]


class Assessment(msgspec.Struct, frozen=True, kw_only=True):
    """A publish (or check) as the rule and the review policy see it."""

    outcome: PublishOutcome
    risks: list[Risk]
    review: Held | None  # the policy that holds the version; None: it lands at once
    against: int | None  # the version the risks were found against (None: a first version)


def risks_of(
    current: Mapping[str, Any] | None, definition: Mapping[str, Any], other_tools: Sequence[str]
) -> list[Risk]:
    """The risk findings of `definition` against `current` (None: a first version,
    reviewed as a change from nothing); `other_tools` are the namespace's tool names
    (its own name aside)."""
    own = definition.get("name")
    others = [name for name in other_tools if name != own]
    return scan(dict(current) if current is not None else None, dict(definition), others)


def holds(policy: NamespacePolicy | None, risks: Sequence[Risk]) -> Held | None:
    """Whether a new version waits for review under `policy`, and by which rule."""
    if policy is None or policy.review == "off":
        return None
    if policy.review == "all":
        return "all"
    return "risky" if risks else None


def assess(
    state: ToolStateLike,
    definition: Mapping[str, Any],
    digest: str,
    request: PublishRequest,
    finder: RouteFinder,
    policy: NamespacePolicy | None,
    other_tools: Sequence[str] = (),
) -> Assessment:
    """The rule's outcome, the risk findings against current, and whether it waits."""
    outcome = plan_publish(state, definition, digest, request, finder, policy)
    served = [v for v in state.versions if v.state != "retired"]
    current = served[-1] if served else None
    risks = risks_of(current.definition if current else None, definition, other_tools)
    return Assessment(
        outcome=outcome,
        risks=risks,
        review=holds(policy, risks),
        against=current.version if current else None,
    )


def kept_request(request: PublishRequest) -> dict[str, Any]:
    """What a held version keeps of its publish: every decision, not the definition."""
    kept: dict[str, Any] = msgspec.to_builtins(request)
    kept.pop("definition", None)
    return {key: value for key, value in kept.items() if value not in ([], None)}


def approval_request(definition: Mapping[str, Any], kept: Mapping[str, Any]) -> PublishRequest:
    """The publish of a held version again, as its publish asked for it."""
    return msgspec.convert({**kept, "definition": dict(definition)}, PublishRequest)


def four_eyes_refusal(
    policy: NamespacePolicy | None, published_by: str | None, approver: str | None
) -> str | None:
    """Why `approver` may not approve a version `published_by` published, or None."""
    if policy is None or not policy.four_eyes or published_by is None:
        return None
    if approver == published_by:
        return (
            f"four_eyes: token {approver} published this version, and the namespace's "
            "policy asks another token to approve it"
        )
    return None
