"""Canonical digests of tool definitions.

`digest(definition)` is `sha256:` + the hex SHA-256 of the RFC 8785 (JCS)
canonical JSON of the definition without its top-level `_meta`. The answer is
always the one of the maintained `rfc8785` package (the reference); most
values take a fast path that provably gives the same bytes:

* msgspec writes the value with its object keys sorted. Its strings are JCS's
  (the same escapes, UTF-8 otherwise; checked for every BMP code point by the
  tests), its integers too, and code-point order is UTF-16 order unless a key
  holds a character beyond U+FFFF;
* numbers with a fraction or an exponent are written in ECMAScript form by the
  reference itself, one number at a time (`parse_json` keeps them apart as
  `ExactFloat`, so their text comes out right);
* whatever the fast path cannot vouch for goes to the reference whole: a value
  that is not plain JSON (a tuple, a date, NaN, a non-string key, ...), an
  integer of 16 digits or more (the reference refuses those beyond 2**53 - 1),
  a key with a character beyond U+FFFF.

`tests/test_canonical.py` compares the two on generated values.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec
import rfc8785

__all__ = [
    "DigestError",
    "ExactFloat",
    "canonical_json",
    "canonical_of_parsed",
    "canonical_of_parsed_many",
    "digest",
    "digest_of_canonical",
    "is_digest",
    "parse_json",
]

_PREFIX = "sha256:"


class DigestError(ValueError):
    """The value cannot be canonicalised (not a JSON object, NaN, an integer
    outside the IEEE 754 safe range, a non-string key, ...)."""


class ExactFloat(float):
    """A number read from JSON text with a fraction or an exponent (`parse_json`):
    a float whose canonical text is written by the reference."""

    __slots__ = ()


def _number_text(value: Any) -> msgspec.Raw:
    if type(value) is ExactFloat:
        try:
            return msgspec.Raw(rfc8785.dumps(float(value)))
        except rfc8785.CanonicalizationError as exc:
            raise DigestError(f"not canonicalisable JSON: {exc}") from exc
    raise _NotPlain


class _NotPlain(Exception):
    """A value the fast path does not vouch for: the reference decides."""


_SORTED: Final = msgspec.json.Encoder(order="sorted", enc_hook=_number_text)
# A digit run this long may be an integer the reference refuses (2**53 has 16 digits).
_LONG_RUN: Final = b"d" * 16
_DIGITS: Final = bytes(ord("d") if chr(c) in "0123456789" else ord(" ") for c in range(256))
_RUN_END: Final = re.compile(rb"d*")
_ASTRAL: Final = re.compile(rb"[\xf0-\xf4]")
# A key (a string right after `{` or `,` and before `:`; a quote inside a string is
# always escaped) holding a character beyond U+FFFF (its UTF-8 lead byte F0-F4).
_ASTRAL_KEY: Final = re.compile(rb'[{,]"(?:[^"\\\xf0-\xf4]|\\.)*[\xf0-\xf4](?:[^"\\]|\\.)*":')


def parse_json(data: bytes | str) -> tuple[Any, bool]:
    """JSON text as a value `canonical_of_parsed` writes fast, and whether it holds
    a number with a fraction or an exponent (an `ExactFloat`). Raises msgspec.DecodeError."""
    floats = 0

    def exact(text: str) -> ExactFloat:
        nonlocal floats
        floats += 1
        return ExactFloat(text)

    value = msgspec.json.Decoder(float_hook=exact).decode(data)
    return value, floats > 0


def canonical_of_parsed(value: Any) -> bytes:
    """RFC 8785 bytes of a value made of what `parse_json` returns (dicts with string
    keys, lists, strings, integers, ExactFloat, booleans, None), and of msgspec.Raw
    holding canonical text of such values. A plain float here would be written wrong:
    use `canonical_json` for anything else."""
    try:
        text = _SORTED.encode(value)
    except _NotPlain:
        return _reference(value)
    return text if _vouched(text) else _reference(value)


def canonical_of_parsed_many(values: Sequence[Any]) -> list[bytes]:
    """`canonical_of_parsed` of each value, the checks of the fast path made once
    over all of them (a value is vouched for when all of them are)."""
    try:
        texts = [_SORTED.encode(value) for value in values]
    except _NotPlain:
        return [canonical_of_parsed(value) for value in values]
    # Joined with commas, as in an array, every check sees each value as it would alone.
    if _vouched(b",".join(texts)):
        return texts
    return [
        text if _vouched(text) else _reference(v) for text, v in zip(texts, values, strict=True)
    ]


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical bytes of any JSON value."""
    try:
        text = _SORTED.encode(value)
        parsed, floats = parse_json(text)
    except (_NotPlain, TypeError, ValueError, OverflowError, msgspec.MsgspecError):
        return _reference(value)
    # Written and read back, plain JSON comes back equal; a tuple, a date, NaN (null),
    # a non-string key... do not, and go to the reference.
    if parsed != value:
        return _reference(value)
    if floats:  # written by repr above: write them again, in ECMAScript form
        text = _SORTED.encode(parsed)
    return text if _vouched(text) else _reference(value)


def _vouched(text: bytes) -> bool:
    """False when `text` may hold an integer of 16 digits or more, or a key with a
    character beyond U+FFFF (sorted by code point, not by UTF-16 unit)."""
    digits = text.translate(_DIGITS)
    if _LONG_RUN in digits and _long_integer(text, digits):
        return False
    return text.isascii() or _ASTRAL.search(text) is None or _ASTRAL_KEY.search(text) is None


def _long_integer(text: bytes, digits: bytes) -> bool:
    """A run of 16 or more digits that is a whole number token (not in a string);
    `digits` is `text` with every digit as `d`."""
    at = digits.find(_LONG_RUN)
    while at >= 0:
        end = _RUN_END.match(digits, at).end()  # type: ignore[union-attr]
        before = at - 1 if at > 0 and text[at - 1] == ord("-") else at
        opens = before == 0 or text[before - 1] in b":[,"
        closes = end == len(text) or text[end] in b",]}"
        if opens and closes:
            return True
        at = digits.find(_LONG_RUN, end)
    return False


def _reference(value: Any) -> bytes:
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError, RecursionError) as exc:
        raise DigestError(f"not canonicalisable JSON: {exc}") from exc


def digest_of_canonical(text: bytes) -> str:
    """`sha256:` + hex SHA-256 of canonical bytes."""
    return _PREFIX + hashlib.sha256(text).hexdigest()


def _without_meta(definition: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(definition, Mapping):
        raise DigestError(f"a tool definition is a JSON object, not {type(definition).__name__}")
    if "_meta" not in definition and type(definition) is dict:
        return definition
    return {key: value for key, value in definition.items() if key != "_meta"}


def digest(definition: Mapping[str, Any]) -> str:
    """The canonical digest of a tool definition; `_meta` does not count."""
    return digest_of_canonical(canonical_json(_without_meta(definition)))


def is_digest(text: str) -> bool:
    """True for `sha256:` followed by 64 lowercase hex digits."""
    hexpart = text.removeprefix(_PREFIX)
    return (
        text.startswith(_PREFIX)
        and len(hexpart) == 64
        and all(c in "0123456789abcdef" for c in hexpart)
    )
