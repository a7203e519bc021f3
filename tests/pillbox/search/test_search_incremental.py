"""A search after a write reads the rows that changed, not the scope: the vectors and the vocabulary kept in
memory follow the change log (migration 0011) through stores, revises, discards, restores, purges and imports,
written by this connection or by another process, and end up what a fresh read of the scope would give."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.utils import timezone

from pillbox import curation, services
from pillbox.access import reach_for
from pillbox.embeddings import backfill
from pillbox.global_db import GLOBAL
from pillbox.models import Bottle, Pill, PillVector, Prescription
from pillbox.search import changes, pgvector, vocabulary
from pillbox.search import meaning as by_meaning
from pillbox.search.engine import search
from pillbox.search.targets import Target
from tests.conftest import Person
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)
from tests.pillbox.search.pills import OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.recall import caller

DIMENSIONS = 384  # the bundled model's
AUTHOR = {"author_name": "Ada Lovelace", "author_email": "ada@example.com"}


class Memory:
    """One user's bottle in the global database, written through the services."""

    def __init__(self, person: Person, name: str) -> None:
        self.reach = reach_for(caller(person.user))
        self.bottle = services.bottle_create(reach=self.reach, name=name, display_name=name.title(),
                                             scope="global")
        self.reach = reach_for(caller(person.user))  # the reach with the new bottle in it
        self.rx = services.prescription_open(reach=self.reach, bottle_id=self.bottle.id.hex, title="Work", **AUTHOR)
        self.target = Target(alias=GLOBAL, kind="pill", bottles=frozenset({self.bottle.id}))

    def store(self, title: str, content: str) -> Pill:
        return services.pill_store(reach=self.reach, prescription_id=self.rx.id.hex, title=title, content=content,
                                   compound="ops", **AUTHOR)

    def found(self, query: str) -> list[int]:
        return [hit.seq for hit in search([self.target], query=query, compound=None, limit=20, fuzzy=False).hits]


@pytest.fixture(autouse=True)
def _in_process(monkeypatch):
    """These count the rows the in-process copy reads: on PostgreSQL with pgvector, the database would search."""
    monkeypatch.setattr(pgvector, "serves", lambda *args: False)


def settle() -> None:
    """Every row embedded, and no backfill left running: where a store's commit starts one (PostgreSQL, files),
    its thread would otherwise write a vector in the middle of what a test counts."""
    backfill.wait_for_backfills()
    backfill.backfill(GLOBAL, "pill")


def read_since(act: Any) -> int:
    before = by_meaning.rows_read
    act()
    return by_meaning.rows_read - before


def fresh_copy(target: Target, model_key: str, dimensions: int) -> tuple[dict[int, bytes], set[int]]:
    """What a full read of the scope gives: each row's vector (as float32 bytes), and the rows without one."""
    vectors = by_meaning._load(target, model_key, dimensions)
    return ({int(seq): vectors.matrix[at].tobytes() for seq, at in vectors.position.items()},
            set(vectors.missing_seqs))


def kept_copy(target: Target, model_key: str, dimensions: int) -> tuple[dict[int, bytes], set[int]]:
    vectors = by_meaning.vectors_of(target, model_key, dimensions)
    assert sorted(vectors.position.values()) == list(range(vectors.count))
    return ({int(seq): vectors.matrix[at].tobytes() for seq, at in vectors.position.items()},
            set(vectors.missing_seqs))


