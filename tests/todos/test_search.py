"""Behaviour of the todo search engine (todos.search); pure Python, no database."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from todos.search import Doc, TodoIndex, _fields_tokens, tokenize

DOCS = [
    Doc("t1", "Renew passport", "Book an appointment at the town hall before the summer."),
    Doc("t2", "Buy groceries", "Milk, eggs, bread and **coffee** beans from the market."),
    Doc("t3", "Fix authentication bug", "Login fails when the token has expired; see `OAuth2Validator`."),
    Doc("t4", "Write quarterly report", "Summarise revenue and churn for the board meeting."),
    Doc("t5", "Call the plumber", "Kitchen sink is leaking again, ask about the warranty."),
    Doc("t6", "Plan birthday party", "Invite friends, order a cake, reserve the café on Saturday."),
    Doc("t7", "Update dependencies", "Bump django and rapidfuzz, then run the full test suite."),
    Doc("t8", "Café opening hours", "Check whether it opens early on Sundays."),
    Doc("t9", "Market research", "Compare three competitors and their pricing."),
]


@pytest.fixture(scope="module")
def index() -> TodoIndex:
    return TodoIndex.build(DOCS)


def test_exact_words_find_the_todo(index: TodoIndex) -> None:
    assert index.search("quarterly report")[0] == "t4"


def test_typo_is_tolerated(index: TodoIndex) -> None:
    assert index.search("pasport")[0] == "t1"  # deletion
    assert index.search("plumbre")[0] == "t5"  # transposition
    assert index.search("authentification")[0] == "t3"  # two edits in a long word


def test_prefix_of_a_word_matches(index: TodoIndex) -> None:
    assert index.search("groc")[0] == "t2"
    assert index.search("depend upd")[0] == "t7"


def test_word_order_does_not_matter(index: TodoIndex) -> None:
    assert index.search("bug authentication fix")[0] == "t3"
    assert index.search("party birthday")[0] == "t6"


def test_word_only_in_description_is_found(index: TodoIndex) -> None:
    assert index.search("warranty")[0] == "t5"
    assert index.search("churn revenue")[0] == "t4"


def test_camel_case_parts_are_words(index: TodoIndex) -> None:
    assert index.search("validator")[0] == "t3"


def test_name_is_weighted_above_description(index: TodoIndex) -> None:
    # "market" is in t9's name and in t2's description.
    assert index.search("market")[:2] == ["t9", "t2"]


def test_accents_and_case_are_folded(index: TodoIndex) -> None:
    assert index.search("CAFE")[0] == "t8"
    assert index.search("cafe") == index.search("Café") == index.search("CAFÉ")
    assert set(index.search("cafe")[:2]) == {"t6", "t8"}
    assert index.search("renew PASSPÖRT")[0] == "t1"


def test_markdown_syntax_does_not_become_words() -> None:
    words = tokenize("**bold** _em_ [link](https://x.org/a_b) `code` # Heading\n- item > quote")
    assert all(w.isalnum() for w in words)
    assert "bold" in words and "heading" in words and "item" in words
    one = TodoIndex.build([Doc("m", "Notes", "# Title\n\n- **one** `two`\n> three")])
    assert one.search("**") == []
    assert one.search("one two three") == ["m"]


def test_results_are_deterministic() -> None:
    # Identical todos tie on every score; the tie is broken by key, whatever the order.
    twins = [Doc(k, "Water the plants", "") for k in ("b", "c", "a")]
    first = TodoIndex.build(twins).search("water plants")
    again = TodoIndex.build(list(reversed(twins))).search("water plants")
    assert first == again == ["a", "b", "c"]
    index = TodoIndex.build(DOCS)
    assert all(index.search("the") == index.search("the") for _ in range(3))


def test_unrelated_query_returns_nothing(index: TodoIndex) -> None:
    assert index.search("zqxjv wqpfz") == []
    assert index.search("xylophone") == []


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "!!! ... ---", "*_`#>[]()"])
def test_empty_or_punctuation_query_returns_nothing(index: TodoIndex, query: str) -> None:
    assert index.search(query) == []


def test_limit_is_honoured(index: TodoIndex) -> None:
    everything = index.search("the", limit=100)
    assert len(everything) > 3
    assert index.search("the", limit=3) == everything[:3]
    assert index.search("the", limit=0) == []


def test_long_query_is_accepted(index: TodoIndex) -> None:
    query = ("coffee beans " * 200)[:1000]
    assert index.search(query)[0] == "t2"


def test_empty_index() -> None:
    assert TodoIndex.build([]).search("anything") == []


def _mrr_at_10(ranks: list[int | None]) -> float:
    return sum(1 / r for r in ranks if r is not None and r <= 10) / len(ranks)


# A corpus of its own (the measured quality on real commit subjects is bench/todos_search.py's): subjects of a
# verb and two to four things, bodies of shared filler plus one word of their own.
VERBS = "add fix remove update rename document refactor test support drop allow handle migrate cache validate".split()
THINGS = ("token refresh grant scope client secret redirect uri consent screen admin panel migration signal handler "
          "middleware validator introspection endpoint revocation expiry pkce challenge device authorization "
          "application model form template translation setting swagger schema jwt claim issuer audience logout "
          "session cookie cors header pagination serializer throttle").split()
FILLER = ("because users reported failures when the database was locked during upgrades so we retry later instead "
          "and keep backwards compatibility with older clients while tests cover edge cases such as empty strings "
          "unicode names expired entries duplicate requests and concurrent writes").split()


def _corpus(size: int = 300) -> list[Doc]:
    rng, docs, seen = random.Random(1), [], set()
    while len(docs) < size:
        subject = f"{rng.choice(VERBS).capitalize()} {' '.join(rng.sample(THINGS, rng.randint(2, 4)))}"
        if subject not in seen:
            seen.add(subject)
            docs.append(Doc(f"t{len(docs)}", subject, " ".join(rng.sample(FILLER, 8)) + f" ref{len(docs)}x"))
    return docs


def _swap_two_letters(word: str, rng: random.Random) -> str:
    at = rng.randint(1, len(word) - 3) if len(word) >= 5 else 0
    return word[:at] + word[at + 1] + word[at] + word[at + 2:] if at else word


def _queries(docs: list[Doc]) -> list[tuple[str, str, str]]:
    """(kind, query, the todo it looks for): a subject's words, with a typo, reordered, a prefix, body-only."""
    rng, asked = random.Random(2), []
    for kind in "abcde":
        for doc in rng.sample(docs, 40):
            words, body = doc.name.split(), doc.description.split()
            query = {"a": " ".join(words[:3]),
                     "b": " ".join(_swap_two_letters(w, rng) if i == 1 else w for i, w in enumerate(words[:3])),
                     "c": " ".join(reversed(words[1:4])),
                     "d": f"{words[1][:4]} {words[2]}",
                     "e": f"{body[-1]} {rng.choice(body[:-1])}"}[kind]
            asked.append((kind, query, doc.key))
    return asked


