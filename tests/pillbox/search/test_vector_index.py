"""A large scope is searched by meaning through the index file beside its database (``pillbox.search.ann``), with
the threshold lowered so that a few rows make a large scope: the same answers as the exact scan, a write read
row by row, another process's write seen, a damaged or foreign index built again while search stays exact, and
never a row outside the caller's scope."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone

from pillbox.embeddings import backfill
from pillbox.models import Bottle, Pill, Prescription
from pillbox.search import ann, pgvector
from pillbox.search import meaning as by_meaning
from pillbox.search.engine import search
from pillbox.search.targets import Target
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)
from tests.pillbox.search.pills import OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET

DIMENSIONS = 384
AUTHOR = {"author_name": "Ada Lovelace", "author_email": "ada@example.com"}
TOPICS = ["the staging cluster", "the billing service", "the mobile app", "the data warehouse", "the search page",
          "the nightly report", "the login form", "the payment gateway"]
CHORES = ["Logs of {} rotate weekly.", "Alerts for {} page the on-call engineer.", "Deploys of {} need a review.",
          "Feature flags of {} live in the admin."]
PILLS = [*OTHERS, PARAPHRASE_TARGET, *[(f"Note {at}", chore.format(topic)) for at, (chore, topic) in
                    enumerate((chore, topic) for chore in CHORES for topic in TOPICS)]]
QUERIES = [PARAPHRASE_QUERY, "who gets woken up when the payment system breaks", "how do we ship the phone app",
           "where do toggles for the warehouse sit", "pytest from the root"]


class Project:
    """A project's database file with two bottles: the caller's (``mine``) and another (``theirs``)."""

    def __init__(self, directory: Path) -> None:
        from pillbox.databases import open_local

        self.path = directory / ".pillbox" / "pillbox.db"
        self.alias = open_local(self.path, create=True)
        now = timezone.now()
        self.prescriptions = {}
        for name in ("mine", "theirs"):
            bottle = Bottle.objects.using(self.alias).create(id=uuid.uuid4(), name=name, display_name=name,
                                                             scope="local", directory=str(directory),
                                                             created_at=now)
            self.prescriptions[name] = Prescription.objects.using(self.alias).create(
                id=uuid.uuid4(), bottle=bottle, title="Work", started_at=now, **AUTHOR)
        self.target = Target(alias=self.alias, kind="pill",
                             bottles=frozenset({self.prescriptions["mine"].bottle_id}))

    def store(self, title: str, content: str, *, bottle: str = "mine", compound: str = "ops") -> Pill:
        now = timezone.now()
        seq = (Pill.objects.using(self.alias).order_by("-seq").values_list("seq", flat=True).first() or 0) + 1
        pill = Pill.objects.using(self.alias).create(id=uuid.uuid4(), seq=seq, prescription=self.prescriptions[bottle],
                                                     compound=compound, title=title, content=content,
                                                     created_at=now, updated_at=now, **AUTHOR)
        backfill.backfill(self.alias, "pill")
        return pill

    def found(self, query: str, compound: str | None = None) -> list[int]:
        return [hit.seq for hit in search([self.target], query=query, compound=compound, limit=20, fuzzy=False).hits]

    def pointer(self, model_key: str) -> Path:
        pointer = ann.pointer_of(self.alias, "pill", model_key, DIMENSIONS)
        assert pointer is not None and pointer.parent == self.path.parent / "vectors"
        return pointer

    def kept(self, model_key: str) -> by_meaning.Vectors:
        return by_meaning.vectors_of(self.target, model_key, DIMENSIONS)


@pytest.fixture(autouse=True)
def _in_process(monkeypatch):
    """The index serves the search in the process: on PostgreSQL with pgvector, the database would search."""
    monkeypatch.setattr(pgvector, "serves", lambda *args: False)


@pytest.fixture
def project(tmp_path: Path, local_bottles_over_http: None, settings, meaning) -> Project:
    settings.PILLBOX_VECTOR_INDEX_ROWS = 0  # first the exact scan, for the answers to compare with
    project = Project(tmp_path)
    for title, content in PILLS:
        project.store(title, content)
    project.store("Quokka census", "Counting quokkas on the island.", bottle="theirs")
    project.store("Tape backups", "pg_dump archives of postgres go to tape.", bottle="theirs")
    by_meaning._vectors.clear()
    yield project
    ann.wait_for_builds()


def exact_answers(project: Project, settings, queries: list[str]) -> list[list[int]]:
    settings.PILLBOX_VECTOR_INDEX_ROWS = 0
    by_meaning._vectors.clear()
    answers = [project.found(query) for query in queries]
    by_meaning._vectors.clear()
    return answers


def through_the_index(project: Project, settings, model_key: str) -> by_meaning.Vectors:
    """The threshold lowered to a handful of rows, the index built, and the scope read through it."""
    settings.PILLBOX_VECTOR_INDEX_ROWS = 4
    project.found(PARAPHRASE_QUERY)  # a large scope with no index: exact, and the build starts
    ann.wait_for_builds()
    project.found(PARAPHRASE_QUERY)
    vectors = project.kept(model_key)
    assert vectors.part is not None
    return vectors


def read_since(act) -> int:
    before = by_meaning.rows_read
    act()
    return by_meaning.rows_read - before


def test_through_the_index_the_answers_are_the_exact_scans_and_a_write_reads_only_its_row(project, settings,
                                                                                          meaning):
    exact = exact_answers(project, settings, QUERIES)
    through_the_index(project, settings, meaning.key)
    assert project.pointer(meaning.key).is_file()
    assert [project.found(query) for query in QUERIES] == exact
    assert by_meaning.rows_read and read_since(lambda: project.found(QUERIES[1])) == 0

    stored = project.store(*PARAPHRASE_TARGET)
    found: list[int] = []
    assert read_since(lambda: found.extend(project.found(PARAPHRASE_QUERY))) == 1  # the new row, not the scope
    assert found[0] in {stored.seq, 4} and stored.seq in found[:2]  # the same text twice: the two rows first
    vectors = project.kept(meaning.key)
    assert vectors.part is not None and vectors.count == 1  # the index speaks for the rest
    Pill.objects.using(project.alias).filter(seq=stored.seq).update(deleted_at=timezone.now())
    assert stored.seq not in project.found(PARAPHRASE_QUERY)
    indexed = [project.found(query) for query in QUERIES]
    assert indexed == exact_answers(project, settings, QUERIES)


def test_the_spread_over_the_scope_is_the_exact_scans(project, settings, meaning):
    from pillbox.embeddings import loader

    query = loader.embed_query(meaning, PARAPHRASE_QUERY)
    assert query is not None
    vectors = through_the_index(project, settings, meaning.key)
    Pill.objects.using(project.alias).filter(seq=1).update(deleted_at=timezone.now())
    project.store("Rotation", "Credentials rotate monthly.")
    indexed = by_meaning._closest(project.kept(meaning.key), query, None, [], -1.0)
    assert vectors.part is not None and vectors.count == 1 and project.kept(meaning.key) is vectors
    settings.PILLBOX_VECTOR_INDEX_ROWS = 0
    by_meaning._vectors.clear()
    exact = by_meaning._closest(project.kept(meaning.key), query, None, [], -1.0)
    assert [c.seq for c in indexed[0]] == [c.seq for c in exact[0]]
    assert [c.similarity for c in indexed[0]] == pytest.approx([c.similarity for c in exact[0]], abs=1e-5)
    assert indexed[1].rows == exact[1].rows == len(PILLS)
    assert indexed[1].best == pytest.approx(exact[1].best, abs=1e-6)
    assert indexed[1].z == pytest.approx(exact[1].z, rel=1e-4)


OTHER_PROCESS = """
import sqlite3, sys
with sqlite3.connect(sys.argv[1]) as db:
    db.execute("UPDATE pillbox_pill SET title = 'Quokka backups', content = 'Quokkas guard the tape archive.' "
               "WHERE seq = 1")
    db.execute("DELETE FROM pillbox_pill_vector WHERE pill_id = (SELECT id FROM pillbox_pill WHERE seq = 1)")
    db.execute("UPDATE pillbox_pill SET deleted_at = '2026-01-01 00:00:00' WHERE seq = 4")