def test_a_write_then_a_search_finds_the_new_row_by_meaning_reading_only_that_row(alice, bob, meaning):
    memory = Memory(alice, "ops")
    others = [memory.store(title, content) for title, content in OTHERS]
    settle()
    by_meaning._vectors.clear()
    assert read_since(lambda: memory.found(PARAPHRASE_QUERY)) == len(OTHERS)  # the first search reads the scope

    target = memory.store(*PARAPHRASE_TARGET)
    settle()
    found: list[int] = []
    assert read_since(lambda: found.extend(memory.found(PARAPHRASE_QUERY))) == 1  # the new row, not the scope
    assert found[0] == target.seq
    # Another user's write is not the caller's row: read for nothing, never found.
    theirs = Memory(bob, "ops")
    theirs.store(*PARAPHRASE_TARGET)
    settle()
    assert read_since(lambda: memory.found(PARAPHRASE_QUERY)) == 0
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq and len(memory.found(PARAPHRASE_QUERY)) == 1

    assert read_since(lambda: services.pill_discard(reach=memory.reach, pill_id=str(target.id))) == 0
    assert read_since(lambda: memory.found(PARAPHRASE_QUERY)) == 0  # gone from the scope: nothing to read
    assert target.seq not in memory.found(PARAPHRASE_QUERY)
    curation.pill_restore(reach=memory.reach, pill_id=str(target.id))
    assert read_since(lambda: memory.found(PARAPHRASE_QUERY)) == 1
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq

    services.pill_revise(reach=memory.reach, pill_id=str(others[0].id), changes={"content": "Rotated keys."})
    settle()
    services.pill_discard(reach=memory.reach, pill_id=str(others[1].id))
    curation.pill_purge(reach=memory.reach, pill_id=str(others[1].id))
    model_key, dimensions = meaning.key, DIMENSIONS
    kept = kept_copy(memory.target, model_key, dimensions)
    assert kept == fresh_copy(memory.target, model_key, dimensions)
    assert others[1].seq not in kept[0] and len(kept[0]) == len(OTHERS)


def test_rows_imported_without_vectors_are_missing_until_the_backfill_then_found(alice, meaning):
    memory = Memory(alice, "ops")
    for title, content in OTHERS:
        memory.store(title, content)
    settle()
    memory.found(PARAPHRASE_QUERY)
    # An import writes rows directly, without vectors.
    now = timezone.now()
    last = Pill.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    imported = Pill.objects.create(id=uuid.uuid4(), seq=last + 1, prescription=memory.rx, compound="ops",
                                   title=PARAPHRASE_TARGET[0], content=PARAPHRASE_TARGET[1], created_at=now,
                                   updated_at=now, **AUTHOR)
    vectors = by_meaning.vectors_of(memory.target, meaning.key, DIMENSIONS)
    assert vectors.missing_seqs == {imported.seq}
    assert memory.found(PARAPHRASE_QUERY)[0] == imported.seq  # the search embeds the few rows missing
    assert not by_meaning.vectors_of(memory.target, meaning.key, DIMENSIONS).missing


def test_the_vocabulary_follows_writes_and_ends_as_a_fresh_read_would(alice, bob, meaning):
    mine, theirs = Memory(alice, "ops"), Memory(bob, "ops")
    for title, content in OTHERS:
        mine.store(title, content)
    theirs.store("Quokka census", "Counting quokkas on the island.")
    for target in (mine.target, Target(alias=GLOBAL, kind="capsule", owner_id=alice.user.pk)):
        vocabulary._vocabularies.clear()
        before = vocabulary.vocabulary(target)
        assert "quokkas" not in before.words  # another user's words are never the caller's
        if target.kind == "pill":
            pill = mine.store("Wallaby notes", "Wallabies and wombats share the paddock.")
            services.pill_revise(reach=mine.reach, pill_id=str(pill.id), changes={"content": "Only wombats now."})
            gone = mine.store("Echidna", "Echidnas dig.")
            services.pill_discard(reach=mine.reach, pill_id=str(gone.id))
        else:
            capsule = services.capsule_store(reach=mine.reach, title="Wallaby notes", content="Wallabies graze.",
                                             compound="ops")
            services.capsule_revise(reach=mine.reach, capsule_id=str(capsule.id),
                                    changes={"content": "Only wombats now."})
        theirs.store("Numbat", "Numbats eat termites.")
        kept = vocabulary.vocabulary(target)
        assert kept is before  # kept in step, not read again
        assert "wombats" in kept.words and "wallabies" not in kept.words and "echidnas" not in kept.words
        assert "numbats" not in kept.words
        statistics = (kept.rows, kept.mean_length)  # PostgreSQL's bm25 statistics, kept while the log is still
        assert vocabulary.vocabulary(target) is kept and (kept.rows, kept.mean_length) == statistics
        vocabulary._vocabularies.clear()
        fresh = vocabulary.vocabulary(target)
        assert (kept.words, kept.counts, kept.rows, kept.mean_length) == \
            (fresh.words, fresh.counts, fresh.rows, fresh.mean_length)


