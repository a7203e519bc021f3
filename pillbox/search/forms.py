"""Other forms of a query's word that the memory holds: an inflection (``shipping`` for a memory that says
``ship``, ``deployment`` for ``deploys``) and a compound written apart (``rollback`` for ``rolling back``).

A term that no searched vocabulary knows as typed is replaced, before any pass, by the form the memory does know:
its stem (English endings taken off: ``-ing``, ``-ed``, ``-es``, ``-s``, ``-ment``, ``-ments``, with a doubled
consonant or a dropped ``e`` put right), searched as a prefix like any term; or, for a verb and particle written
as one word (``rollback``, ``setup``, ``signup``, ``login``, ``rollbak``), the two words. So a word of the language
matches its own forms as written instead of being "corrected" into another word (``fired`` stays ``fire…``, never
``fixed``), and the answer says ``all words`` when it does. Prefixes already cover the other direction (``ship``
finds ``shipping``).
"""

from __future__ import annotations

from collections.abc import Callable

from rapidfuzz.distance import OSA

# Endings taken off to find a stem, longest first.
ENDINGS = ("ments", "ment", "ings", "ing", "ied", "ies", "ed", "es", "s")
MIN_STEM = 3
# The particles of English phrasal compounds (roll back, set up, log in, shut down, hand off, take over...).
PARTICLES = ("back", "up", "in", "out", "down", "off", "over", "on")
MIN_VERB = 3
# With this many indexed words beginning with a stem, it is a word of the memory (too many to list).
MANY = 64


def stems(term: str) -> list[str]:
    """Candidate stems of ``term``, most likely first (none for a term with no ending)."""
    out: list[str] = []
    for ending in ENDINGS:
        if term.endswith(ending) and len(term) - len(ending) >= MIN_STEM:
            stem = term[: -len(ending)]
            if ending in ("ied", "ies"):
                stem += "y"
            candidates = [stem]
            if len(stem) > MIN_STEM and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                candidates.insert(0, stem[:-1])  # shipping -> ship, not shipp
            if ending in ("ing", "ed", "es"):
                candidates.append(stem + "e")  # firing -> fire, released -> release
            out += [candidate for candidate in candidates if candidate not in out]
    return out


def _forms(stem: str) -> set[str]:
    base = stem[:-1] if stem.endswith("e") else stem
    return {stem, stem + "s", stem + "es", stem + "ed", stem + "d", base + "ing", base + "ed", stem + "ment",
            stem + "ments", stem + stem[-1] + "ing", stem + stem[-1] + "ed", stem + "er", stem + "ers"}


def known_forms(terms: list[str], *, known: Callable[[str], bool],
                words_with_prefix: Callable[[str], list[str] | None]) -> list[str]:
    """``terms`` with each one that the memory does not know as typed (``known``: some indexed word begins with
    it) replaced by a form it knows (a stem whose forms are indexed words, or a compound's two words); unknown
    terms with no such form are kept for the typo pass."""
    out: list[str] = []
    for term in terms:
        if known(term) or not term.isalpha():
            out.append(term)
            continue
        replaced = _stem_known(term, known, words_with_prefix) or _split_known(term, known)
        for part in replaced or [term]:
            if part not in out:
                out.append(part)
    return out


def _stem_known(term: str, known: Callable[[str], bool],
                words_with_prefix: Callable[[str], list[str] | None]) -> list[str] | None:
    for stem in stems(term):
        if not known(stem):
            continue
        listed = words_with_prefix(stem)
        if listed is None or not _forms(stem).isdisjoint(listed):
            return [stem]
    return None


def _split_known(term: str, known: Callable[[str], bool]) -> list[str] | None:
    """A verb and a particle written as one word, the particle possibly misspelt by one letter (``rollbak``),
    when the verb is a word of the language and the memory knows it (as a prefix) and the particle: never a split
    of a longer word (``invalidaton`` is no ``invalidat on``)."""
    from pillbox.search.typos import language_words

    language = language_words()
    for at in range(len(term) - 2, MIN_VERB - 1, -1):
        verb, rest = term[:at], term[at:]
        if verb not in language:
            continue
        particle = next((p for p in PARTICLES if rest == p or (len(p) >= 4 and OSA.distance(rest, p) <= 1)), None)
        if particle is not None and known(verb) and known(particle):
            return [verb, particle]
    return None
