"""The export file's reader refuses what it must, naming the line (`registry.export_format`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
import pytest

from registry.canonical import digest
from registry.export_format import (
    MAX_LINE_BYTES,
    AuditRecord,
    ConverterRecord,
    ExportFileError,
    ExportWriter,
    ImportCheck,
    NamespaceRecord,
    ToolRecord,
    UsageRecord,
    VersionRecord,
    split_lines,
)
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4

AT = datetime(2026, 12, 1, tzinfo=UTC)


def _version(number: int, definition: dict[str, object]) -> VersionRecord:
    return VersionRecord(
        namespace="billing",
        tool="db.query",
        version=number,
        digest=digest(definition),
        definition=msgspec.Raw(msgspec.json.encode(definition)),
        state="active",
        sunset=None,
        created_at=AT,
        acceptances=msgspec.Raw(b"[]"),
    )


def export_file(usage: bool = False) -> list[bytes]:
    """A small whole file, one line per item (newline included)."""
    writer = ExportWriter()
    lines = [
        writer.header(
            namespaces=["billing"],
            scope="registry",
            usage=usage,
            exported_at=AT,
            registry_version="0.1.0",
        )
    ]
    for record in (
        NamespaceRecord(name="billing", created_at=AT),
        ToolRecord(namespace="billing", name="db.query", created_at=AT),
        _version(1, DB_QUERY_V3),
        _version(2, DB_QUERY_V4),
        ConverterRecord(
            namespace="billing",
            tool="db.query",
            from_version=1,
            to_version=2,
            ops=msgspec.Raw(b'[{"op": "rename", "from": "/timeout_ms", "to": "/timeout"}]'),
            created_at=AT,
        ),
        AuditRecord(
            id=7,
            at=AT,
            actor="tok_1",
            action="version.publish",
            namespace="billing",
            tool="db.query",
            version=1,
            request_id=None,
            detail=msgspec.Raw(b"{}"),
        ),
    ):
        lines.append(writer.line(record))  # type: ignore[arg-type]
    lines.append(writer.end())
    return lines


def read(lines: list[bytes]) -> ImportCheck:
    check = ImportCheck()
    for number, line in split_lines(lines):
        check.read(number, line)
    check.finish()
    return check


def test_a_whole_file_reads_back_with_its_counts() -> None:
    check = read(export_file())
    assert check.counts == {"namespace": 1, "tool": 1, "version": 2, "converter": 1, "audit": 1}
    assert check.verified_digests == 2
    assert check.header is not None and check.header.namespaces == ["billing"]


def _replace(index: int, old: bytes, new: bytes) -> Callable[[list[bytes]], list[bytes]]:
    def change(lines: list[bytes]) -> list[bytes]:
        assert old in lines[index], (old, lines[index])
        return [*lines[:index], lines[index].replace(old, new), *lines[index + 1 :]]

    return change


def _move(index: int, to: int) -> Callable[[list[bytes]], list[bytes]]:
    def change(lines: list[bytes]) -> list[bytes]:
        moved = list(lines)
        moved.insert(to, moved.pop(index))
        return moved

    return change


# (what is wrong, the change, the line refused, words of the refusal)
REFUSALS = [
    (
        "a definition changed after export",
        _replace(3, b'"Run a SQL query."', b'"Run any SQL query."'),
        4,
        "the digest recorded, sha256:",
    ),
    ("the file cut short", lambda lines: lines[:-2], 0, "the file ends before its end record"),
    (
        "a record changed after export",
        _replace(6, b'"actor":"tok_1"', b'"actor":"tok_2"'),
        8,
        "the SHA-256 of the file before the end record is not the one recorded",
    ),
    (
        "a newer format",
        _replace(0, b'"format_version":1', b'"format_version":2'),
        1,
        "format version 2 is newer than this registry reads (1)",
    ),
    ("no header", lambda lines: lines[1:], 1, "the first line is not the header"),
    (
        "a namespace the header does not list",
        _replace(1, b'"name":"billing"', b'"name":"ledger"'),
        2,
        "namespace 'ledger' is not among the header's namespaces",
    ),
    (
        "a version before its tool's namespace",
        _move(3, 1),
        2,
        "a version record of namespace 'billing' outside that namespace's records",
    ),
    (
        "a converter before a version",
        _move(5, 3),
        5,
        "a version record after the namespace's converter records",
    ),
    (
        "a definition named for another tool",
        _replace(3, b'"tool":"db.query"', b'"tool":"db.other"'),
        4,
        "the definition's name 'db.query' is not the tool's",
    ),
    (
        "converter operations that do not parse",
        _replace(5, b'"op": "rename"', b'"op": "teleport"'),
        6,
        "converter 1 -> 2 of billing/db.query: invalid converter operations",
    ),
    (
        "a field of the wrong type",
        _replace(3, b'"version":1', b'"version":"one"'),
        4,
        "version record: Expected `int`, got `str` - at `$.version`",
    ),
    (
        "a time without a zone",
        _replace(1, b'"created_at":"2026-12-01T00:00:00Z"', b'"created_at":"2026-12-01T00:00:00"'),
        2,
        "namespace record: Expected `datetime` with a timezone component",
    ),
    ("not JSON", _replace(2, b"{", b"{{"), 3, "not a JSON object"),
    (
        "an unknown kind",
        _replace(2, b'"kind":"tool"', b'"kind":"robot"'),
        3,
        "Invalid value 'robot'",
    ),
]


@pytest.mark.parametrize(
    ("change", "line", "words"),
    [case[1:] for case in REFUSALS],
    ids=[case[0] for case in REFUSALS],
)
def test_a_damaged_file_is_refused_naming_the_line(
    change: Callable[[list[bytes]], list[bytes]], line: int, words: str
) -> None:
    with pytest.raises(ExportFileError) as refused:
        read(change(export_file()))
    assert refused.value.line == line, str(refused.value)
    assert words in str(refused.value)


def test_usage_records_need_a_header_that_says_so() -> None:
    lines = export_file(usage=False)
    usage = UsageRecord(
        namespace="billing",
        tool="db.query",
        version=1,
        decision="accepted",
        reason="",
        server="s",
        toolset="sha256:" + "0" * 64,
        bucket=AT,
        calls=1,
        last_seen=AT,
    )
    lines.insert(6, msgspec.json.encode(usage) + b"\n")
    with pytest.raises(ExportFileError, match="line 7: a usage record in a file whose header"):
        read(lines)


def test_a_line_longer_than_the_limit_is_refused_before_it_is_held() -> None:
    chunks = [export_file()[0], b"x" * (MAX_LINE_BYTES // 2), b"x" * (MAX_LINE_BYTES // 2 + 2)]
    with pytest.raises(ExportFileError, match="line 2: the line is longer than"):
        list(split_lines(chunks))


def test_the_schema_in_the_repository_is_the_format_s() -> None:
    import json
    from pathlib import Path

    from registry.export_format import json_schema

    committed = Path(__file__).resolve().parents[2] / "schemas" / "export.schema.json"
    assert json.loads(committed.read_text(encoding="utf-8")) == json_schema(), (
        "schemas/export.schema.json is stale: python -m registry.export_format > "
        "schemas/export.schema.json"
    )


def test_every_line_of_a_file_is_valid_under_the_schema() -> None:
    import json
    from pathlib import Path

    from jsonschema import Draft202012Validator, FormatChecker

    committed = Path(__file__).resolve().parents[2] / "schemas" / "export.schema.json"
    validator = Draft202012Validator(
        json.loads(committed.read_text()), format_checker=FormatChecker()
    )
    for line in export_file():
        validator.validate(json.loads(line))
