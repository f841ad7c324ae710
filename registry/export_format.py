"""The export file: JSON Lines, one record a line, a header first and an end record last.

    writer = ExportWriter()
    out.write(writer.header(namespaces=["billing"], scope="namespaces", usage=False))
    out.write(writer.line(NamespaceRecord(name="billing", created_at=...)))
    ...
    out.write(writer.end())

    check = ImportCheck()
    for number, line in split_lines(chunks):
        record = check.read(number, line)     # ExportFileError naming the line on any problem
    check.finish()                            # the end record was there and agrees

Every line is a JSON object whose `kind` says what it holds (`header`,
`namespace`, `tool`, `version`, `review`, `converter`, `alias`, `policy`,
`capabilities`, `usage`, `audit`, `end`); docs/operations.md describes each
field and `schemas/export.schema.json` is their JSON Schema. The header
carries `format` and `format_version`: a file of a newer format version is
refused by name, and within one format version fields are only ever added
(readers ignore fields they do not know). The records of a namespace follow
its `namespace` record, in the order above; the audit events come after every
namespace; the `end` record counts the records and holds the SHA-256 of every
byte before it, so a cut or altered file is refused rather than half-read.

Reading checks what can be checked one line at a time, with memory that does
not grow with the file: each version's digest is recomputed from its
definition (RFC 8785, `registry.canonical`) and must be the one recorded; a
definition is an object named as its tool with object schemas; converter
operations parse; acceptances and policies have their stored shape; every
record belongs to a namespace the header lists, after that namespace's own
record. Rows that contradict each other (a converter between versions the
file lacks) are for the database's constraints, which the importer reports
with the line of the record. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from datetime import datetime
from typing import Annotated, Any, Final, Literal

import msgspec

from registry.canonical import DigestError, canonical_of_parsed, digest_of_canonical, parse_json

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_LINE_BYTES",
    "MEDIA_TYPE",
    "AliasRecord",
    "AuditRecord",
    "CapabilitiesRecord",
    "ContractRef",
    "ConverterRecord",
    "EndRecord",
    "ExportFileError",
    "ExportWriter",
    "Header",
    "ImportCheck",
    "NamespaceRecord",
    "PolicyRecordLine",
    "Record",
    "ReviewRecord",
    "ToolRecord",
    "UsageRecord",
    "VersionRecord",
    "asplit_lines",
    "json_schema",
    "split_lines",
]

FORMAT: Final = "mcp-tool-registry-export"
FORMAT_VERSION: Final = 1
MEDIA_TYPE: Final = "application/jsonl"
# One record per line: a version's line holds its definition (a publish body is at
# most 4 MiB), an audit event's its detail. A longer line is refused, never buffered.
MAX_LINE_BYTES: Final = 32 * 1024 * 1024

NamespaceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
ToolName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9._-]{1,128}$")]
VersionNumber = Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
Moment = Annotated[datetime, msgspec.Meta(tz=True)]
Digest = Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$")]
Sha256 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]


class ExportFileError(ValueError):
    """The file is not a registry export this reader accepts; `line` is 1-based (0: the
    file as a whole)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line
        self.message = message


class _Line(msgspec.Struct, frozen=True, tag_field="kind", kw_only=True):
    """A line of the file; `kind` (the tag) says which."""


class Header(_Line, tag="header", frozen=True):
    format: str
    format_version: int
    registry_version: str
    exported_at: Moment
    # "registry": the whole registry (registry-level audit events included);
    # "namespaces": the namespaces listed only
    scope: Literal["registry", "namespaces"]
    namespaces: list[NamespaceName]
    usage: bool


class NamespaceRecord(_Line, tag="namespace", frozen=True):
    name: NamespaceName
    created_at: Moment


class ToolRecord(_Line, tag="tool", frozen=True):
    namespace: NamespaceName
    name: ToolName
    created_at: Moment


