"""The recall corpora and their absent-topic and nonsense queries, in one shape, with a scorer that knows evidence.

Two corpora of pills with questions whose right answers are known:

* ``recall``: the public commit-history set (``pills_recall_s1.json``, kept outside the repository; its path is
  given by the caller), kinds a-e look-ups, n questions, p paraphrases; one target per query.
* ``conversations``: ``bench/data/conversations_s1.json``, ten hand-written dialogues stored one pill per turn,
  with questions about what was said (kinds fact, temporal, multihop, paraphrase, lookup); each query lists its
  ``evidence`` pills (``target`` is the first, so the shared ``score.py`` reads the file as it reads the other).

``bench/data/absent_s1.json`` holds, for each corpus, queries about topics never stored (kind ``absent``: some of
their words occur, the topic does not; ``key`` names the terms that never occur together in one pill) and, for
both, nonsense (kind ``nonsense``: no word of it is stored, nor within a typo of a stored word).

    corpus = load(Path("bench/data/conversations_s1.json"))
    problems = check(corpus)                 # [] when every id, kind and absence holds
    table = score(corpus.queries, results)   # results: {query key: [ranked item ids]}
    rates = absent_rates(corpus.absent, answers)  # answers: {query key: the tool's text answer}
    print(markdown({"words": words, "meaning": meaning, "fused": fused}))  # each a score() table
    gaps = fusion_gaps(fused, {"words": words, "meaning": meaning})  # [] when fusion never costs

``python bench/corpora.py [CORPUS.json ...]`` checks the corpora (by default both) and prints their counts per kind.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONVERSATIONS = HERE / "data" / "conversations_s1.json"
ABSENT = HERE / "data" / "absent_s1.json"
# A corpus's name, by its file's name: the absent file labels its queries with these.
NAMES = {"conversations_s1.json": "conversations", "pills_recall_s1.json": "recall"}
BOTH = "both"
ABSENT_KINDS = ("absent", "nonsense")
# Kinds of the conversational corpus whose words are checked: a paraphrase shares none with its evidence, a
# look-up takes all of its own from there.
PARAPHRASE, LOOKUP = "paraphrase", "lookup"

# The header line a search answer may carry (``match: all words`` ...), and the answer to nothing found.
MATCH_LINE = re.compile(r"^match: (.+)$", re.MULTILINE)
NOTHING = "No pills found."
CONFIDENCE_LINE = re.compile(r"^confidence: (\w+)$", re.MULTILINE)

# Words that say how a question is asked, not what it is about: left out when checking that a paraphrase shares
# no word with its evidence, and that an absent topic has some word in the corpus.
FRAMING = frozenset("""
a about after again all also an and any are as at be been before being but by can could did do does done for
from had has have he her him his how i if in into is it its me my no not now of on once only or our out over
own said say she should so some such than that the their them then there these they this those to too under
up us was we were what when where which while who whom whose why will with would you your anyone someone
something tell told ask asked whether get got make made went going go just one two more each through
""".split())
WORD = re.compile(r"[^\W_]+")
STEM = 5  # two words share a stem when their first five letters agree (both at least that long)


@dataclass(frozen=True)
class Query:
    """One query: ``key`` is its key in a result file; ``evidence`` its right pills (none for absent topics)."""

    key: str
    q: str
    kind: str
    evidence: tuple[str, ...] = ()
    conversation: int | None = None
    terms: tuple[str, ...] = ()  # absent topics: the terms that never occur together in one pill


@dataclass
class Corpus:
    name: str
    path: Path
    meta: dict[str, Any]
    items: list[dict[str, Any]]
    queries: list[Query]
    absent: list[Query]

    @property
    def kinds(self) -> dict[str, str]:
        return dict(self.meta.get("query_kinds", {}))

    def dataset(self) -> dict[str, Any]:
        """The corpus as the shared ``score.py`` reads a dataset (one ``target`` per query)."""
        queries = [{"i": q.key, "q": q.q, "kind": q.kind, "target": q.evidence[0]} for q in self.queries]
        return {"meta": {**self.meta, "n_queries": len(queries)}, "items": self.items, "queries": queries}


def fold(text: str) -> str:
    """Lowercase without accents: the way the full-text index folds its words."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).lower()


def words(text: str) -> set[str]:
    return set(WORD.findall(fold(text)))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) - FRAMING if len(w) > 1}


def item_text(item: Mapping[str, Any]) -> str:
    return f"{item['title']}\n{item['content']}\n{item['compound']}"


def name_of(path: Path) -> str:
    try:
        return NAMES[path.name]
    except KeyError:
        raise SystemExit(f"{path.name}: not a known corpus ({', '.join(sorted(NAMES))})") from None


