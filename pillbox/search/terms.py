"""The query's terms: folded as the index folds its text, stop words left out, and written as FTS5's query.

The query is folded the way the FTS5 tokenizer folds text (lowercase, accents removed, split on anything
that is not a letter or digit) so that terms can be checked against the index's own vocabulary. Every
term becomes a quoted prefix term joined with OR, so nothing an agent types is ever FTS syntax.

Stop words (``STOP_WORDS``: English and Spanish function words, question words and the framing of a
question) are left out of the terms, unless the query has nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable

from pillbox.tokens import WORD, fold

# Words that carry no meaning for retrieval: English and Spanish function words, question words, and the
# framing of a question to a memory ("remind me how", "is there a note on", "what was decided about"). They
# never drive ranking, coverage or typo correction; a query made only of them is searched as typed.
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each either else ever
few for from further had hadn has hasn have haven having he her here hers herself him himself his how i if in
into is isn it its itself just let ll me might more most must mustn my myself no nor not now of off on once
only or other ought our ours ourselves out over own re s same shall shan she should shouldn so some such t than
that the their theirs them themselves then there these they this those through to too under until up us ve
very was wasn we were weren what whatever when whenever where wherever whether which while who whoever whom
whose why will with won would wouldn you your yours yourself yourselves
anything something thing things way ways please tell know remind remember recall happened decided done
work works handle handled note notes pill pills capsule capsules
el la los las lo un una unos unas y o u e ni que qué de del al a en con por para sin sobre entre hasta desde
como cómo cuando cuándo donde dónde quien quién quienes cual cuál cuales cuanto cuánto porque por qué es son
era fue ser estar está están estaba hay había se su sus mi mis tu tus nos nuestro nuestra le les me te ya
muy más mas pero si sí no este esta estos estas ese esa esos esas eso esto aquel algo alguna alguno hicimos
hacemos hace hacer cosa cosas nota notas
""".split())


FOLDED_STOP_WORDS = frozenset(fold(word) for word in STOP_WORDS)


def extract_terms(query: str) -> list[str]:
    """Lowercased, accent-free, deduplicated terms in the order typed."""
    seen: dict[str, None] = {}
    for term in WORD.findall(fold(query)):
        seen.setdefault(term, None)
    return list(seen)


def meaningful(terms: list[str]) -> list[str]:
    """The terms that drive ranking: all but stop words, or every term when the query is only stop words."""
    kept = [term for term in terms if term not in FOLDED_STOP_WORDS]
    return kept or terms


def match_expression(terms: Iterable[str], expansions: Iterable[str] = (), *,
                     every: dict[str, list[str]] | None = None, tags: Iterable[str] = ("",)) -> str:
    """FTS5's OR query; with ``every``, the query for rows matching every term (typed, or one of its
    expansions in ``every``). In the global database each word is asked under each of the caller's ``tags``
    (``pillbox.tokens``)."""
    tags = list(tags)
    if every is not None:
        return " AND ".join("(" + match_expression([term], every.get(term, ()), tags=tags) + ")" for term in terms)
    parts = [f'"{tag}{term}"*' for term in terms for tag in tags]
    parts += [f'"{tag}{word}"' for word in expansions for tag in tags]
    return " OR ".join(parts)
