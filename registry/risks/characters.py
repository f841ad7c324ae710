"""Characters a reader does not see, and words whose letters come from two scripts.

    hidden(text)        # [(offset, code point)] of invisible and control characters
    visible(text)       # the text with each of them written as <U+200B ZERO WIDTH SPACE>
    smuggled(text)      # what Unicode tag characters spell, in ASCII ("" when none)
    mixed_script(text)  # words mixing Latin with Cyrillic, Greek or Armenian letters

Hidden: format characters (Unicode category Cf: zero-width spaces and joiners,
bidirectional controls, the invisible operators, the byte order mark, tag
characters U+E0000-E007F), control characters other than tab and newline
(an ANSI escape hides text in a terminal), variation selectors, private-use
characters and the blank letters (U+115F, U+1160, U+3164, U+FFA0, U+2800).
Written with the standard library's unicodedata rather than a confusables
table: invisibility is a property of categories, and mixing scripts inside one
word is the check UTS #39 recommends before any table.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["hidden", "may_hide", "mixed_script", "name", "smuggled", "visible"]

_BLANK_LETTERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800})
_ALLOWED_CONTROLS = frozenset({"\t", "\n", "\r"})


def _is_hidden(char: str) -> bool:
    code = ord(char)
    category = unicodedata.category(char)
    if category == "Cc":
        return char not in _ALLOWED_CONTROLS
    return (
        category in ("Cf", "Co")
        or code in _BLANK_LETTERS
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
    )


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def may_hide(text: str) -> bool:
    """False for the common case, printable ASCII, decided without a loop in Python."""
    return not text.isascii() or bool(_ASCII_CONTROL.search(text))


def hidden(text: str) -> list[tuple[int, str]]:
    if not may_hide(text):
        return []
    return [(offset, char) for offset, char in enumerate(text) if _is_hidden(char)]


def name(char: str) -> str:
    code = f"U+{ord(char):04X}"
    return f"{code} {unicodedata.name(char, 'UNNAMED')}"


def visible(text: str) -> str:
    """The text with each hidden character written out, `<U+200B ZERO WIDTH SPACE>`."""
    return "".join(f"<{name(char)}>" if _is_hidden(char) else char for char in text)


def smuggled(text: str) -> str:
    """ASCII spelled by tag characters (U+E0020-U+E007E map to U+0020-U+007E)."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


_WORD = re.compile(r"\w+")
_LOOKALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN")


def _script(char: str) -> str | None:
    if not char.isalpha():
        return None
    first = unicodedata.name(char, "").split(" ", 1)[0]
    if first in ("LATIN", *_LOOKALIKE_SCRIPTS):
        return first
    if 0xFF21 <= ord(char) <= 0xFF5A:  # fullwidth Latin letters
        return "FULLWIDTH"
    return None


def mixed_script(text: str) -> list[str]:
    """Words whose letters come from Latin and a script with Latin lookalikes (`paypal`
    written with a Cyrillic a, U+0430), or that use fullwidth Latin letters."""
    if text.isascii():
        return []
    found = []
    for word in _WORD.findall(text):
        scripts = {script for char in word if (script := _script(char)) is not None}
        if "FULLWIDTH" in scripts or ("LATIN" in scripts and len(scripts) > 1):
            found.append(word)
    return found