class VersionRecord(_Line, tag="version", frozen=True):
    namespace: NamespaceName
    tool: ToolName
    version: VersionNumber
    digest: Digest
    definition: msgspec.Raw
    # the stored state: a deprecated version whose sunset has passed reads as retired;
    # pending and rejected: held for review (a `review` record follows)
    state: Literal["pending", "active", "deprecated", "retired", "rejected"]
    sunset: Moment | None
    created_at: Moment
    acceptances: msgspec.Raw
    publisher: str | None = None  # the actor of its `version.publish` audit event


class ReviewRecord(_Line, tag="review", frozen=True):
    """The review of a version a namespace's review policy held (registry/policy/review.py):
    why, what its publish asked for, who published it, and the decision once made."""

    namespace: NamespaceName
    tool: ToolName
    version: VersionNumber
    review: Literal["risky", "all"]
    request: msgspec.Raw  # a JSON object: the publish's decisions besides the definition
    risks: msgspec.Raw  # a JSON array: the risk findings it was held with
    against: VersionNumber | None
    published_by: str | None
    created_at: Moment
    decision: Literal["approved", "rejected"] | None
    decided_by: str | None
    reason: str | None
    decided_at: Moment | None


class ConverterRecord(_Line, tag="converter", frozen=True):
    namespace: NamespaceName
    tool: ToolName
    from_version: VersionNumber
    to_version: VersionNumber
    ops: msgspec.Raw
    created_at: Moment


class ContractRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    tool: ToolName
    version: VersionNumber


class AliasRecord(_Line, tag="alias", frozen=True):
    namespace: NamespaceName
    name: ToolName
    target: ToolName
    contract: ContractRef
    created_at: Moment
    updated_at: Moment


class PolicyRecordLine(_Line, tag="policy", frozen=True):
    namespace: NamespaceName
    policy: msgspec.Raw
    updated_at: Moment


class CapabilitiesRecord(_Line, tag="capabilities", frozen=True):
    namespace: NamespaceName
    seq: VersionNumber
    document: msgspec.Raw
    created_at: Moment


class UsageRecord(_Line, tag="usage", frozen=True):
    namespace: NamespaceName
    tool: ToolName
    version: Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]  # 0: no version
    decision: Literal["accepted", "converted", "refused"]
    reason: str
    server: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    toolset: Digest
    bucket: Moment
    calls: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
    last_seen: Moment


class AuditRecord(_Line, tag="audit", frozen=True):
    id: int  # the event's id in the registry it was exported from
    at: Moment
    actor: str | None
    action: Annotated[str, msgspec.Meta(min_length=1)]
    namespace: NamespaceName | None
    tool: str | None
    version: int | None
    request_id: str | None
    detail: msgspec.Raw


class EndRecord(_Line, tag="end", frozen=True):
    records: int  # the lines between the header and this one
    counts: dict[str, int]  # by kind
    sha256: Sha256  # of every byte of the file before this line


Record = (
    NamespaceRecord
    | ToolRecord
    | VersionRecord
    | ReviewRecord
    | ConverterRecord
    | AliasRecord
    | PolicyRecordLine
    | CapabilitiesRecord
    | UsageRecord
    | AuditRecord
)
_ANY_LINE: Final[msgspec.json.Decoder[Header | Record | EndRecord]] = msgspec.json.Decoder(
    Header | Record | EndRecord
)
_ENCODER: Final = msgspec.json.Encoder()
# The kinds a namespace's records come in, in file order (audit events come last,
# after every namespace).
NAMESPACE_KINDS: Final = (
    "namespace",
    "tool",
    "version",
    "review",
    "converter",
    "alias",
    "policy",
    "capabilities",
    "usage",
)


def _kind(record: _Line) -> str:
    return str(type(record).__struct_config__.tag)


