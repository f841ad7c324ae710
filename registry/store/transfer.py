"""Export and import of the registry's records (`registry.export_format`), streamed.

    stream = export_lines(db, ["billing"], usage=False)
    header = await anext(stream)            # the snapshot is taken: NamespaceNotFound before
    await record_export(db, ...)            # audited outside the snapshot
    async for line in stream: ...

    summary = await import_lines(db, asplit_lines(body), actor=token_id, request_id=rid)

Export reads every record of the namespaces asked for (every namespace when
none is named, registry-level audit events included) from one REPEATABLE
READ snapshot, through server-side cursors a few hundred rows at a time: the
memory it holds does not grow with the registry. Tokens never leave; usage
counts only when asked. Versions are written with their stored state (a
deprecated version whose sunset has passed is still `deprecated`, with its
sunset, and reads as retired after import as before).

Import lands the whole file in one transaction or nothing: each line is
checked as it is read (`ImportCheck`: digests recomputed, order, shapes),
rows are copied in batches (`COPY`), and the first line the file or the
database refuses stops it with `ImportRefused` naming that line; the
transaction is rolled back. Its namespaces must not exist yet. Versions keep
their numbers, digests, states, sunsets and times, converters, aliases,
policies and capabilities theirs, so the toolsets built from them (and their
ETags) are the source's. Audit events keep everything but their ids, which
the target assigns in the file's order. The import sets `registry.importing`
for its transaction, which the `import` mode lets through
(`registry.store.modes`), is audited once per namespace (`namespace.import`)
and notifies each namespace's toolset listeners.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from datetime import datetime
from typing import Any, Final, Literal, NamedTuple

import asyncpg  # type: ignore[import-untyped, unused-ignore]
import msgspec

from registry import __version__
from registry.export_format import (
    AliasRecord,
    AuditRecord,
    CapabilitiesRecord,
    ContractRef,
    ConverterRecord,
    EndRecord,
    ExportFileError,
    ExportWriter,
    Header,
    ImportCheck,
    NamespaceRecord,
    PolicyRecordLine,
    Record,
    ReviewRecord,
    ToolRecord,
    UsageRecord,
    VersionRecord,
)
from registry.store._db import Connection, Db, connection, transaction
from registry.store.audit import write_audit
from registry.store.channel import notify
from registry.store.modes import Mode, get_mode, not_writable
from registry.store.records import NamespaceNotFound, StoreError

__all__ = [
    "ImportRefused",
    "ImportSummary",
    "export_lines",
    "import_lines",
    "record_export",
]

PREFETCH: Final = 500  # rows a cursor fetches at a time
BATCH: Final = 1000  # rows copied at a time


class ImportRefused(StoreError):
    """The file, or the database, refused a line; nothing was imported. `line` 0: the
    file as a whole. `reason`: `invalid` (the file), `exists` (a namespace it holds is
    here already), `mode` (the registry's or a namespace's mode refuses it)."""

    def __init__(
        self, line: int, message: str, reason: Literal["invalid", "exists", "mode"] = "invalid"
    ) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line
        self.message = message
        self.reason = reason


class ImportSummary(msgspec.Struct, frozen=True):
    namespaces: list[str]
    counts: dict[str, int]  # records imported, by kind
    verified_digests: int
    exported_at: datetime
    registry_version: str  # the release that wrote the file


# -- export ------------------------------------------------------------------------


def _raw(text: str) -> msgspec.Raw:
    return msgspec.Raw(text.encode())


# JSON columns, read as text and written as they are (`msgspec.Raw`)
_RAW_FIELDS: Final = frozenset(
    {"definition", "acceptances", "ops", "policy", "document", "detail", "request", "risks"}
)


class _Kind(NamedTuple):
    """One kind of record: its table, the table's columns with the record's field each
    holds (`contract.tool`: a field of a field), and the query exporting it (its
    columns named as the record's fields)."""

    record: type[Any]
    table: str
    columns: dict[str, str]
    query: str


def _same(*names: str) -> dict[str, str]:
    return {name: name for name in names}


_KINDS: Final[dict[str, _Kind]] = {
    "tool": _Kind(
        ToolRecord,
        "tools",
        _same("namespace", "name", "created_at"),
        """
        SELECT namespace, name, created_at FROM tools WHERE namespace = $1
        ORDER BY name COLLATE "C"
        """,
    ),
    "version": _Kind(
        VersionRecord,
        "versions",
        _same(
            "namespace",
            "tool",
            "version",
            "digest",
            "definition",
            "state",
            "sunset",
            "created_at",
            "acceptances",
        ),
        """
        SELECT v.namespace, v.tool, v.version, v.digest, v.definition::text AS definition,
               v.state::text AS state, v.sunset, v.created_at,
               v.acceptances::text AS acceptances, p.actor AS publisher
        FROM versions v
        LEFT JOIN LATERAL (
            SELECT a.actor FROM audit_events a
            WHERE a.namespace = v.namespace AND a.tool = v.tool AND a.version = v.version
              AND a.action = 'version.publish'
            ORDER BY a.id LIMIT 1
        ) p ON true
        WHERE v.namespace = $1
        ORDER BY v.tool COLLATE "C", v.version
        """,
    ),
    "review": _Kind(
        ReviewRecord,
        "reviews",
        _same(
            "namespace",
            "tool",
            "version",
            "review",
            "request",
            "risks",
            "against",
            "published_by",
            "created_at",
            "decision",
            "decided_by",
            "reason",
            "decided_at",
        ),
        """
        SELECT namespace, tool, version, review, request::text AS request,
               risks::text AS risks, against, published_by, created_at, decision,
               decided_by, reason, decided_at
        FROM reviews WHERE namespace = $1
        ORDER BY tool COLLATE "C", version
        """,
    ),
    "converter": _Kind(
        ConverterRecord,
        "converters",
        _same("namespace", "tool", "from_version", "to_version", "ops", "created_at"),
        """
        SELECT namespace, tool, from_version, to_version, ops::text AS ops, created_at
        FROM converters WHERE namespace = $1
        ORDER BY tool COLLATE "C", from_version, to_version
        """,
    ),
    "alias": _Kind(
        AliasRecord,
        "aliases",
        {
            **_same("namespace", "name"),
            "target_tool": "target",
            "contract_tool": "contract.tool",
            "contract_version": "contract.version",
            **_same("created_at", "updated_at"),
        },
        """
        SELECT namespace, name, target_tool AS target, contract_tool, contract_version,
               created_at, updated_at
        FROM aliases WHERE namespace = $1 ORDER BY name COLLATE "C"
        """,
    ),
    "policy": _Kind(
        PolicyRecordLine,
        "namespace_policies",
        _same("namespace", "policy", "updated_at"),
        "SELECT namespace, policy::text AS policy, updated_at "
        "FROM namespace_policies WHERE namespace = $1",
    ),
    "capabilities": _Kind(
        CapabilitiesRecord,
        "capabilities",
        _same("namespace", "seq", "document", "created_at"),
        """
        SELECT namespace, seq, document::text AS document, created_at
        FROM capabilities WHERE namespace = $1 ORDER BY seq
        """,
    ),
    "usage": _Kind(
        UsageRecord,
        "usage_counts",
        _same(
            "namespace",
            "tool",
            "version",
            "decision",
            "reason",
            "server",
            "toolset",
            "bucket",
            "calls",
            "last_seen",
        ),
        """
        SELECT namespace, tool, version, decision, reason, server, toolset, bucket, calls,
               last_seen
        FROM usage_counts WHERE namespace = $1
        ORDER BY tool COLLATE "C", version, bucket, server COLLATE "C", toolset, decision, reason
        """,
    ),
    "audit": _Kind(
        AuditRecord,
        "audit_events",
        _same("at", "actor", "action", "namespace", "tool", "version", "request_id", "detail"),
        # every event ($1), or those of the namespaces exported
        """
        SELECT id, at, actor, action, namespace, tool, version, request_id,
               detail::text AS detail
        FROM audit_events
        WHERE $1::boolean OR namespace = ANY($2::text[])
        ORDER BY id
        """,
    ),
}


def _from_row(kind: _Kind, row: Any) -> Record:
    """The record of an export query's row (its columns named as the record's fields)."""
    values = dict(row.items())
    for name in _RAW_FIELDS.intersection(values):
        values[name] = _raw(values[name])
    if "contract_tool" in values:
        values["contract"] = ContractRef(
            tool=values.pop("contract_tool"), version=values.pop("contract_version")
        )
    record: Record = kind.record(**values)
    return record


def _to_row(kind: _Kind, record: Record) -> tuple[Any, ...]:
    """The table row of a record, in the order of `kind.columns`."""
    row = []
    for field in kind.columns.values():
        value: Any = record
        for part in field.split("."):
            value = getattr(value, part)
        row.append(bytes(value).decode() if isinstance(value, msgspec.Raw) else value)
    return tuple(row)


async def export_lines(
    db: Db, namespaces: Sequence[str] | None, *, usage: bool = False
) -> AsyncIterator[bytes]:
    """The lines of an export, from one snapshot (see the module docstring).

    `namespaces=None`: the whole registry. The first line (the header) comes once the
    snapshot is taken; a namespace that does not exist raises `NamespaceNotFound`
    then, before anything is written."""
    async with connection(db) as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        now: datetime = await conn.fetchval("SELECT transaction_timestamp()")
        stored = await conn.fetch(
            'SELECT name, created_at FROM namespaces ORDER BY name COLLATE "C"'
        )
        created = {row["name"]: row["created_at"] for row in stored}
        if namespaces is None:
            chosen = list(created)
        else:
            chosen = sorted(dict.fromkeys(namespaces))
            for name in chosen:
                if name not in created:
                    raise NamespaceNotFound(name)
        writer = ExportWriter()
        yield writer.header(
            namespaces=chosen,
            scope="registry" if namespaces is None else "namespaces",
            usage=usage,
            exported_at=now,
            registry_version=__version__,
        )
        for name in chosen:
            yield writer.line(NamespaceRecord(name=name, created_at=created[name]))
            for kind_name, kind in _KINDS.items():
                if kind_name == "audit" or (kind_name == "usage" and not usage):
                    continue
                async for row in _rows(conn, kind.query, name):
                    yield writer.line(_from_row(kind, row))
        audit = _KINDS["audit"]
        async for row in _rows(conn, audit.query, namespaces is None, chosen):
            yield writer.line(_from_row(audit, row))
        yield writer.end()


async def _rows(conn: Connection, query: str, *args: Any) -> AsyncIterator[Any]:
    async for row in conn.cursor(query, *args, prefetch=PREFETCH):
        yield row


async def record_export(
    db: Db,
    header: Header,
    *,
    actor: str | None,
    request_id: str | None,
) -> int:
    """The audit event of an export (`registry.export`), written outside its snapshot."""
    async with transaction(db) as conn:
        return await write_audit(
            conn,
            actor=actor,
            action="registry.export",
            request_id=request_id,
            detail={
                "scope": header.scope,
                "namespaces": header.namespaces,
                "usage": header.usage,
                "exported_at": header.exported_at.isoformat(),
            },
        )


# -- import ------------------------------------------------------------------------


class _Batch:
    """Rows of one kind waiting to be copied, with the line each came from."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.kind: str | None = None
        self.rows: list[tuple[Any, ...]] = []
        self.lines: list[int] = []

    async def add(self, kind: str, line: int, record: Record) -> None:
        if kind != self.kind or len(self.rows) >= BATCH:
            await self.flush()
            self.kind = kind
        self.rows.append(_to_row(_KINDS[kind], record))
        self.lines.append(line)

    async def flush(self) -> None:
        if not self.rows:
            return
        assert self.kind is not None
        table, columns = _KINDS[self.kind].table, list(_KINDS[self.kind].columns)
        try:
            async with self.conn.transaction():  # a savepoint: a refusal is found below
                await self.conn.copy_records_to_table(table, records=self.rows, columns=columns)
        except asyncpg.PostgresError as exc:
            await self._find_refused(table, columns)
            raise _refused(self.lines[0], self.kind, exc) from None
        self.rows.clear()
        self.lines.clear()

    async def _find_refused(self, table: str, columns: list[str]) -> None:
        """Copy the rows one at a time: ImportRefused names the first refused line."""
        for row, line in zip(self.rows, self.lines, strict=True):
            try:
                async with self.conn.transaction():
                    await self.conn.copy_records_to_table(table, records=[row], columns=columns)
            except asyncpg.PostgresError as exc:
                raise _refused(line, self.kind or "", exc) from None


def _refused(line: int, kind: str, exc: Exception) -> ImportRefused:
    refused = not_writable(exc)
    if refused is not None:
        return ImportRefused(line, refused.message, "mode")
    return ImportRefused(line, _database_refusal(kind, exc))


def _database_refusal(kind: str, exc: Exception) -> str:
    if isinstance(exc, asyncpg.ForeignKeyViolationError):
        what = {
            "version": "a tool the file does not hold",
            "review": "a version the file does not hold",
            "converter": "a version the file does not hold",
            "alias": "a tool or version the file does not hold",
            "usage": "a tool the file does not hold",
        }.get(kind, "a record the file does not hold")
        return f"the {kind} record refers to {what}"
    if isinstance(exc, asyncpg.UniqueViolationError):
        return f"the {kind} record repeats one the file already holds ({_first_line(exc)})"
    return f"the database refused the {kind} record: {_first_line(exc)}"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


async def import_lines(
    db: Db,
    lines: AsyncIterable[tuple[int, bytes]],
    *,
    actor: str | None,
    request_id: str | None,
    mode: Mode | None = None,
    admit: Callable[[Header], None] | None = None,
) -> ImportSummary:
    """Import a file's lines, all or nothing (see the module docstring).

    `admit(header)` may raise to refuse the file once its header is read (the API
    checks the caller's scopes there). `mode`: the imported namespaces get this mode
    of their own (`"import"`: they refuse publishes until the switch). Raises
    `ImportRefused` naming the line refused; `ExportFileError` never escapes."""
    check = ImportCheck()
    per_namespace: dict[str, dict[str, int]] = {}
    try:
        async with transaction(db) as conn:
            await conn.execute("SELECT set_config('registry.importing', 'on', true)")
            batch = _Batch(conn)
            async for number, line in lines:
                record = check.read(number, line)
                if isinstance(record, Header):
                    if admit is not None:
                        admit(record)
                    await _admit_namespaces(conn, number, record)
                    continue
                if isinstance(record, EndRecord):
                    continue
                kind = type(record).__struct_config__.tag
                assert isinstance(kind, str)
                if isinstance(record, NamespaceRecord):
                    await batch.flush()
                    await _insert_namespace(conn, number, record, mode)
                    per_namespace[record.name] = {"namespace": 1}
                    continue
                await batch.add(kind, number, record)
                if record.namespace is not None:
                    counts = per_namespace[record.namespace]
                    counts[kind] = counts.get(kind, 0) + 1
            check.finish()
            await batch.flush()
            header = check.header
            assert header is not None
            for name, counts in per_namespace.items():
                await write_audit(
                    conn,
                    actor=actor,
                    action="namespace.import",
                    request_id=request_id,
                    namespace=name,
                    detail={
                        "exported_at": header.exported_at.isoformat(),
                        "registry_version": header.registry_version,
                        "format_version": header.format_version,
                        "records": counts,
                        "mode": mode,
                    },
                )
                await notify(conn, name)
    except ExportFileError as exc:
        raise ImportRefused(exc.line, exc.message) from None
    return ImportSummary(
        namespaces=list(per_namespace),
        counts=check.counts,
        verified_digests=check.verified_digests,
        exported_at=header.exported_at,
        registry_version=header.registry_version,
    )


async def _admit_namespaces(conn: Connection, number: int, header: Header) -> None:
    registry = await get_mode(conn)
    if registry is not None and registry.mode == "read-only":
        raise ImportRefused(
            number,
            "the registry is in read-only mode: imports are refused (set it to import or "
            "read-write first)",
            "mode",
        )
    existing = await conn.fetch(
        'SELECT name FROM namespaces WHERE name = ANY($1::text[]) ORDER BY name COLLATE "C"',
        header.namespaces,
    )
    if existing:
        names = ", ".join(row["name"] for row in existing)
        raise ImportRefused(
            number,
            f"namespace{'s' if len(existing) > 1 else ''} {names} already exist"
            f"{'' if len(existing) > 1 else 's'} here: an import only creates namespaces "
            "(export the others with --namespace, or import into another registry)",
            "exists",
        )


async def _insert_namespace(
    conn: Connection, number: int, record: NamespaceRecord, mode: Mode | None
) -> None:
    try:
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO namespaces (name, created_at) VALUES ($1, $2)",
                record.name,
                record.created_at,
            )
            if mode is not None:
                await conn.execute(
                    "INSERT INTO namespace_modes (namespace, mode, reason) VALUES ($1, $2, $3)",
                    record.name,
                    mode,
                    "imported; set read-write at the switch",
                )
    except asyncpg.UniqueViolationError:
        raise ImportRefused(
            number,
            f"namespace {record.name} already exists here: an import only creates namespaces",
        ) from None
    except asyncpg.PostgresError as exc:
        raise ImportRefused(number, _database_refusal("namespace", exc)) from None
