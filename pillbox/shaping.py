"""Text a database file holds, shaped before it is printed to an agent or a person: a file is anyone's to write, so
its names, titles and paths keep the rules tool input keeps (one line, no control or format character, a length
limit) wherever they are shown, and a file's longer texts lose the characters that could rewrite what is around
them."""

from __future__ import annotations

import re
import unicodedata

from pillbox.limits import NAME_LIMIT

ELLIPSIS = "…"


def _hidden(char: str) -> bool:
    """Control characters (escape sequences, clipboard writes) and format characters (category Cf: bidi overrides
    such as U+202E, zero-width spaces) that reorder or hide what is printed around them."""
    return unicodedata.category(char) in ("Cc", "Cf")


# The same rules for ASCII text (most of it), by one regular expression instead of a look at each character: ASCII
# has no format character, and its control characters are 0-31 and 127, of which 9-13 and 28-31 are white space.
_ASCII_HIDDEN_NOT_SPACE = re.compile("[\x00-\x08\x0e-\x1b\x7f]")
_ASCII_HIDDEN_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def one_line(text: str, limit: int = NAME_LIMIT) -> str:
    """``text`` as one line: every run of white space (newlines, U+2028 included) one space, no control or format
    character, at most ``limit`` characters (cut with an ellipsis)."""
    kept = _ASCII_HIDDEN_NOT_SPACE.sub("", text) if text.isascii() else \
        "".join(char for char in text if char.isspace() or not _hidden(char))
    visible = " ".join(kept.split())
    return visible if len(visible) <= limit else visible[:limit - 1].rstrip() + ELLIPSIS


def lines_kept(text: str) -> str:
    """A longer text (a pill's content) keeps its lines and tabs, loses every other control or format character."""
    if text.isascii():
        return _ASCII_HIDDEN_BUT_LINES.sub("", text)
    return "".join(char for char in text if char in "\n\t" or not _hidden(char))
