"""Search by meaning in PostgreSQL with pgvector (``pillbox.search.pgvector``, migration 0013): the caller's rows
only, in step with every write, the same ranking as the search in the process on the conversational recall set,
and the schema taken off and put back. These run on PostgreSQL with the extension (.ci/run builds it); elsewhere
they skip, saying why — except the check that SQLite is left as it was."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from types import ModuleType

import pytest
from django.core.management import call_command
from django.db import connections
from django.utils import timezone

from pillbox import curation, services
from pillbox.embeddings import halfvec, loader
from pillbox.global_db import GLOBAL
from pillbox.models import Pill
from pillbox.search import pgvector
from pillbox.search.engine import search
from tests.clients import ROOT
from tests.pillbox.search.pills import OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.test_search_incremental import Memory, settle

RECALL_GAP = 0.005
SAMPLED_GAP = 0.011


def on_postgres() -> bool:
    return connections[GLOBAL].vendor == "postgresql"


@pytest.fixture
def pgvector_on(transactional_db):
    if not on_postgres():
        pytest.skip("pgvector: these tests run on PostgreSQL (DATABASE_URL=postgres://...)")
    said = pgvector.state(GLOBAL, fresh=True)
    if said != "on":
        pytest.skip(f"pgvector: {pgvector.DESCRIPTIONS[said]} (.ci/run builds it from the vendored source)")


@pytest.fixture
def by_index(monkeypatch):
    """The HNSW index, whatever the scope's size (a test's scopes are below the exact scan's size)."""
    monkeypatch.setattr(pgvector, "EXACT_BELOW", 0)


@pytest.fixture
def sql_calls(monkeypatch) -> list[int]:
    """Counts the passes by meaning that ran in SQL: a test must not pass on the in-process path by mistake."""
    calls: list[int] = []
    closest = pgvector.closest

    def counted(*args, **kwargs):
        calls.append(1)
        return closest(*args, **kwargs)

    monkeypatch.setattr(pgvector, "closest", counted)
    return calls


def closest_of(memory: Memory, model) -> set[int]:
    """The rows the SQL pass finds closest to the paraphrase query, every one (no floor)."""
    found, _ = pgvector.closest(memory.target, model.key, loader.embed_query(model, PARAPHRASE_QUERY), None, [],
                                -1.0, 30)
    return {candidate.seq for candidate in found}


def test_pgvector_scoped_search_by_meaning_returns_only_the_callers_rows(alice, bob, meaning, pgvector_on,
                                                                         by_index, sql_calls):
    mine, theirs = Memory(alice, "ops"), Memory(bob, "ops")
    my_rows = {mine.store(title, content).seq for title, content in [PARAPHRASE_TARGET, *OTHERS]}
    their_rows = {theirs.store(title, content).seq for title, content in [PARAPHRASE_TARGET, *OTHERS]}
    their_rows.add(theirs.store("Where the postgres backups are kept",
                                "Nightly dumps of postgres go to the backup bucket.").seq)
    settle()
    found = mine.found(PARAPHRASE_QUERY)
    assert found and set(found) <= my_rows
    assert found[0] == min(my_rows)  # the paraphrase's pill, stored first
    by_meaning = closest_of(mine, meaning)
    assert by_meaning == my_rows  # every row of mine, none of theirs
    assert set(theirs.found(PARAPHRASE_QUERY)) <= their_rows
    assert sql_calls


def test_pgvector_a_write_then_a_search_finds_the_new_row_by_meaning(alice, meaning, pgvector_on, by_index,
                                                                     sql_calls):
    memory = Memory(alice, "ops")
    for title, content in OTHERS:
        memory.store(title, content)
    settle()
    memory.found(PARAPHRASE_QUERY)
    target = memory.store(*PARAPHRASE_TARGET)  # its vector not written yet: the search embeds it
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq
    with connections[GLOBAL].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pillbox_pill_vector WHERE embedding IS NULL "
                       "OR embedding <> pillbox_halfvec(vector)")
        assert cursor.fetchone()[0] == 0


