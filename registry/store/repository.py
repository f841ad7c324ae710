"""Plain SQL over asyncpg: reads, and the transactional writes with their audit events.

Every function takes `db`, a connection or a pool. A write runs in one
transaction (a savepoint when the connection is already in one), appends one
audit event per stored change, and, when it changes a namespace's toolset,
sends `pg_notify('toolset_changed', namespace)`, delivered at commit (after
`namespace/tool` for a write to one tool: see `registry.store.listen`). A write
that changes nothing (same digest, same converter, same alias) writes no event
and sends no notification.

Lifecycle writes on a tool (publish, deprecate, retire, converters) first lock
the tool's row, so they run one at a time per tool; that is what makes version
numbers contiguous and a digest published concurrently land once.

JSON goes over the wire as text (`$n::text::jsonb`, `col::text`), so these
functions work whatever type codecs the caller set on its connections.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, TypeAlias, TypeVar

import msgspec

from registry.canonical import digest as canonical_digest
from registry.store._db import Connection, Db, Row, connection, snapshot, transaction
from registry.store.records import (
    Acceptance,
    Alias,
    AliasChange,
    AuditEvent,
    Capabilities,
    Conflict,
    Converter,
    Hold,
    IllegalTransition,
    Namespace,
    NamespaceNotFound,
    NamespaceSnapshot,
    NotFound,
    PublishPlan,
    PublishRefused,
    PublishResult,
    Refusal,
    State,
    Token,
    ToolState,
    ToolSummary,
    Version,
)

__all__ = [
    "CHANNEL",
    "Connection",
    "Db",
    "Decide",
    "Guard",
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
    "publish",
    "put_capabilities",
    "register_converter",
    "retire",
    "revoke_token",
    "set_alias",
    "tool_names",
]

CHANNEL: Final = "toolset_changed"

# Either may be a coroutine function: the service analyses in worker processes
# (registry.api.budget) while the tool's lock is held.
Decide: TypeAlias = Callable[
    [ToolState], "PublishPlan | Refusal | Awaitable[PublishPlan | Refusal]"
]
Guard: TypeAlias = Callable[[ToolState], "Awaitable[None] | None"]

_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_TOOL = re.compile(r"^[A-Za-z0-9._-]{1,128}$")

_VERSION_COLUMNS = (
    "namespace, tool, version, digest, definition::text AS definition, "
    "state::text AS state, sunset, created_at, acceptances::text AS acceptances"
)
_CONVERTER_COLUMNS = "namespace, tool, from_version, to_version, ops::text AS ops, created_at"
_ALIAS_COLUMNS = (
    "namespace, name, target_tool, contract_tool, contract_version, created_at, updated_at"
)
_TOKEN_COLUMNS = "id, scopes, description, created_at, revoked_at"
_AUDIT_COLUMNS = (
    "id, at, actor, action, namespace, tool, version, request_id, detail::text AS detail"
)

# -- plumbing ----------------------------------------------------


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _unjson(text: str) -> Any:
    return msgspec.json.decode(text)


# jsonb columns are selected as text (`col::text AS col`) and decoded here
_JSON_COLUMNS: Final = frozenset(
    {"definition", "ops", "detail", "document", "acceptances", "policy"}
)
_R = TypeVar("_R", bound=msgspec.Struct)


def _record(row: Row, kind: type[_R]) -> _R:
    """A stored record from a row: one column per field of `kind`, by name."""
    values = {name: row[name] for name in kind.__struct_fields__}
    for name in _JSON_COLUMNS.intersection(values):
        values[name] = _unjson(values[name])
    return msgspec.convert(values, kind)


def _check_namespace(name: str) -> None:
    if not _NAMESPACE.fullmatch(name):
        raise ValueError(f"invalid namespace name {name!r}: must match {_NAMESPACE.pattern}")


def _check_tool(name: str) -> None:
    if not _TOOL.fullmatch(name):
        raise ValueError(f"invalid tool name {name!r}: must match {_TOOL.pattern}")


async def _audit(
    conn: Connection,
    *,
    actor: str | None,
    action: str,
    request_id: str | None,
    namespace: str | None = None,
    tool: str | None = None,
    version: int | None = None,
    detail: Mapping[str, Any] | None = None,
) -> int:
    event_id: int = await conn.fetchval(
        """
        INSERT INTO audit_events (actor, action, namespace, tool, version, request_id, detail)
        VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb)
        RETURNING id
        """,
        actor,
        action,
        namespace,
        tool,
        version,
        request_id,
        _json(dict(detail or {})),
    )
    return event_id


async def _notify(conn: Connection, namespace: str, tool: str | None = None) -> None:
    """Listeners hear `namespace/tool` (what changed, for `registry.store.listen`), then
    `namespace` (what replicas that predate tool notices listen for)."""
    if tool is None:
        await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, namespace)
    else:
        await conn.execute(
            "SELECT pg_notify($1, $2 || '/' || $3), pg_notify($1, $2)", CHANNEL, namespace, tool
        )


async def _ensure_namespace(
    conn: Connection,
    namespace: str,
    *,
    create: bool,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> None:
    _check_namespace(namespace)
    if create:
        created = await conn.fetchval(
            "INSERT INTO namespaces (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING true",
            namespace,
        )
        if created:
            audit_ids.append(
                await _audit(
                    conn,
                    actor=actor,
                    action="namespace.create",
                    request_id=request_id,
                    namespace=namespace,
                )
            )
    elif not await conn.fetchval("SELECT true FROM namespaces WHERE name = $1", namespace):
        raise NamespaceNotFound(namespace)


async def _lock_namespace(conn: Connection, namespace: str) -> None:
    # NO KEY UPDATE: serialises writers on the namespace row without blocking
    # the foreign-key checks of concurrent publishes.
    found = await conn.fetchval(
        "SELECT true FROM namespaces WHERE name = $1 FOR NO KEY UPDATE", namespace
    )
    if not found:
        raise NamespaceNotFound(namespace)


async def _lock_tool(conn: Connection, namespace: str, tool: str, *, create: bool) -> None:
    if create:
        await conn.execute(
            "INSERT INTO tools (namespace, name) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            namespace,
            tool,
        )
    found = await conn.fetchval(
        "SELECT true FROM tools WHERE namespace = $1 AND name = $2 FOR NO KEY UPDATE",
        namespace,
        tool,
    )
    if not found:
        raise NotFound(f"tool {namespace}/{tool} does not exist")


async def _ensure_namespace_and_tool(
    conn: Connection,
    namespace: str,
    tool: str,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> None:
    """`_ensure_namespace(create=True)` then `_lock_tool(create=True)`, in one round trip
    when the tool exists or is new (its own insert holds it)."""
    _check_namespace(namespace)
    row = await conn.fetchrow(
        """
        WITH ns AS (
            INSERT INTO namespaces (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING true
        ), inserted AS (
            INSERT INTO tools (namespace, name) VALUES ($1, $2) ON CONFLICT DO NOTHING
            RETURNING true
        )
        SELECT
            (SELECT true FROM ns) AS ns_created,
            (SELECT true FROM inserted) AS tool_created,
            (SELECT true FROM tools WHERE namespace = $1 AND name = $2 FOR NO KEY UPDATE)
                AS locked
        """,
        namespace,
        tool,
    )
    assert row is not None
    if row["ns_created"]:
        audit_ids.append(
            await _audit(
                conn,
                actor=actor,
                action="namespace.create",
                request_id=request_id,
                namespace=namespace,
            )
        )
    if not (row["tool_created"] or row["locked"]):
        # Inserted by a transaction that committed after this statement's snapshot:
        # a new statement sees (and locks) it.
        found = await conn.fetchval(
            "SELECT true FROM tools WHERE namespace = $1 AND name = $2 FOR NO KEY UPDATE",
            namespace,
            tool,
        )
        if not found:
            raise NotFound(f"tool {namespace}/{tool} does not exist")


# One round trip for a tool's whole state: arrays of anonymous records, their fields in
# the order of _VERSION_COLUMNS, _CONVERTER_COLUMNS and _ALIAS_COLUMNS (the released
# versions, then the held ones: pending or rejected), the namespace's policy document,
# the highest number given, and the namespace's other tools.
_TOOL_STATE = """
SELECT
    ARRAY(
        SELECT ROW(namespace, tool, version, digest, definition::text, state::text, sunset,
                   created_at, acceptances::text)
        FROM versions_effective WHERE namespace = $1 AND tool = $2 ORDER BY version
    ) AS versions,
    ARRAY(
        SELECT ROW(namespace, tool, from_version, to_version, ops::text, created_at)
        FROM converters WHERE namespace = $1 AND tool = $2 ORDER BY from_version, to_version
    ) AS converters,
    ARRAY(
        SELECT ROW(namespace, name, target_tool, contract_tool, contract_version, created_at,
                   updated_at)
        FROM aliases WHERE namespace = $1 AND (target_tool = $2 OR contract_tool = $2)
        ORDER BY name COLLATE "C"
    ) AS aliases,
    (SELECT policy::text FROM namespace_policies WHERE namespace = $1) AS policy,
    ARRAY(
        SELECT ROW(namespace, tool, version, digest, definition::text, state::text, sunset,
                   created_at, acceptances::text)
        FROM versions_all WHERE namespace = $1 AND tool = $2
          AND state::text IN ('pending', 'rejected') ORDER BY version
    ) AS held,
    (SELECT max(version) FROM versions WHERE namespace = $1 AND tool = $2) AS latest,
    ARRAY(
        SELECT name FROM tools WHERE namespace = $1 AND name <> $2 ORDER BY name COLLATE "C"
    ) AS other_tools
"""


def _version_of(v: Any) -> Version:
    """A version from an anonymous record of `_TOOL_STATE`."""
    return Version(
        namespace=v[0],
        tool=v[1],
        version=v[2],
        digest=v[3],
        definition=_unjson(v[4]),
        state=v[5],
        sunset=v[6],
        created_at=v[7],
        acceptances=msgspec.json.decode(v[8], type=list[Acceptance]),
    )


async def _tool_state(conn: Connection, namespace: str, tool: str) -> ToolState:
    row = await conn.fetchrow(_TOOL_STATE, namespace, tool)
    assert row is not None
    versions = [_version_of(v) for v in row["versions"]]
    converters = [
        Converter(
            namespace=c[0],
            tool=c[1],
            from_version=c[2],
            to_version=c[3],
            ops=_unjson(c[4]),
            created_at=c[5],
        )
        for c in row["converters"]
    ]
    aliases = [
        Alias(
            namespace=a[0],
            name=a[1],
            target_tool=a[2],
            contract_tool=a[3],
            contract_version=a[4],
            created_at=a[5],
            updated_at=a[6],
        )
        for a in row["aliases"]
    ]
    return ToolState(
        namespace=namespace,
        tool=tool,
        versions=versions,
        converters=converters,
        aliases=aliases,
        next_version=(row["latest"] or 0) + 1,  # a number given to a held version included
        policy=_unjson(row["policy"]) if row["policy"] is not None else None,
        held=[_version_of(v) for v in row["held"]],
        other_tools=list(row["other_tools"]),
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


async def _one_version(conn: Connection, namespace: str, tool: str, version: int) -> Version:
    """One version, held ones included; `NotFound` when there is none."""
    row = await conn.fetchrow(
        f"SELECT {_VERSION_COLUMNS} FROM versions_all "
        "WHERE namespace = $1 AND tool = $2 AND version = $3",
        namespace,
        tool,
        version,
    )
    if row is None:
        raise NotFound(f"version {version} of {namespace}/{tool} does not exist")
    return _record(row, Version)


async def _move_state(
    conn: Connection,
    namespace: str,
    tool: str,
    version: int,
    target: State,
    sunset: datetime | None,
    *,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> tuple[Version, bool]:
    """Deprecate or retire one version of a locked tool; (record, changed)."""
    current = await _one_version(conn, namespace, tool, version)
    if current.state in ("pending", "rejected"):
        raise IllegalTransition(
            f"version {version} of {namespace}/{tool} is {current.state}: "
            + (
                "it is approved or rejected first (POST .../approve or .../reject)"
                if current.state == "pending"
                else "it was never released, and never will be"
            ),
            version=version,
            state=current.state,
            requested=target,
        )
    if target == "retired":
        # Retired, or deprecated with a passed sunset: readers already see it retired.
        if current.state == "retired":
            return current, False
        new_sunset = current.sunset
    else:
        if current.state == "retired":
            raise IllegalTransition(
                f"version {version} of {namespace}/{tool} is retired, which is final",
                version=version,
                state=current.state,
                requested=target,
            )
        # Deprecating again without a sunset keeps the one it has.
        new_sunset = sunset if sunset is not None else current.sunset
        if current.state == "deprecated" and new_sunset == current.sunset:
            return current, False
    await conn.execute(
        "UPDATE versions SET state = $4::version_state, sunset = $5 "
        "WHERE namespace = $1 AND tool = $2 AND version = $3",
        namespace,
        tool,
        version,
        target,
        new_sunset,
    )
    updated = await conn.fetchrow(
        f"SELECT {_VERSION_COLUMNS} FROM versions_effective "
        "WHERE namespace = $1 AND tool = $2 AND version = $3",
        namespace,
        tool,
        version,
    )
    assert updated is not None
    result = _record(updated, Version)
    audit_ids.append(
        await _audit(
            conn,
            actor=actor,
            action=f"version.{'retire' if target == 'retired' else 'deprecate'}",
            request_id=request_id,
            namespace=namespace,
            tool=tool,
            version=version,
            detail={
                "from": current.state,
                "to": result.state,
                "sunset": _iso(new_sunset),
                "previous_sunset": _iso(current.sunset),
            },
        )
    )
    return result, True


async def _insert_converter(
    conn: Connection,
    namespace: str,
    tool: str,
    from_version: int,
    to_version: int,
    ops: Sequence[Mapping[str, Any]],
    *,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> tuple[Converter, bool]:
    existing = await conn.fetchrow(
        f"SELECT {_CONVERTER_COLUMNS}, ops = $5::text::jsonb AS same FROM converters "
        "WHERE namespace = $1 AND tool = $2 AND from_version = $3 AND to_version = $4",
        namespace,
        tool,
        from_version,
        to_version,
        _json(list(ops)),
    )
    if existing is not None:
        if existing["same"]:
            return _record(existing, Converter), False
        raise Conflict(
            f"a converter {from_version} -> {to_version} of {namespace}/{tool} is already "
            "registered with other operations; converters are immutable"
        )
    missing = await conn.fetch(
        "SELECT n FROM unnest($3::int[]) AS n WHERE NOT EXISTS "
        "(SELECT 1 FROM versions_effective WHERE namespace = $1 AND tool = $2 AND version = n)",
        namespace,
        tool,
        [from_version, to_version],
    )
    if missing:
        raise NotFound(
            f"version {missing[0]['n']} of {namespace}/{tool} does not exist, or is not released"
        )
    row = await conn.fetchrow(
        f"""
        INSERT INTO converters (namespace, tool, from_version, to_version, ops)
        VALUES ($1, $2, $3, $4, $5::text::jsonb)
        RETURNING {_CONVERTER_COLUMNS}
        """,
        namespace,
        tool,
        from_version,
        to_version,
        _json(list(ops)),
    )
    assert row is not None
    converter = _record(row, Converter)
    audit_ids.append(
        await _audit(
            conn,
            actor=actor,
            action="converter.register",
            request_id=request_id,
            namespace=namespace,
            tool=tool,
            version=to_version,
            detail={"from": from_version, "to": to_version, "ops": converter.ops},
        )
    )
    return converter, True


# -- namespaces --------------------------------------------------


async def create_namespace(
    db: Db, name: str, *, actor: str | None, request_id: str | None
) -> tuple[Namespace, bool]:
    """Create a namespace; (record, created). Creating an existing one changes nothing."""
    _check_namespace(name)
    async with transaction(db) as conn:
        row = await conn.fetchrow(
            "INSERT INTO namespaces (name) VALUES ($1) ON CONFLICT DO NOTHING "
            "RETURNING name, created_at",
            name,
        )
        if row is None:
            row = await conn.fetchrow(
                "SELECT name, created_at FROM namespaces WHERE name = $1", name
            )
            assert row is not None
            return Namespace(name=row["name"], created_at=row["created_at"]), False
        await _audit(
            conn, actor=actor, action="namespace.create", request_id=request_id, namespace=name
        )
        await _notify(conn, name)
        return Namespace(name=row["name"], created_at=row["created_at"]), True


async def get_namespace(db: Db, name: str) -> Namespace | None:
    async with connection(db) as conn:
        row = await conn.fetchrow("SELECT name, created_at FROM namespaces WHERE name = $1", name)
    return Namespace(name=row["name"], created_at=row["created_at"]) if row else None


async def list_namespaces(db: Db) -> list[Namespace]:
    async with connection(db) as conn:
        rows = await conn.fetch('SELECT name, created_at FROM namespaces ORDER BY name COLLATE "C"')
    return [Namespace(name=r["name"], created_at=r["created_at"]) for r in rows]


# -- reads -------------------------------------------------------


async def tool_names(db: Db, namespace: str) -> list[str]:
    """The names of the namespace's tools, bytewise (what risk findings look for)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            'SELECT name FROM tools WHERE namespace = $1 ORDER BY name COLLATE "C"', namespace
        )
    return [row["name"] for row in rows]


