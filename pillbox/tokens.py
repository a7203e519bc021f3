"""How text becomes the words of the full-text index, and whose words they are in a database shared by many.

``fold`` and ``WORD`` split text the way the SQLite FTS5 tokenizer does (lowercase, accents removed, split on
anything that is not a letter or digit); search uses them on queries, so a query's terms are the index's words.

In the global SQLite database every indexed word carries its scope: a pill's bottle, a capsule's owner.
``scoped`` writes a text as ``<tag><word>`` tokens, the tag being ``TAG_LENGTH`` hex digits of a hash of the
scope, so one user's words are their own terms in FTS5: a search for the caller's tagged words reads only the
caller's lists, counts a word's rarity (bm25) among the caller's rows, and a prefix term merges only the
caller's words. A tag's hash may in principle collide with another scope's; that only adds rows to rank, which
the search's own owner check then drops. The triggers of migration 0008 call ``pillbox_scoped(scope, text)``,
registered here on every SQLite connection Django opens.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

WORD = re.compile(r"[^\W_]+")
TAG_LENGTH = 10


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).lower()


def tag_of(scope: object) -> str:
    """The tag of a scope: a bottle's id as 32 hex digits, or an owner's id."""
    return hashlib.blake2b(str(scope).encode(), digest_size=TAG_LENGTH // 2).hexdigest()


def scoped(scope: object, text: str | None) -> str | None:
    """``text`` as the words the global index holds for ``scope``: each folded word after the scope's tag."""
    if text is None:
        return None
    tag = tag_of(scope)
    return " ".join(tag + word for word in WORD.findall(fold(text)))


def register(sender: Any, connection: Any, **kwargs: Any) -> None:
    """``connection_created`` receiver: SQLite connections get ``pillbox_scoped``."""
    if connection.vendor == "sqlite":
        connection.connection.create_function("pillbox_scoped", 2, scoped, deterministic=True)
