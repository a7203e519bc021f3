"""Cutting a piece of a pill's text for a search result: on word boundaries, with '…' wherever text was left out.

An agent reads a snippet as a quotation: ``settings.py`` must never show as ``…py``, and a leading backtick must
not vanish without a mark. Words here are runs of non-space characters (what a person calls a word in code and
prose), not the index's tokens, which split ``os.environ`` in two. Pure functions of their arguments.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
# How far a cut may move to reach a space; a longer run without spaces (a hash, a minified line) is cut
# inside it, and the '…' says so.
MAX_STRETCH = 40
LISTING_WIDTH = 200  # characters of a pill's beginning shown when a compound is listed without a query
_SPACE = re.compile(r"\s")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _back_to_space(text: str, at: int) -> int:
    """The start of the space-delimited word holding ``at`` (or ``at`` itself when that word is huge)."""
    floor = max(0, at - MAX_STRETCH)
    for position in range(at, floor - 1, -1):
        if position == 0 or _SPACE.match(text[position - 1]):
            return position
    return at


def _on_to_space(text: str, at: int) -> int:
    """The end of the space-delimited word ending at or after ``at`` (or ``at`` itself when that word is huge)."""
    ceiling = min(len(text), at + MAX_STRETCH)
    for position in range(at, ceiling + 1):
        if position == len(text) or _SPACE.match(text[position]):
            return position
    return at


def window(text: str, start: int, end: int) -> str:
    """``text[start:end]`` widened to whole words, on one line, with '…' on each side where text is left out."""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    begin, finish = _back_to_space(text, start), _on_to_space(text, end)
    before, piece, after = text[:begin], text[begin:finish], text[finish:]
    shown = _one_line(piece)
    if not shown:
        return ""
    return (ELLIPSIS if before.strip() else "") + shown + (ELLIPSIS if after.strip() else "")


def head(text: str, width: int) -> str:
    """The beginning of ``text`` on one line, at most about ``width`` characters, cut after a whole word."""
    flat = _one_line(text)
    if len(flat) <= width:
        return flat
    cut = flat.rfind(" ", 0, width + 1)
    # No space within MAX_STRETCH of the width, or none at all (-1, which the second test alone lets through
    # when the width is under MAX_STRETCH): cut inside the word, at the width.
    if cut < 0 or cut < width - MAX_STRETCH:
        cut = width
    return flat[:cut].rstrip() + ELLIPSIS