def test_a_typo_is_corrected_to_a_word_stored_after_the_vocabulary_was_read(alice):
    memory = Memory(alice, "ops")
    memory.store("Rotation", "Credentials rotate monthly.")
    memory.store("Backups", "Snapshots are taken nightly.")
    words = vocabulary.vocabulary(memory.target)
    assert words.near("credentals") == ["credentials"]  # builds the typo index
    stored = memory.store("Zeppelin", "The zeppelin hangar is cold.")
    assert vocabulary.vocabulary(memory.target) is words
    assert words.near("zeppelim") == ["zeppelin"]
    hits = search([memory.target], query="zeppelim hangar", compound=None, limit=20, fuzzy=False).hits
    assert [hit.seq for hit in hits] == [stored.seq]
    services.pill_discard(reach=memory.reach, pill_id=str(stored.id))
    vocabulary.vocabulary(memory.target)
    assert words.near("zeppelim") == []


def test_a_prescription_discarded_or_a_log_pruned_past_the_copy_reads_the_scope_again(alice, meaning, monkeypatch):
    memory = Memory(alice, "ops")
    for title, content in OTHERS:
        memory.store(title, content)
    settle()
    memory.found(PARAPHRASE_QUERY)
    Prescription.objects.filter(pk=memory.rx.pk).update(deleted_at=timezone.now())
    assert read_since(lambda: memory.found(PARAPHRASE_QUERY)) == 0  # the whole scope: no row left in it
    assert not by_meaning.vectors_of(memory.target, meaning.key, DIMENSIONS).count
    Prescription.objects.filter(pk=memory.rx.pk).update(deleted_at=None)
    monkeypatch.setattr(changes, "MOST_CHANGES", 1)
    memory.store("One", "First of two.")
    memory.store("Two", "Second of two.")
    settle()
    assert read_since(lambda: memory.found(PARAPHRASE_QUERY)) == len(OTHERS) + 2  # more than row by row pays for


# ---------------------------------------------------------------- another process


@pytest.fixture
def project_file(tmp_path: Path, local_bottles_over_http: None) -> tuple[Path, Target]:
    from pillbox.databases import open_local

    path = tmp_path / ".pillbox" / "pillbox.db"
    alias = open_local(path, create=True)
    now = timezone.now()
    bottle = Bottle.objects.using(alias).create(id=uuid.uuid4(), name="proj", display_name="Proj", scope="local",
                                                directory=str(tmp_path), created_at=now)
    rx = Prescription.objects.using(alias).create(id=uuid.uuid4(), bottle=bottle, title="Work", started_at=now,
                                                  **AUTHOR)
    for at, (title, content) in enumerate([*OTHERS, PARAPHRASE_TARGET], start=1):
        Pill.objects.using(alias).create(id=uuid.uuid4(), seq=at, prescription=rx, compound="ops", title=title,
                                         content=content, created_at=now, updated_at=now, **AUTHOR)
    backfill.backfill(alias, "pill")
    return path, Target(alias=alias, kind="pill", bottles=frozenset({bottle.id}))


