"""What the store reads and writes, as msgspec Structs.

States are effective states: a deprecated version whose sunset has passed is
`retired` in every record read from the store.

The publish seam (`registry.store.publishing.publish`): the caller's
`decide(state: ToolState) -> PublishPlan | Refusal` runs inside the publish
transaction while the tool is locked, and either refuses (raises any
exception, or returns a `Refusal`, which `publish` raises as `PublishRefused`)
or returns the `PublishPlan`: the state changes and converters to store with
the new version.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

# The stored shape of an accepted breaking change is the policy's (a pure Struct);
# the store keeps it with the version and applies no rule to it.
from registry.policy.acceptance import Acceptance

__all__ = [
    "Acceptance",
    "Alias",
    "AliasChange",
    "AuditEvent",
    "Capabilities",
    "Conflict",
    "Converter",
    "Decision",
    "Deprecation",
    "Hold",
    "IllegalTransition",
    "Namespace",
    "NamespaceNotFound",
    "NamespaceSnapshot",
    "NewConverter",
    "NotFound",
    "PolicyRecord",
    "PublishPlan",
    "PublishRefused",
    "PublishResult",
    "Refusal",
    "Review",
    "ReviewResult",
    "State",
    "StoreError",
    "Token",
    "ToolState",
    "ToolSummary",
    "Version",
]

# pending: held for review, rejected: never released (migrations/0008_review.sql)
State = Literal["pending", "active", "deprecated", "retired", "rejected"]
Decision = Literal["approved", "rejected"]

# -- errors ------------------------------------------------------


class StoreError(Exception):
    """Base of the store's refusals."""


class NotFound(StoreError):
    """A namespace, tool, version, alias or token that does not exist."""


class NamespaceNotFound(NotFound):
    """The namespace does not exist: namespaces are created explicitly, never by a write."""

    def __init__(self, namespace: str) -> None:
        super().__init__(f"namespace {namespace!r} does not exist")
        self.namespace = namespace


class Conflict(StoreError):
    """The write contradicts what is stored (e.g. a converter with other operations)."""


class IllegalTransition(StoreError):
    """A lifecycle change that would move a state backwards or touch a retired version."""

    def __init__(self, message: str, *, version: int, state: State, requested: State) -> None:
        super().__init__(message)
        self.version = version
        self.state = state
        self.requested = requested


class Refusal(msgspec.Struct, frozen=True):
    """What `decide()` may return instead of a plan: nothing is written."""

    reason: str
    detail: Any = None


class PublishRefused(StoreError):
    """`decide()` returned a `Refusal`."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.reason)
        self.refusal = refusal


# -- stored records ----------------------------------------------


class Namespace(msgspec.Struct, frozen=True):
    name: str
    created_at: datetime


class Version(msgspec.Struct, frozen=True):
    namespace: str
    tool: str
    version: int
    digest: str
    definition: dict[str, Any]
    state: State
    sunset: datetime | None
    created_at: datetime
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)

    @property
    def served(self) -> bool:
        """Released and not retired: active or deprecated (not pending, rejected, retired)."""
        return self.state in ("active", "deprecated")


class Converter(msgspec.Struct, frozen=True):
    namespace: str
    tool: str
    from_version: int
    to_version: int
    ops: list[dict[str, Any]]
    created_at: datetime


class Alias(msgspec.Struct, frozen=True):
    namespace: str
    name: str
    target_tool: str
    contract_tool: str
    contract_version: int
    created_at: datetime
    updated_at: datetime


class AliasChange(msgspec.Struct, frozen=True):
    alias: Alias
    previous: Alias | None
    changed: bool


class ToolSummary(msgspec.Struct, frozen=True):
    """A tool with its current version: the newest non-retired one, None when all are retired."""

    namespace: str
    tool: str
    latest_version: int
    current: Version | None


class Capabilities(msgspec.Struct, frozen=True):
    namespace: str
    seq: int
    document: dict[str, Any]
    created_at: datetime


class PolicyRecord(msgspec.Struct, frozen=True):
    """A namespace's stored policy document (`registry.policy.acceptance.NamespacePolicy`)."""

    namespace: str
    policy: dict[str, Any]
    updated_at: datetime


class Token(msgspec.Struct, frozen=True):
    id: str
    scopes: list[str]
    description: str
    created_at: datetime
    revoked_at: datetime | None


class AuditEvent(msgspec.Struct, frozen=True):
    id: int
    at: datetime
    actor: str | None
    action: str
    namespace: str | None
    tool: str | None
    version: int | None
    request_id: str | None
    detail: dict[str, Any]


