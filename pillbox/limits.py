"""The longest texts a pill or capsule takes: the tools refuse longer input (their schemas' maxLength), and the
import of the original Pillbox's files cuts a longer text to them."""

from __future__ import annotations

CONTENT_LIMIT = 5000  # a pill's or capsule's content
NAME_LIMIT = 255  # a title, a name, an author
COMPOUND_LIMIT = 64