def load(path: Path, absent_path: Path = ABSENT) -> Corpus:
    """A corpus and the absent-topic and nonsense queries meant for it."""
    name = name_of(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    queries = [
        Query(key=str(q["i"]), q=q["q"], kind=q["kind"],
              evidence=tuple(q.get("evidence") or [q["target"]]), conversation=q.get("conversation"))
        for q in data["queries"]
    ]
    return Corpus(name=name, path=path, meta=data["meta"], items=data["items"], queries=queries,
                  absent=absent_queries(name, absent_path))


def absent_queries(name: str, path: Path = ABSENT) -> list[Query]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Query(key=f"x{q['i']}", q=q["q"], kind=q["kind"], terms=tuple(q.get("key", ())))
        for q in data["queries"] if q["corpus"] in (name, BOTH)
    ]


# ------------------------------------------------------------------ integrity


def has_term(text: str, term: str) -> bool:
    """``term`` (a word, a phrase or a word's beginning) starts at a word boundary of the folded ``text``."""
    return re.search(r"(?<![^\W_])" + re.escape(fold(term)), fold(text)) is not None


def shared_stems(query: str, text: str) -> set[str]:
    """The query's content words found in ``text``: the same word, a word it begins (the index matches prefixes),
    or the same first five letters."""
    theirs = words(text)
    stems = {w[:STEM] for w in theirs if len(w) >= STEM}
    return {w for w in content_words(query)
            if any(t.startswith(w) for t in theirs) or (len(w) >= STEM and w[:STEM] in stems)}


def typo_distance(word: str) -> int:
    """The fewest edits that would make a stored word a plausible typo's source for ``word``."""
    return 2 if len(word) < 8 else 3


def check(corpus: Corpus) -> list[str]:
    """Each way the corpus's data is wrong, as one line: ids, kinds, evidence, paraphrases and absences."""
    problems: list[str] = []
    ids = [item["id"] for item in corpus.items]
    known = set(ids)
    problems += [f"item id {i!r} is used {n} times" for i, n in Counter(ids).items() if n > 1]
    problems += [f"query key {k!r} is used {n} times"
                 for k, n in Counter(q.key for q in corpus.queries + corpus.absent).items() if n > 1]
    texts = {item["id"]: item_text(item) for item in corpus.items}
    for q in corpus.queries:
        if q.kind not in corpus.kinds:
            problems.append(f"query {q.key}: kind {q.kind!r} is not described in meta.query_kinds")
        if not q.evidence:
            problems.append(f"query {q.key}: no target")
        problems += [f"query {q.key}: evidence {e!r} is no item" for e in q.evidence if e not in known]
        shared = set().union(*(shared_stems(q.q, texts[e]) for e in q.evidence if e in known))
        if q.kind == PARAPHRASE and shared:
            problems.append(f"query {q.key}: the paraphrase shares {sorted(shared)} with its evidence")
        if q.kind == LOOKUP and content_words(q.q) - shared:
            problems.append(f"query {q.key}: the look-up's {sorted(content_words(q.q) - shared)} are not in its "
                            "evidence")
    vocabulary = set().union(*(words(text) for text in texts.values()))
    for q in corpus.absent:
        if q.kind not in ABSENT_KINDS:
            problems.append(f"absent query {q.key}: kind {q.kind!r} is none of {ABSENT_KINDS}")
        elif q.kind == "absent":
            problems += check_absent(q, texts, vocabulary)
        else:
            problems += check_nonsense(q, vocabulary)
    return problems


def check_absent(q: Query, texts: Mapping[str, str], vocabulary: set[str]) -> list[str]:
    if not q.terms:
        return [f"absent query {q.key}: no key terms"]
    found = [i for i, text in texts.items() if all(has_term(text, term) for term in q.terms)]
    problems = [f"absent query {q.key} ({q.q!r}): {' + '.join(q.terms)} is stored, in {found[:3]}"] if found else []
    own = content_words(q.q)
    if not own & vocabulary:
        problems.append(f"absent query {q.key} ({q.q!r}): none of its words occurs in the corpus")
    # No pill may hold every word (a match on all of them would then be a true one).
    whole = [i for i, text in texts.items() if all(any(w.startswith(o) for w in words(text)) for o in own)]
    if whole:
        problems.append(f"absent query {q.key} ({q.q!r}): every word of it is in one pill, {whole[0]}")
    return problems


def check_nonsense(q: Query, vocabulary: set[str]) -> list[str]:
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    problems = []
    for word in words(q.q):
        limit = typo_distance(word)
        near = process.extractOne(word, vocabulary, scorer=Levenshtein.distance, score_cutoff=limit - 1)
        if near is not None:
            problems.append(f"nonsense query {q.key}: {word!r} is within {near[1]} edits of the stored {near[0]!r}")
    return problems


# ------------------------------------------------------------------ scoring


def rank(q: Query, ranked: Sequence[str]) -> int | None:
    """The 1-based rank of the first evidence pill in ``ranked`` (any of them answers: a multi-hop question
    is found when one of its turns is), or None."""
    ranks = [ranked.index(e) + 1 for e in q.evidence if e in ranked]
    return min(ranks) if ranks else None


