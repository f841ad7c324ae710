"""Breaking changes accepted on purpose: a request's `accept`, and the namespace policy.

    acceptances = settle("search", reports, request.accept, policy)  # PolicyError on a typo
    covers(acceptances, report)   # True: every breaking change of `report` is accepted

A publish, check or apply may carry `accept: [{kind, path, reason}]`: breaking
changes the publisher accepts, by the engine's kind and the JSON Pointer it
reports. An acceptance must match a breaking change between a served version
and the new definition (the same kind at the same path), or the request is
refused (`acceptance-unmatched`): a typo never passes as an acceptance.

A namespace policy relaxes named kinds for the whole namespace or for one tool
(`relax: [{kind, tool, reason}]`), or turns gating off (`gating: false`, with a
reason): every breaking change of a relaxed kind (every breaking change, with
gating off) is then accepted with `source: "policy"`. The default policy
relaxes nothing and keeps gating on: the strict rules. The same policy says
which new versions wait for review (`review`, `four_eyes`:
`registry.policy.review`).

What is accepted is stored with the version it lands in (`Acceptance`, with
the served versions whose step to it the change was found on). The route
search (`registry.policy.routes`) counts a step into a version as an identity
step when every breaking change of the step is among that version's stored
acceptances: callers of the older version are served without conversion, their
arguments validated against current. Being stored, a later change of the
policy never changes an existing route.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Final, Literal

import msgspec

from registry.compat import ChangeReport, Kind
from registry.definitions import TOOL_NAME

__all__ = [
    "KIND_NAMES",
    "AcceptRequest",
    "Acceptance",
    "AcceptanceRefused",
    "NamespacePolicy",
    "Reason",
    "Relaxation",
    "accepted_keys",
    "check_policy",
    "covers",
    "settle",
]

# The engine's public kind names (docs/contract.md): what an acceptance or a relaxation may name.
KIND_NAMES: Final = frozenset(kind.value for kind in Kind)

Reason = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=2000,
        pattern=r"\S",
        description="Why, in words a reviewer reads later (required, not blank)",
    ),
]


class AcceptRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One breaking change a publish accepts: the kind and path the engine reports."""

    kind: str
    path: str
    reason: Reason


class Acceptance(msgspec.Struct, frozen=True, kw_only=True):
    """A breaking change accepted on purpose, as stored with the version it lands in.

    `versions`: the served versions whose step to this one carries the change.
    """

    kind: str
    path: str
    reason: str
    source: Literal["request", "policy"]
    versions: list[int]


class Relaxation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A kind accepted without naming it in each publish: for one tool, or (no `tool`)
    for every tool of the namespace."""

    kind: str
    reason: Reason
    tool: str | None = None


class NamespacePolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A namespace's policy; the default (`NamespacePolicy()`) is the strict rules."""

    # a Literal, not bool: the API decodes bodies leniently, and `0` or "false" must not
    # pass for false
    gating: Literal[True, False] = True
    reason: Reason | None = None  # why (required when gating is off)
    relax: list[Relaxation] = msgspec.field(default_factory=list)
    # review before release (registry/policy/review.py): which new versions wait for an
    # owner ("off": none, "risky": those with a risk finding, "all": every one), and
    # whether whoever published a version may approve it (four_eyes: not)
    review: Literal["off", "risky", "all"] = "off"
    four_eyes: Literal[True, False] = False

    @property
    def strict(self) -> bool:
        return self.gating and not self.relax

    def relaxed(self, tool: str, kind: str) -> str | None:
        """Why the policy accepts a breaking change of `kind` in `tool`; None when it does not."""
        if not self.gating:
            return f"gating is off for this namespace: {self.reason}"
        for scoped in (True, False):
            for rule in self.relax:
                if rule.kind == kind and (rule.tool == tool if scoped else rule.tool is None):
                    where = f"for {tool}" if scoped else "for every tool of the namespace"
                    return f"the namespace policy relaxes {kind} {where}: {rule.reason}"
        return None

    def applies_to(self, tool: str) -> bool:
        """Whether the policy may accept anything of `tool`."""
        return not self.gating or any(r.tool in (None, tool) for r in self.relax)

    @classmethod
    def stored(cls, document: Any) -> NamespacePolicy:
        """The policy of a stored document (None: the default policy)."""
        return cls() if document is None else msgspec.convert(document, cls)


