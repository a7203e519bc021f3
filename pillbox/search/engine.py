"""The entry point: ``search`` runs the passes by words and by meaning over every target and weighs one against
the other (or lists a compound's rows when there is no query).

Typos: when the strict pass finds nothing (and the query has at least 5 characters), or at once with
``fuzzy``, each term of 4+ characters is expanded to indexed words within Jaro-Winkler 0.80 (length within
2) among the words a deletion neighbourhood of the vocabulary files beside it (``TypoIndex``: the
corrections worth offering, without scoring every indexed word). Beyond the seed, a term that no searched
database knows (the union of their vocabularies, so a word in one bottle is never a typo for another) is
expanded even when other terms matched, so one misspelled word is not silently dropped. Each term takes its
``MAX_EXPANSIONS`` most similar words, among those a person could have meant (``plausible``; ``widened``).
``used_fuzzy`` is set when a returned row contains an expansion word; each hit says how it matched the terms
(``MATCHES``) and which corrections it matched, and the answer shows the first's and all of them.

Meaning (``pillbox.embeddings``): the query's sentence embedding is compared with every reachable row's vector;
the words' candidates get their cosine, and rows close enough in meaning join them (``used_semantic`` when a
shown row was found by meaning alone). See ``scoring`` and ``search`` for how the two are weighed. Rows of the
bottle holding the caller's working directory get ``CURRENT_BOTTLE_BOOST``. With ``cut``, rows far below the
best are left out after the first ``CLIFF_HEAD`` (``cliff``) and counted.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Any

from django.db import connections

from pillbox.embeddings import loader
from pillbox.search import forms, snippets
from pillbox.search.budget import Budget
from pillbox.search.coverage import FUZZY_COVERAGE, Coverage
from pillbox.search.lexical import Candidate, any_match, lexical_pass
from pillbox.search.meaning import Spread, semantic_pass
from pillbox.search.results import ALL_WORDS, CORRECTED_WORDS, MEANING, Found, Hit, as_uuid
from pillbox.search.scoring import CLIFF_LOOKUP, CLIFF_OTHER, cliff, merge, rank
from pillbox.search.targets import Target
from pillbox.search.terms import extract_terms, meaningful
from pillbox.search.typos import worded
from pillbox.search.vocabulary import MIN_FUZZY_TERM, vocabulary, widened
from pillbox.search.when import Recall, Window, micros

MIN_FUZZY_QUERY = 5
# The most distinct meaningful terms a query is searched with; the rest are ignored and the answer says so. A
# search's cost grows with its terms (FTS5's OR, coverage, typo expansions): 32 is far beyond a person's query
# (the recall set's longest has 12) and bounds what a 1,000-character query of 200 words can cost.
MAX_TERMS = 32
# Measured on the recall set (kinds a-e, n, p; bench/pills_search.py): when every meaningful term is matched
# (typed or corrected) the query is a look-up and keeps the lexical order (rows found by meaning alone come
# after the words' rows); otherwise the words missed something and meaning weighs in fully. Any weight on
# look-ups cost them (kind a 1.000 -> 0.988 at 0.01, 0.983 at 0.05); one weight for every query lost 0.02-0.05
# MRR on look-ups for the same gain on n and p.
# Calibrated since on two kinds of memory (the public commit history and a conversational set, one pill per
# turn; bench/pills_search.py --conversations): the weight follows the share of the query's terms its best row
# matches. A look-up (all) keeps the word order; half or more: 3x; less than half (a paraphrase, a question in
# other words): the cosine decides (100x) and the words only break ties. One weight of 3 for every partial match
# left paraphrases below the model alone (conversations MRR@10 0.501 against 0.644; public p 0.157 / 0.166).
# Calibrated on every corpus together (bench/fusion_capture.py + fusion_eval.py: the public recall set, the team's
# conversational corpus, LoCoMo's five public conversations under two title forms, a young project of 12 pills),
# so that the words' order stands wherever the model has nothing better to say:
# - a look-up (every meaningful term matched) keeps the words' order; rows found by meaning alone come after;
# - half or more of the terms matched: the cosine only breaks near-ties (HALF_WEIGHT); more cost LoCoMo, whose
#   questions name their subject and whose turns share the subject's words (R@5 -0.02 at 3x, the old weight);
# - fewer: the model decides when it stands out (its best row further above the scope's mean than chance would
#   put the best of that many rows, less STRONG_MARGIN: Spread.stands_out; paraphrases of the team corpus), and
#   only breaks ties when it does not (LoCoMo with titles that repeat the turn: there the old 100x weight cost
#   R@5 -0.05 on temporal questions). A fixed z of 3.5 did as well on these sizes but means less in a scope of
#   12 rows (where no z can exceed 3.3) or of 200,000.
# Measured: no kind of any corpus below words only (R@5, MRR@10), LoCoMo R@5 +0.036 (see bench/README.md).
HALF_WEIGHT = 0.1
WEAK_WEIGHT = 0.5
STRONG_WEIGHT = 100.0
STRONG_MARGIN = -0.2
WEAK_SHARE = 0.5  # under this share of the terms matched by the best row, the query's words are weak
LOOKUP_SIMILARITY_WEIGHT = 0.0
# Beside the words' rows, rows found by meaning alone need the model's floor less this (conversational
# paraphrases: MRR@10 0.646 at 0.20, 0.560 at 0.30).
BESIDE_WORDS_MARGIN = 0.10
# When the words find nothing, rows close in meaning are shown (labelled 'confidence: low' unless the model is
# sure) down to the model's floor less this: a young project's questions in other words have their answer at a
# cosine of 0.17-0.50, no higher than unrelated questions; a false "No pills found." costs an agent more than a
# low-confidence row it can read and discard. Keyboard mash and words of no language still find nothing
# (``worded``).
ALONE_MARGIN = 0.15
# Confidence that the first row answers the query (see confidence()), measured on the recall sets.
HIGH_SIMILARITY = 0.5
HIGH, MEDIUM, LOW = "high", "medium", "low"
EVERY_WORD = (ALL_WORDS, CORRECTED_WORDS)


def _hit(row: tuple[Any, ...]) -> Hit:
    id_hex, seq, compound, title, snippet, bottle_hex = row
    return Hit(
        id=as_uuid(id_hex), seq=seq, compound=compound, title=title,
        snippet=snippets.head(snippet, snippets.LISTING_WIDTH),
        bottle_id=as_uuid(bottle_hex) if bottle_hex else None, score=1.0,
    )


def _listing(target: Target, compound: str | None, limit: int) -> tuple[list[Hit], int]:
    """A compound's rows (newest first), or a time window's (by creation time, which then is each hit's score,
    so that the databases' lists merge in that order)."""
    joins, where, params = target.shown_sql()
    if compound is not None:
        where, params = f"{where} AND m.compound = %s", [*params, compound]
    body = f"FROM {target.table} m {joins} WHERE {where}"
    order = "m.created_at DESC, m.seq DESC" if target.window else "m.seq DESC"
    with connections[target.alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.seq, m.compound, m.title, substr(m.content, 1, {snippets.LISTING_WIDTH + 40}), "
            f"{target.bottle_column}, m.created_at "
            f"{body} ORDER BY {order} LIMIT %s",
            [*params, limit],
        )
        rows = cursor.fetchall()
        cursor.execute(f"SELECT COUNT(*) {body}", params)
        total = cursor.fetchone()[0]
    hits = [_hit(row[:6]) for row in rows]
    if target.window:
        hits = [replace(hit, score=micros(row[6]) / 1e6) for hit, row in zip(hits, rows, strict=True)]
    return hits, total


def search(targets: list[Target], *, query: str | None, compound: str | None, limit: int, fuzzy: bool,
           current: frozenset[uuid.UUID] = frozenset(), cut: bool = False) -> Found:
    """Search every target; ``query`` or ``compound`` (or both) must be given, or a time window on the targets
    (``Target.window``: only the rows created in it are counted and ranked; without a query they are listed,
    newest first). Hits in the ``current`` bottles (where the caller's working directory is) rank ahead of others
    at comparable relevance. With ``cut``, rows far below the best are left out (``cliff``) and counted in
    ``Found.more``."""
    targets = [target for target in targets if target.kind == "capsule" or target.bottles]
    windowed = any(target.window for target in targets)
    if not query:
        assert compound is not None or windowed
        listed = [_listing(target, compound, limit) for target in targets]
        return Found(merge([hits for hits, _ in listed], limit, by_score=windowed),
                     sum(total for _, total in listed), used_fuzzy=False)
    terms = meaningful(extract_terms(query))
    ignored = max(0, len(terms) - MAX_TERMS)
    terms = terms[:MAX_TERMS]
    if not terms or not targets:
        return Found([], 0, used_fuzzy=False, ignored_terms=ignored)

    # First pass: the typed terms, widened at once for a term no searched database knows (a likely typo),
    # and for every term with ``fuzzy``. Without such a term this is the strict pass.
    vocabularies = [vocabulary(target) for target in targets]
    # Counted from here: reading a scope's vocabulary once (then cached) is not the query's cost.
    budget = Budget()

    def known(term: str) -> bool:
        return any(words.has_prefix(term) for words in vocabularies)

    def words_with_prefix(term: str) -> list[str] | None:
        listed: list[str] = []
        for words in vocabularies:
            found = words.with_prefix(term, forms.MANY)
            if found is None:
                return None
            listed += found
        return listed

    # A word the memory holds in another form (an inflection, a compound written apart) is searched in that form.
    terms = forms.known_forms(terms, known=known, words_with_prefix=words_with_prefix)[:MAX_TERMS]
    passes: list[tuple[dict[str, list[str]], list[Candidate], int, dict[int, tuple[Any, ...]]]] = []
    partly_widened = False
    for target, words in zip(targets, vocabularies, strict=True):
        if passes and budget.spent():  # the first database is always searched: an answer has something
            passes.append(({}, [], 0, {}))
            continue
        expansions = widened(budget, words, terms, fuzzy, known)
        partly_widened |= bool(expansions) and len(expansions) < sum(len(t) >= MIN_FUZZY_TERM for t in terms)
        passes.append((expansions, *lexical_pass(target, terms, expansions, compound, limit, words, budget)))

    def typed_anywhere() -> bool:
        # Anywhere in the scope: corrections are for words the memory lacks, not for a time window that lacks
        # them (the window's answer is then what it holds).
        return any(any_match(replace(target, window=None), terms, compound, words)
                   for target, words in zip(targets, vocabularies, strict=True))

    if not fuzzy and len(query) >= MIN_FUZZY_QUERY and not budget.spent() and (
        (not any(total for _, _, total, _ in passes) and not (windowed and typed_anywhere()))
        or (partly_widened and not typed_anywhere())
    ):
        # The strict pass finds nothing: the seed's fuzzy pass, every term of 4+ characters widened.
        passes = []
        for target, words in zip(targets, vocabularies, strict=True):
            expansions = widened(budget, words, terms, True, known)
            passes.append((expansions, *lexical_pass(target, terms, expansions, compound, limit, words, budget))
                          if expansions else ({}, [], 0, {}))

    covered = max((c.coverage for _, lexical, _, _ in passes for c in lexical), default=0.0)
    lookup = covered >= FUZZY_COVERAGE * len(terms)
    # A look-up (every term matched) keeps its words' order, and rows found by meaning alone come after its words'
    # rows; the model is still asked, for the answer's confidence (does it find the words' first row the closest?).
    # A model still loading is waited for briefly (a wait the time budget excuses, as a load once per process);
    # until it is ready, search is by words.
    loading = time.monotonic()
    model = None if budget.spent() else loader.embedder(wait=loader.SEARCH_WAIT)
    budget.excuse(loading)
    query_vector = loader.embed_query(model, query) if model is not None else None
    meaning, floor = None, 1.0
    words_found = any(lexical for _, lexical, _, _ in passes)
    if model is not None and query_vector is not None:
        # Beside the words' rows, rows close in meaning; with nothing found by words, the closest rows for a query
        # made of words (worded()), never for keyboard mash.
        floor = (model.floor - BESIDE_WORDS_MARGIN if words_found
                 else model.floor - ALONE_MARGIN if worded(terms) else 2.0)
        meaning = 0.0
    spread = Spread()
    for target, (_, lexical, _, _) in zip(targets, passes, strict=True):
        if meaning is not None:
            assert model is not None and query_vector is not None
            by_meaning, scope = semantic_pass(target, model, query_vector, compound, lexical, floor)
            lexical.extend(by_meaning)
            spread = max(spread, scope, key=lambda one: one.best)
    if meaning is not None:
        meaning = (LOOKUP_SIMILARITY_WEIGHT if lookup else HALF_WEIGHT if covered >= WEAK_SHARE * len(terms)
                   else STRONG_WEIGHT if spread.stands_out(STRONG_MARGIN) else WEAK_WEIGHT)
    results = []
    total = 0
    for target, (expansions, candidates, lexical_total, rows) in zip(targets, passes, strict=True):
        results.append(rank(target, candidates, rows, Coverage(terms, expansions), len(terms), limit,
                             meaning=meaning, boosted=current, budget=budget))
        total += lexical_total + sum(1 for c in candidates if not c.coverage)  # after rank: it reads their words
    hits = merge([r.hits for r in results], limit, by_score=True)
    shown = cliff(hits, CLIFF_LOOKUP if lookup else CLIFF_OTHER) if cut else len(hits)
    more, hits = len(hits) - shown, hits[:shown]
    expanded = set().union(*(r.expanded for r in results))
    by_meaning_ids = set().union(*(r.by_meaning for r in results))
    return Found(hits, total, used_fuzzy=any(hit.id in expanded for hit in hits),
                 used_semantic=any(hit.id in by_meaning_ids for hit in hits), ignored_terms=ignored,
                 partial=budget.cut, more=more,
                 confidence=confidence(hits[0], spread, meaning_on=meaning is not None,
                                       rivals=sum(1 for hit in hits[1:] if hit.match in EVERY_WORD))
                 if hits else "")


def timed_search(targets: list[Target], wanted: Recall, typed: str | None, *, compound: str | None,
                 **options: Any) -> tuple[Found, Window | None]:
    """``search`` in the window the query's time words or since/until name. When the window came from the query's
    words alone, finds nothing and holds no row the caller may see, those words speak of when something happened
    (a date inside the memory's text), not of when it was written: every time is searched with the query as typed,
    and the window answered says so. A window given by since/until, or one holding rows, is kept as asked."""
    found = search(targets, query=wanted.query, compound=compound, **options)
    window = wanted.window
    if found.hits or window is None or not window.from_query or not typed or any(map(_holds_rows, targets)):
        return found, window
    widened = [replace(target, window=None) for target in targets]
    return search(widened, query=typed, compound=compound, **options), replace(window, unused=True)


def _holds_rows(target: Target) -> bool:
    if target.kind == "pill" and not target.bottles:
        return False
    joins, where, params = target.shown_sql()
    with connections[target.alias].cursor() as cursor:
        cursor.execute(f"SELECT EXISTS(SELECT 1 FROM {target.table} m {joins} WHERE {where})", params)
        return bool(cursor.fetchone()[0])


def confidence(first: Hit, spread: Spread, *, meaning_on: bool, rivals: int = 0) -> str:
    """How sure the answer is that its first row answers the query (measured precision in bench/README.md):
    high when every word matched, no other row shown matched every word (``rivals``: with several, which one the
    question is about is a guess; on dialogue the turn beside the answer shares its words), and the model finds
    the first row the closest of the scope; medium when every word matched, or the model alone stands out; low
    otherwise (some words: a topic never stored shares some of its words with what was). By words alone, never
    high: a row can match every word and be about something else."""
    every = first.match in EVERY_WORD
    if not meaning_on:
        return MEDIUM if every else LOW
    closest = first.similarity >= spread.best - 1e-6
    if every and not rivals and closest and first.similarity >= HIGH_SIMILARITY:
        return HIGH
    if every or (first.match == MEANING and spread.stands_out(STRONG_MARGIN) and first.similarity >= HIGH_SIMILARITY):
        return MEDIUM
    return LOW