def test_pgvector_discard_restore_revise_and_purge_are_followed(alice, meaning, pgvector_on, by_index, sql_calls):
    memory = Memory(alice, "ops")
    others = [memory.store(title, content) for title, content in OTHERS]
    target = memory.store(*PARAPHRASE_TARGET)
    settle()
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq
    services.pill_discard(reach=memory.reach, pill_id=str(target.id))
    assert target.seq not in memory.found(PARAPHRASE_QUERY)
    curation.pill_restore(reach=memory.reach, pill_id=str(target.id))
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq
    # A revise to other words: its embedding follows the new vector, and it no longer answers.
    services.pill_revise(reach=memory.reach, pill_id=str(target.id),
                         changes={"title": "Wombat diets", "content": "Wombats eat grasses and roots."})
    settle()
    assert target.seq not in memory.found(PARAPHRASE_QUERY)[:1]
    services.pill_revise(reach=memory.reach, pill_id=str(target.id),
                         changes={"title": PARAPHRASE_TARGET[0], "content": PARAPHRASE_TARGET[1]})
    settle()
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq
    services.pill_discard(reach=memory.reach, pill_id=str(target.id))
    curation.pill_purge(reach=memory.reach, pill_id=str(target.id))
    assert target.seq not in memory.found(PARAPHRASE_QUERY)
    by_meaning = closest_of(memory, meaning)
    assert by_meaning == {pill.seq for pill in others}


def test_pgvector_rows_imported_without_vectors_are_embedded_and_found(alice, meaning, pgvector_on, by_index,
                                                                        sql_calls):
    memory = Memory(alice, "ops")
    for title, content in OTHERS:
        memory.store(title, content)
    settle()
    memory.found(PARAPHRASE_QUERY)
    now = timezone.now()  # an import writes its rows directly, without vectors
    last = Pill.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    imported = Pill.objects.create(id=uuid.uuid4(), seq=last + 1, prescription=memory.rx, compound="ops",
                                   title=PARAPHRASE_TARGET[0], content=PARAPHRASE_TARGET[1], created_at=now,
                                   updated_at=now, author_name="Ada Lovelace", author_email="ada@example.com")
    assert pgvector.moments_of(memory.target, meaning.key).missing_seqs == {imported.seq}
    assert memory.found(PARAPHRASE_QUERY)[0] == imported.seq  # the search's catch-up embedded it
    assert not pgvector.moments_of(memory.target, meaning.key).missing_seqs


@pytest.fixture(scope="module")
def corpora() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_corpora", ROOT / "bench" / "corpora.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def recall(corpora: ModuleType, memory: Memory, mapping: dict[int, str]) -> tuple[dict[str, float], list[list[str]]]:
    corpus = corpora.load(corpora.CONVERSATIONS)
    ranks, completes, rankings = [], [], []
    for q in corpus.queries:
        hits = search([memory.target], query=q.q, compound=None, limit=20, fuzzy=False).hits
        ranked = [mapping[hit.seq] for hit in hits]
        rankings.append(ranked)
        ranks.append(corpora.rank(q, ranked))
        completes.append(corpora.complete(q, ranked))
    return corpora.metrics(ranks, completes), rankings


def test_pgvector_matches_the_in_process_ranking_on_the_recall_set(alice, meaning, pgvector_on, corpora,
                                                                   monkeypatch, sql_calls):
    memory = Memory(alice, "recall")
    mapping = {}
    for item in corpora.load(corpora.CONVERSATIONS).items:
        pill = services.pill_store(reach=memory.reach, prescription_id=memory.rx.id.hex, title=item["title"],
                                   content=item["content"], compound=item["compound"],
                                   author_name="Ada Lovelace", author_email="ada@example.com")
        mapping[pill.seq] = item["id"]
    settle()
    with connections[GLOBAL].cursor() as cursor:
        cursor.execute("ANALYZE")
    exact, exact_rankings = recall(corpora, memory, mapping)  # a small scope: scanned exactly in SQL
    assert sql_calls
    monkeypatch.setattr(pgvector, "EXACT_BELOW", 0)
    indexed, indexed_rankings = recall(corpora, memory, mapping)
    # The spread from a sample of the scope: half of it here (10,000 rows of a larger scope), which rows by their
    # seqs, so a query whose z is at the line may go either way: two queries of 199 are allowed.
    monkeypatch.setattr(pgvector, "SAMPLE", 190)
    pgvector._moments.clear()
    sampled, _ = recall(corpora, memory, mapping)
    monkeypatch.setattr(pgvector, "serves", lambda *args: False)
    calls = len(sql_calls)
    in_process, in_process_rankings = recall(corpora, memory, mapping)
    assert len(sql_calls) == calls
    for name in ("hit@1", "r@5", "mrr@10", "found@20"):
        assert abs(exact[name] - in_process[name]) <= RECALL_GAP, (name, exact, in_process)
        assert abs(indexed[name] - in_process[name]) <= RECALL_GAP, (name, indexed, in_process)
        assert abs(sampled[name] - in_process[name]) <= SAMPLED_GAP, (name, sampled, in_process)
    same_first = sum(a[:1] == b[:1] for a, b in zip(indexed_rankings, in_process_rankings, strict=True))
    assert same_first >= 0.99 * len(in_process_rankings)
    assert sum(a == b for a, b in zip(exact_rankings, in_process_rankings, strict=True)) >= \
        0.99 * len(in_process_rankings)