"""


def test_another_processs_write_is_seen_through_the_index(project, settings, meaning):
    through_the_index(project, settings, meaning.key)
    assert project.found(PARAPHRASE_QUERY)[0] == 4
    subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(project.path)], check=True)
    read = read_since(lambda: project.found("quokka tape"))
    assert read == 2  # the rows the other process wrote (the one without a vector again once embedded)
    assert project.found("quokka tape")[:1] == [1]
    assert 4 not in project.found(PARAPHRASE_QUERY)
    assert project.kept(meaning.key).part is not None
    assert [project.found(query) for query in QUERIES] == exact_answers(project, settings, QUERIES)


def damage_deleted(pointer: Path) -> None:
    for file in pointer.parent.glob("*.usearch"):
        file.unlink()


def damage_truncated(pointer: Path) -> None:
    file = pointer.parent / json.loads(pointer.read_text())["file"]
    data = file.read_bytes()
    file.unlink()  # a new file in its place: this process still maps the old one
    file.write_bytes(data[:len(data) // 2])


def damage_other_model(pointer: Path) -> None:
    data = json.loads(pointer.read_text())
    data["model"] = "another-model"
    data["mark"] = ann._mark(pointer, {key: value for key, value in data.items() if key != "mark"})
    pointer.write_text(json.dumps(data))  # a pointer of ours, of another model


def damage_pointer_gone(pointer: Path) -> None:
    pointer.unlink()


def damage_from_elsewhere(pointer: Path) -> None:
    """A folder that came with a copy of the project: its files are sound, but not this installation's."""
    data = json.loads(pointer.read_text())
    data["mark"] = "0" * 64
    pointer.write_text(json.dumps(data))