class ExportWriter:
    """Encodes the lines of one file, counting them and hashing every byte written."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._counts: dict[str, int] = {}
        self._records = 0

    def _emit(self, record: _Line) -> bytes:
        data = _ENCODER.encode(record) + b"\n"
        self._hash.update(data)
        return data

    def header(
        self,
        *,
        namespaces: list[str],
        scope: Literal["registry", "namespaces"],
        usage: bool,
        exported_at: datetime,
        registry_version: str,
    ) -> bytes:
        return self._emit(
            Header(
                format=FORMAT,
                format_version=FORMAT_VERSION,
                registry_version=registry_version,
                exported_at=exported_at,
                scope=scope,
                namespaces=namespaces,
                usage=usage,
            )
        )

    def line(self, record: Record) -> bytes:
        kind = _kind(record)
        self._counts[kind] = self._counts.get(kind, 0) + 1
        self._records += 1
        return self._emit(record)

    def end(self) -> bytes:
        last = EndRecord(
            records=self._records, counts=dict(self._counts), sha256=self._hash.hexdigest()
        )
        return _ENCODER.encode(last) + b"\n"

    @property
    def counts(self) -> dict[str, int]:
        return dict(self._counts)


def split_lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its newline) of a byte stream, a line at most
    `MAX_LINE_BYTES` long (ExportFileError past it); blank lines are skipped."""
    splitter = _Splitter()
    for chunk in chunks:
        yield from splitter.feed(chunk)
    yield from splitter.close()


async def asplit_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[tuple[int, bytes]]:
    """`split_lines` of an asynchronous byte stream (an HTTP body)."""
    splitter = _Splitter()
    async for chunk in chunks:
        for found in splitter.feed(chunk):
            yield found
    for found in splitter.close():
        yield found


class _Splitter:
    def __init__(self) -> None:
        self._pending = bytearray()
        self._number = 0

    def feed(self, chunk: bytes) -> Iterator[tuple[int, bytes]]:
        if not chunk:
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._pending += chunk[start:]
                if len(self._pending) > MAX_LINE_BYTES:
                    raise ExportFileError(
                        self._number + 1, f"the line is longer than {MAX_LINE_BYTES} bytes"
                    )
                return
            if self._pending:
                self._pending += chunk[start:end]
                line = bytes(self._pending)
                self._pending.clear()
            else:
                line = chunk[start:end]
            start = end + 1
            self._number += 1
            if len(line) > MAX_LINE_BYTES:
                raise ExportFileError(
                    self._number, f"the line is longer than {MAX_LINE_BYTES} bytes"
                )
            if line.strip():
                yield self._number, line

    def close(self) -> Iterator[tuple[int, bytes]]:
        if self._pending.strip():
            self._number += 1
            yield self._number, bytes(self._pending)
        self._pending.clear()


