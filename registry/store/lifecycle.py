"""A released version's lifecycle: deprecate (with a sunset), retire (final).

    version = await deprecate(db, "billing", "search", 2, sunset=when, actor=..., request_id=...)
    version = await retire(db, "billing", "search", 1, actor=..., request_id=...)

`move_state` is the one step, shared with a publish's plan (`publishing.land`).
Each change is audited (`version.deprecate`, `version.retire`) and notified; one
that changes nothing writes nothing.
"""

from __future__ import annotations

from datetime import datetime

from registry.store._db import Connection, Db, transaction
from registry.store.audit import write_audit
from registry.store.channel import notify
from registry.store.locks import lock_tool
from registry.store.records import IllegalTransition, State, Version
from registry.store.rows import VERSION_COLUMNS, record_of
from registry.store.tool_state import Guard, run_guard
from registry.store.versions import require_version

__all__ = ["deprecate", "move_state", "retire"]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


async def move_state(
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
    current = await require_version(conn, namespace, tool, version)
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
        f"SELECT {VERSION_COLUMNS} FROM versions_effective "
        "WHERE namespace = $1 AND tool = $2 AND version = $3",
        namespace,
        tool,
        version,
    )
    assert updated is not None
    result = record_of(updated, Version)
    audit_ids.append(
        await write_audit(
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
        await lock_tool(conn, namespace, tool, create=False)
        await run_guard(conn, namespace, tool, guard)
        audit_ids: list[int] = []
        record, changed = await move_state(
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
            await notify(conn, namespace, tool)
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
