"""The API's response bodies (request bodies are the policy's Structs)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from registry.compat import ChangeReport
from registry.policy.acceptance import Acceptance, Relaxation
from registry.policy.callers import RequireIdle
from registry.policy.publishing import Decision, VersionNumber
from registry.policy.verify import ToolVerdict
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


class CheckAnswer(msgspec.Struct, kw_only=True):
    version: int
    digest: str
    state: str
    report: ChangeReport | None
    accepted: bool
    existing: bool
    decisions: list[Decision]
    # breaking changes accepted on purpose (the request's `accept`, the namespace policy)
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)


class DiffAnswer(msgspec.Struct):
    namespace: str
    tool: str
    version: int
    against: int
    report: ChangeReport
    # the breaking changes of `report` that a version after `against` accepted on purpose
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)


class PolicyAnswer(msgspec.Struct, kw_only=True):
    """A namespace's policy (`GET/PUT /v1/namespaces/{ns}/policy`)."""

    namespace: str
    gating: bool
    reason: str | None
    relax: list[Relaxation]
    updated_at: datetime | None  # None: never set, the default policy
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