class ImportCheck:
    """Reads the lines of a file in order (see the module docstring); keeps only the
    header, the counts, the running hash and the names of the namespaces seen."""

    def __init__(self) -> None:
        self.header: Header | None = None
        self._hash = hashlib.sha256()
        self._counts: dict[str, int] = {}
        self._records = 0
        self._seen: set[str] = set()
        self._current: str | None = None  # the namespace whose records are being read
        self._stage = 0  # index into NAMESPACE_KINDS of the last record of `_current`
        self._auditing = False
        self._ended = False
        self.verified_digests = 0

    def read(self, number: int, line: bytes) -> Header | Record | EndRecord:
        """The record of one line, checked; ExportFileError naming the line otherwise."""
        if self._ended:
            raise ExportFileError(number, "a line after the end record")
        try:
            record = _ANY_LINE.decode(line)
        except msgspec.ValidationError as exc:
            raise ExportFileError(number, _describe(line, str(exc))) from None
        except msgspec.DecodeError as exc:
            raise ExportFileError(number, f"not a JSON object: {exc}") from None
        if isinstance(record, EndRecord):
            self._end(number, record)
            return record
        self._hash.update(line + b"\n")
        if isinstance(record, Header):
            self._begin(number, record)
            return record
        if self.header is None:
            raise ExportFileError(number, "the first line is not the header of a registry export")
        self._place(number, record)
        _check_record(number, record)
        if isinstance(record, VersionRecord):
            self.verified_digests += 1
        kind = _kind(record)
        self._counts[kind] = self._counts.get(kind, 0) + 1
        self._records += 1
        return record

    @property
    def counts(self) -> dict[str, int]:
        """The records read so far, by kind."""
        return dict(self._counts)

    def finish(self) -> None:
        """ExportFileError unless the end record was read (the file is whole)."""
        if self.header is None:
            raise ExportFileError(0, "the file is empty: no header line")
        if not self._ended:
            raise ExportFileError(0, "the file ends before its end record: it was cut short")

    def _begin(self, number: int, header: Header) -> None:
        if self.header is not None:
            raise ExportFileError(number, "a second header")
        if header.format != FORMAT:
            raise ExportFileError(number, f"format {header.format!r} is not {FORMAT!r}")
        if header.format_version > FORMAT_VERSION:
            raise ExportFileError(
                number,
                f"format version {header.format_version} is newer than this registry reads "
                f"({FORMAT_VERSION}): import it with a registry of release "
                f"{header.registry_version} or later",
            )
        if header.format_version < 1:
            raise ExportFileError(number, f"format version {header.format_version} is unknown")
        if len(set(header.namespaces)) != len(header.namespaces):
            raise ExportFileError(number, "the header lists a namespace twice")
        self.header = header

    def _place(self, number: int, record: Record) -> None:
        """The order rules: a namespace's records follow its own, kinds in file order."""
        assert self.header is not None
        if isinstance(record, AuditRecord):
            if record.namespace is None and self.header.scope != "registry":
                raise ExportFileError(
                    number, "a registry-level audit event in an export of some namespaces only"
                )
            if record.namespace is not None and record.namespace not in self._seen:
                raise ExportFileError(
                    number,
                    f"an audit event of namespace {record.namespace!r}, which the file "
                    "does not hold",
                )
            self._auditing = True
            return
        if self._auditing:
            raise ExportFileError(number, f"a {_kind(record)} record after the audit events")
        if isinstance(record, NamespaceRecord):
            if record.name not in self.header.namespaces:
                raise ExportFileError(
                    number, f"namespace {record.name!r} is not among the header's namespaces"
                )
            if record.name in self._seen:
                raise ExportFileError(number, f"namespace {record.name!r} appears twice")
            self._seen.add(record.name)
            self._current = record.name
            self._stage = 0
            return
        namespace = record.namespace
        if namespace != self._current:
            raise ExportFileError(
                number,
                f"a {_kind(record)} record of namespace {namespace!r} outside that namespace's "
                "records (they follow its namespace record)",
            )
        stage = NAMESPACE_KINDS.index(_kind(record))
        if stage < self._stage:
            raise ExportFileError(
                number,
                f"a {_kind(record)} record after the namespace's {NAMESPACE_KINDS[self._stage]} "
                f"records (the order is {', '.join(NAMESPACE_KINDS)})",
            )
        if isinstance(record, UsageRecord) and not self.header.usage:
            raise ExportFileError(number, "a usage record in a file whose header says usage: false")
        self._stage = stage

    def _end(self, number: int, end: EndRecord) -> None:
        if self.header is None:
            raise ExportFileError(number, "the end record comes before the header")
        missing = [ns for ns in self.header.namespaces if ns not in self._seen]
        if missing:
            raise ExportFileError(
                number, f"the header lists namespaces the file does not hold: {', '.join(missing)}"
            )
        if end.sha256 != self._hash.hexdigest():
            raise ExportFileError(
                number,
                "the SHA-256 of the file before the end record is not the one recorded: "
                "the file was changed or damaged after export",
            )
        if end.records != self._records or end.counts != self._counts:
            raise ExportFileError(
                number,
                f"the end record counts {end.records} records ({_counts(end.counts)}), "
                f"the file holds {self._records} ({_counts(self._counts)})",
            )
        self._ended = True


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"


def _describe(line: bytes, message: str) -> str:
    """msgspec's message, with the record's kind when the line says it."""
    try:
        kind = msgspec.json.decode(line, type=dict[str, Any]).get("kind")
    except (msgspec.DecodeError, msgspec.ValidationError):
        kind = None
    if isinstance(kind, str) and kind:
        return f"{kind} record: {message}"
    return message


def _json(raw: msgspec.Raw, what: str, number: int) -> Any:
    try:
        value, _ = parse_json(bytes(raw))
    except msgspec.DecodeError as exc:  # cannot happen for a line msgspec decoded
        raise ExportFileError(number, f"{what}: {exc}") from None
    return value