@pytest.mark.parametrize("damage", [damage_deleted, damage_truncated, damage_other_model, damage_pointer_gone,
                                    damage_from_elsewhere])
def test_a_damaged_index_is_built_again_while_search_stays_exact(project, settings, meaning, damage, monkeypatch):
    exact = exact_answers(project, settings, QUERIES)
    through_the_index(project, settings, meaning.key)
    pointer = project.pointer(meaning.key)
    # The build waits for the test's word: a small index is built again before the next line could look.
    gate, building = threading.Event(), ann._build_thread
    monkeypatch.setattr(ann, "_build_thread", lambda *args: (gate.wait(60), building(*args)))
    damage(pointer)
    if damage is damage_truncated:
        with pytest.raises(ValueError):
            from usearch.index import Index

            Index.restore(str(pointer.parent / json.loads(pointer.read_text())["file"]), view=True)
    answers = [project.found(query) for query in QUERIES]
    assert project.kept(meaning.key).part is None  # exact meanwhile
    assert answers == exact
    gate.set()
    ann.wait_for_builds()
    assert [project.found(query) for query in QUERIES] == exact
    assert project.kept(meaning.key).part is not None  # the index built again, and used
    assert json.loads(pointer.read_text())["model"] == meaning.key
    assert len(list(pointer.parent.glob("*.usearch"))) == 1


def test_the_index_holds_every_bottles_rows_and_the_search_only_the_callers(project, settings, meaning):
    through_the_index(project, settings, meaning.key)
    theirs = set(Pill.objects.using(project.alias).filter(prescription=project.prescriptions["theirs"])
                 .values_list("seq", flat=True))
    vectors = project.kept(meaning.key)
    assert vectors.part is not None and vectors.part.opened.size == len(PILLS) + len(theirs)
    for query in [*QUERIES, "counting quokkas", "postgres archives on tape"]:
        assert not theirs & set(project.found(query))
    project.store("Quokka census", "Counting quokkas on the island.", bottle="mine", compound="zoo")
    assert project.found("counting quokkas", compound="zoo")[:1] == [len(PILLS) + len(theirs) + 1]
    assert not theirs & set(project.found("counting quokkas", compound="ops"))