OTHER_PROCESS = """
import sqlite3, sys
with sqlite3.connect(sys.argv[1]) as db:
    db.execute("UPDATE pillbox_pill SET title = 'Quokka backups', content = 'Quokkas guard the tape archive.' "
               "WHERE seq = 1")
    db.execute("DELETE FROM pillbox_pill_vector WHERE pill_id = (SELECT id FROM pillbox_pill WHERE seq = 1)")
    db.execute("UPDATE pillbox_pill SET deleted_at = '2026-01-01 00:00:00' WHERE seq = ?", [sys.argv[2]])
"""


def test_another_processs_write_is_seen_at_the_next_search_without_reading_the_scope(project_file, meaning):
    path, target = project_file
    target_seq = len(OTHERS) + 1
    first = search([target], query=PARAPHRASE_QUERY, compound=None, limit=20, fuzzy=False).hits
    assert first[0].seq == target_seq
    words = vocabulary.vocabulary(target)
    assert "quokkas" not in words.words

    subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(path), str(target_seq)], check=True)

    read = read_since(lambda: search([target], query="quokas tape", compound=None, limit=20, fuzzy=False))
    assert read == 2  # the two rows the other process wrote (one re-read after the search embedded it)
    assert vocabulary.vocabulary(target) is words and "quokkas" in words.words
    hits = search([target], query="quokas tape", compound=None, limit=20, fuzzy=False).hits
    assert [hit.seq for hit in hits][:1] == [1]
    assert target_seq not in [hit.seq for hit in search([target], query=PARAPHRASE_QUERY, compound=None, limit=20,
                                                          fuzzy=False).hits]
    assert kept_copy(target, meaning.key, DIMENSIONS) == fresh_copy(target, meaning.key, DIMENSIONS)


def test_the_change_log_keeps_its_last_entries_only(alice):
    memory = Memory(alice, "ops")
    start = changes.position(GLOBAL)
    now = timezone.now()
    Pill.objects.bulk_create([
        Pill(id=uuid.uuid4(), seq=10**9 + at, prescription=memory.rx, compound="ops", title=f"Row {at}",
             content="bulk", created_at=now, updated_at=now, **AUTHOR) for at in range(12_000)])
    assert changes.since(GLOBAL, start) is None  # pruned past (and more than row by row pays for)
    assert changes.position(GLOBAL).after - start.after >= 12_000
    from django.db import connections

    with connections[GLOBAL].cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pillbox_change")
        assert cursor.fetchone()[0] <= 11_000


def test_vectors_of_rows_of_another_model_or_length_are_left_out(alice, meaning):
    memory = Memory(alice, "ops")
    pills = [memory.store(title, content) for title, content in OTHERS]
    settle()
    memory.found(PARAPHRASE_QUERY)
    PillVector.objects.filter(pill=pills[0]).update(vector=b"\x00" * 8)
    PillVector.objects.filter(pill=pills[1]).update(model="an-older-model")
    vectors = by_meaning.vectors_of(memory.target, meaning.key, DIMENSIONS)
    assert pills[0].seq not in vectors.position and pills[1].seq in vectors.missing_seqs
    assert vectors.count == len(OTHERS) - 2
    assert np.allclose(np.linalg.norm(vectors.matrix, axis=1), 1.0, atol=1e-2)


def test_the_backfill_after_a_write_embeds_the_rows_named_and_no_other(alice, meaning):
    from pillbox.embeddings import storage

    memory = Memory(alice, "ops")
    pills = [memory.store(title, content) for title, content in OTHERS]
    backfill.wait_for_backfills()
    PillVector.objects.all().delete()
    named = storage.missing(GLOBAL, "pill", meaning.key, 16, rows=[pills[0].id])
    assert [str(row[0]).replace("-", "") for row in named] == [pills[0].id.hex]
    assert [row[1] for row in storage.missing(GLOBAL, "pill", meaning.key, 16, rows=[pills[2].seq])] == [
        pills[2].title]
    assert backfill.backfill(GLOBAL, "pill", rows=[pills[1].id]) == 1
    assert set(PillVector.objects.values_list("pill_id", flat=True)) == {pills[1].id}
    assert len(storage.missing(GLOBAL, "pill", meaning.key, 16)) == 2  # the scan finds the others