def embedding_column() -> bool:
    return halfvec.column_present(connections[GLOBAL])


def test_pgvector_migration_and_command_take_it_off_and_put_it_back(alice, meaning, pgvector_on, capsys):
    memory = Memory(alice, "ops")
    target = memory.store(*PARAPHRASE_TARGET)
    try:
        call_command("migrate", "pillbox", "0012_superseded", verbosity=0)
        assert not embedding_column() and pgvector.state(GLOBAL, fresh=True) == "off"
        for title, content in OTHERS:  # vectors written while it is off: the way back fills them in
            memory.store(title, content)
        settle()
        assert memory.found(PARAPHRASE_QUERY)[0] == target.seq  # in the process meanwhile
    finally:
        call_command("migrate", "pillbox", verbosity=0)
    assert embedding_column() and pgvector.state(GLOBAL, fresh=True) == "on"
    with connections[GLOBAL].cursor() as cursor:
        cursor.execute("SELECT count(*), count(embedding) FROM pillbox_pill_vector")
        assert cursor.fetchone() == (len(OTHERS) + 1, len(OTHERS) + 1)

    call_command("pgvector", "disable")
    assert "pgvector: installed but not enabled" in capsys.readouterr().out
    try:
        assert not embedding_column() and not pgvector.serves(memory.target, meaning.key, halfvec.DIMENSIONS)
    finally:
        call_command("pgvector", "enable")
    assert "pgvector: on" in capsys.readouterr().out
    assert pgvector.serves(memory.target, meaning.key, halfvec.DIMENSIONS)
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq


def test_pgvector_readyz_says_whether_the_database_searches_the_vectors(client, pgvector_on):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok"}, "pgvector": "on"}


@pytest.mark.django_db
def test_pgvector_on_sqlite_nothing_changes(client, capsys):
    if on_postgres():
        pytest.skip("the SQLite run's check")
    assert pgvector.state(GLOBAL) == "not postgresql"
    assert "pgvector" not in client.get("/readyz").json()
    call_command("pgvector", "enable")
    assert capsys.readouterr().out.startswith("not PostgreSQL: search by meaning stays in the process")


def test_pgvector_keeps_to_a_time_window_and_leaves_superseded_rows_out(alice, meaning, pgvector_on, by_index,
                                                                        sql_calls):
    from dataclasses import replace
    from datetime import UTC, timedelta

    from pillbox import superseding
    from pillbox.search.when import Window

    memory = Memory(alice, "ops")
    target = memory.store(*PARAPHRASE_TARGET)
    for title, content in OTHERS:
        memory.store(title, content)
    newer = memory.store("Release notes", "Written by hand for every tag.")
    settle()
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq and sql_calls
    now = timezone.now()
    past = replace(memory.target, window=Window(start=None, end=now - timedelta(hours=1), zone=UTC, source="test"))
    assert search([past], query=PARAPHRASE_QUERY, compound=None, limit=20, fuzzy=False).hits == []
    superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex, supersedes=[target.id.hex])
    assert target.seq not in memory.found(PARAPHRASE_QUERY)
    asked = replace(memory.target, include_superseded=True)
    assert search([asked], query=PARAPHRASE_QUERY, compound=None, limit=20, fuzzy=False).hits[0].seq == target.seq
