"""Snippets (pillbox/search/snippets.py): a piece of a pill's text quoted in a search result. It is cut on word
boundaries (runs of non-space characters), says with '…' on which side text was left out, and shows what it
shows exactly: no character of a word it quotes is lost, whatever the word is made of.

``window`` is checked directly and through the search engine's choice of window (``Coverage.snippet``: the
``SNIPPET_TOKENS`` index words around the most query terms); ``head`` is the beginning of a pill shown when a
compound is listed.
"""

from __future__ import annotations

import hashlib

import pytest

from pillbox.search.coverage import SNIPPET_TOKENS, Coverage
from pillbox.search.snippets import ELLIPSIS, LISTING_WIDTH, MAX_STRETCH, head, window
from pillbox.search.terms import extract_terms, meaningful

# Distinct filler words, so that a quoted piece is found at one place only in the text it came from.
FILLER = " ".join(f"filler{chr(ord('a') + i // 26)}{chr(ord('a') + i % 26)}" for i in range(60))


def flat(text: str) -> str:
    return " ".join(text.split())


def quoted(text: str, snippet: str, *, whole_words: bool = True) -> str:
    """Check that ``snippet`` quotes ``text`` faithfully and return the quoted piece (without its marks).

    The piece is one unbroken stretch of the text on one line; '…' opens it exactly when text before it was
    left out and closes it exactly when text after it was; with ``whole_words`` both its ends are word ends.
    """
    line = flat(text)
    piece = snippet.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)
    assert piece and "\n" not in piece, snippet
    at = line.find(piece)
    assert at >= 0, f"{snippet!r} is not a piece of {line!r}"
    assert line.find(piece, at + 1) < 0, "the test's text repeats the piece: make it unique"
    end = at + len(piece)
    assert snippet.startswith(ELLIPSIS) == (at > 0), snippet
    assert snippet.endswith(ELLIPSIS) == (end < len(line)), snippet
    if whole_words:
        assert at == 0 or line[at - 1] == " ", f"{snippet!r} starts inside a word"
        assert end == len(line) or line[end] == " ", f"{snippet!r} ends inside a word"
    return piece


def span(text: str, word: str) -> tuple[int, int]:
    start = text.index(word)
    return start, start + len(word)


# ---------------------------------------------------------------- window


@pytest.mark.parametrize(("word", "shown"), [
    ("settings", "`settings.py`"),  # a leading backtick is a character of the word
    ("environ", "os.environ['PILLBOX_HOME']"),  # the index's tokens split it; the snippet never does
    ("PILLBOX_HOME", "os.environ['PILLBOX_HOME']"),
    ("caf", "café"),
    ("ï", "naïve"),
    ("ривет", "Привет"),
    ("京", "東京"),
    ("ß", "Straße,"),
])
def test_snippet_window_widens_a_cut_to_the_whole_word_whatever_it_is_made_of(word, shown):
    text = (f"{FILLER} Read `settings.py` then os.environ['PILLBOX_HOME'] before café naïve Привет 東京 "
            f"Straße, {FILLER.upper()}")
    snippet = window(text, *span(text, word))
    assert quoted(text, snippet) == shown
    assert snippet == f"{ELLIPSIS}{shown}{ELLIPSIS}"


def test_snippet_window_marks_only_the_sides_where_text_was_left_out():
    text = "alpha beta gamma delta epsilon"
    assert window(text, *span(text, "alpha")) == "alpha…"
    assert window(text, *span(text, "epsilon")) == "…epsilon"
    assert window(text, *span(text, "gamma")) == "…gamma…"
    assert window(text, 0, len(text)) == text
    assert window(text, text.index("lpha"), text.index("psilon")) == text  # both ends widened to the edges


def test_snippet_window_shows_a_short_text_whole_on_one_line_without_marks():
    text = "  Use pytest -x\n\nfrom the\trepository root.  \n"
    assert window(text, 0, len(text)) == "Use pytest -x from the repository root."
    assert window(text, *span(text, "pytest")) == "…pytest…"
    # Only spaces are left out around the piece: nothing was dropped, so nothing is marked.
    assert window("\n  lone  \n", 3, 7) == "lone"


def test_snippet_window_keeps_decomposed_accents_with_their_letters():
    """A combining accent is no letter for the index's tokens (``[^\\W_]+``), but it belongs to the word."""
    text = f"{FILLER} Cafe\u0301 noir {FILLER.upper()}"
    start = text.index("Cafe")
    snippet = window(text, start, start + len("Cafe"))  # the token ends before the accent
    assert quoted(text, snippet) == "Cafe\u0301"