def test_outside_a_transaction_a_write_then_a_search_reads_only_that_row(transactional_db, alice, meaning):
    """The full read and its place in the log are one snapshot (REPEATABLE READ on PostgreSQL), and the store's
    own backfill runs after its commit, as on a server."""
    memory = Memory(alice, "ops")
    for title, content in OTHERS:
        memory.store(title, content)
    backfill.wait_for_backfills()
    by_meaning._vectors.clear()
    assert read_since(lambda: memory.found(PARAPHRASE_QUERY)) == len(OTHERS)
    target = memory.store(*PARAPHRASE_TARGET)
    backfill.wait_for_backfills()
    found: list[int] = []
    assert read_since(lambda: found.extend(memory.found(PARAPHRASE_QUERY))) == 1
    assert found[0] == target.seq


def test_a_search_after_nothing_was_written_asks_the_log_once_and_opens_no_transaction(transactional_db, alice):
    """Before each use a cache asks the log what changed; when nothing did, that is one statement (none on SQLite,
    whose file says it was not written), and no read transaction is opened for it."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    memory = Memory(alice, "ops")
    for title, content in OTHERS:
        memory.store(title, content)
    assert memory.found("pg_dump archive") == memory.found("pg_dump archive")  # the caches read, then kept
    with CaptureQueriesContext(connections[GLOBAL]) as asked:
        memory.found("pg_dump archive")
    statements = [query["sql"] for query in asked.captured_queries]
    assert sum("pillbox_change" in sql for sql in statements) <= 1, statements
    assert not any(sql.startswith(("BEGIN", "SET TRANSACTION")) for sql in statements), statements
    assert sum("AVG(m.search_length)" in sql for sql in statements) == 0, statements  # bm25's statistics kept
    stored = memory.store("Archive rotation", "The pg_dump archive is rotated weekly.")
    assert stored.seq in memory.found("pg_dump archive")  # a write is seen at once


@pytest.mark.django_db(transaction=True)
def test_the_change_log_migration_goes_back_and_forth(alice):
    """Backwards: no log and no trigger (a write succeeds, nothing notes it); forwards again: writes are noted."""
    from importlib import import_module

    from django.apps import apps as django_apps
    from django.db import connections

    log = import_module("pillbox.migrations.0011_change_log")
    memory = Memory(alice, "ops")
    with connections[GLOBAL].schema_editor() as editor:
        log.backwards(django_apps, editor)
    memory.store("Written", "while the log was gone.")
    with connections[GLOBAL].cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pillbox_pill")
        assert cursor.fetchone()[0] == 1
    assert "pillbox_change" not in connections[GLOBAL].introspection.table_names()
    with connections[GLOBAL].schema_editor() as editor:
        log.forwards(django_apps, editor)
        # The later migration's triggers (they also note superseded_by), as the database had them before.
        import_module("pillbox.migrations.0012_superseded").forwards(django_apps, editor)
    start = changes.position(GLOBAL)
    stored = memory.store("Noted", "once the log is back.")
    found = changes.since(GLOBAL, start)
    assert found is not None and [(entry.kind, entry.seq) for entry in found[0]] == [("pill", stored.seq)]


@pytest.mark.django_db(transaction=True)
def test_a_copy_read_inside_a_transaction_rolled_back_is_read_again(alice):
    from django.db import transaction

    memory = Memory(alice, "ops")
    memory.store("Kept", "Wombats stay.")
    with pytest.raises(RuntimeError), transaction.atomic():
        memory.store("Gone", "Numbats vanish.")
        assert "numbats" in vocabulary.vocabulary(memory.target).words
        raise RuntimeError("rolled back")
    memory.store("Later", "Quolls arrive.")
    words = vocabulary.vocabulary(memory.target).words
    assert "numbats" not in words and {"quolls", "wombats"} <= set(words)