class NamespaceSnapshot(msgspec.Struct, frozen=True):
    """Everything the toolset of one namespace is built from, read in one snapshot.

    `next_sunset` is the earliest sunset still in the future: a payload built
    from this snapshot goes stale then, though no write (and no notification)
    happens at that moment.
    """

    namespace: Namespace
    versions: list[Version]  # by tool, then version
    converters: list[Converter]
    aliases: list[Alias]
    next_sunset: datetime | None
    gating: bool = True  # False: the namespace policy turned gating off


# -- the publish seam --------------------------------------------


class ToolState(msgspec.Struct, frozen=True):
    """What `decide()` receives: the tool as stored, read under its lock.

    `versions` are the released ones (neither pending nor rejected), oldest first
    with effective states; `held` the pending and rejected ones; `aliases` are the
    namespace's aliases whose target or contract is this tool; `next_version` is
    the number the new version will get (after every version, held ones
    included); `policy` is the namespace's stored policy document, None when it
    has the default one; `other_tools` the names of the namespace's other tools.
    """

    namespace: str
    tool: str
    versions: list[Version]
    converters: list[Converter]
    aliases: list[Alias]
    next_version: int
    policy: dict[str, Any] | None = None
    held: list[Version] = msgspec.field(default_factory=list)
    other_tools: list[str] = msgspec.field(default_factory=list)

    @property
    def served(self) -> list[Version]:
        """The non-retired versions, oldest first."""
        return [v for v in self.versions if v.state != "retired"]

    @property
    def current(self) -> Version | None:
        """The newest non-retired version."""
        served = self.served
        return served[-1] if served else None

    def version(self, number: int) -> Version | None:
        for v in self.versions:
            if v.version == number:
                return v
        return None


class Deprecation(msgspec.Struct, frozen=True):
    version: int
    sunset: datetime | None = None


class NewConverter(msgspec.Struct, frozen=True):
    """A converter to store; `to_version=None` means the version being published."""

    from_version: int
    ops: list[dict[str, Any]]
    to_version: int | None = None


class Hold(msgspec.Struct, frozen=True, kw_only=True):
    """A version the namespace's review policy holds (`review`: "risky" or "all"): it is
    stored `pending` with none of its plan applied; `request` (what the publish asked
    for besides the definition) is kept and applied at approval. `risks` are the
    findings against version `against` (None: a first version)."""

    review: Literal["risky", "all"]
    request: dict[str, Any]
    risks: list[dict[str, Any]] = msgspec.field(default_factory=list)
    against: int | None = None


class PublishPlan(msgspec.Struct, frozen=True):
    """What `decide()` returns to let the publish land.

    `detail` is merged into the publish audit event (e.g. the report's severity);
    `acceptances` are stored with the new version. With `hold`, the version is
    stored pending instead, and nothing else of the plan is written.
    """

    retire: list[int] = msgspec.field(default_factory=list)
    deprecate: list[Deprecation] = msgspec.field(default_factory=list)
    converters: list[NewConverter] = msgspec.field(default_factory=list)
    detail: dict[str, Any] = msgspec.field(default_factory=dict)
    acceptances: list[Acceptance] = msgspec.field(default_factory=list)
    hold: Hold | None = None


class PublishResult(msgspec.Struct, frozen=True):
    """`created=False`: the digest was already stored; nothing was written, decide() not called."""

    version: Version
    created: bool
    retired: list[int] = msgspec.field(default_factory=list)
    deprecated: list[int] = msgspec.field(default_factory=list)
    converters: list[Converter] = msgspec.field(default_factory=list)
    audit_ids: list[int] = msgspec.field(default_factory=list)
    # pending versions this one made obsolete by landing: rejected as superseded
    superseded: list[int] = msgspec.field(default_factory=list)


class Review(msgspec.Struct, frozen=True, kw_only=True):
    """The review of a held version (`reviews`, migrations/0008_review.sql): why it was
    held, what its publish asked for, who published it; the decision once made."""

    namespace: str
    tool: str
    version: int
    review: Literal["risky", "all"]
    request: dict[str, Any]
    risks: list[dict[str, Any]]
    against: int | None
    published_by: str | None
    created_at: datetime
    decision: Decision | None = None
    decided_by: str | None = None
    reason: str | None = None
    decided_at: datetime | None = None


class ReviewResult(msgspec.Struct, frozen=True, kw_only=True):
    """An approval or a rejection: the version and its review as they are now;
    `changed=False` when the same decision was already made (nothing written). An
    approval lands like a publish: `retired`, `deprecated`, `converters`, `superseded`."""

    version: Version
    review: Review
    changed: bool
    retired: list[int] = msgspec.field(default_factory=list)
    deprecated: list[int] = msgspec.field(default_factory=list)
    converters: list[Converter] = msgspec.field(default_factory=list)
    superseded: list[int] = msgspec.field(default_factory=list)
