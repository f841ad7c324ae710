"""JSON Pointers (RFC 6901): one token escaped, read back, joined and split.

Written out once for the whole package: every module that names a place in a
document (the engine's findings, the gate's refusals, manifests, lint) reads
and writes pointers through these four functions. (Four lines each; the
`jsonpointer` package would add a dependency to the SDK for them.)
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["escape", "join", "split", "unescape"]


def escape(token: str) -> str:
    """A reference token as a pointer writes it: `~` as `~0`, `/` as `~1`."""
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """A reference token as a pointer wrote it, read back."""
    if "~" not in token:
        return token
    return token.replace("~1", "/").replace("~0", "~")


def join(tokens: Iterable[object]) -> str:
    """The pointer of a path (names and array positions): `["a/b", 0]` -> `/a~1b/0`."""
    return "".join("/" + escape(str(token)) for token in tokens)


def split(pointer: str) -> list[str]:
    """The tokens of a pointer (`""`, the whole document, has none), unescaped."""
    return [unescape(token) for token in pointer.split("/")[1:]]
