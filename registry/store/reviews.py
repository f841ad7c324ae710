"""Versions held for review (`reviews`, migrations/0008_review.sql): list, approve, reject.

    waiting = await list_reviews(db, "billing")         # [(Version, Review)], pending ones
    result = await approve(db, "billing", "search", 4, decide, reason="...", actor=token_id,
                           request_id=rid)               # lands like a publish
    result = await reject(db, "billing", "search", 4, reason="...", actor=..., request_id=...)

A held version is stored by `publishing.publish` when the caller's `decide` returns a
plan with a `Hold`. Approval runs under the tool's lock: `decide(state, version,
review)` is the publishing rule as of that moment (`state.next_version` is the held
version's number, so the rule numbers it as it was numbered), and either refuses
(raises, or returns a `Refusal`, raised as `PublishRefused`) or returns the plan; the
version then becomes `active` with the plan's acceptances, converters and state
changes, older pending versions are superseded, the decision is written once, each
step audited (`version.approve`, `converter.register`, `version.retire`, ...), and
listeners are told. Rejection makes it `rejected` (final; audited `version.reject`).
Deciding again as already decided changes nothing; any other decision on a version
that is not pending is an `IllegalTransition`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeAlias

import msgspec

from registry.store._db import Connection, Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.channel import notify
from registry.store.locks import lock_tool
from registry.store.publishing import land, plan_of
from registry.store.records import (
    Decision,
    IllegalTransition,
    PublishPlan,
    Refusal,
    Review,
    ReviewResult,
    State,
    ToolState,
    Version,
)
from registry.store.rows import VERSION_COLUMNS, encode_json, record_of
from registry.store.tool_state import read_tool_state
from registry.store.versions import require_version

__all__ = ["ReviewDecide", "approve", "get_review", "list_reviews", "reject"]

ReviewDecide: TypeAlias = Callable[
    [ToolState, Version, Review], "PublishPlan | Refusal | Awaitable[PublishPlan | Refusal]"
]

_REVIEW_COLUMNS: Final = (
    "namespace, tool, version, review, request::text AS request, risks::text AS risks, "
    "against, published_by, created_at, decision, decided_by, reason, decided_at"
)
_JSON: Final = ("request", "risks")


def _review(row: Any) -> Review:
    values = {name: row[name] for name in Review.__struct_fields__}
    for name in _JSON:
        values[name] = msgspec.json.decode(values[name])
    return msgspec.convert(values, Review)


async def list_reviews(
    db: Db, namespace: str, *, tool: str | None = None
) -> list[tuple[Version, Review]]:
    """The namespace's pending versions (of `tool`, when given) with their reviews, by
    tool (bytewise), then number."""
    async with connection(db) as conn:
        rows = await conn.fetch(
            """
            SELECT v.namespace, v.tool, v.version, v.digest, v.definition::text AS definition,
                   v.state::text AS state, v.sunset, v.created_at,
                   v.acceptances::text AS acceptances, r.review, r.request::text AS request,
                   r.risks::text AS risks, r.against,
                   r.published_by, r.created_at AS held_at, r.decision, r.decided_by,
                   r.reason, r.decided_at
            FROM versions_all v
            JOIN reviews r USING (namespace, tool, version)
            WHERE v.namespace = $1 AND ($2::text IS NULL OR v.tool = $2)
              AND v.state::text = 'pending'
            ORDER BY v.tool COLLATE "C", v.version
            """,
            namespace,
            tool,
        )
    found = []
    for row in rows:
        values = dict(row.items())
        values["created_at"] = values.pop("held_at")
        found.append((record_of(row, Version), _review(values)))
    return found


async def get_review(db: Db, namespace: str, tool: str, version: int) -> Review | None:
    """The review of a version that was held (whatever was decided); None for a version
    never held."""
    async with connection(db) as conn:
        row = await conn.fetchrow(
            f"SELECT {_REVIEW_COLUMNS} FROM reviews "
            "WHERE namespace = $1 AND tool = $2 AND version = $3",
            namespace,
            tool,
            version,
        )
    return _review(row) if row is not None else None


async def _held(
    conn: Connection, namespace: str, tool: str, version: int, asked: Decision
) -> tuple[Version, Review] | ReviewResult:
    """The pending version and its review, or the result of the same decision made
    already (nothing to write); `IllegalTransition` for any other state."""
    record = await require_version(conn, namespace, tool, version)
    review_row = await conn.fetchrow(
        f"SELECT {_REVIEW_COLUMNS} FROM reviews "
        "WHERE namespace = $1 AND tool = $2 AND version = $3",
        namespace,
        tool,
        version,
    )
    target: State = "active" if asked == "approved" else "rejected"
    if review_row is None:
        raise IllegalTransition(
            f"version {version} of {namespace}/{tool} is {record.state} and was never held "
            "for review: there is nothing to approve or reject",
            version=version,
            state=record.state,
            requested=target,
        )
    review = _review(review_row)
    if record.state != "pending":
        if review.decision == asked:
            return ReviewResult(version=record, review=review, changed=False)
        _refuse_decided(record, review, asked)
    return record, review


def _refuse_decided(record: Version, review: Review, asked: Decision) -> None:
    """An `IllegalTransition` for a version decided otherwise (or no longer pending)."""
    by = f" by {review.decided_by}" if review.decided_by else ""
    said = f" ({review.decision}{by}: {review.reason})" if review.decision else ""
    verb = "approved" if asked == "approved" else "rejected"
    raise IllegalTransition(
        f"version {record.version} of {record.namespace}/{record.tool} is "
        f"{record.state}{said}: only a pending version is {verb}",
        version=record.version,
        state=record.state,
        requested="active" if asked == "approved" else "rejected",
    )


async def _decided(
    conn: Connection,
    namespace: str,
    tool: str,
    version: int,
    decision: Decision,
    *,
    reason: str,
    actor: str | None,
) -> Review:
    row = await conn.fetchrow(
        f"""
        UPDATE reviews SET decision = $4, decided_by = $5, reason = $6,
                           decided_at = clock_timestamp()
        WHERE namespace = $1 AND tool = $2 AND version = $3
        RETURNING {_REVIEW_COLUMNS}
        """,
        namespace,
        tool,
        version,
        decision,
        actor,
        reason,
    )
    assert row is not None
    return _review(row)


async def approve(
    db: Db,
    namespace: str,
    tool: str,
    version: int,
    decide: ReviewDecide,
    *,
    reason: str,
    actor: str | None,
    request_id: str | None,
) -> ReviewResult:
    """Approve a pending version: it lands as `decide` plans it (see the module docstring)."""
    async with transaction(db) as conn:
        await lock_tool(conn, namespace, tool, create=False)
        held = await _held(conn, namespace, tool, version, "approved")
        if isinstance(held, ReviewResult):
            return held
        record, review = held
        state = msgspec.structs.replace(
            await read_tool_state(conn, namespace, tool), next_version=version
        )
        plan = await plan_of(decide(state, record, review))
        row = await conn.fetchrow(
            f"""
            UPDATE versions SET state = 'active', acceptances = $4::text::jsonb
            WHERE namespace = $1 AND tool = $2 AND version = $3
            RETURNING {VERSION_COLUMNS}
            """,
            namespace,
            tool,
            version,
            encode_json(plan.acceptances),
        )
        assert row is not None
        decided = await _decided(
            conn, namespace, tool, version, "approved", reason=reason, actor=actor
        )
        audit_ids = [
            await write_audit(
                conn,
                actor=actor,
                action="version.approve",
                request_id=request_id,
                namespace=namespace,
                tool=tool,
                version=version,
                detail={
                    "digest": record.digest,
                    "reason": reason,
                    "published_by": review.published_by,
                    "review": review.review,
                    **plan.detail,
                },
            )
        ]
        landed = await land(
            conn,
            record_of(row, Version),
            plan,
            actor=actor,
            request_id=request_id,
            audit_ids=audit_ids,
        )
        await notify(conn, namespace, tool)
        return ReviewResult(
            version=landed.version,
            review=decided,
            changed=True,
            retired=landed.retired,
            deprecated=landed.deprecated,
            converters=landed.converters,
            superseded=landed.superseded,
        )


async def reject(
    db: Db,
    namespace: str,
    tool: str,
    version: int,
    *,
    reason: str,
    actor: str | None,
    request_id: str | None,
) -> ReviewResult:
    """Reject a pending version: `rejected`, final, never served; the record stays."""
    async with transaction(db) as conn:
        await lock_tool(conn, namespace, tool, create=False)
        held = await _held(conn, namespace, tool, version, "rejected")
        if isinstance(held, ReviewResult):
            return held
        record, review = held
        row = await conn.fetchrow(
            f"UPDATE versions SET state = 'rejected' "
            f"WHERE namespace = $1 AND tool = $2 AND version = $3 RETURNING {VERSION_COLUMNS}",
            namespace,
            tool,
            version,
        )
        assert row is not None
        decided = await _decided(
            conn, namespace, tool, version, "rejected", reason=reason, actor=actor
        )
        await write_audit(
            conn,
            actor=actor,
            action="version.reject",
            request_id=request_id,
            namespace=namespace,
            tool=tool,
            version=version,
            detail={
                "digest": record.digest,
                "reason": reason,
                "published_by": review.published_by,
                "review": review.review,
            },
        )
        return ReviewResult(version=record_of(row, Version), review=decided, changed=True)