def test_snippet_window_cuts_inside_a_word_too_long_to_reach_and_says_so():
    digest = hashlib.sha512(b"pillbox").hexdigest()  # 128 characters without a space: more than MAX_STRETCH
    assert len(digest) > 2 * MAX_STRETCH
    text = f"before {digest} after"
    start = text.index(digest) + 60
    snippet = window(text, start, start + 10)
    piece = quoted(text, snippet, whole_words=False)
    assert snippet.startswith(ELLIPSIS) and snippet.endswith(ELLIPSIS)
    assert piece in digest and piece.startswith(text[start:start + 10])
    # Within reach of a space, the cut still moves to it.
    near = window(text, text.index(digest) + MAX_STRETCH // 2, text.index(digest) + MAX_STRETCH)
    assert near.removeprefix(ELLIPSIS).startswith(digest[:16])


def test_snippet_window_chosen_by_the_search_quotes_whole_words_at_the_start_the_end_and_between():
    cases = [
        ("alpha", f"alpha {FILLER}", "alpha"),  # the very first word
        ("omega", f"{FILLER} omega.", "omega."),  # the very last word, with its full stop
        ("settings", f"{FILLER} `settings.py` {FILLER.upper()}", "`settings.py`"),
        ("environ", f"{FILLER} os.environ['HOME'] {FILLER.upper()}", "os.environ['HOME']"),
        ("creme", f"{FILLER} crème brûlée {FILLER.upper()}", "crème brûlée"),
        ("мир", f"{FILLER} Привет мир {FILLER.upper()}", "Привет мир"),
        ("東京", f"{FILLER} 東京 {FILLER.upper()}", "東京"),
    ]
    for query, text, shown in cases:
        snippet = Coverage(meaningful(extract_terms(query)), {}).snippet(text)
        piece = quoted(text, snippet)
        assert f" {shown} " in f" {piece} ", (query, snippet)
        assert len(piece.split()) <= SNIPPET_TOKENS, snippet
    start = Coverage(["alpha"], {}).snippet(f"alpha {FILLER}")
    assert start.startswith("alpha ") and start.endswith(ELLIPSIS)
    end = Coverage(["omega"], {}).snippet(f"{FILLER} omega.")
    assert end.startswith(ELLIPSIS) and end.endswith(" omega.")


def test_snippet_of_a_text_shorter_than_the_window_is_the_whole_text():
    text = "Backups run nightly:\n`pg_dump` at 2am."
    assert Coverage(["backups"], {}).snippet(text) == "Backups run nightly: `pg_dump` at 2am."


# ---------------------------------------------------------------- head


def test_snippet_head_of_a_text_within_the_width_is_the_text_on_one_line():
    assert head("Use SQLite\nwith WAL", LISTING_WIDTH) == "Use SQLite with WAL"
    exact = "x" * 10
    assert head(exact, 10) == exact


def test_snippet_head_is_cut_after_a_whole_word_and_marked():
    text = "`settings.py` reads os.environ['PILLBOX_HOME'] before anything else happens"
    for width in range(14, len(text)):
        snippet = head(text, width)
        piece = quoted(text, snippet)
        assert len(piece) <= width, (width, snippet)
        assert snippet.endswith(ELLIPSIS) and not snippet.startswith(ELLIPSIS)
    assert head(text, 20) == "`settings.py` reads…"


def test_snippet_head_cuts_a_word_too_long_to_reach_at_the_width():
    text = "a" + "b" * (LISTING_WIDTH + 50)
    assert head(text, LISTING_WIDTH) == text[:LISTING_WIDTH] + ELLIPSIS
    text = "intro " + "c" * (LISTING_WIDTH + 50)  # the only space is further back than MAX_STRETCH
    assert head(text, LISTING_WIDTH) == text[:LISTING_WIDTH] + ELLIPSIS


@pytest.mark.parametrize("width", [1, 5, 9, 12, MAX_STRETCH - 1])
def test_snippet_head_narrower_than_the_stretch_never_runs_past_its_width(width):
    """A first word longer than the width, with no space in reach: the cut is at the width. (The missing space,
    rfind's -1, was once taken as the cut when the width was under MAX_STRETCH: the whole text but its last
    character was shown.)"""
    text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ the rest of the pill"
    snippet = head(text, width)
    assert snippet == text[:width] + ELLIPSIS