async def list_tools(db: Db, namespace: str) -> list[ToolSummary]:
    """The namespace's tools by name, each with its current version (None: all retired)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"""
            SELECT t.name AS tool_name,
                   (SELECT max(version) FROM versions m
                     WHERE m.namespace = t.namespace AND m.tool = t.name) AS latest_version,
                   c.*
            FROM tools t
            LEFT JOIN LATERAL (
                SELECT {_VERSION_COLUMNS} FROM versions_effective e
                WHERE e.namespace = t.namespace AND e.tool = t.name AND e.state <> 'retired'
                ORDER BY e.version DESC
                LIMIT 1
            ) c ON true
            WHERE t.namespace = $1
            ORDER BY t.name COLLATE "C"
            """,
            namespace,
        )
    return [
        ToolSummary(
            namespace=namespace,
            tool=r["tool_name"],
            latest_version=r["latest_version"] or 0,
            current=_record(r, Version) if r["version"] is not None else None,
        )
        for r in rows
    ]


async def get_history(db: Db, namespace: str, tool: str) -> list[Version]:
    """Every version of the tool, oldest first, held ones included (pending, rejected);
    empty when the tool does not exist."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT {_VERSION_COLUMNS} FROM versions_all "
            "WHERE namespace = $1 AND tool = $2 ORDER BY version",
            namespace,
            tool,
        )
    return [_record(r, Version) for r in rows]