def test_many_writes_bring_the_file_up_to_date_and_every_process_follows(project, settings, meaning, monkeypatch):
    through_the_index(project, settings, meaning.key)
    pointer = project.pointer(meaning.key)
    before = json.loads(pointer.read_text())
    monkeypatch.setattr(ann, "UPDATE_AFTER", 2)
    for title, content in [("Kiwi", "Kiwis nest in burrows."), ("Kea", "Keas steal windscreen wipers."),
                           ("Tui", "Tuis mimic car alarms.")]:
        project.store(title, content)
    project.found("birds that steal car parts")  # three rows written since: the file is brought up to date
    ann.wait_for_builds()
    after = json.loads(pointer.read_text())
    assert after["file"] != before["file"] and after["rows"] == before["rows"] + 3
    assert after["position"]["after"] > before["position"]["after"]
    assert read_since(lambda: project.found("birds that steal car parts")) == 0  # the new generation: no rows
    vectors = project.kept(meaning.key)
    assert vectors.part is not None and vectors.count == 0
    assert project.found("birds that steal car parts")[0] == len(PILLS) + 4
    opened = vectors.part.opened  # its sums kept in step with the rows added: those of its rows now
    fresh = ann.Sums.empty(DIMENSIONS)
    fresh.add(ann._vectors_of(opened.index, np.asarray(opened.index.keys)))
    assert np.allclose(opened.total, fresh.total, atol=1e-5) and np.allclose(opened.outer, fresh.outer, atol=1e-5)
    assert len(list(pointer.parent.glob("*.usearch"))) == 1  # the old generation removed


def test_in_the_global_database_another_users_rows_never_come_through_the_index(alice, bob, meaning, settings,
                                                                                 tmp_path):
    from pillbox.global_db import GLOBAL
    from tests.pillbox.search.test_search_incremental import Memory, settle

    settings.PILLBOX_VECTOR_INDEX_DIR = str(tmp_path / "vectors")
    settings.PILLBOX_VECTOR_INDEX_ROWS = 0
    mine, theirs = Memory(alice, "ops"), Memory(bob, "ops")
    for title, content in PILLS:
        mine.store(title, content)
    ours = {theirs.store("Quokka census", "Counting quokkas on the island.").seq,
            theirs.store("Tape backups", "pg_dump archives of postgres go to tape.").seq}
    settle()
    queries = [*QUERIES, "counting quokkas", "postgres archives on tape"]
    by_meaning._vectors.clear()
    exact = [mine.found(query) for query in queries]
    assert ann.build(GLOBAL, "pill", meaning.key, DIMENSIONS)  # in the test's own transaction
    settings.PILLBOX_VECTOR_INDEX_ROWS = 4
    by_meaning._vectors.clear()
    answers = [mine.found(query) for query in queries]
    vectors = by_meaning.vectors_of(mine.target, meaning.key, DIMENSIONS)
    assert vectors.part is not None and vectors.part.opened.size == len(PILLS) + 2
    assert answers == exact and not ours & {seq for answer in answers for seq in answer}
    assert not ours & set(vectors.part.seqs.tolist())


def test_an_index_the_log_no_longer_reaches_is_built_again_while_the_scope_is_read_once(project, settings, meaning,
                                                                                       monkeypatch):
    from pillbox.search import changes

    through_the_index(project, settings, meaning.key)
    monkeypatch.setattr(changes, "MOST_CHANGES", 1)
    project.store("One", "First of two.")
    project.store("Two", "Second of two.")
    assert read_since(lambda: project.found(PARAPHRASE_QUERY)) == len(PILLS) + 2  # exact: the scope read once
    assert read_since(lambda: project.found(PARAPHRASE_QUERY)) == 0  # and not again while the index is built
    ann.wait_for_builds()
    answers = [project.found(query) for query in QUERIES]
    assert project.kept(meaning.key).part is not None
    monkeypatch.setattr(changes, "MOST_CHANGES", 5_000)
    assert answers == exact_answers(project, settings, QUERIES)