def complete(q: Query, ranked: Sequence[str], depth: int = 20) -> bool:
    """Every evidence pill is in the first ``depth``: what a multi-hop answer needs."""
    return all(e in ranked[:depth] for e in q.evidence)


def metrics(ranks: Sequence[int | None], completes: Sequence[bool]) -> dict[str, float]:
    n = len(ranks)
    if not n:
        return {"n": 0}
    return {
        "n": n,
        "hit@1": sum(r == 1 for r in ranks) / n,
        "r@5": sum(r is not None and r <= 5 for r in ranks) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None and r <= 10) / n,
        "found@20": sum(r is not None and r <= 20 for r in ranks) / n,
        "all@20": sum(completes) / n,
    }


def score(queries: Iterable[Query], results: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """hit@1, R@5, MRR@10, found@20 (of any evidence pill) and all@20 (every one) over all queries and per
    kind; a query missing from ``results`` found nothing."""
    by_kind: dict[str, list[Query]] = {"all": []}
    for q in queries:
        by_kind["all"].append(q)
        by_kind.setdefault(q.kind, []).append(q)
    out = {}
    for kind in ["all", *sorted(set(by_kind) - {"all"})]:
        ranked = [results.get(q.key, ()) for q in by_kind[kind]]
        out[kind] = metrics([rank(q, r) for q, r in zip(by_kind[kind], ranked, strict=True)],
                            [complete(q, r) for q, r in zip(by_kind[kind], ranked, strict=True)])
    return out


Table = Mapping[str, Mapping[str, float]]  # kind -> metric -> value, as ``score`` returns it
GOAL_METRICS = ("mrr@10", "r@5")


def fusion_gaps(fused: Table, singles: Mapping[str, Table],
                metrics: Sequence[str] = GOAL_METRICS) -> list[tuple[str, str, float, str, float]]:
    """Where the fused ranking scores below the better single signal: (kind, metric, fused, best signal, its
    value) for every kind and metric, worst shortfall first. Empty when fusion never costs."""
    gaps = []
    for kind, row in fused.items():
        for metric in metrics:
            best, value = max(((name, table[kind][metric]) for name, table in singles.items() if kind in table),
                              key=lambda pair: pair[1])
            if row[metric] < value - 1e-9:
                gaps.append((kind, metric, row[metric], best, value))
    return sorted(gaps, key=lambda gap: gap[2] - gap[4])


def markdown(tables: Mapping[str, Table], metrics: Sequence[str] = ("mrr@10", "r@5", "found@20", "all@20")) -> str:
    """The systems side by side, one row per kind, one column per metric and system."""
    names = list(tables)
    first = tables[names[0]]
    lines = ["| kind | n | " + " | ".join(f"{m} {name}" for m in metrics for name in names) + " |",
             "|" + "---|" * (2 + len(metrics) * len(names))]
    for kind in first:
        cells = [f"{tables[name][kind][m]:.3f}" for m in metrics for name in names]
        lines.append(f"| {kind} | {first[kind]['n']:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def match_of(answer: str) -> str:
    """How an answer says its first row matched: ``none`` for nothing found, the ``match:`` line's value, or
    ``unlabelled`` for an answer with rows and no such line."""
    if answer.strip() == NOTHING:
        return "none"
    found = MATCH_LINE.search(answer)
    return found.group(1).strip() if found else "unlabelled"


def absent_rates(queries: Iterable[Query], answers: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """Per kind (absent, nonsense): how many queries, the share answered ``No pills found.``, the share claiming
    ``match: all words``, and the share of each match value. Every query must have its answer."""
    by_kind: dict[str, list[str]] = {}
    for q in queries:
        by_kind.setdefault(q.kind, []).append(match_of(answers[q.key]))
    out: dict[str, dict[str, float]] = {}
    for kind, matches in sorted(by_kind.items()):
        n = len(matches)
        counts = Counter(matches)
        out[kind] = {"n": n, "empty": counts["none"] / n, "all words": counts["all words"] / n,
                     **{f"match {m}": c / n for m, c in sorted(counts.items())}}
    return out


def describe(corpus: Corpus) -> str:
    kinds = Counter(q.kind for q in corpus.queries)
    absent = Counter(q.kind for q in corpus.absent)
    evidence = [len(q.evidence) for q in corpus.queries]
    return (f"{corpus.name}: {len(corpus.items)} pills, {len(corpus.queries)} queries ("
            + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            + f"; {statistics.mean(evidence):.2f} evidence pills each), "
            + ", ".join(f"{n} {k}" for k, n in sorted(absent.items())))


def main(argv: list[str]) -> int:
    if argv:
        paths = [Path(arg) for arg in argv]
    else:
        from common import DATA  # the public set's place; imported here so that a test can load this file alone

        paths = [CONVERSATIONS, DATA / "pills_recall_s1.json"]
    failed = False
    for path in paths:
        corpus = load(path)
        print(describe(corpus))
        for problem in check(corpus):
            failed = True
            print(f"  {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
