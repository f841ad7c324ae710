"""The API's response bodies (request bodies are the policy's Structs)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from registry.compat import ChangeReport
from registry.policy.acceptance import Acceptance, Reason, Relaxation
from registry.policy.callers import RequireIdle
from registry.policy.publishing import Decision, VersionNumber
from registry.policy.verify import ToolVerdict
from registry.risks import Risk
from registry.store import AuditEvent, Version

__all__ = [
    "AliasAnswer",
    "AliasRequest",
    "AuditPage",
    "CheckAnswer",
    "ContractRef",
    "ConverterAnswer",
    "ConverterBody",
    "DeprecateRequest",
    "DiffAnswer",
    "DigestAnswer",
    "DigestMatch",
    "History",
    "NamespaceEntry",
    "NamespaceList",
    "PolicyAnswer",
    "PublishAnswer",
    "ReviewAnswer",
    "ReviewEntry",
    "ReviewList",
    "ReviewRequest",
    "Status",
    "ToolEntry",
    "ToolList",
    "VerifyAnswer",
    "VerifyRequest",
]


class Status(msgspec.Struct):
    status: str
    checks: dict[str, str] = msgspec.field(default_factory=dict)


class NamespaceEntry(msgspec.Struct):
    name: str
    created_at: datetime


class NamespaceList(msgspec.Struct):
    namespaces: list[NamespaceEntry]


class ToolEntry(msgspec.Struct):
    name: str
    current_version: int | None
    digest: str | None
    state: str | None
    latest_version: int


class ToolList(msgspec.Struct):
    namespace: str
    tools: list[ToolEntry]


class History(msgspec.Struct):
    versions: list[Version]


class PublishAnswer(msgspec.Struct, kw_only=True):
    version: int
    digest: str
    state: str
    report: ChangeReport | None
    created: bool
    retired: list[int] = msgspec.field(default_factory=list)
    deprecated: list[int] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)  # retired versions still called
    # breaking changes stored as accepted on purpose with this version
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)
    # risk findings against the current version (a first version: against nothing)
    risks: list[Risk] = msgspec.field(default_factory=list)
    # state "pending": the namespace's review policy that holds it ("risky" or "all")
    review: Literal["risky", "all"] | None = None
    # pending versions this one made obsolete by landing (rejected, superseded)
    superseded: list[int] = msgspec.field(default_factory=list)


class CheckAnswer(msgspec.Struct, kw_only=True):
    version: int
    digest: str
    state: str  # what a publish would store: "active", or "pending" (held for review)
    report: ChangeReport | None
    accepted: bool
    existing: bool
    decisions: list[Decision]
    # breaking changes accepted on purpose (the request's `accept`, the namespace policy)
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)
    risks: list[Risk] = msgspec.field(default_factory=list)
    review: Literal["risky", "all"] | None = None


class DiffAnswer(msgspec.Struct):
    namespace: str
    tool: str
    version: int
    against: int
    report: ChangeReport
    # the breaking changes of `report` that a version after `against` accepted on purpose
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)
    # what version `version` adds against `against` that a model may obey or a person
    # may not see (registry.risks)
    risks: list[Risk] = msgspec.field(default_factory=list)


class ReviewRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The body of `.../versions/{n}/approve` and `.../reject`."""

    reason: Reason


class ReviewEntry(msgspec.Struct, kw_only=True):
    """A version held for review (`GET /v1/namespaces/{ns}/reviews`)."""

    tool: str
    version: int
    digest: str
    state: str  # "pending"
    review: Literal["risky", "all"]  # the namespace's policy that held it
    published_by: str | None  # the token that published it
    published_at: datetime
    risks: list[Risk]  # found at publish, against version `against`
    against: int | None  # the current version then (None: a first version)
    current_version: int | None  # the tool's current version now
    request: dict[str, Any]  # what the publish asked for besides the definition (kept)


class ReviewList(msgspec.Struct):
    namespace: str
    reviews: list[ReviewEntry]


class ReviewAnswer(msgspec.Struct, kw_only=True):
    """An approval or a rejection of a held version. An approval lands like a publish:
    `report` and `risks` against the current version as of the approval, and what it
    retired, deprecated, accepted and superseded."""

    namespace: str
    tool: str
    version: int
    digest: str
    state: str  # "active" once approved, "rejected"
    decision: Literal["approved", "rejected"]
    reason: str
    decided_by: str | None
    decided_at: datetime | None
    published_by: str | None
    changed: bool  # False: the same decision was already made; nothing was written
    report: ChangeReport | None = None
    risks: list[Risk] = msgspec.field(default_factory=list)
    retired: list[int] = msgspec.field(default_factory=list)
    deprecated: list[int] = msgspec.field(default_factory=list)
    superseded: list[int] = msgspec.field(default_factory=list)
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


class PolicyAnswer(msgspec.Struct, kw_only=True):
    """A namespace's policy (`GET/PUT /v1/namespaces/{ns}/policy`)."""

    namespace: str
    gating: bool
    reason: str | None
    relax: list[Relaxation]
    updated_at: datetime | None  # None: never set, the default policy
    review: Literal["off", "risky", "all"] = "off"
    four_eyes: bool = False
    changed: bool = False  # PUT: this request changed the stored policy
    warnings: list[str] = msgspec.field(default_factory=list)


class DeprecateRequest(msgspec.Struct, forbid_unknown_fields=True):
    sunset: datetime | None = None
    # a sunset passed or sooner than this retires: refused while the version is called
    require_idle: RequireIdle | None = None


class ConverterBody(msgspec.Struct, forbid_unknown_fields=True):
    from_: VersionNumber = msgspec.field(name="from")
    to: VersionNumber
    ops: list[dict[str, Any]]


class ConverterAnswer(msgspec.Struct):
    namespace: str
    tool: str
    from_: int = msgspec.field(name="from")
    to: int = 0
    ops: list[dict[str, Any]] = msgspec.field(default_factory=list)
    created: bool = True
    report: ChangeReport | None = None


class ContractRef(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    version: VersionNumber


class AliasRequest(msgspec.Struct, forbid_unknown_fields=True):
    target: str
    contract: ContractRef


class AliasAnswer(msgspec.Struct, kw_only=True):
    namespace: str
    name: str
    target: str
    contract: ContractRef
    routed: bool
    message: str
    changed: bool


class DigestMatch(msgspec.Struct):
    namespace: str
    tool: str
    version: int
    state: str  # as of the answer: see its Cache-Control (no-cache, revalidate)
    created_at: datetime
    sunset: datetime | None = None


class DigestAnswer(msgspec.Struct, kw_only=True):
    digest: str
    definition_url: str  # the immutable part: the definition the digest names
    matches: list[DigestMatch]


class VerifyRequest(msgspec.Struct):
    tools: list[dict[str, Any]]
    protocolVersion: str
    nextCursor: str | None = None


class VerifyAnswer(msgspec.Struct):
    namespace: str
    protocolVersion: str
    tools: list[ToolVerdict]
    summary: dict[str, int]


class AuditPage(msgspec.Struct):
    events: list[AuditEvent]
    next_after: int | None