async def get_version(db: Db, namespace: str, tool: str, version: int) -> Version | None:
    """One version, held ones included (pending, rejected)."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {_VERSION_COLUMNS} FROM versions_all "
            "WHERE namespace = $1 AND tool = $2 AND version = $3",
            namespace,
            tool,
            version,
        )
    return _record(row, Version) if row else None


async def find_digest(db: Db, digest: str) -> list[Version]:
    """Every stored version with this digest (one tool name may live in several namespaces),
    held ones included with their state (pending, rejected: served nowhere)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT {_VERSION_COLUMNS} FROM versions_all WHERE digest = $1 "
            'ORDER BY namespace COLLATE "C", tool COLLATE "C", version',
            digest,
        )
    return [_record(r, Version) for r in rows]


async def load_tool_state(db: Db, namespace: str, tool: str) -> ToolState:
    """What `decide()` would see, read without a lock (for a dry run such as `check`)."""
    async with snapshot(db) as conn:
        return await _tool_state(conn, namespace, tool)


async def list_converters(db: Db, namespace: str, tool: str | None = None) -> list[Converter]:
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT {_CONVERTER_COLUMNS} FROM converters "
            "WHERE namespace = $1 AND ($2::text IS NULL OR tool = $2) "
            'ORDER BY tool COLLATE "C", from_version, to_version',
            namespace,
            tool,
        )
    return [_record(r, Converter) for r in rows]