def test_ranking_quality_on_a_corpus_of_its_own() -> None:
    docs = _corpus()
    index = TodoIndex.build(docs)
    ranks: dict[str, list[int | None]] = {}
    for kind, query, target in _queries(docs):
        ranked = index.search(query, 20)
        rank = ranked.index(target) + 1 if target in ranked else None
        ranks.setdefault("all", []).append(rank)
        ranks.setdefault(kind, []).append(rank)
    assert _mrr_at_10(ranks["all"]) >= 0.92, {kind: _mrr_at_10(found) for kind, found in ranks.items()}
    assert all(_mrr_at_10(ranks[kind]) >= 0.8 for kind in "abcde"), {k: _mrr_at_10(v) for k, v in ranks.items()}
    assert index.search("zqxjv wqpfz") == []


# The rule the fast cut must follow, written the slow, obvious way: words are runs of letters and digits of the
# folded text (accents dropped, case folded); a field's camelCase identifiers add their parts.
WORD = re.compile(r"[^\W_]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")


def _words_by_the_rule(text: str) -> list[str]:
    decomposed = unicodedata.normalize("NFKD", text)
    return WORD.findall("".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold())


def _parts_by_the_rule(text: str) -> list[str]:
    parts: list[str] = []
    for raw in WORD.findall(text):
        pieces = CAMEL.findall(raw) if re.search(r"[a-z0-9][A-Z]", raw) else []
        if len(pieces) > 1:
            parts.extend(piece.lower() for piece in pieces)
    return parts


# Letters with and without accents, combining marks, capitals, digits, Markdown and code punctuation, the NUL the
# fields are joined with, other scripts and spaces.
TEXT = st.text(st.sampled_from("aZz09_ -.\u00e9\u00c9\u00df\u0130\u0131\u03a3\u03c2\u0301\u00a0\t\n"
                               "OAuth2ValidatorHTTPServer[](){}#*`'\"/:;,\u65e5\u672c\x00\x1f\u2019\u2192\ufb01"),
               max_size=40)


@given(TEXT)
def test_tokenize_cuts_the_words_of_the_folded_text(text: str) -> None:
    assert tokenize(text) == _words_by_the_rule(text)


@given(st.lists(TEXT, max_size=6))
def test_fields_are_cut_together_as_each_would_be_alone(texts: list[str]) -> None:
    words, searchable = _fields_tokens(texts)
    assert words == [_words_by_the_rule(text) for text in texts]
    assert searchable == [_words_by_the_rule(text) + _parts_by_the_rule(text) for text in texts]
