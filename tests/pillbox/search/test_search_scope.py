"""Search in a database shared by many users follows the caller's own rows: the full-text index knows whose each
word is (a pill's bottle, a capsule's owner, as a tag on every word; migrations 0006 and 0008), and a search never
sees another user's rows through it, also after edits, discards, restores and purges, and after the index is
rebuilt from the rows."""

from __future__ import annotations

import re
import uuid
from importlib import import_module
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import AbstractBaseUser
from django.db import connections, transaction
from django.utils import timezone

from mcp_bridge.tools import Caller
from pillbox import curation, tokens
from pillbox.access import reach_for
from pillbox.global_db import GLOBAL
from pillbox.models import Pill, Prescription
from pillbox.tools import TOOLSET
from tests.conftest import Person

scope_migration = import_module("pillbox.migrations.0008_fts_scoped_words")
ID = re.compile(r"^id: ([0-9a-f]{12})$", re.MULTILINE)


@pytest.fixture(autouse=True)
def _words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index is what is tested here: rows found by meaning would answer for it."""
    monkeypatch.setenv("EMBEDDINGS", "off")


def caller(person: Person) -> Caller:
    assert isinstance(person.user, AbstractBaseUser)
    return Caller(user=person.user, transport="http")


def call(person: Person, tool: str, **arguments: Any) -> str:
    answer = TOOLSET.by_name[tool].handler(caller(person), arguments)
    assert isinstance(answer, str)
    return answer


def first_id(text: str) -> str:
    found = ID.search(text)
    assert found, text
    return found.group(1)


def ids(text: str) -> list[str]:
    return ID.findall(text)


def memory(person: Person, pills: list[tuple[str, str]]) -> tuple[str, list[str], list[str]]:
    """A global bottle with ``pills`` and the same texts as capsules: (bottle id, pill ids, capsule ids)."""
    bottle = first_id(call(person, "bottle_create", name="notes", display_name="Notes", scope="global"))
    author = {"author_name": "A", "author_email": "a@example.org"}
    rx = first_id(call(person, "prescription_open", bottle_id=bottle, title="work", **author))
    pill_ids = [first_id(call(person, "pill_store", prescription_id=rx, title=title, content=content,
                              compound="decision", **author)) for title, content in pills]
    capsule_ids = [first_id(call(person, "capsule_store", title=title, content=content, compound="convention"))
                   for title, content in pills]
    return bottle, pill_ids, capsule_ids


SHARED = [("Retry policy", "Exponential backoff for the payment webhook"),
          ("Deploy checklist", "Migrate, then restart the workers")]


@pytest.mark.django_db(transaction=True)
def test_a_search_never_sees_another_users_rows_through_the_shared_index(alice: Person, bob: Person) -> None:
    _, alice_pills, alice_capsules = memory(alice, SHARED)
    _, bob_pills, bob_capsules = memory(bob, [*SHARED, ("Kubernetes operator", "Only bob wrote about kubernetes")])
    for tool, mine, theirs in (("pill_search", alice_pills, bob_pills), ("capsule_search", alice_capsules,
                                                                         bob_capsules)):
        for arguments in ({"query": "retry backoff"}, {"query": "deploy"}, {"query": "retyr"},
                          {"query": "workers", "fuzzy": True}, {"query": "payment webhook restart"}):
            found = ids(call(alice, tool, **arguments))
            assert found and set(found) <= set(mine), (tool, arguments)
            assert not set(found) & set(theirs), (tool, arguments)
        # Words only bob wrote, typed or misspelled: nothing, not bob's row.
        for query in ("kubernetes", "kubernets", "operator"):
            answer = call(alice, tool, query=query)
            assert answer.startswith("No "), (tool, query, answer)
        assert ids(call(bob, tool, query="kubernetes")) == [theirs[-1]]


@pytest.mark.django_db(transaction=True)
def test_the_scope_itself_is_never_matched_by_the_words_of_a_query(alice: Person) -> None:
    bottle, _, _ = memory(alice, SHARED)
    owner = str(caller(alice).user.pk)
    scope_words = [bottle, bottle[:8], owner, f"u{owner}"]
    for tool in ("pill_search", "capsule_search"):
        for query in scope_words:
            answer = call(alice, tool, query=query)
            assert answer.startswith("No "), (tool, query, answer)


@pytest.mark.django_db(transaction=True)
def test_the_index_follows_edits_discards_restores_and_purges(alice: Person, bob: Person) -> None:
    _, (pill, _), (capsule, _) = memory(alice, SHARED)
    memory(bob, SHARED)
    reach = reach_for(caller(alice))
    for kind, row, noun in (("pill", pill, "pills"), ("capsule", capsule, "capsules")):
        search = f"{kind}_search"
        call(alice, f"{kind}_revise", id=row, title="Circuit breaker", content="Trip after five failures")
        assert ids(call(alice, search, query="breaker")) == [row]
        assert row not in ids(call(alice, search, query="retry"))
        assert call(bob, search, query="breaker") == f"No {noun} found."
        call(alice, f"{kind}_discard", id=row)
        assert call(alice, search, query="breaker") == f"No {noun} found."
        getattr(curation, f"{kind}_restore")(reach=reach, **{f"{kind}_id": row})
        assert ids(call(alice, search, query="breaker")) == [row]
        getattr(curation, f"{kind}_purge")(reach=reach, **{f"{kind}_id": row})
        assert call(alice, search, query="breaker") == f"No {noun} found."
        assert ids(call(alice, search, query="deploy")), "the other row is still found"


@pytest.mark.django_db(transaction=True)
def test_the_migration_rebuilds_the_scope_from_the_rows(alice: Person, bob: Person) -> None:
    _, alice_pills, alice_capsules = memory(alice, SHARED)
    _, bob_pills, bob_capsules = memory(bob, SHARED)
    with connections[GLOBAL].schema_editor() as editor:
        for table in ("pillbox_pill", "pillbox_capsule"):
            scope_migration.backwards_for(table)(django_apps, editor)
            scope_migration.forwards_for(table)(django_apps, editor)
    for person, pills, capsules in ((alice, alice_pills, alice_capsules), (bob, bob_pills, bob_capsules)):
        assert sorted(ids(call(person, "pill_search", query="retry deploy"))) == sorted(pills)
        assert sorted(ids(call(person, "capsule_search", query="retry deploy"))) == sorted(capsules)


def index_words(table: str) -> set[str]:
    with connections[GLOBAL].cursor() as cursor:
        cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.words_{table} USING fts5vocab(main, {table}, row)")
        cursor.execute(f"SELECT term FROM temp.words_{table}")
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connections[GLOBAL].vendor != "sqlite", reason="PostgreSQL reaches the caller's rows by index")
def test_every_word_of_the_global_index_is_its_owners_own(alice: Person, bob: Person) -> None:
    """A user's words are their own FTS5 terms: what a search reads, ranks and merges is theirs alone."""
    alice_bottle, _, _ = memory(alice, SHARED)
    bob_bottle, _, _ = memory(bob, [("Kubernetes operator", "Only bob wrote about kubernetes")])
    alice_tag = tokens.tag_of(caller(alice).user.pk)
    bob_tag = tokens.tag_of(caller(bob).user.pk)
    capsule_words = index_words("pillbox_capsule_fts")
    assert {w[len(alice_tag):] for w in capsule_words if w.startswith(alice_tag)} >= {"retry", "deploy", "workers"}
    assert {w[len(bob_tag):] for w in capsule_words if w.startswith(bob_tag)} == {
        "kubernetes", "operator", "only", "bob", "wrote", "about", "convention"}
    assert all(word.startswith((alice_tag, bob_tag)) for word in capsule_words)
    assert "kubernetes" not in capsule_words
    pill_words = index_words("pillbox_pill_fts")
    assert any(word.endswith("kubernetes") for word in pill_words)
    alice_full = next(b for b in reach_for(caller(alice)).bottles_in(GLOBAL) if b.hex.startswith(alice_bottle))
    bob_full = next(b for b in reach_for(caller(bob)).bottles_in(GLOBAL) if b.hex.startswith(bob_bottle))
    assert {word[:tokens.TAG_LENGTH] for word in pill_words} == {tokens.tag_of(alice_full.hex),
                                                                 tokens.tag_of(bob_full.hex)}
    assert tokens.tag_of(bob_full.hex) + "kubernetes" in pill_words
    assert tokens.tag_of(alice_full.hex) + "kubernetes" not in pill_words


