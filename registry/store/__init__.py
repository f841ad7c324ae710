"""The registry's storage: PostgreSQL through asyncpg, plain SQL, no HTTP and no policy.

* `embedded`: an embedded PostgreSQL server (`EmbeddedPostgres`) for `serve` and tests.
* `migrations`: `migrate()` and `at_head()` over the repository's `migrations/*.sql`.
* `repository`: reads, and the transactional writes (publish with its `decide`
  seam, lifecycle, converters, aliases, capabilities, tokens), each audited.
* `reviews`: versions held for review (pending): list, approve (lands like a
  publish), reject.
* `records`: the Structs those functions take and return, and the store's errors.
* `listen`: `ToolsetListener`, LISTEN on `toolset_changed` with reconnection.
* `transfer`: export and import of every record, streamed (`registry.export_format`);
  `modes`: the registry's and each namespace's mode; `replicas`: each replica's
  clock and limits; `health`: what `registry doctor` reads.

Importing this package needs the `[server]` extra (asyncpg).
"""

from registry.store import repository
from registry.store._db import Connection, Db
from registry.store.embedded import EmbeddedPostgres, EmbeddedPostgresError
from registry.store.listen import ToolsetListener
from registry.store.migrations import MigrationError, at_head, migrate
from registry.store.records import (
    Acceptance,
    Alias,
    AliasChange,
    AuditEvent,
    Capabilities,
    Conflict,
    Converter,
    Deprecation,
    Hold,
    IllegalTransition,
    Namespace,
    NamespaceNotFound,
    NamespaceSnapshot,
    NewConverter,
    NotFound,
    PolicyRecord,
    PublishPlan,
    PublishRefused,
    PublishResult,
    Refusal,
    Review,
    ReviewResult,
    State,
    StoreError,
    Token,
    ToolState,
    ToolSummary,
    Version,
)
from registry.store.repository import CHANNEL, Decide, Guard

__all__ = [
    "CHANNEL",
    "Acceptance",
    "Alias",
    "AliasChange",
    "AuditEvent",
    "Capabilities",
    "Conflict",
    "Connection",
    "Converter",
    "Db",
    "Decide",
    "Deprecation",
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "Guard",
    "Hold",
    "IllegalTransition",
    "MigrationError",
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
    "ToolsetListener",
    "Version",
    "at_head",
    "migrate",
    "repository",
]