ANOTHER_BUILDER = """
import sys
from pathlib import Path

import django

django.setup()
from pillbox.databases import open_local
from pillbox.search import ann, pgvector

print(ann.build(open_local(Path(sys.argv[1])), "pill", sys.argv[2], int(sys.argv[3])))
"""


def test_another_processs_update_of_the_index_file_is_followed(project, settings, meaning, tmp_path):
    import os

    through_the_index(project, settings, meaning.key)
    pointer = project.pointer(meaning.key)
    before = json.loads(pointer.read_text())["file"]
    stored = project.store("Kiwi", "Kiwis nest in burrows.")
    assert project.found("birds in burrows")[0] == stored.seq  # read beside the index
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PILLBOX_HOME": str(tmp_path / "home"),
           "DJANGO_SECRET_KEY": settings.SECRET_KEY}
    done = subprocess.run([sys.executable, "-c", ANOTHER_BUILDER, str(project.path), meaning.key, str(DIMENSIONS)],
                          env=env, cwd=Path(__file__).resolve().parents[3], check=True, capture_output=True,
                          text=True)
    assert done.stdout.strip().endswith("True")
    assert json.loads(pointer.read_text())["file"] != before
    assert read_since(lambda: project.found("birds in burrows")) == 0  # the new generation holds the row
    vectors = project.kept(meaning.key)
    assert vectors.part is not None and vectors.count == 0 and stored.seq in vectors.part.seqs.tolist()
    assert project.found("birds in burrows")[0] == stored.seq


def test_a_scope_below_the_threshold_builds_no_index(project, settings, meaning):
    settings.PILLBOX_VECTOR_INDEX_ROWS = 1_000
    assert project.found(PARAPHRASE_QUERY)[0] == 4
    ann.wait_for_builds()
    assert not (project.path.parent / "vectors").exists()
    assert project.kept(meaning.key).part is None


def test_through_the_index_a_time_window_and_a_superseded_row_keep_their_rows_out(project, settings, meaning):
    """The index speaks for the whole scope, whatever the time: a window is a mask of its search (rows created
    outside it are never answered), and a row a newer one supersedes leaves the index's part as any write does."""
    from dataclasses import replace
    from datetime import UTC, timedelta

    from pillbox.search.when import Window

    target_seq = Pill.objects.using(project.alias).get(title=PARAPHRASE_TARGET[0]).seq
    exact = exact_answers(project, settings, [PARAPHRASE_QUERY])[0]
    assert exact[0] == target_seq
    through_the_index(project, settings, meaning.key)
    assert project.found(PARAPHRASE_QUERY)[0] == target_seq
    # Every pill of the fixture was created a moment ago: a window ending an hour ago holds none of them.
    now = timezone.now()
    past = replace(project.target, window=Window(start=None, end=now - timedelta(hours=1), zone=UTC,
                                            source="test"))
    assert search([past], query=PARAPHRASE_QUERY, compound=None, limit=20, fuzzy=False).hits == []
    recent = replace(project.target, window=Window(start=now - timedelta(hours=1), end=None, zone=UTC,
                                              source="test"))
    assert [hit.seq for hit in search([recent], query=PARAPHRASE_QUERY, compound=None, limit=20,
                                      fuzzy=False).hits][0] == target_seq
    # Superseded: gone from the answer by meaning, through the index.
    newer = project.store("Release notes", "Written by hand for every tag.")
    Pill.objects.using(project.alias).filter(seq=target_seq).update(superseded_by=newer)
    assert target_seq not in project.found(PARAPHRASE_QUERY)
    assert project.kept(meaning.key).part is not None