@pytest.mark.django_db(transaction=True)
def test_accents_and_case_are_folded_alike_in_the_tagged_words_and_the_query(alice: Person) -> None:
    memory(alice, [("Café Über-Größe", "Señales de ÉXITO en la caché")])
    for tool in ("pill_search", "capsule_search"):
        for query in ("cafe", "CAFÉ", "uber", "señales", "senales", "exito", "cache"):
            assert ids(call(alice, tool, query=query)), (tool, query)


@pytest.mark.django_db(transaction=True)
def test_a_pill_written_before_its_prescription_is_indexed_under_its_bottle(alice: Person, bob: Person) -> None:
    """Foreign keys are checked at commit, so a pill may be written first: its prescription's arrival gives it
    its bottle's tag."""
    bottle, _, _ = memory(alice, SHARED)
    memory(bob, SHARED)
    now = timezone.now()
    prescription_id = uuid.uuid4()
    with transaction.atomic(using=GLOBAL):
        Pill.objects.using(GLOBAL).create(id=uuid.uuid4(), seq=9_000_000_000_000, prescription_id=prescription_id,
                                          compound="decision", title="Written first", content="Zeppelin hangar",
                                          created_at=now, updated_at=now)
        Prescription.objects.using(GLOBAL).create(id=prescription_id, bottle_id=next(
            b for b in reach_for(caller(alice)).bottles_in(GLOBAL) if b.hex.startswith(bottle)),
            title="late", started_at=now)
    assert len(ids(call(alice, "pill_search", query="zeppelin"))) == 1
    assert call(bob, "pill_search", query="zeppelin") == "No pills found."
