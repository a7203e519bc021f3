"""Shaping a file's text for printing: the quick path for ASCII text keeps exactly the rules of the general one."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from pillbox.shaping import lines_kept, one_line


def _slow_one_line(text: str, limit: int) -> str:
    visible = " ".join("".join(c for c in text if c.isspace() or unicodedata.category(c) not in ("Cc", "Cf")).split())
    return visible if len(visible) <= limit else visible[:limit - 1].rstrip() + "…"


def _slow_lines_kept(text: str) -> str:
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf"))


@given(st.text(alphabet=st.characters(max_codepoint=127)), st.integers(min_value=2, max_value=40))
def test_ascii_text_is_shaped_as_any_text_is(text, limit):
    assert one_line(text, limit) == _slow_one_line(text, limit)
    assert lines_kept(text) == _slow_lines_kept(text)


@given(st.text(), st.integers(min_value=2, max_value=40))
def test_any_text_loses_its_control_and_format_characters(text, limit):
    assert one_line(text, limit) == _slow_one_line(text, limit)
    assert lines_kept(text) == _slow_lines_kept(text)


def test_a_line_keeps_its_words_and_loses_what_hides_them():
    assert one_line("Deploy\x1b[2J\tnotes\n\x00today") == "Deploy[2J notes today"
    assert one_line("Right\u202eto left\u200b") == "Rightto left"
    assert lines_kept("line one\r\n\tline\x07 two\u2066") == "line one\n\tline two"
