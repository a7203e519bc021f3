"""Unicode format characters (category Cf: bidi overrides such as U+202E, zero-width spaces and joiners, the byte
order mark): invisible themselves, they reorder or hide what is shown around them, so that an id, a tag or a name
reads as something it is not. Those fields refuse them."""

from __future__ import annotations

import unicodedata
from functools import cache


def format_character(text: str) -> str | None:
    """The first format character in ``text`` and where it is, for an error message ("an invisible formatting
    character (U+202E) at position 4", positions counted from 1), or None."""
    for position, char in enumerate(text, start=1):
        if unicodedata.category(char) == "Cf":
            return f"an invisible formatting character (U+{ord(char):04X}) at position {position}"
    return None


@cache
def format_class() -> str:
    """Every format character as the inside of a regular expression's character class (literal characters and
    ranges), for schemas that document what the checks above refuse. They all lie in planes 0, 1 and 14."""
    ranges: list[list[int]] = []
    for code in (*range(0x20000), *range(0xE0000, 0xE1000)):
        if unicodedata.category(chr(code)) == "Cf":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "".join(chr(low) if low == high else f"{chr(low)}-{chr(high)}" for low, high in ranges)