async def list_aliases(db: Db, namespace: str) -> list[Alias]:
    async with connection(db) as conn:
        rows = await conn.fetch(
            f'SELECT {_ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 ORDER BY name COLLATE "C"',
            namespace,
        )
    return [_record(r, Alias) for r in rows]


async def get_alias(db: Db, namespace: str, name: str) -> Alias | None:
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {_ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 AND name = $2",
            namespace,
            name,
        )
    return _record(row, Alias) if row else None


async def load_namespace(db: Db, namespace: str) -> NamespaceSnapshot | None:
    """The namespace's versions, converters and aliases from one consistent snapshot."""
    async with snapshot(db) as conn:
        ns = await conn.fetchrow(
            "SELECT name, created_at, now() AS now, (SELECT (policy->>'gating')::boolean "
            "FROM namespace_policies WHERE namespace = $1) AS gating "
            "FROM namespaces WHERE name = $1",
            namespace,
        )
        if ns is None:
            return None
        versions = await conn.fetch(
            f"SELECT {_VERSION_COLUMNS} FROM versions_effective WHERE namespace = $1 "
            'ORDER BY tool COLLATE "C", version',
            namespace,
        )
        converters = await conn.fetch(
            f"SELECT {_CONVERTER_COLUMNS} FROM converters WHERE namespace = $1 "
            'ORDER BY tool COLLATE "C", from_version, to_version',
            namespace,
        )
        aliases = await conn.fetch(
            f'SELECT {_ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 ORDER BY name COLLATE "C"',
            namespace,
        )
    records = [_record(r, Version) for r in versions]
    future = [
        v.sunset
        for v in records
        if v.state == "deprecated" and v.sunset is not None and v.sunset > ns["now"]
    ]
    return NamespaceSnapshot(
        namespace=Namespace(name=ns["name"], created_at=ns["created_at"]),
        versions=records,
        converters=[_record(r, Converter) for r in converters],
        aliases=[_record(r, Alias) for r in aliases],
        next_sunset=min(future, default=None),
        gating=ns["gating"] is not False,
    )


