"""Where a tool definition holds text a model reads, and what a change added to it.

    for text in texts(definition):          # every string, with its pointer
        text.pointer, text.value, text.prose  # prose: words written for a reader
    for text in changed(old, new):          # the strings new holds that old does not
        text.old                            # what old held at that pointer (or None)
    added_words(old_text, new_text)         # the runs of words the new text adds

A host gives the model the whole definition: the tool's description and title,
and everything in its input and output schemas (descriptions, titles,
`$comment`, examples, defaults, enum values and their descriptions), property
names included. Prose is what is written for a reader (descriptions, titles,
comments, examples, and a default, const or enum that holds a sentence); every
string counts for hidden characters.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from registry.pointers import escape

__all__ = ["Text", "added_words", "changed", "texts"]

# keys whose string values (or lists of strings) are written for a reader
_PROSE_KEYS = frozenset({"description", "title", "$comment", "examples", "enumDescriptions",
                         "markdownDescription", "x-description", "x-enumDescriptions"})  # fmt: skip


@dataclass(frozen=True)
class Text:
    pointer: str  # JSON Pointer into the definition; a property name's pointer ends in it
    value: str
    prose: bool  # written for a reader (not a name, an enum value or a key)
    old: str | None = None  # what the old definition held there (changed(): None if nothing)


def texts(definition: Any) -> Iterator[Text]:
    """Every string of a definition (keys included), with its pointer, in document order."""
    yield from _walk(definition, "", prose=False)


def changed(old: Any, new: Any) -> Iterator[Text]:
    """The strings of `new` that `old` does not hold at the same place (keys included),
    each with what `old` held there; subtrees equal on both sides are not walked, so the
    work follows the size of the change, not of the definition."""
    yield from _changed(old, new, "", prose=False)


def _changed(old: Any, new: Any, pointer: str, *, prose: bool) -> Iterator[Text]:
    if type(old) is type(new) and old == new:
        return
    if isinstance(new, str):
        yield Text(pointer, new, prose, old if isinstance(old, str) else None)
    elif isinstance(new, dict):
        before = old if isinstance(old, dict) else {}
        for key, child in new.items():
            here = f"{pointer}/{escape(str(key))}"
            if key not in before:
                yield Text(here, str(key), False)
            flag = (key in _VALUE_KEYS and _sentences(child)) or key in _PROSE_KEYS
            if key in before:
                yield from _changed(before[key], child, here, prose=flag)
            else:
                yield from _walk(child, here, prose=flag)
    elif isinstance(new, list):
        before_list = old if isinstance(old, list) else []
        for index, child in enumerate(new):
            here = f"{pointer}/{index}"
            if index < len(before_list):
                yield from _changed(before_list[index], child, here, prose=prose)
            else:
                yield from _walk(child, here, prose=prose)


# keys whose string values read as prose when they hold a sentence (three words or more)
_VALUE_KEYS = frozenset({"default", "const", "enum"})


def _walk(value: Any, pointer: str, *, prose: bool) -> Iterator[Text]:
    if isinstance(value, str):
        yield Text(pointer, value, prose)
    elif isinstance(value, dict):
        for key, child in value.items():
            here = f"{pointer}/{escape(str(key))}"
            yield Text(here, str(key), False)  # a key: a property name, a field
            flag = (key in _VALUE_KEYS and _sentences(child)) or key in _PROSE_KEYS
            yield from _walk(child, here, prose=flag)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _walk(child, f"{pointer}/{index}", prose=prose)


_WORD = re.compile(r"\S+")


def _sentences(value: Any) -> bool:
    """A default, const or enum holding a sentence: its words reach the model as prose."""
    values = value if isinstance(value, list) else [value]
    return any(isinstance(item, str) and len(item.split()) >= 3 for item in values)


def added_words(old: str | None, new: str) -> list[str]:
    """The runs of words `new` holds that `old` does not (all of `new` when `old` is None),
    each run joined with single spaces: the evidence a reviewer reads."""
    new_words = _WORD.findall(new)
    if not old:
        return [" ".join(new_words)] if new_words else []
    old_words = _WORD.findall(old)
    runs: list[str] = []
    matcher = difflib.SequenceMatcher(a=old_words, b=new_words, autojunk=False)
    for tag, _, _, start, end in matcher.get_opcodes():
        if tag in ("insert", "replace") and end > start:
            runs.append(" ".join(new_words[start:end]))
    return runs
