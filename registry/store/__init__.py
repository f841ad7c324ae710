"""The registry's storage: PostgreSQL through asyncpg, plain SQL, no HTTP and no policy.

This package is the face: what callers use is importable from `registry.store`
(`from registry import store; await store.publish(db, ...)`). Behind it, one module
per aggregate:

* `namespaces`: create, get, list; `load_namespace`, one namespace from one snapshot.
* `versions`: tools and versions, read (names, summaries, history, by digest).
* `tool_state`: a tool's whole `ToolState`, what `decide` and guards see.
* `publishing`: `publish` with its `decide` seam; a version held for review, or
  landed with its plan's converters and state changes.
* `lifecycle`: deprecate, retire. `converters`, `aliases`, `capabilities`, `tokens`.
* `audit`: the audit trail, written and listed. `channel`: the `toolset_changed`
  notification. `locks`: the namespace and tool rows a write locks first.
  `rows`: column lists, JSON columns and records, name checks.
* `reviews`: versions held for review (pending): list, approve (lands like a
  publish), reject.
* `records`: the Structs those functions take and return, and the store's errors.
* `embedded`: an embedded PostgreSQL server (`EmbeddedPostgres`) for `serve` and tests.
* `migrations`: `migrate()` and `at_head()` over the repository's `migrations/*.sql`.
* `listen`: `ToolsetListener`, LISTEN on `toolset_changed` with reconnection.
* `transfer`: export and import of every record, streamed (`registry.export_format`);
  `modes`: the registry's and each namespace's mode; `replicas`: each replica's
  clock and limits; `health`: what `registry doctor` reads.

Every function takes `db`, a connection or a pool. A write runs in one transaction
(a savepoint when the connection is already in one), appends one audit event per
stored change, and, when it changes a namespace's toolset, sends
`pg_notify('toolset_changed', namespace)`, delivered at commit (after
`namespace/tool` for a write to one tool: see `registry.store.listen`). A write that
changes nothing (same digest, same converter, same alias) writes no event and sends
no notification.

Importing this package needs the `[server]` extra (asyncpg).
"""

from registry.store._db import Connection, Db, connection, transaction
from registry.store.aliases import get_alias, list_aliases, set_alias
from registry.store.audit import list_audit
from registry.store.capabilities import get_capabilities, put_capabilities
from registry.store.channel import CHANNEL
from registry.store.converters import list_converters, register_converter
from registry.store.embedded import EmbeddedPostgres, EmbeddedPostgresError
from registry.store.lifecycle import deprecate, retire
from registry.store.listen import ToolsetListener
from registry.store.migrations import MigrationError, at_head, migrate
from registry.store.namespaces import (
    create_namespace,
    get_namespace,
    list_namespaces,
    load_namespace,
)
from registry.store.publishing import Decide, publish
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
from registry.store.tokens import (
    create_token,
    get_token,
    hash_token,
    list_tokens,
    lookup_token,
    lookup_tokens,
    revoke_token,
)
from registry.store.tool_state import Guard, load_tool_state
from registry.store.versions import find_digest, get_history, get_version, list_tools, tool_names

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
    "connection",
    "create_namespace",
    "create_token",
    "deprecate",
    "find_digest",
    "get_alias",
    "get_capabilities",
    "get_history",
    "get_namespace",
    "get_token",
    "get_version",
    "hash_token",
    "list_aliases",
    "list_audit",
    "list_converters",
    "list_namespaces",
    "list_tokens",
    "list_tools",
    "load_namespace",
    "load_tool_state",
    "lookup_token",
    "lookup_tokens",
    "migrate",
    "publish",
    "put_capabilities",
    "register_converter",
    "retire",
    "revoke_token",
    "set_alias",
    "tool_names",
    "transaction",
]