# -- publish and lifecycle ---------------------------------------


async def publish(
    db: Db,
    namespace: str,
    tool: str,
    definition: Mapping[str, Any],
    digest: str,
    decide: Decide,
    actor: str | None,
    request_id: str | None,
    *,
    create_namespace: bool = True,
) -> PublishResult:
    """Store a new version of `tool` in one transaction, as `decide` allows.

    Under the tool's row lock: an already stored digest returns that version
    (`created=False`, nothing written, `decide` not called); otherwise
    `decide(ToolState)` refuses (raises, or returns a `Refusal`, raised as
    `PublishRefused`) or returns the `PublishPlan`. The version gets the next
    number and is stored with the plan's converters and state changes, one
    audit event each, and a notification.
    """
    _check_tool(tool)
    if definition.get("name") != tool:
        raise ValueError(f"the definition's name {definition.get('name')!r} is not {tool!r}")
    if canonical_digest(definition) != digest:
        raise ValueError(f"{digest} is not the canonical digest of the definition")
    async with transaction(db) as conn:
        audit_ids: list[int] = []
        if create_namespace:
            await _ensure_namespace_and_tool(conn, namespace, tool, actor, request_id, audit_ids)
        else:
            await _ensure_namespace(
                conn,
                namespace,
                create=False,
                actor=actor,
                request_id=request_id,
                audit_ids=audit_ids,
            )
            await _lock_tool(conn, namespace, tool, create=True)
        # The state holds every version, held ones too: (namespace, tool, digest) is unique.
        state = await _tool_state(conn, namespace, tool)
        for existing in [*state.versions, *state.held]:
            if existing.digest == digest:
                return PublishResult(version=existing, created=False)

        plan = await _plan_of(decide(state))
        number = state.next_version
        if plan.hold is not None:
            held, event = await _hold(
                conn,
                namespace,
                tool,
                number,
                digest,
                definition,
                plan,
                plan.hold,
                actor,
                request_id,
            )
            return PublishResult(version=held, created=True, audit_ids=[*audit_ids, event])
        # The version, its audit event and the notification (delivered at commit, so
        # sending it before the plan's other writes changes nothing): one round trip.
        row = await conn.fetchrow(
            f"""
            WITH inserted AS (
                INSERT INTO versions (namespace, tool, version, digest, definition, acceptances)
                VALUES ($1, $2, $3, $4, $5::text::jsonb, $10::text::jsonb)
                RETURNING {_VERSION_COLUMNS}
            ), audited AS (
                INSERT INTO audit_events
                    (actor, action, namespace, tool, version, request_id, detail)
                SELECT $6, 'version.publish', $1, $2, $3, $7, $8::text::jsonb FROM inserted
                RETURNING id
            )
            SELECT inserted.*, audited.id AS audit_id,
                   pg_notify($9, $1 || '/' || $2)::text AS notified_tool,
                   pg_notify($9, $1)::text AS notified
            FROM inserted, audited
            """,
            namespace,
            tool,
            number,
            digest,
            _json(dict(definition)),
            actor,
            request_id,
            _json({"digest": digest, **plan.detail}),
            CHANNEL,
            _json(plan.acceptances),
        )
        assert row is not None
        audit_ids.append(row["audit_id"])
        return await _land(
            conn,
            _record(row, Version),
            plan,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )


async def _plan_of(
    decided: PublishPlan | Refusal | Awaitable[PublishPlan | Refusal],
) -> PublishPlan:
    """What a `decide` seam answered: the plan, or `PublishRefused` for a refusal."""
    plan = await decided if inspect.isawaitable(decided) else decided
    if isinstance(plan, Refusal):
        raise PublishRefused(plan)
    if not isinstance(plan, PublishPlan):
        raise TypeError(f"decide() returned {plan!r}, not a PublishPlan or a Refusal")
    return plan


