"""The benchmark's conversational corpus and its absent-topic and nonsense queries (bench/data, read by
bench/corpora.py): every evidence id exists, every kind is described, paraphrases share no word with their
evidence, look-ups take theirs from it, absent topics are absent and nonsense is no typo of a stored word.
Only the files in the repository are read (the public commit-history set lives outside it)."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
from collections import Counter
from types import ModuleType

import pytest

from tests.clients import ROOT


@pytest.fixture(scope="module")
def corpora() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_corpora", ROOT / "bench" / "corpora.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def conversations(corpora):
    return corpora.load(corpora.CONVERSATIONS)


def test_the_conversational_corpus_holds_together(corpora, conversations):
    assert corpora.check(conversations) == []
    kinds = Counter(q.kind for q in conversations.queries)
    assert set(kinds) == {"fact", "temporal", "multihop", "paraphrase", "lookup"}
    assert 120 <= len(conversations.queries) <= 200 and min(kinds.values()) >= 20
    assert all(len(q.evidence) >= 2 for q in conversations.queries if q.kind == "multihop")
    # One pill per turn: each titled by its speaker, session and turn; several long dialogues.
    title = re.compile(r"^\w+, session \d+ \(\d{4}-\d\d-\d\d\), turn \d+$")
    assert all(title.match(item["title"]) and item["compound"] == "conversation" for item in conversations.items)
    per_conversation = Counter(item["conversation"] for item in conversations.items)
    assert len(per_conversation) >= 6 and min(per_conversation.values()) >= 30
    assert conversations.meta["n_items"] == len(conversations.items)
    # The shared scorer's shape: one target per query, the first of its evidence.
    dataset = conversations.dataset()
    assert all(q["target"] in {item["id"] for item in dataset["items"]} for q in dataset["queries"])


def test_absent_and_nonsense_queries_are_labelled_for_a_corpus(corpora, conversations):
    data = json.loads(corpora.ABSENT.read_text())
    queries = data["queries"]
    assert {q["kind"] for q in queries} == set(corpora.ABSENT_KINDS)
    assert {q["corpus"] for q in queries} == {*corpora.NAMES.values(), corpora.BOTH}
    counts = Counter((q["corpus"], q["kind"]) for q in queries)
    assert counts[("conversations", "absent")] >= 35 and counts[("recall", "absent")] >= 35
    assert counts[(corpora.BOTH, "nonsense")] >= 25
    assert all(q["key"] for q in queries if q["kind"] == "absent")
    assert all(q["kind"] == "nonsense" for q in queries if q["corpus"] == corpora.BOTH)
    mine = {q.q for q in conversations.absent}
    assert mine == {q["q"] for q in queries if q["corpus"] in ("conversations", corpora.BOTH)}


def test_the_check_finds_each_kind_of_fault(corpora, conversations):
    broken = copy.deepcopy(conversations)
    fact = next(q for q in broken.queries if q.kind == "fact")
    paraphrase = next(q for q in broken.queries if q.kind == "paraphrase")
    lookup = next(q for q in broken.queries if q.kind == "lookup")
    absent = next(q for q in broken.absent if q.kind == "absent")
    nonsense = next(q for q in broken.absent if q.kind == "nonsense")
    stored = broken.items[0]
    broken.queries = [q for q in broken.queries if q not in (fact, paraphrase, lookup)] + [
        corpora.Query(key=fact.key, q=fact.q, kind="gossip", evidence=("c9s9t99",)),
        corpora.Query(key=paraphrase.key, q=stored["content"], kind="paraphrase", evidence=(stored["id"],)),
        corpora.Query(key=lookup.key, q="zeppelin hangar", kind="lookup", evidence=lookup.evidence),
    ]
    word = max(corpora.content_words(stored["content"]), key=len)
    broken.absent = [q for q in broken.absent if q not in (absent, nonsense)] + [
        corpora.Query(key=absent.key, q=f"{word} plans", kind="absent", terms=(word,)),
        corpora.Query(key=nonsense.key, q=word[:-1] + "q", kind="nonsense"),
        corpora.Query(key="x999", q="flimbertrosk", kind="weird"),
        corpora.Query(key="x998", q=stored["content"], kind="absent", terms=("zeppelin",)),
    ]
    problems = "\n".join(corpora.check(broken))
    assert "kind 'gossip' is not described" in problems
    assert "evidence 'c9s9t99' is no item" in problems
    assert f"query {paraphrase.key}: the paraphrase shares" in problems
    assert f"query {lookup.key}: the look-up's ['hangar', 'zeppelin'] are not in its evidence" in problems
    assert f"absent query {absent.key} ({word} plans): {word} is stored" in problems.replace("'", "")
    assert f"nonsense query {nonsense.key}: {word[:-1] + 'q'!r} is within 1 edits" in problems
    assert "absent query x999: kind 'weird'" in problems
    assert f"every word of it is in one pill, {stored['id']}" in problems


def test_the_scorer_counts_any_evidence_and_reads_the_match_line(corpora):
    two = corpora.Query(key="0", q="", kind="multihop", evidence=("a", "b"))
    one = corpora.Query(key="1", q="", kind="fact", evidence=("c",))
    table = corpora.score([two, one], {"0": ["x", "b", "a"], "1": ["x"] * 20 + ["c"]})
    assert table["multihop"]["mrr@10"] == 0.5 and table["multihop"]["r@5"] == 1 and table["multihop"]["all@20"] == 1
    assert corpora.score([two], {"0": ["b"]})["all"]["all@20"] == 0
    assert table["fact"]["found@20"] == 0 and table["all"]["mrr@10"] == 0.25
    absent = [corpora.Query(key=k, q="", kind="absent") for k in "abc"]
    absent.append(corpora.Query(key="d", q="", kind="nonsense"))
    rates = corpora.absent_rates(absent, {"a": "No pills found.", "b": "Found 2 pills\nmatch: all words\n",
                                          "c": "Found 1 pill\n", "d": "No pills found."})
    assert rates["absent"]["empty"] == pytest.approx(1 / 3) and rates["absent"]["all words"] == pytest.approx(1 / 3)
    assert rates["absent"]["match unlabelled"] == pytest.approx(1 / 3) and rates["nonsense"]["empty"] == 1


def test_fusion_gaps_name_each_kind_where_fusion_costs(corpora):
    words = {"all": {"n": 2, "mrr@10": 0.5, "r@5": 1.0}, "fact": {"n": 1, "mrr@10": 1.0, "r@5": 1.0}}
    meaning = {"all": {"n": 2, "mrr@10": 0.6, "r@5": 0.5}, "fact": {"n": 1, "mrr@10": 0.2, "r@5": 1.0}}
    fused = {"all": {"n": 2, "mrr@10": 0.6, "r@5": 1.0}, "fact": {"n": 1, "mrr@10": 0.5, "r@5": 1.0}}
    assert corpora.fusion_gaps(fused, {"words": words, "meaning": meaning}) == [("fact", "mrr@10", 0.5, "words", 1.0)]
    fused["fact"]["mrr@10"] = 1.0
    assert corpora.fusion_gaps(fused, {"words": words, "meaning": meaning}) == []
    table = corpora.markdown({"words": words, "fused": fused}, metrics=("mrr@10",))
    assert table.splitlines()[0] == "| kind | n | mrr@10 words | mrr@10 fused |"
    assert table.splitlines()[3] == "| fact | 1 | 1.000 | 1.000 |"