class AcceptanceRefused(ValueError):
    """An `accept` entry naming no breaking change (`acceptance-unmatched`), or one
    named twice (`request-invalid`); `pointer` is the entry's place in the request."""

    def __init__(self, code: str, message: str, pointer: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.pointer = pointer


def _unknown_kind(kind: str) -> str:
    hint = difflib.get_close_matches(kind, sorted(KIND_NAMES), n=1)
    return f"{kind!r} is not a kind of change" + (f" (did you mean {hint[0]!r}?)" if hint else "")


def check_policy(policy: NamespacePolicy) -> list[tuple[str, str]]:
    """(pointer, message) of every problem of a policy; empty when it is valid."""
    problems: list[tuple[str, str]] = []
    if not policy.gating and not (policy.reason or "").strip():
        problems.append(("/reason", "gating off needs a reason: say why this namespace is ungated"))
    seen: set[tuple[str, str | None]] = set()
    for index, rule in enumerate(policy.relax):
        where = f"/relax/{index}"
        if rule.kind not in KIND_NAMES:
            problems.append((f"{where}/kind", _unknown_kind(rule.kind)))
        if rule.tool is not None and not TOOL_NAME.fullmatch(rule.tool):
            problems.append(
                (f"{where}/tool", f"{rule.tool!r} is not a tool name (^[A-Za-z0-9._-]{{1,128}}$)")
            )
        key = (rule.kind, rule.tool)
        if key in seen:
            scope = f"tool {rule.tool}" if rule.tool else "the namespace"
            problems.append((where, f"{rule.kind} is relaxed twice for {scope}"))
        seen.add(key)
    return problems


def accepted_keys(acceptances: Iterable[Any]) -> frozenset[tuple[str, str]]:
    """(kind, path) of stored acceptances (Structs with `kind` and `path`)."""
    return frozenset((a.kind, a.path) for a in acceptances)


def covers(acceptances: Iterable[Any], report: ChangeReport) -> bool:
    """Every breaking change of `report` is among `acceptances` (by kind and path)."""
    keys = accepted_keys(acceptances)
    return all((c.kind.value, c.path) in keys for c in report.breaking)


def settle(
    tool: str,
    reports: Sequence[tuple[int, ChangeReport]],
    accept: Sequence[AcceptRequest],
    policy: NamespacePolicy | None,
) -> list[Acceptance]:
    """The acceptances of a publish: its own `accept` entries, each matched against the
    breaking changes of `reports` (served version -> the new definition), then every
    other breaking change the namespace policy relaxes. Sorted by path, then kind.

    Raises `AcceptanceRefused` (`acceptance-unmatched` or `request-invalid`, with the
    pointer of the entry) for an entry naming no breaking change.
    """
    breaking: dict[tuple[str, str], list[int]] = {}
    for version, report in reports:
        for change in report.breaking:
            found = breaking.setdefault((change.kind.value, change.path), [])
            if version not in found:
                found.append(version)
    settled: dict[tuple[str, str], Acceptance] = {}
    for index, entry in enumerate(accept):
        key = (entry.kind, entry.path)
        if entry.kind not in KIND_NAMES:
            raise AcceptanceRefused(
                "acceptance-unmatched",
                f"accept: {_unknown_kind(entry.kind)}",
                f"/accept/{index}/kind",
            )
        if key in settled:
            raise AcceptanceRefused(
                "request-invalid",
                f"accept: {entry.kind} at {entry.path} is accepted twice",
                f"/accept/{index}",
            )
        versions = breaking.get(key)
        if versions is None:
            raise AcceptanceRefused(
                "acceptance-unmatched", _unmatched(tool, entry, breaking), f"/accept/{index}"
            )
        settled[key] = Acceptance(
            kind=entry.kind,
            path=entry.path,
            reason=entry.reason,
            source="request",
            versions=sorted(versions),
        )
    if policy is not None and policy.applies_to(tool):
        for (kind, path), versions in breaking.items():
            why = policy.relaxed(tool, kind)
            if why is not None and (kind, path) not in settled:
                settled[(kind, path)] = Acceptance(
                    kind=kind, path=path, reason=why, source="policy", versions=sorted(versions)
                )
    return sorted(settled.values(), key=lambda a: (a.path, a.kind))


def _unmatched(tool: str, entry: AcceptRequest, breaking: dict[tuple[str, str], list[int]]) -> str:
    text = (
        f"accept: no breaking change of kind {entry.kind} at {entry.path} between a served "
        f"version of {tool} and this definition, so there is nothing to accept"
    )
    if not breaking:
        return text + " (this definition breaks no served version)"
    found = ", ".join(f"{kind} at {path}" for kind, path in sorted(breaking, key=lambda k: k[1]))
    return f"{text}; its breaking changes are: {found}"
