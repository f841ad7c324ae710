"""Publishing a version: `publish` (with its `decide` seam), and `land`, what a publish
and an approval (`registry.store.reviews`) share once the version is stored released.

    result = await publish(db, "billing", "search", definition, digest, decide,
                           actor=token_id, request_id=rid)

A version the plan holds (`PublishPlan.hold`) is stored pending with its review and
served nowhere; a landed one supersedes the tool's older pending versions.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, TypeAlias

from registry.canonical import digest as canonical_digest
from registry.store._db import Connection, Db, transaction
from registry.store.audit import write_audit
from registry.store.channel import CHANNEL
from registry.store.converters import insert_converter
from registry.store.lifecycle import move_state
from registry.store.locks import ensure_namespace, ensure_namespace_and_tool, lock_tool
from registry.store.records import (
    Converter,
    Hold,
    NotFound,
    PublishPlan,
    PublishRefused,
    PublishResult,
    Refusal,
    State,
    ToolState,
    Version,
)
from registry.store.rows import VERSION_COLUMNS, check_tool_name, encode_json, record_of
from registry.store.tool_state import read_tool_state

__all__ = ["Decide", "land", "plan_of", "publish"]

# May be a coroutine function: the service analyses in worker processes
# (registry.api.budget) while the tool's lock is held.
Decide: TypeAlias = Callable[
    [ToolState], "PublishPlan | Refusal | Awaitable[PublishPlan | Refusal]"
]


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
    check_tool_name(tool)
    if definition.get("name") != tool:
        raise ValueError(f"the definition's name {definition.get('name')!r} is not {tool!r}")
    if canonical_digest(definition) != digest:
        raise ValueError(f"{digest} is not the canonical digest of the definition")
    async with transaction(db) as conn:
        audit_ids: list[int] = []
        if create_namespace:
            await ensure_namespace_and_tool(conn, namespace, tool, actor, request_id, audit_ids)
        else:
            await ensure_namespace(
                conn,
                namespace,
                create=False,
                actor=actor,
                request_id=request_id,
                audit_ids=audit_ids,
            )
            await lock_tool(conn, namespace, tool, create=True)
        # The state holds every version, held ones too: (namespace, tool, digest) is unique.
        state = await read_tool_state(conn, namespace, tool)
        for existing in [*state.versions, *state.held]:
            if existing.digest == digest:
                return PublishResult(version=existing, created=False)

        plan = await plan_of(decide(state))
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
                RETURNING {VERSION_COLUMNS}
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
            encode_json(dict(definition)),
            actor,
            request_id,
            encode_json({"digest": digest, **plan.detail}),
            CHANNEL,
            encode_json(plan.acceptances),
        )
        assert row is not None
        audit_ids.append(row["audit_id"])
        return await land(
            conn,
            record_of(row, Version),
            plan,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )


async def plan_of(
    decided: PublishPlan | Refusal | Awaitable[PublishPlan | Refusal],
) -> PublishPlan:
    """What a `decide` seam answered: the plan, or `PublishRefused` for a refusal."""
    plan = await decided if inspect.isawaitable(decided) else decided
    if isinstance(plan, Refusal):
        raise PublishRefused(plan)
    if not isinstance(plan, PublishPlan):
        raise TypeError(f"decide() returned {plan!r}, not a PublishPlan or a Refusal")
    return plan


async def land(
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
        converter, _ = await insert_converter(
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
        _, changed = await move_state(
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
            RETURNING {VERSION_COLUMNS}
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
        encode_json(dict(definition)),
        actor,
        request_id,
        hold.review,
        encode_json(hold.request),
        encode_json(hold.risks),
        hold.against,
        encode_json(
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
    return record_of(row, Version), row["audit_id"]


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
            await write_audit(
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
