"""What every store module shares about rows: column lists, JSON columns, records, names.

    row = await conn.fetchrow(f"SELECT {VERSION_COLUMNS} FROM versions_all WHERE ...")
    version = record_of(row, Version)        # jsonb columns decoded, fields by name
    await conn.execute("... $1::text::jsonb", encode_json(document))

JSON goes over the wire as text (`$n::text::jsonb`, `col::text`), so the store's
functions work whatever type codecs the caller set on its connections.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

import msgspec

from registry.store._db import Row

__all__ = [
    "ALIAS_COLUMNS",
    "CONVERTER_COLUMNS",
    "VERSION_COLUMNS",
    "check_namespace_name",
    "check_tool_name",
    "decode_json",
    "encode_json",
    "record_of",
]

_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_TOOL = re.compile(r"^[A-Za-z0-9._-]{1,128}$")

VERSION_COLUMNS = (
    "namespace, tool, version, digest, definition::text AS definition, "
    "state::text AS state, sunset, created_at, acceptances::text AS acceptances"
)

CONVERTER_COLUMNS = "namespace, tool, from_version, to_version, ops::text AS ops, created_at"

ALIAS_COLUMNS = (
    "namespace, name, target_tool, contract_tool, contract_version, created_at, updated_at"
)


def encode_json(value: Any) -> str:
    """JSON text, for a `$n::text::jsonb` parameter."""
    return msgspec.json.encode(value).decode()


def decode_json(text: str) -> Any:
    """A value from a jsonb column selected as text."""
    return msgspec.json.decode(text)


# jsonb columns are selected as text (`col::text AS col`) and decoded here
_JSON_COLUMNS: Final = frozenset(
    {"definition", "ops", "detail", "document", "acceptances", "policy"}
)
_R = TypeVar("_R", bound=msgspec.Struct)


def record_of(row: Row, kind: type[_R]) -> _R:
    """A stored record from a row: one column per field of `kind`, by name."""
    values = {name: row[name] for name in kind.__struct_fields__}
    for name in _JSON_COLUMNS.intersection(values):
        values[name] = decode_json(values[name])
    return msgspec.convert(values, kind)


def check_namespace_name(name: str) -> None:
    """`ValueError` naming the rule when `name` is no namespace name."""
    if not _NAMESPACE.fullmatch(name):
        raise ValueError(f"invalid namespace name {name!r}: must match {_NAMESPACE.pattern}")


def check_tool_name(name: str) -> None:
    """`ValueError` naming the rule when `name` is no tool name."""
    if not _TOOL.fullmatch(name):
        raise ValueError(f"invalid tool name {name!r}: must match {_TOOL.pattern}")