def _check_record(number: int, record: Record) -> None:
    if isinstance(record, VersionRecord):
        _check_version(number, record)
    elif isinstance(record, ConverterRecord):
        from registry.compat import ConverterError, parse_ops

        label = (
            f"converter {record.from_version} -> {record.to_version} of "
            f"{record.namespace}/{record.tool}"
        )
        if record.from_version == record.to_version:
            raise ExportFileError(number, f"{label}: goes from a version to itself")
        try:
            parse_ops(_json(record.ops, label, number))
        except ConverterError as exc:
            raise ExportFileError(number, f"{label}: {exc}") from None
    elif isinstance(record, PolicyRecordLine):
        from registry.policy.acceptance import NamespacePolicy

        try:
            msgspec.json.decode(record.policy, type=NamespacePolicy)
        except msgspec.ValidationError as exc:
            raise ExportFileError(number, f"policy of {record.namespace}: {exc}") from None
    elif isinstance(record, CapabilitiesRecord):
        if not isinstance(_json(record.document, "capabilities", number), dict):
            raise ExportFileError(
                number, f"capabilities {record.seq} of {record.namespace}: not a JSON object"
            )
    elif isinstance(record, ReviewRecord):
        label = f"the review of version {record.version} of {record.namespace}/{record.tool}"
        if not isinstance(_json(record.request, label, number), dict):
            raise ExportFileError(number, f"{label}: request is not a JSON object")
        if not isinstance(_json(record.risks, label, number), list):
            raise ExportFileError(number, f"{label}: risks is not a JSON array")
        if (record.decision is None) != (record.decided_at is None):
            raise ExportFileError(number, f"{label}: a decision goes with its time")
    elif isinstance(record, AuditRecord) and not isinstance(
        _json(record.detail, "audit event", number), dict
    ):
        raise ExportFileError(number, f"audit event {record.id}: detail is not a JSON object")


def _check_version(number: int, record: VersionRecord) -> None:
    from registry.policy.acceptance import Acceptance

    label = f"version {record.version} of {record.namespace}/{record.tool}"
    definition = _json(record.definition, label, number)
    if not isinstance(definition, dict):
        raise ExportFileError(number, f"{label}: the definition is not a JSON object")
    if definition.get("name") != record.tool:
        raise ExportFileError(
            number, f"{label}: the definition's name {definition.get('name')!r} is not the tool's"
        )
    for field in ("inputSchema", "outputSchema"):
        if (field in definition or field == "inputSchema") and not isinstance(
            definition.get(field), dict
        ):
            raise ExportFileError(number, f"{label}: the definition's {field} is not an object")
    if record.state in ("active", "pending", "rejected") and record.sunset is not None:
        article = "an" if record.state == "active" else "a"
        raise ExportFileError(number, f"{label}: {article} {record.state} version has no sunset")
    try:
        canonical = canonical_of_parsed({k: v for k, v in definition.items() if k != "_meta"})
    except DigestError as exc:
        raise ExportFileError(number, f"{label}: {exc}") from None
    recomputed = digest_of_canonical(canonical)
    if recomputed != record.digest:
        raise ExportFileError(
            number,
            f"{label}: the digest recorded, {record.digest}, is not the digest of its "
            f"definition ({recomputed}): the definition was changed after export",
        )
    try:
        msgspec.json.decode(record.acceptances, type=list[Acceptance])
    except msgspec.ValidationError as exc:
        raise ExportFileError(number, f"{label}: acceptances: {exc}") from None


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a line of the file (`schemas/export.schema.json`)."""
    schema = msgspec.json.schema(Header | Record | EndRecord)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://mcp-tool-registry.dev/schemas/export.schema.json",
        "title": "Export line",
        "description": "One line of a registry export file (JSON Lines; docs/operations.md): "
        "a header first, each namespace's records after its namespace record, the audit "
        "events, an end record last. Generated from registry/export_format.py: "
        "`python -m registry.export_format > schemas/export.schema.json`.",
        **schema,
    }


if __name__ == "__main__":
    import json
    import sys

    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