async def _land(
    conn: Connection,
    landed: Version,
    plan: PublishPlan,
    *,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> PublishResult:
    """The rest of a publish once version `landed` is stored released (a publish, an
    approval): the plan's converters and state changes, then the tool's older pending
    versions superseded; each audited."""
    namespace, tool, number = landed.namespace, landed.tool, landed.version
    converters: list[Converter] = []
    for new in plan.converters:
        converter, _ = await _insert_converter(
            conn,
            namespace,
            tool,
            new.from_version,
            new.to_version if new.to_version is not None else number,
            new.ops,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        converters.append(converter)
    deprecated: list[int] = []
    retired: list[int] = []
    changes: list[tuple[int, State, datetime | None, list[int]]] = [
        (d.version, "deprecated", d.sunset, deprecated) for d in plan.deprecate
    ] + [(v, "retired", None, retired) for v in plan.retire]
    for version, target, sunset, done in changes:
        if version >= number:
            raise NotFound(f"version {version} of {namespace}/{tool} does not exist")
        _, changed = await _move_state(
            conn,
            namespace,
            tool,
            version,
            target,
            sunset,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        if changed:
            done.append(version)
    superseded = await _supersede(
        conn, namespace, tool, number, actor=actor, request_id=request_id, audit_ids=audit_ids
    )
    return PublishResult(
        version=landed,
        created=True,
        retired=retired,
        deprecated=deprecated,
        converters=converters,
        audit_ids=audit_ids,
        superseded=superseded,
    )


async def _hold(
    conn: Connection,
    namespace: str,
    tool: str,
    number: int,
    digest: str,
    definition: Mapping[str, Any],
    plan: PublishPlan,
    hold: Hold,
    actor: str | None,
    request_id: str | None,
) -> tuple[Version, int]:
    """Store version `number` pending, with its review (what its publish asked for,
    kept for approval) and its audit event; (record, audit event id). Nothing is
    served, so no listener is told."""
    row = await conn.fetchrow(
        f"""
        WITH inserted AS (
            INSERT INTO versions (namespace, tool, version, digest, definition, state)
            VALUES ($1, $2, $3, $4, $5::text::jsonb, 'pending')
            RETURNING {_VERSION_COLUMNS}
        ), held AS (
            INSERT INTO reviews
                (namespace, tool, version, review, request, risks, against, published_by)
            SELECT $1, $2, $3, $8, $9::text::jsonb, $10::text::jsonb, $11, $6 FROM inserted
            RETURNING version
        ), audited AS (
            INSERT INTO audit_events
                (actor, action, namespace, tool, version, request_id, detail)
            SELECT $6, 'version.publish', $1, $2, $3, $7, $12::text::jsonb FROM held
            RETURNING id
        )
        SELECT inserted.*, audited.id AS audit_id FROM inserted, audited
        """,
        namespace,
        tool,
        number,
        digest,
        _json(dict(definition)),
        actor,
        request_id,
        hold.review,
        _json(hold.request),
        _json(hold.risks),
        hold.against,
        _json(
            {
                "digest": digest,
                **plan.detail,
                "state": "pending",
                "review": hold.review,
                "risks": [{"kind": r.get("kind"), "path": r.get("path")} for r in hold.risks],
            }
        ),
    )
    assert row is not None
    return _record(row, Version), row["audit_id"]


async def _supersede(
    conn: Connection,
    namespace: str,
    tool: str,
    landed: int,
    *,
    actor: str | None,
    request_id: str | None,
    audit_ids: list[int],
) -> list[int]:
    """Reject the tool's pending versions older than `landed`, which just landed: what
    waits is always newer than current. Each audited (`version.reject`)."""
    reason = f"superseded by version {landed}, which landed first"
    rows = await conn.fetch(
        """
        WITH moved AS (
            UPDATE versions SET state = 'rejected'
            WHERE namespace = $1 AND tool = $2 AND state = 'pending' AND version < $3
            RETURNING version
        ), decided AS (
            UPDATE reviews r SET decision = 'rejected', decided_by = $4, reason = $5,
                                 decided_at = clock_timestamp()
            FROM moved WHERE r.namespace = $1 AND r.tool = $2 AND r.version = moved.version
            RETURNING r.version
        )
        SELECT version FROM decided ORDER BY version
        """,
        namespace,
        tool,
        landed,
        actor,
        reason,
    )
    superseded = [row["version"] for row in rows]
    for version in superseded:
        audit_ids.append(
            await _audit(
                conn,
                actor=actor,
                action="version.reject",
                request_id=request_id,
                namespace=namespace,
                tool=tool,
                version=version,
                detail={"reason": reason, "superseded_by": landed},
            )
        )
    return superseded


async def _lifecycle(
    db: Db,
    namespace: str,
    tool: str,
    version: int,
    target: State,
    sunset: datetime | None,
    *,
    actor: str | None,
    request_id: str | None,
    guard: Guard | None,
) -> Version:
    async with transaction(db) as conn:
        await _lock_tool(conn, namespace, tool, create=False)
        if guard is not None:
            guarded = guard(await _tool_state(conn, namespace, tool))
            if inspect.isawaitable(guarded):
                await guarded
        audit_ids: list[int] = []
        record, changed = await _move_state(
            conn,
            namespace,
            tool,
            version,
            target,
            sunset,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        if changed:
            await _notify(conn, namespace, tool)
        return record


async def deprecate(
    db: Db,
    namespace: str,
    tool: str,
    version: int,
    *,
    sunset: datetime | None,
    actor: str | None,
    request_id: str | None,
    guard: Guard | None = None,
) -> Version:
    """Deprecate a version, or move the sunset of a deprecated one.

    Refused with `IllegalTransition` for a retired version (a passed sunset
    counts). Without a sunset, an already deprecated version keeps the one it
    has. `guard(ToolState)`, called under the tool's lock, may raise to refuse.
    """
    return await _lifecycle(
        db,
        namespace,
        tool,
        version,
        "deprecated",
        sunset,
        actor=actor,
        request_id=request_id,
        guard=guard,
    )


async def retire(
    db: Db,
    namespace: str,
    tool: str,
    version: int,
    *,
    actor: str | None,
    request_id: str | None,
    guard: Guard | None = None,
) -> Version:
    """Retire a version (final). Retiring a retired version changes nothing."""
    return await _lifecycle(
        db,
        namespace,
        tool,
        version,
        "retired",
        None,
        actor=actor,
        request_id=request_id,
        guard=guard,
    )


async def register_converter(
    db: Db,
    namespace: str,
    tool: str,
    from_version: int,
    to_version: int,
    ops: Sequence[Mapping[str, Any]],
    *,
    actor: str | None,
    request_id: str | None,
    guard: Guard | None = None,
) -> tuple[Converter, bool]:
    """Store a converter (verified by the caller); (record, created).

    The same operations again change nothing; other operations for the same
    pair raise `Conflict`: converters are immutable.
    """
    if from_version == to_version:
        raise ValueError("a converter goes from one version to another")
    async with transaction(db) as conn:
        await _lock_tool(conn, namespace, tool, create=False)
        if guard is not None:
            guarded = guard(await _tool_state(conn, namespace, tool))
            if inspect.isawaitable(guarded):
                await guarded
        audit_ids: list[int] = []
        converter, created = await _insert_converter(
            conn,
            namespace,
            tool,
            from_version,
            to_version,
            ops,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        if created:
            await _notify(conn, namespace, tool)
        return converter, created


async def set_alias(
    db: Db,
    namespace: str,
    name: str,
    *,
    target_tool: str,
    contract_tool: str,
    contract_version: int,
    actor: str | None,
    request_id: str | None,
) -> AliasChange:
    """Create or re-point an alias; the audit event keeps the previous target and contract."""
    _check_tool(name)
    async with transaction(db) as conn:
        await _lock_namespace(conn, namespace)
        if not await conn.fetchval(
            "SELECT true FROM tools WHERE namespace = $1 AND name = $2", namespace, target_tool
        ):
            raise NotFound(f"tool {namespace}/{target_tool} does not exist")
        if not await conn.fetchval(
            "SELECT true FROM versions_effective "
            "WHERE namespace = $1 AND tool = $2 AND version = $3",
            namespace,
            contract_tool,
            contract_version,
        ):
            raise NotFound(
                f"version {contract_version} of {namespace}/{contract_tool} does not exist, "
                "or is not released"
            )
        old = await conn.fetchrow(
            f"SELECT {_ALIAS_COLUMNS} FROM aliases WHERE namespace = $1 AND name = $2",
            namespace,
            name,
        )
        previous = _record(old, Alias) if old else None
        if previous is not None and (
            previous.target_tool,
            previous.contract_tool,
            previous.contract_version,
        ) == (target_tool, contract_tool, contract_version):
            return AliasChange(alias=previous, previous=previous, changed=False)
        row = await conn.fetchrow(
            f"""
            INSERT INTO aliases (namespace, name, target_tool, contract_tool, contract_version)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (namespace, name) DO UPDATE
               SET target_tool = excluded.target_tool,
                   contract_tool = excluded.contract_tool,
                   contract_version = excluded.contract_version,
                   updated_at = clock_timestamp()
            RETURNING {_ALIAS_COLUMNS}
            """,
            namespace,
            name,
            target_tool,
            contract_tool,
            contract_version,
        )
        assert row is not None
        alias = _record(row, Alias)
        await _audit(
            conn,
            actor=actor,
            action="alias.set",
            request_id=request_id,
            namespace=namespace,
            tool=name,
            detail={
                "alias": name,
                "target": target_tool,
                "contract": {"tool": contract_tool, "version": contract_version},
                "previous": None
                if previous is None
                else {
                    "target": previous.target_tool,
                    "contract": {
                        "tool": previous.contract_tool,
                        "version": previous.contract_version,
                    },
                },
            },
        )
        await _notify(conn, namespace, target_tool)  # the alias list is rebuilt with any tool
        return AliasChange(alias=alias, previous=previous, changed=True)


# -- capabilities ------------------------------------------------


async def put_capabilities(
    db: Db,
    namespace: str,
    document: Mapping[str, Any],
    *,
    actor: str | None,
    request_id: str | None,
    create_namespace: bool = True,
) -> tuple[Capabilities, bool]:
    """Store a captured `initialize` result as the namespace's next record; (record, created).

    A document equal to the latest one changes nothing.
    """
    async with transaction(db) as conn:
        audit_ids: list[int] = []
        await _ensure_namespace(
            conn,
            namespace,
            create=create_namespace,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        await _lock_namespace(conn, namespace)
        text = _json(dict(document))
        latest = await conn.fetchrow(
            "SELECT namespace, seq, document::text AS document, created_at, "
            "document = $2::text::jsonb AS same FROM capabilities "
            "WHERE namespace = $1 ORDER BY seq DESC LIMIT 1",
            namespace,
            text,
        )
        if latest is not None and latest["same"]:
            return _record(latest, Capabilities), False
        row = await conn.fetchrow(
            """
            INSERT INTO capabilities (namespace, seq, document)
            VALUES ($1, $2, $3::text::jsonb)
            RETURNING namespace, seq, document::text AS document, created_at
            """,
            namespace,
            latest["seq"] + 1 if latest is not None else 1,
            text,
        )
        assert row is not None
        record = _record(row, Capabilities)
        await _audit(
            conn,
            actor=actor,
            action="capabilities.put",
            request_id=request_id,
            namespace=namespace,
            detail={"seq": record.seq},
        )
        return record, True


async def get_capabilities(db: Db, namespace: str, seq: int | None = None) -> Capabilities | None:
    """The latest captured capabilities of the namespace (or record `seq`)."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            "SELECT namespace, seq, document::text AS document, created_at FROM capabilities "
            "WHERE namespace = $1 AND ($2::int IS NULL OR seq = $2) ORDER BY seq DESC LIMIT 1",
            namespace,
            seq,
        )
    return _record(row, Capabilities) if row else None


# -- tokens ------------------------------------------------------


def hash_token(secret: str) -> str:
    """What the store keeps of a token: `sha256:` + hex (secrets are random: no salt needed)."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()


async def create_token(
    db: Db,
    token_hash: str,
    scopes: Sequence[str],
    *,
    description: str = "",
    actor: str | None,
    request_id: str | None,
) -> Token:
    """Store a token by its hash (see `hash_token`); the returned record carries its id."""
    async with transaction(db) as conn:
        row = await conn.fetchrow(
            f"INSERT INTO tokens (hash, scopes, description) VALUES ($1, $2, $3) "
            f"RETURNING {_TOKEN_COLUMNS}",
            token_hash,
            list(scopes),
            description,
        )
        assert row is not None
        token = _record(row, Token)
        await _audit(
            conn,
            actor=actor,
            action="token.create",
            request_id=request_id,
            detail={"token": token.id, "scopes": token.scopes, "description": description},
        )
        return token


async def lookup_token(db: Db, token_hash: str) -> Token | None:
    """The unrevoked token with this hash, or None."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE hash = $1 AND revoked_at IS NULL",
            token_hash,
        )
    return _record(row, Token) if row else None


async def lookup_tokens(db: Db, token_hashes: Collection[str]) -> dict[str, Token]:
    """The unrevoked tokens with these hashes, by hash (one query for many requests)."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"SELECT hash, {_TOKEN_COLUMNS} FROM tokens "
            "WHERE hash = ANY($1::text[]) AND revoked_at IS NULL",
            list(token_hashes),
        )
    return {row["hash"]: _record(row, Token) for row in rows}


async def get_token(db: Db, token_id: str) -> Token | None:
    async with connection(db) as conn:
        row = await conn.fetchrow(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE id = $1", token_id)
    return _record(row, Token) if row else None


async def list_tokens(db: Db) -> list[Token]:
    async with connection(db) as conn:
        rows = await conn.fetch(f"SELECT {_TOKEN_COLUMNS} FROM tokens ORDER BY created_at, id")
    return [_record(r, Token) for r in rows]


async def revoke_token(
    db: Db, token_id: str, *, actor: str | None, request_id: str | None
) -> Token:
    """Revoke a token; revoking a revoked token changes nothing. NotFound when unknown."""
    async with transaction(db) as conn:
        row = await conn.fetchrow(
            f"UPDATE tokens SET revoked_at = clock_timestamp() "
            f"WHERE id = $1 AND revoked_at IS NULL RETURNING {_TOKEN_COLUMNS}",
            token_id,
        )
        if row is None:
            existing = await conn.fetchrow(
                f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE id = $1", token_id
            )
            if existing is None:
                raise NotFound(f"token {token_id!r} does not exist")
            return _record(existing, Token)
        await _audit(
            conn,
            actor=actor,
            action="token.revoke",
            request_id=request_id,
            detail={"token": token_id},
        )
        return _record(row, Token)


# -- audit -------------------------------------------------------


async def list_audit(
    db: Db,
    *,
    namespace: str | None = None,
    tool: str | None = None,
    action: str | None = None,
    actor: str | None = None,
    after: int | None = None,
    before: int | None = None,
    limit: int = 100,
    newest_first: bool = False,
) -> list[AuditEvent]:
    """Audit events by id, filtered; page with `after`/`before` (event ids)."""
    order = "DESC" if newest_first else "ASC"
    async with connection(db) as conn:
        rows = await conn.fetch(
            f"""
            SELECT {_AUDIT_COLUMNS} FROM audit_events
            WHERE ($1::text IS NULL OR namespace = $1)
              AND ($2::text IS NULL OR tool = $2)
              AND ($3::text IS NULL OR action = $3)
              AND ($4::text IS NULL OR actor = $4)
              AND ($5::bigint IS NULL OR id > $5)
              AND ($6::bigint IS NULL OR id < $6)
            ORDER BY id {order}
            LIMIT $7
            """,
            namespace,
            tool,
            action,
            actor,
            after,
            before,
            limit,
        )
    return [_record(r, AuditEvent) for r in rows]
