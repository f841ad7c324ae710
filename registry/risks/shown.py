"""What a reviewer reads: a definition as lines of JSON with its invisible characters
written out, and the diff of two of them.

    lines = shown_lines(definition)        # sorted keys, two-space indent, <U+200B ...>
    sys.stdout.writelines(review_diff(old, new, "v3", "v4"))   # old None: a first version

JSON escapes control characters itself (`\\u001b`); the other invisible characters
(format, private-use, tag characters, blank letters: registry.risks.characters)
would print as nothing, so each is written as `<U+200B ZERO WIDTH SPACE>`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from registry.risks.characters import visible

__all__ = ["review_diff", "shown_lines"]


def shown_lines(definition: Mapping[str, Any] | None) -> list[str]:
    """`definition` as pretty JSON lines (none for None), invisible characters shown."""
    if definition is None:
        return []
    text = json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False)
    return [visible(line) for line in text.splitlines()]


def review_diff(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], old_label: str, new_label: str
) -> Iterator[str]:
    """The unified diff from `old` to `new` (lines ending in a newline), three lines of
    context; from nothing, every line of `new` is added."""
    return difflib.unified_diff(
        [line + "\n" for line in shown_lines(old)],
        [line + "\n" for line in shown_lines(new)],
        fromfile=old_label,
        tofile=new_label,
    )
