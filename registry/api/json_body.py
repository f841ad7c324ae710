"""The strict reading of a JSON request body: what msgspec would let through, refused.

    check_document(raw)    # ApiError 400 invalid-json / 422 invalid-body, else None

No Litestar here: `registry.api.bodies` runs it on the event loop for a small
body, and an analysis worker (`registry.api.analysis.checked_body`) for a
large one. It refuses:

* a body nested deeper, or holding more arrays and objects, than
  `registry.documents.check_json_limits` allows (checked in one pass over the
  text, before any parser recurses into it): 400;
* what msgspec (which decodes the body for the handler) would let through
  silently: duplicate object keys (msgspec keeps the last one and has no
  option to refuse them, msgspec issue #648); and with a clear message NaN,
  Infinity, numbers past a double, nesting past the recursion limit: 400;
* a NUL character (`\\u0000`) in any string or key: PostgreSQL stores neither
  in `text` nor in `jsonb`, and its own message would name its internals: 422.

The second parse, with the standard library, costs about 20 ms per MiB (the
regex pass as much again): what `registry.api.bodies` keeps off the event loop.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, Final

from registry.api.problems import ApiError
from registry.documents import DocumentError, check_json_limits
from registry.pointers import escape

__all__ = ["MAX_BODY_NODES", "check_document"]

# Arrays and objects in one request body: a bundle of manifests may hold several
# schemas of up to 100,000 nodes each (a 4 MiB body holds at most about 1.4 million).
MAX_BODY_NODES: Final = 1_000_000
_NUL_ESCAPE: Final = b"\\u0000"


def check_document(raw: bytes) -> None:
    """ApiError unless `raw` is strict JSON within the depth and node limits, without
    duplicate keys and without NUL."""
    try:  # one pass over the text before any parser builds (or recurses into) it
        check_json_limits(raw.decode("utf-8", "replace"), "the body", max_nodes=MAX_BODY_NODES)
    except DocumentError as exc:
        raise ApiError(
            "invalid-json",
            f"the body is refused: {exc.message} (line {exc.line}, column {exc.column})",
        ) from None
    duplicates: list[tuple[str, dict[str, Any]]] = []

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs) and not duplicates:
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    duplicates.append((key, obj))
                    break
                seen.add(key)
        return obj

    def constant(name: str) -> Any:
        raise ApiError("invalid-json", f"the body is not valid JSON: {name} is not a JSON number")

    def finite(text: str) -> float:
        number = float(text)
        if math.isinf(number):
            raise ApiError(
                "invalid-json",
                f"the body is not valid JSON: the number {text[:40]} is out of range "
                "(larger than a double)",
            )
        return number

    try:
        document = json.loads(
            raw, object_pairs_hook=unique, parse_constant=constant, parse_float=finite
        )
    except RecursionError:
        raise ApiError("invalid-json", "the body is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, bad UTF-8, an integer of 4,300+ digits
        raise ApiError("invalid-json", f"the body is not valid JSON: {exc}") from None
    if duplicates:
        key, holder = duplicates[0]
        where = next((p for p, v, _ in _nodes(document) if v is holder), "?") or "the top level"
        raise ApiError("invalid-json", f"duplicate key {key!r} at {where}")
    # JSON can carry NUL only as the escape \u0000 (a raw control character is
    # invalid JSON): without it in the bytes there is nothing to look for.
    if _NUL_ESCAPE in raw:
        for pointer, value, key in _nodes(document):
            if (isinstance(value, str) and "\x00" in value) or "\x00" in key:
                raise ApiError(
                    "invalid-body",
                    "text may not contain the NUL character (\\u0000)",
                    pointer=pointer or "/",
                )


def _nodes(document: Any) -> Iterator[tuple[str, Any, str]]:
    """(JSON Pointer, value, the key or index it is held under) of every node, the
    document first (error paths only: it walks the whole document)."""
    stack: list[tuple[Any, str, str]] = [(document, "", "")]
    while stack:
        value, pointer, key = stack.pop()
        yield pointer, value, key
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        for name, child in items:
            stack.append((child, f"{pointer}/{escape(str(name))}", str(name)))
