"""Canonical digests of tool definitions.

`digest(definition)` is `sha256:` + the hex SHA-256 of the RFC 8785 (JCS)
canonical JSON of the definition without its top-level `_meta`. The JCS
encoding comes from the maintained `rfc8785` package rather than our own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785

__all__ = ["DigestError", "canonical_json", "digest", "is_digest"]

_PREFIX = "sha256:"


class DigestError(ValueError):
    """The value cannot be canonicalised (not a JSON object, NaN, an integer
    outside the IEEE 754 safe range, a non-string key, ...)."""


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical bytes of any JSON value."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise DigestError(f"not canonicalisable JSON: {exc}") from exc


def digest(definition: Mapping[str, Any]) -> str:
    """The canonical digest of a tool definition; `_meta` does not count."""
    if not isinstance(definition, Mapping):
        raise DigestError(f"a tool definition is a JSON object, not {type(definition).__name__}")
    body = {key: value for key, value in definition.items() if key != "_meta"}
    return _PREFIX + hashlib.sha256(canonical_json(body)).hexdigest()


def is_digest(text: str) -> bool:
    """True for `sha256:` followed by 64 lowercase hex digits."""
    hexpart = text.removeprefix(_PREFIX)
    return (
        text.startswith(_PREFIX)
        and len(hexpart) == 64
        and all(c in "0123456789abcdef" for c in hexpart)
    )
